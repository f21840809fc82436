"""polars' allocator told to give freed memory back to the system: imported before polars is.

polars allocates through its own jemalloc, which reads `_RJEM_MALLOC_CONF` once, when polars is first
imported; polars/__init__.py sets dirty_decay_ms:500,muzzy_decay_ms:1000 and appends what the
environment already holds (pola-rs/polars#18088). With no background thread jemalloc ages freed pages
only as later allocations go by, and a page aged out of "dirty" stays resident as "muzzy" for another
second, so a report's sections pile up: each one's freed frames are still resident when the next one
allocates its own (the per-configuration frames of `large`'s young model, 1.5 M rows, on top of the
figures' and the findings'). With a background thread purging them 200 ms after they are freed, and at
once rather than lazily (muzzy_decay_ms:0), `memsweep report` on `large` peaked at 1,039-1,056 MiB
against 1,159-1,209 with polars' setting alone, in the same time within its noise (benchmarks/RESULTS.md);
purging on every free (dirty_decay_ms:0) took 940 MiB and half as long again. A `_RJEM_MALLOC_CONF`
already in the environment is kept as it is.
"""

import os

CONF = "background_thread:true,dirty_decay_ms:200,muzzy_decay_ms:0"
os.environ.setdefault("_RJEM_MALLOC_CONF", CONF)
