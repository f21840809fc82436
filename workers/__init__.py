"""The bottom layer, read by sweeps and analysis alike: the model contract (model, axes, plots, findings,
contract, registry) and the models (models/<name>/), machine profiles and calibration, the dataset
contract (dataset: columns, layout), a sweep folder's file I/O (folder: whole-file writes, the part
lister, the manifest reader, `scan`), and the measured backend's C analogs (measure/, native/). No Ray here: a Ray task calls into it."""

from .evaluate import evaluate
from .registry import MODELS, get_model, load_plugins, register

__all__ = ["MODELS", "evaluate", "get_model", "load_plugins", "register"]
