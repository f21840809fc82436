"""The package as a node installs it: the wheel and the sdist hold every file of the three packages that git
tracks, and memsweep installed from the wheel (not editable) into a fresh environment, run from a folder
outside the checkout, sweeps every shipped model (modeled and measured rows) and plans the kernel spec with
no error row; so does the example plugin installed from its own wheel beside it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import polars as pl
import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # builds two wheels and an sdist, then a sweep on an embedded Ray from the install
PACKAGES = ("sweeps", "workers", "analysis")
SPEC = """name = "pkg"
models = ["memmap", "copy", "pfnmap", "young"]
source = "both"

[measure]
repeats = 1
warmup = 0
span_ms = 0

[axes.memmap]
namespace_size = ["1GiB"]
struct_page_size = [64]
align = ["2MiB"]
mode = ["fsdax", "devdax"]
map = ["mem"]
strategy = ["slow", "template_nt_inline"]

[axes.copy]
namespace_size = ["16MiB"]
struct_page_size = [64]
strategy = ["memcpy", "nt_inline"]
inline_sizes = ["patched"]

[axes.pfnmap]
namespace_size = ["64MiB"]
align = ["1GiB"]
compound_order = [0, 9]
arch = ["x86_64"]
access = ["lat_mem_rd_random"]

[axes.young]
namespace_size = ["64MiB"]
compound_order = [4]
batching = ["per_pte", "batched"]
arch = ["arm64"]
"""


def tracked(*paths: str, cwd: Path = ROOT) -> list[str]:
    """The files git tracks under `paths` (the checkout a user clones)."""
    out = subprocess.run(["git", "ls-files", "-z", *paths], cwd=cwd, capture_output=True, text=True, check=True)
    return [f for f in out.stdout.split("\0") if f]


def build(source: Path, dist: Path, kind: str = "wheel") -> Path:
    """The wheel (or sdist) of the project at `source`, built by its PEP 517 backend as pip and `python -m
    build` call it (setuptools, from this environment: no download); one process per build, as they do
    (setuptools keeps a wheel build's output folder for an sdist built after it in the same process)."""
    code = f"import sys; from setuptools import build_meta as b; print('built', b.build_{kind}(sys.argv[1]))"
    out = subprocess.run([sys.executable, "-c", code, str(dist)], cwd=source, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return dist / out.stdout.splitlines()[-1].split()[1]  # setuptools prints its own lines before


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> dict[str, Path]:
    """memsweep's wheel and sdist built from a copy of the tracked files alone (what a clone holds; the build's
    egg-info stays out of the checkout), and the example plugin's wheel."""
    root = tmp_path_factory.mktemp("package")
    source = root / "source"
    for f in tracked():
        (source / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, source / f)
    wheel, sdist = build(source, root / "dist"), build(source, root / "dist", "sdist")
    plugin_wheel = build(source / "examples" / "plugin", root / "dist")
    return {"wheel": wheel, "sdist": sdist, "plugin": plugin_wheel, "root": root}


def test_the_wheel_and_the_sdist_hold_every_tracked_file_of_the_packages(dists):
    """Each file git tracks in sweeps/, workers/ and analysis/ (modules, shipped specs, profiles, C sources,
    the guest's /init, the series' patches, instruction costs) is in the wheel and in the sdist."""
    files = tracked(*PACKAGES)
    assert "workers/models/memmap/instructions.toml" in files and "workers/guest/counter.c" in files
    in_wheel = set(zipfile.ZipFile(dists["wheel"]).namelist())
    with tarfile.open(dists["sdist"]) as t:
        top = t.getnames()[0].split("/")[0]
        in_sdist = {n.removeprefix(top + "/") for n in t.getnames()}
    assert [f for f in files if f not in in_wheel] == []
    assert [f for f in files if f not in in_sdist] == []


def dependencies_view(dest: Path) -> Path:
    """A folder of links to this environment's installed packages, memsweep's own left out (its dist-info and
    the editable install's finder): the fresh environment's dependencies, at the versions tested, without a
    download. memsweep itself comes only from the wheel."""
    dest.mkdir()
    site = Path(sysconfig.get_paths()["purelib"])
    for entry in site.iterdir():
        name = entry.name.lower()
        if name.startswith(("memsweep", "__editable__", "_memsweep")) or name.endswith(".pth") \
                or name in PACKAGES or name == "__pycache__":
            continue
        (dest / entry.name).symlink_to(entry)
    return dest


@pytest.fixture(scope="module")
def installed(dists) -> dict:
    """A fresh venv with memsweep and the example plugin installed from their wheels (pip install, not
    editable), its dependencies this environment's (dependencies_view, through a .pth file); the environment
    a command in it runs with: no PYTHONPATH, the venv's bin first on PATH."""
    root = dists["root"]
    venv = root / "venv"
    # the venv inside a git repository of its own, as a user's project venv often is: not memsweep's commit
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "-c", "user.name=u", "-c", "user.email=u@example.org", "commit", "-q",
                    "--allow-empty", "-m", "a user's own project"], check=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join((str(venv / "bin"), env.get("PATH", "")))
    # pip with the checkout off the path: its memsweep.egg-info would read as memsweep already installed
    out = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                          "--no-index", str(dists["wheel"]), str(dists["plugin"])],
                         capture_output=True, text=True, timeout=300, env=env, cwd=root)
    assert out.returncode == 0, out.stderr[-3000:]
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "memsweep-test-dependencies.pth").write_text(f"{dependencies_view(root / 'deps')}\n")
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()
    return {"env": env, "bin": venv / "bin", "site": site, "cwd": elsewhere}


def command(installed: dict, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """`memsweep ARGS` as the wheel installed it (its console script), run from a folder outside the checkout."""
    return subprocess.run([str(installed["bin"] / "memsweep"), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=installed["cwd"], env=installed["env"])


def test_the_install_imports_the_installed_package_not_the_checkout(installed):
    """Every package memsweep is made of, and the plugin, come from the fresh environment's site-packages."""
    code = ("import json, sweeps, workers, analysis, memsweep_example; "
            "print(json.dumps([m.__file__ for m in (sweeps, workers, analysis, memsweep_example)]))")
    out = subprocess.run([str(installed["bin"] / "python"), "-c", code], capture_output=True, text=True,
                         cwd=installed["cwd"], env=installed["env"], timeout=120)
    assert out.returncode == 0, out.stderr
    for path in json.loads(out.stdout):
        assert Path(path).is_relative_to(installed["site"]), path


def test_every_shipped_model_sweeps_from_the_installed_wheel_with_no_error_row(installed):
    """A small sweep of memmap, copy, pfnmap and young, modeled and measured rows, from the installed wheel in
    another folder with a relative --out: it exits 0, every model and source has rows, none is an error."""
    (installed["cwd"] / "spec.toml").write_text(SPEC)
    run = command(installed, "run", "spec.toml", "--out", "res", "--cpus", "2", "--quiet", "--no-report")
    assert run.returncode == 0, run.stdout + run.stderr
    sweep = installed["cwd"] / "res" / "pkg"
    rows = pl.concat([pl.read_parquet(d / "*.parquet", hive_partitioning=False) for d in sweep.glob("model=*")],
                     how="diagonal_relaxed")  # each model its own columns
    errors = rows.filter(pl.col("status") == "error").select("model", "source", "reason").unique()
    assert errors.height == 0, errors.rows()
    seen = set(rows.select("model", "source").unique().iter_rows())
    assert seen == {(m, s) for m in ("memmap", "copy", "pfnmap", "young") for s in ("model", "measured")}
    # the memmap rows that need the series build's instruction costs (workers/models/memmap/instructions.toml)
    memmap = rows.filter((pl.col("model") == "memmap") & (pl.col("source") == "model"))
    assert memmap["metric_init_instructions"].is_not_null().all()
    # installed, memsweep has no commit: the repository around the venv is the user's, not memsweep's
    assert set(rows["env_git_sha"]) == {""}
    assert set(rows["env_memsweep_version"]) == {"0.1.0"}


@pytest.mark.guest  # the plan asks the series' build (make kernels) which strategies it switches among
def test_the_kernel_spec_plans_from_the_installed_wheel(installed):
    """`memsweep plan kernel` (the shipped kernel spec, the series' build) from the install: every point
    counted, none an error."""
    plan = command(installed, "plan", "kernel", "--json", "--quiet")
    assert plan.returncode == 0, plan.stderr
    d = json.loads(plan.stdout)
    assert d["models"]["memmap"]["error"] == 0 and d["points"] > 0


def test_the_example_plugin_sweeps_from_its_installed_wheel(installed):
    """The example plugin's model, installed from its wheel beside memsweep's, found by its entry point and
    swept from another folder with no error row."""
    shutil.copy2(ROOT / "examples" / "plugin" / "spec.toml", installed["cwd"] / "hvo.toml")
    run = command(installed, "run", "hvo.toml", "--out", "res", "--cpus", "2", "--quiet", "--no-report")
    assert run.returncode == 0, run.stdout + run.stderr
    rows = pl.read_parquet(installed["cwd"] / "res" / "hvo-example" / "model=hvo" / "*.parquet",
                           hive_partitioning=False)
    assert rows.height == 480 and set(rows["status"]) == {"ok"}


def test_what_submit_and_slurm_put_on_a_node_is_the_installed_package(installed, dists):
    """From the install, `submit`'s staged working directory holds exactly the wheel's files of the three
    packages (and the spec), and the Slurm script runs the install's own interpreter."""
    staged = installed["cwd"] / "staged"
    code = (f"from pathlib import Path; from sweeps.cluster.jobs import stage; "
            f"stage('default', Path({str(staged)!r}), ())")
    out = subprocess.run([str(installed["bin"] / "python"), "-c", code], capture_output=True, text=True,
                         cwd=installed["cwd"], env=installed["env"], timeout=120)
    assert out.returncode == 0, out.stderr
    files = {p.relative_to(staged).as_posix() for p in staged.rglob("*") if p.is_file()}
    wheel = {n for n in zipfile.ZipFile(dists["wheel"]).namelist() if n.split("/")[0] in PACKAGES}
    assert files == wheel | {"spec.toml"}
    script = command(installed, "submit", "default", "--slurm", "--out", "shared", "--dry-run")
    assert script.returncode == 0, script.stderr
    assert f"python={installed['bin'] / 'python'}\n" in script.stdout
