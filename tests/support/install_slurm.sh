#!/bin/sh
# Debian's Slurm (slurmctld, slurmd, sbatch, ...) and munge for the Slurm tests
# (tests/sweeps/test_slurm.py); installs them only when missing. Needs root.
set -e
if command -v slurmctld >/dev/null 2>&1 && command -v slurmd >/dev/null 2>&1 \
   && command -v sbatch >/dev/null 2>&1 && command -v munged >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "the Slurm tests need Debian's slurm-wlm and munge: sudo apt-get install slurm-wlm munge" >&2
  exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
