"""The measure backend: run the models' user-space analogs (C routines in workers/native) on this node.

- build.py compiles the routines with the node's C compiler into a cached shared library;
- native.py binds it with ctypes; host.py reads what the node is (CPU, caches, THP, memory);
- a model's own `measurement` (workers.model.Measurement; its planner lives beside the model, in
  workers/models/) turns its points into plans of routine runs, built from plans.py's generic pieces
  (Run, Samples, the lat_mem_rd chase); measure.py runs them with the discipline (pinning,
  pre-faulting, warm-up, repeats; settings.py: MeasureSettings, the spec's [measure]) and returns
  rows of the model's schema, the declared metric filled;
- fit.py turns measured rows into calibration figures, named by the same declaration.
Nothing here branches on a model: what to measure and how to read it is each model's declaration.
"""
