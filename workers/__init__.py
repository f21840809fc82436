"""What runs on a Ray worker: the models, machine profiles and calibration (no Ray here)."""

from .evaluate import evaluate
from .registry import MODELS, get_model, load_plugins, register

__all__ = ["MODELS", "evaluate", "get_model", "load_plugins", "register"]
