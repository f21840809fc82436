"""The measure backend: run the models' user-space analogs (C kernels in workers/native) on this node.

- build.py compiles the kernels with the node's C compiler into a cached shared library;
- kernels.py binds it with ctypes; host.py reads what the node is (CPU, caches, THP, memory);
- plans.py turns a model's points into kernel runs; measure.py runs them with the discipline
  (pinning, pre-faulting, warm-up, repeats; settings.py: MeasureSettings, the spec's [measure]) and
  returns rows of the model's schema;
- fit.py turns measured rows into calibration figures.
"""
