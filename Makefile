# The README's two commands: `make report` (default sweep on an embedded Ray,
# ending in a report) and `make test`; `make check` is the fast loop. Each creates .venv and installs first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: report test check browser slurm guest kernels mca clean

# Let Python cache bytecode even where the environment says not to: pytest then keeps its rewritten test
# modules (collecting the suite took 10.7 s without the cache, 4.9 s with it, in each xdist worker), and
# every memsweep process and Ray worker the tests start imports compiled modules.
unexport PYTHONDONTWRITEBYTECODE

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	@# --no-compile: pip would compile every module of every package (ray, moto, sympy, ...), 34 of its 81 s;
	@# Python compiles the modules a run imports on first import (and keeps them: see unexport above).
	$(BIN)/pip install --quiet --no-compile -e '.[test]'
	@# The measure backend's C kernels, built by this node's compiler (a node without one
	@# still works: its measured rows say why they are infeasible).
	$(BIN)/python -m workers.measure.build || echo "memsweep: C kernels not built; measured rows will be infeasible"
	touch $(STAMP)

report: $(STAMP)
	$(BIN)/memsweep run default

# The report test opens report.html in Debian's headless Chromium.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
	  else echo "make test needs chromium: sudo apt-get install chromium" >&2; exit 1; fi; }

# The Slurm tests start munged, slurmctld and two slurmd from Debian's slurm-wlm and munge.
slurm:
	@sh tests/support/install_slurm.sh

# The guest tests boot Debian's kernels in QEMU: QEMU and busybox-static installed if missing, the 6.12 and
# 6.1 kernel packages fetched (apt-get download, never installed) into ~/.cache/memsweep/kernels; for the arm64
# guest, qemu-system-arm, xfsprogs and the aarch64 cross compiler, and Debian's arm64 6.12 and 7.3 kernels and
# busybox, fetched with an apt state of their own into ~/.cache/memsweep/kernels/arm64.
guest: $(STAMP)
	$(BIN)/python -m workers.guest fetch
	$(BIN)/python -m workers.guest fetch-arm64

# The seed series' kernel ("series:6.12"): Debian's 6.12 source with workers/guest/series/*.patch, its base
# (no patches) and the huge-pfnmap build (workers/guest/hugepfn/*.patch), each built once per node into
# ~/.cache/memsweep/builds (on a fresh 2-core machine: 263 s, then 490 s and 461 s for two built side by
# side; nothing when they are there).
kernels: $(STAMP)
	$(BIN)/python -m workers.guest build

# llvm-mca of LLVM 19 prices the series build's traced code for the seed's core (benchmarks/kernel_cycles.py);
# a test prices the recorded instructions again.
mca:
	@command -v llvm-mca-19 >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq llvm-19 >/dev/null; \
	  else echo "make test needs llvm-mca-19: sudo apt-get install llvm-19" >&2; exit 1; fi; }

# pytest-xdist workers. The full suite mostly waits (for Ray to start, a Slurm job, an object store's retries,
# a probe chunk's sleep, a guest's boot): three processes keep two cores busy (454 s against 565 s with two,
# benchmarks/RESULTS.md). The fast loop is mostly CPU (model fits, figures), and two are quicker there. One
# test module runs on one worker (its module fixtures are set up once); the session fixtures of several
# modules are made once per run (tests/conftest.py's once_per_run). `make test` hands out the longest
# modules first (tests/conftest.py's LONGEST_FIRST, kept in that order by --no-loadscope-reorder); `make
# test XDIST=` runs the tests one at a time.
XDIST ?= -n 3 --dist loadfile --no-loadscope-reorder
CHECK_XDIST ?= -n 2 --dist loadfile

test: $(STAMP) browser slurm guest kernels mca
	$(BIN)/python -m pytest $(XDIST)

# The fast loop while you work: every test but those that need Chromium, Slurm, a multi-node Ray, an
# object store, a guest or llvm-mca, and the slow end-to-end runs (pyproject.toml's markers).
check: $(STAMP)
	$(BIN)/python -m pytest $(CHECK_XDIST) -q -m "not (browser or slurm or cluster or object_store or guest or mca or slow)"

clean:
	rm -rf $(VENV) results test-artifacts .pytest_cache .hypothesis
