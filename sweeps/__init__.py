"""What to run and running it: the spec (spec/), the run on Ray (run/: its plan, chunks, tasks, the driver and
what it writes into the sweep folder, whose layout and file I/O are workers/dataset/'s), more than one machine
(cluster/), calibration (calibration.py), the README's schema table (schema.py) and the `memsweep` command line
(cli.py)."""

import workers  # noqa: F401 - first, for workers.allocator: the `memsweep` command imports polars after it
