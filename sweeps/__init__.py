"""What to run and running it: the spec (spec/), the run on Ray (run/), the sweep folder (dataset/), more
than one machine (cluster/), and the `memsweep` command line (cli.py)."""
