"""What to run: the sweep spec (load: TOML in, a validated frozen SweepSpec out), the grid (grid: a
mixed-radix index space over a model's axes, point ids) and the specs memsweep ships (shipped/).

Nothing here runs anything or touches a sweep folder.
"""
