"""A plugin module that ends the interpreter when imported (sys.exit(0) at module level): a spec that names
it, or an entry point into it, must be refused as a plugin that does not import, not end the command as if it
had run (tests/sweeps/spec/test_load.py, tests/workers/test_registry.py)."""

import sys

sys.exit(0)
