"""Running a sweep: chunk planning (chunks), the row sources (sources: model, measured), what one Ray task
does (task), the driver that keeps tasks in flight on an embedded or joined Ray (driver), the Ray setup
values (ray_env), the embedded Ray (embedded) and its watcher (reaper), provenance, and the `plan` dry run
(dryrun).

Only driver and embedded import Ray here; a task's code runs without it.
"""
