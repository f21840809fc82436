"""How memsweep's Ray is set up, as plain values (no Ray import): what a node's object store holds and
the environment every task runs in. The driver starts or joins Ray with them; a Ray Job and a Slurm
node start with the same ones.
"""

from __future__ import annotations

OBJECT_STORE_BYTES = 128 * 1024 * 1024  # plenty: tasks carry a spec and two integers
# One task, one core: polars and numpy would otherwise spread each task over
# every core and a 1-CPU Ray would use the whole machine.
TASK_ENV = {"POLARS_MAX_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
# Workers import the task code (polars, pyarrow, the models) as they start, not on their first task.
RUNTIME_ENV = {"env_vars": TASK_ENV, "worker_process_setup_hook": "sweeps.run.task.warm_up"}
JOB_DRIVER_VAR = "RAY_JOB_CONFIG_JSON_ENV_VAR"  # set by Ray for the entrypoint of a submitted job
# Attempts at starting a Ray node (the embedded Ray, a Slurm worker): its raylet aborts when the node's
# dashboard agent has not written its ports 15 s after it started, which a busy host can make it miss.
START_TRIES = 3
# The embedded Ray's processes carry a value unique to the run in this variable, from the environment ray.init
# starts them with: its reaper ends them by it (sweeps/run/reaper.py), whatever their parent or command line.
RUN_MARK_VAR = "MEMSWEEP_RUN_MARK"
# Also in that environment: Ray's agents rename themselves (ray._raylet.setproctitle, setproctitle's spt_setup),
# which overwrites the memory /proc/<pid>/environ shows, and so the mark, unless SPT_NOENV is set (the title is
# then kept within the original command line's length).
MARKED_ENV = {"SPT_NOENV": "1"}
LOOPBACK = "127.0.0.1"  # the embedded Ray's node address: every process of it listens there, and nowhere else
