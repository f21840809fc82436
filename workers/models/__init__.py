"""The shipped models, one folder each: the model in its __init__.py (its entry point is
`workers.models.<name>:MODEL`), its helpers and its measurement planner beside it (workers/registry.py
finds them)."""
