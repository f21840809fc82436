"""The bottom layer, read by sweeps and analysis alike: the model contract (model: what a model imports;
axes, plots, findings; contract, registry, evaluate: the host side) and the models (models/<name>/), machine
profiles and calibration, what each answer rests on and how far it can be off (evidence, interval), the
dataset (dataset/: columns and layout, the row sources' registry, a sweep folder's file I/O, the part check
and scan), and the row sources' backends (source: their contract; modeled: the model's own answer;
measure/ and native/: the user-space analogs in C; guest/: the real kernel path in a QEMU guest). No Ray
here: a Ray task calls into it."""

from . import allocator  # noqa: F401 - first: it sets polars' allocator before polars is imported
from .evaluate import evaluate
from .registry import MODELS, get_model, load_plugins, register

__all__ = ["MODELS", "evaluate", "get_model", "load_plugins", "register"]
