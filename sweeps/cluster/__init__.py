"""More than one machine: a sweep sent to a Ray cluster as a Ray Job (jobs), to Slurm as a batch job
(slurm) whose nodes start Ray (slurm_node), and which paths the nodes can see (mounts).
"""
