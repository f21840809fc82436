"""The shipped models, one module each (see workers/registry.py)."""
