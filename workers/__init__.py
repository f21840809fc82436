"""The bottom layer, read by sweeps and analysis alike: the model contract (model: what a model imports;
axes, plots, findings; contract, registry, evaluate: the host side) and the models (models/<name>/), machine
profiles and calibration, the dataset (dataset/: columns and layout, a sweep folder's file I/O, the part
check and scan), and the measured backend's C analogs (measure/, native/). No Ray here: a Ray task calls
into it."""

from . import allocator  # noqa: F401 - first: it sets polars' allocator before polars is imported
from .evaluate import evaluate
from .registry import MODELS, get_model, load_plugins, register

__all__ = ["MODELS", "evaluate", "get_model", "load_plugins", "register"]
