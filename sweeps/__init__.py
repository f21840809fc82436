"""What to run and running it: the spec (spec/), the run on Ray (run/), the sweep folder (dataset/), more
than one machine (cluster/), and the `memsweep` command line (cli.py)."""

import workers  # noqa: F401 - first, for workers.allocator: the `memsweep` command imports polars after it
