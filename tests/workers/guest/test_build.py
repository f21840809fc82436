"""The seed series' kernel (workers/guest/build.py): the patch files, the cache and a failed step, without a
build; and, marked `guest`, the build itself (cached per node: `make kernels`) booted with each of its four
strategies, whose instruction counts must order as the series' steps do."""

from __future__ import annotations

import json
import lzma
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from workers.guest import GuestConfig, GuestKernelError, GuestSetupError, run_guest
from workers.guest import build, debian, kernels
from workers.guest.settings import KernelSettings
from tests.conftest import memsweep
from workers.units import GiB, MiB


def test_each_patch_names_the_mail_patch_it_follows_and_0009_says_it_is_ours():
    """0001-0008 follow [PATCH v10 1/8]..8/8 in order and say what changed for 6.12 when anything did;
    0009 is memsweep's own and says so."""
    files = build.patches()
    assert [p.name[:4] for p in files] == [f"{i:04d}" for i in range(1, 10)]
    for i, p in enumerate(files[:8], 1):
        assert f"Follows [PATCH v10 {i}/8]" in p.read_text(), p.name
    assert "Not part of the series: memsweep's own patch" in files[8].read_text()
    assert "memmap_init_strategy" in files[8].read_text()


def test_the_strategies_are_the_values_0009_accepts():
    names = re.findall(r'\[MEMMAP_INIT_\w+\] = "(\w+)"', build.patches()[8].read_text())
    assert tuple(names) == build.STRATEGIES


def test_the_digest_follows_the_patches(tmp_path, monkeypatch):
    """A changed patch is a new build; the same patches are the same digest."""
    before = build.digest()
    assert build.digest() == before and re.fullmatch(r"[0-9a-f]{12}", before)
    copy = tmp_path / "series"
    copy.mkdir()
    for p in build.patches():
        (copy / p.name).write_bytes(p.read_bytes())
    monkeypatch.setattr(build, "PATCHES", copy)
    assert build.digest() == before
    (copy / "0007-x.patch").write_text((copy / build.patches()[6].name).read_text() + "\n")
    assert build.digest() != before


def test_an_unfinished_build_is_never_used(tmp_path):
    """A folder of the right name without its build.json (an interrupted build), or one that lost its
    bzImage or holds a damaged build.json, is not a build (the next build replaces it)."""
    assert build.cached_build(tmp_path) is None
    folder = build.builds_dir(tmp_path) / f"{build.NAME}-{build.digest()}"
    folder.mkdir(parents=True)
    (folder / "bzImage").write_bytes(b"half")
    assert build.cached_build(tmp_path) is None
    (folder / build.MARKER).write_text(json.dumps({"release": "6.12.118", "digest": build.digest()}))
    assert build.cached_build(tmp_path).image == folder / "bzImage"
    (folder / "bzImage").unlink()
    assert build.cached_build(tmp_path) is None
    (folder / "bzImage").write_bytes(b"whole")
    (folder / build.MARKER).write_text('{"release')
    assert build.cached_build(tmp_path) is None


def test_a_failed_step_names_the_step_and_its_log(tmp_path):
    steps = build._Steps(lambda line: None, tmp_path / "b.log")
    with pytest.raises(GuestSetupError, match=r"failed at step 'make bzImage' \(exit 2\); its output is in "
                                              + re.escape(str(tmp_path / "b.log"))):
        steps.run("make bzImage", ["sh", "-c", "echo 'mm_init.c:1: error: x'; exit 2"], cwd=tmp_path)
    assert "mm_init.c:1: error: x" in (tmp_path / "b.log").read_text()


def test_a_config_that_lost_an_option_is_refused(tmp_path):
    config = tmp_path / ".config"
    config.write_text("\n".join(f"CONFIG_{o}=y" for o in build.ENABLE if o != "DEV_DAX_PMEM") + "\n")
    with pytest.raises(GuestSetupError, match="dropped DEV_DAX_PMEM"):
        build._check_config(config, tmp_path / "b.log")


def test_a_spec_names_the_series_build_and_is_told_to_build_it(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(GuestKernelError, match=r"'series:6.12' is not built on this node: run `make kernels`"):
        KernelSettings(image="series:6.12").kernel()
    with pytest.raises(GuestKernelError, match=r"one of \['debian:6.12', 'debian:6.1', 'series:6.12', "
                                               r"'base:6.12'\]"):
        KernelSettings(image="series:6.1")


def test_a_run_without_the_toolchain_stops_with_the_command_that_installs_it(tmp_path):
    """`memsweep run` of a spec on the unbuilt series' kernel builds it first, but never installs the
    toolchain: without gcc on PATH it names the one command that does, and writes nothing."""
    (tmp_path / "s.toml").write_text('name = "s"\nmodels = ["memmap"]\nsource = ["model", "kernel"]\n'
                                     '[kernel]\nimage = "series:6.12"\n[axes.memmap]\nnamespace_size = ["1GiB"]\n')
    env = {**os.environ, "PATH": str(Path(sys.executable).parent), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    r = memsweep("run", "s.toml", "--out", "out", cwd=tmp_path, env=env)
    assert r.returncode == 2, r.stderr
    assert re.search(r"building the series' kernel needs .*gcc.*: run `sudo apt-get install [a-z0-9 -]*gcc", r.stderr)
    assert "`make kernels`" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]  # no dataset, no cache, no build folder


# ---------------------------------------------------------------- the real build, booted

@pytest.fixture(scope="module")
def series_run():
    """The series' build (GuestKernelError says to run `make kernels` when it is not there), one boot: a
    devdax 2 MiB map=mem namespace (heads and tails) and an fsdax map=dev one (heads only), each bound
    under all four strategies."""
    kernel = KernelSettings(image="series:6.12").kernel()
    configs = [GuestConfig(mode=m, map=p, align_bytes=2 * MiB, namespace_size_bytes=GiB, strategy=s)
               for m, p in (("devdax", "mem"), ("fsdax", "dev")) for s in build.STRATEGIES]
    return kernel, run_guest(kernel, configs)


@pytest.mark.guest
def test_the_build_switches_among_its_four_strategies(series_run):
    kernel, run = series_run
    assert kernel.strategies == build.STRATEGIES and kernel.modules is None
    assert run.release == kernel.release
    for r in run.results:
        assert r.status == "ok", r.reason
        assert r.counted and r.init_calls == 1


@pytest.mark.guest
def test_each_step_of_the_series_does_less_work_than_the_one_before(series_run):
    """In instructions: a template copy is fewer than the slow path per page; 7/8's out-of-line
    __memcpy_flushcache() more than 5/8's inline memcpy (on devdax 1 GiB, more than the slow path too:
    5.47 against 3.70 million); 8/8's inline MOVNTI fewer than 7/8's call. The memmap the kernel wrote is
    the same size under every strategy."""
    _, run = series_run
    for mode in ("devdax", "fsdax"):
        rows = {r.config.strategy: r for r in run.results if r.config.mode == mode}
        us = {s: r.init_us for s, r in rows.items()}
        assert us["slow"] > us["template"], us
        assert us["template_nt"] > us["template"], us
        assert us["template_nt"] > us["template_nt_inline"], us
        assert len({r.memmap_pages_delta for r in rows.values()}) == 1


@pytest.mark.guest
def test_a_second_boot_of_the_same_namespaces_repeats_every_count_exactly(series_run):
    """Under TCG the guest takes nothing from the host but its inputs (the instruction counter, a seeded
    RNG, a VM clock from a fixed date: qemu.DETERMINISTIC), so a second boot of the same configurations
    binds with the very same instruction counts, bind by bind, whatever the host's load. Within one boot
    the binds of a namespace differ by the timer ticks that land inside the init (one tick: a few
    thousand instructions), which is the resolution a count is read with."""
    kernel, first = series_run
    again = run_guest(kernel, [r.config for r in first.results])
    assert [r.bind_us for r in again.results] == [r.bind_us for r in first.results]


# ---------------------------------------------------------------- a kernel build folder, as make left it

def build_folder(root: Path, built: build.Build, config: str | None = None) -> Path:
    """The files `make bzImage` leaves where a kernel build folder has them, from the series' build."""
    (root / "arch" / "x86" / "boot").mkdir(parents=True)
    (root / "include" / "config").mkdir(parents=True)
    shutil.copy2(built.image, root / "arch" / "x86" / "boot" / "bzImage")
    (root / ".config").write_text(config if config is not None else (built.root / "config").read_text())
    shutil.copy2(built.root / "kernel.release", root / "include" / "config" / "kernel.release")
    shutil.copy2(built.root / "System.map", root / "System.map")
    return root


def test_a_folder_that_is_not_a_kernel_build_is_refused_with_what_it_lacks(tmp_path):
    with pytest.raises(GuestKernelError, match=r"a kernel build folder .*no arch/x86/boot/bzImage; run `make bzImage`"):
        KernelSettings(image=str(tmp_path)).kernel()
    boot = tmp_path / "arch" / "x86" / "boot"
    boot.mkdir(parents=True)
    (boot / "bzImage").write_bytes(b"x")
    with pytest.raises(GuestKernelError, match=r"no \.config beside its bzImage"):
        KernelSettings(image=str(tmp_path)).kernel()
    (tmp_path / ".config").write_text("CONFIG_LIBNVDIMM=y\n# CONFIG_DEV_DAX is not set\n")
    with pytest.raises(GuestKernelError, match=r"its \.config has CONFIG_ACPI_NFIT, CONFIG_ND_BTT, .*CONFIG_DEV_DAX "
                                               r"neither =y nor =m"):
        KernelSettings(image=str(tmp_path)).kernel()
    options = "".join(f"CONFIG_{o}=m\n" for o in kernels.DRIVER_OPTIONS.values())
    (tmp_path / ".config").write_text(options)
    with pytest.raises(GuestKernelError, match=r"=m and there is no modules.order; run `make modules`"):
        KernelSettings(image=str(tmp_path)).kernel()
    with pytest.raises(GuestKernelError, match=r"'kernel.modules' must be left out for a kernel build folder"):
        KernelSettings(image=str(tmp_path), modules=str(tmp_path)).kernel()


@pytest.mark.guest
def test_a_kernel_build_folder_boots_by_its_folder_alone(tmp_path):
    """The series' build laid out as make leaves a build folder (pmem drivers built in): --kernel FOLDER boots
    its bzImage, with no modules, and binds a namespace under the strategy asked for: its System.map says
    it switches (0009's parameter). Without System.map nothing says so, and it has none to switch."""
    built = build.cached_build()
    assert built is not None, "run `make kernels` first"
    tree = build_folder(tmp_path / "linux", built)
    kernel = KernelSettings(image=str(tree)).kernel()
    assert kernel.image == tree / "arch" / "x86" / "boot" / "bzImage" and kernel.modules is None
    assert kernel.release == built.release and kernel.strategies == build.STRATEGIES
    configs = [GuestConfig(mode="devdax", map="mem", align_bytes=2 * MiB, namespace_size_bytes=GiB, strategy=s)
               for s in ("slow", "template_nt")]
    run = run_guest(kernel, configs)
    assert run.release == built.release and [r.status for r in run.results] == ["ok", "ok"], run.results
    slow, nt = run.results
    assert nt.init_us > slow.init_us  # 7/8's out-of-line call: more instructions than the slow path here
    (tree / "System.map").unlink()
    assert KernelSettings(image=str(tree)).kernel().strategies == ()


def modular_folder(root: Path) -> Path:
    """Debian's 6.12 laid out as `make bzImage modules` leaves a build folder: the image, .config, System.map,
    modules.order and modules.builtin at the top, and the pmem drivers' .ko files (decompressed, as make
    writes them) at their source paths, drivers/nvdimm/libnvdimm.ko and the like."""
    deb = debian.cached(debian.DEFAULT_SERIES)
    assert deb is not None, "run `make guest` first"
    mods = deb.root / "lib" / "modules" / deb.release
    (root / "arch" / "x86" / "boot").mkdir(parents=True)
    shutil.copy2(deb.root / "boot" / f"vmlinuz-{deb.release}", root / "arch" / "x86" / "boot" / "bzImage")
    shutil.copy2(deb.root / "boot" / f"config-{deb.release}", root / ".config")
    shutil.copy2(deb.root / "boot" / f"System.map-{deb.release}", root / "System.map")
    for name in ("modules.order", "modules.builtin"):
        (root / name).write_text((mods / name).read_text().replace("kernel/", ""))
    for sub in ("drivers/nvdimm", "drivers/dax", "drivers/acpi/nfit"):
        for ko in (mods / "kernel" / sub).rglob("*.ko.xz"):
            dest = root / ko.relative_to(mods / "kernel").with_suffix("")
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(lzma.decompress(ko.read_bytes()))
    return root


@pytest.mark.guest
def test_a_modular_build_folder_boots_with_the_modules_it_built(tmp_path):
    """A build folder whose .config makes the pmem drivers modules (=m) boots with the .ko files make left in
    it, found through its modules.order: no lib/modules folder, no --modules. Debian's 6.12 has no strategy
    parameter in its System.map, so it runs the slow path it has."""
    tree = modular_folder(tmp_path / "linux")
    kernel = KernelSettings(image=str(tree)).kernel()
    assert kernel.modules == tree and kernel.strategies == ()
    run = run_guest(kernel, [GuestConfig(mode="fsdax", map="dev", align_bytes=2 * MiB, namespace_size_bytes=GiB)])
    assert run.results[0].status == "ok", run.results[0].reason
    assert run.release == kernel.release == debian.cached(debian.DEFAULT_SERIES).release


def test_the_base_is_the_series_source_and_config_without_the_patches():
    """base:6.12 builds the same source with the same config options and compiler, no patch: its own digest
    (so its own cached folder) and no strategies to switch; the series' rows are read against it and Debian's
    6.12, unless `references = false`."""
    assert build._patches(build.BASE) == [] and build._patches(build.NAME) == build.patches()
    assert build.digest(build.BASE) != build.digest(build.NAME)
    refs = KernelSettings(image="series:6.12", binds=2).reference_settings()
    assert {c: (r.image, r.binds, r.references) for c, r in refs.items()} == {
        "kernel_base": ("base:6.12", 2, False), "kernel_stock": ("debian:6.12", 2, False)}
    assert KernelSettings(image="series:6.12", references=False).reference_settings() == {}
    assert KernelSettings(image="debian:6.12").reference_settings() == {}
    with pytest.raises(GuestKernelError, match=r"'kernel.references' must be true or false \(got 'yes'\)"):
        KernelSettings(references="yes")
