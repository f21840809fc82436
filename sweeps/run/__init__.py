"""Running a sweep: the one plan of a run and its chunks (chunks), the row sources (sources: model,
measured, kernel), what one Ray task does (task), the driver that keeps tasks in flight on an embedded or
joined Ray (driver), the Ray setup values (ray_env), the embedded Ray (embedded) and its watcher (reaper),
provenance, and the `plan` dry run (dryrun). What a run writes and keeps: parts, the manifest and Slurm
submissions (store), what rows a folder holds and whether a rerun may add to it (computation), one driver
per folder (lease), and `status` and `verify` (inspect). The layout, names and columns are
workers.dataset's, the file I/O workers.dataset.folder's, which analysis shares.

Only driver and embedded import Ray here; a task's code runs without it.
"""
