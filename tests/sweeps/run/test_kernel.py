"""The `kernel` row source: a spec asks for it (`source = ["model", "kernel"]`, `[kernel]`, `--kernel`), the
memmap model says which points a kernel can hold, and, marked `guest`, a real sweep binds them in Debian's
6.12 in QEMU: its rows sit beside the model's with the same point ids, and their counts equal the model's
and the kernel arithmetic written out here."""

from __future__ import annotations

import re

import polars as pl
import pytest

from sweeps.exceptions import SpecError
from sweeps.run.chunks import plan
from sweeps.spec.load import parse_spec, with_kernel
from tests.conftest import memsweep, memsweep_here, tree_state
from workers import get_model
from workers.guest import GuestConfig
from workers.guest.settings import KernelSettings
from workers.model import points_frame
from workers.units import GiB, KiB, MiB

MEMMAP = get_model("memmap")
PAGE, STRUCT_PAGE = 4 * KiB, 64
SPEC = """name = "kern"
models = ["memmap"]
source = ["model", "kernel"]
chunk_points = 32
[kernel]
accel = "tcg"
[axes.memmap]
namespace_size = ["1GiB", "2GiB"]
struct_page_size = [64]
align = ["2MiB", "1GiB"]
mode = ["fsdax", "devdax"]
map = ["dev", "mem"]
strategy = ["slow", "template_nt_inline"]
"""


@pytest.mark.guest  # planning kernel chunks names the kernel: Debian's 6.12, fetched by make guest
def test_source_takes_a_list_in_the_order_the_sources_run():
    spec = parse_spec(SPEC.replace('["model", "kernel"]', '["kernel", "model"]'))
    assert spec.sources == ("model", "kernel") and spec.settings["kernel"].accel == "tcg"
    assert parse_spec(SPEC.replace('["model", "kernel"]', '"both"')).sources == ("model", "measured")
    kernel_chunks = [c for c in plan(spec) if c.source == "kernel"]
    assert sum(c.points for c in kernel_chunks) == spec.points("memmap") == 32 and len(kernel_chunks) == 1  # one boot


@pytest.mark.parametrize("edit, message", [
    (('["model", "kernel"]', '["model", "guest"]'),
     r"'source' must be one of \['both', 'kernel', 'measured', 'model'\] or a list of \['model', 'measured', "
     r"'kernel'\] \(got \['model', 'guest'\]\)"),
    (('accel = "tcg"', 'accel = "fast"'), r"'kernel.accel' must be one of \['auto', 'tcg', 'kvm'\] \(got 'fast'\)"),
    (('accel = "tcg"', 'cores = 2'), r"'kernel.cores' is not a kernel key; allowed keys are \[.*\]"),
    (('accel = "tcg"', 'image = "debian:5.10"'), r"'kernel.image' must be a kernel image path or one of "
                                                 r"\['debian:6.12', 'debian:6.1', 'series:6.12'\] \(got 'debian:5.10'\)"),
])
def test_a_bad_source_or_kernel_table_names_the_field(edit, message):
    with pytest.raises(SpecError, match=message):
        parse_spec(SPEC.replace(*edit))


def test_a_missing_kernel_image_exits_2_naming_it_and_writes_nothing(tmp_path, spec_file):
    spec = spec_file(SPEC)
    before = tree_state(tmp_path)
    r = memsweep("run", str(spec), "--out", str(tmp_path / "out"), "--kernel", "no/such/bzImage", cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert r.stderr.startswith("memsweep run: error: 'image' must be an existing kernel image file (got ")
    assert str(tmp_path / "no/such/bzImage") in r.stderr and tree_state(tmp_path) == before


def test_kernel_options_need_a_spec_with_kernel_rows(spec_file):
    model_only = parse_spec(SPEC.replace('["model", "kernel"]', '"model"'))
    with pytest.raises(SpecError, match=r"'--kernel' needs a spec whose 'source' has 'kernel' \(got \['model'\]\)"):
        with_kernel(model_only, image="debian:6.1")
    assert with_kernel(model_only) == model_only


def test_a_kernel_image_is_a_bzimage_or_an_elf(tmp_path):
    not_a_kernel = tmp_path / "bzImage"
    not_a_kernel.write_bytes(b"\0" * 8192)
    with pytest.raises(SpecError, match=r"bzImage"):
        with_kernel(parse_spec(SPEC), image=str(not_a_kernel))


def points(**axes) -> pl.DataFrame:
    base = {"namespace_size": 2 * GiB, "strategy": "slow", "align": 2 * MiB}
    return points_frame(MEMMAP, [{**base, **axes}])


@pytest.mark.parametrize("axes, reason", [
    ({"strategy": "template_nt_inline"}, r"the kernel under test has strategy 'slow' only"),
    ({"struct_page_size": 80}, r"the kernel under test has 64-byte struct pages"),
    ({"mode": "devdax", "compound_order": 0}, r"the kernel chooses the compound order itself: 9 for devdax at align 2MiB"),
    ({"start_offset": 2 * MiB}, r"start 1GiB-aligned"),
    ({"medium": "pmem"}, r"emulated pmem in the guest's RAM"),
    ({"nvdimm_kmsan": True}, r"CONFIG_NVDIMM_KMSAN"),
    ({"namespace_size": 128 * GiB}, r"namespaces up to 64GiB"),
])
@pytest.mark.guest  # the plan asks the kernel under test (Debian's 6.12, fetched by make guest) what it holds
def test_points_a_stock_kernel_cannot_hold_say_why(axes, reason):
    [why] = MEMMAP.kernel.plan(points(**axes), KernelSettings())
    assert isinstance(why, str) and re.search(reason, why), why


@pytest.mark.guest  # as above: Debian's 6.12 names the strategies it can switch among
def test_the_rest_become_the_namespace_to_bind():
    [config] = MEMMAP.kernel.plan(points(mode="devdax", map="mem", align=GiB, compound_order=18), KernelSettings())
    assert config == GuestConfig(mode="devdax", map="mem", align_bytes=GiB, namespace_size_bytes=2 * GiB, binds=3)
    patched = KernelSettings(strategy="template_nt_inline", struct_page_size=80)
    [config] = MEMMAP.kernel.plan(points(strategy="template_nt_inline", struct_page_size=80), patched)
    assert isinstance(config, GuestConfig)


# ---------------------------------------------------------------- a real sweep, marked guest

# 2 GiB namespaces: struct pages of the range (map=mem, or on the device with map=dev) in vmemmap pages
# (6.12's nr_memmap_pages), unless devdax map=mem keeps 2 vmemmap pages per compound (vmemmap optimization).
PFNS_2G = 2 * GiB // PAGE
PAGES_2G = PFNS_2G * STRUCT_PAGE // PAGE  # 8192
EXPECTED_PAGES = {
    ("fsdax", 2 * MiB, "dev"): PAGES_2G, ("fsdax", 2 * MiB, "mem"): PAGES_2G,
    ("fsdax", GiB, "dev"): PAGES_2G, ("fsdax", GiB, "mem"): PAGES_2G,
    ("devdax", 2 * MiB, "dev"): PAGES_2G, ("devdax", 2 * MiB, "mem"): (2 * GiB // (2 * MiB)) * 2,  # 2048
    ("devdax", GiB, "dev"): PAGES_2G, ("devdax", GiB, "mem"): (2 * GiB // GiB) * 2,  # 4
}
# nd_pfn_init(): the 8 KiB info block, plus 64 B per pfn with map=dev, aligned up to max(align, 2 MiB)
EXPECTED_OFFSET = {(align, m): max(align, 2 * MiB) * -(-(8 * KiB + (PFNS_2G * STRUCT_PAGE if m == "dev" else 0))
                                                       // max(align, 2 * MiB))
                   for align in (2 * MiB, GiB) for m in ("dev", "mem")}


@pytest.fixture(scope="module")
def kernel_sweep(tmp_path_factory):
    out = tmp_path_factory.mktemp("kernel")
    (out / "kern.toml").write_text(SPEC)
    r = memsweep("run", "kern.toml", "--out", "out", "--quiet", "--no-report", cwd=out, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return out / "out" / "kern", r


@pytest.mark.guest
def test_every_kernel_row_has_its_model_row_and_verify_passes(kernel_sweep, ray_local):
    """Each kernel row beside its point's model row, from the guest's 6.12 under TCG; verify passes, and a
    rerun (in this process, on the session's Ray) computes nothing."""
    folder, run = kernel_sweep
    df = pl.read_parquet(folder / "model=memmap" / "*.parquet")
    kernel, model = df.filter(pl.col("source") == "kernel"), df.filter(pl.col("source") == "model")
    assert kernel.height == model.height == 32
    assert set(kernel["point_id"]) == set(model["point_id"])
    ok = kernel.filter(pl.col("status") == "ok")
    assert ok["env_guest_kernel"].str.starts_with("6.12.").all() and set(ok["env_accel"]) == {"tcg"}
    assert ok["env_guest_cmdline"].str.contains("console=").all()
    assert model["env_guest_kernel"].is_null().all()
    assert memsweep_here("verify", str(folder)).returncode == 0
    again = memsweep_here("run", str(folder.parent.parent / "kern.toml"), "--out", str(folder.parent), "--quiet",
                          "--no-report")
    assert again.returncode == 0 and "0 computed" in again.stdout, again.stdout + again.stderr


@pytest.mark.guest
def test_kernel_counts_equal_the_model_and_the_arithmetic(kernel_sweep):
    folder, _ = kernel_sweep
    df = pl.read_parquet(folder / "model=memmap" / "*.parquet").filter(
        (pl.col("param_namespace_size") == 2 * GiB) & (pl.col("param_strategy") == "slow"))
    exact = list(MEMMAP.kernel.exact)
    pairs = df.filter(pl.col("source") == "kernel").join(df.filter(pl.col("source") == "model"), on="point_id",
                                                         suffix="_model")
    assert pairs.height == 8 and (pairs["status"] == "ok").all()
    for row in pairs.iter_rows(named=True):
        key = (row["param_mode"], row["param_align"], row["param_map"])
        assert row["metric_memmap_pages"] == EXPECTED_PAGES[key], key
        assert row["metric_offset_bytes"] == EXPECTED_OFFSET[key[1:]], key
        assert {c: row[c] for c in exact} == {c: row[f"{c}_model"] for c in exact}, key
        # under TCG's instruction counter: an instruction count, the median of 3 binds that agree within 0.1%
        assert row["metric_init_instructions"] > 0 and row["metric_init_ms"] is None, key
        assert row["measure_repeats"] == 3 and row["measure_min"] <= row["measure_median"], key
        assert row["measure_median"] - row["measure_min"] < 1e-3 * row["measure_min"], key


@pytest.mark.guest
def test_the_kernel_refuses_what_the_model_refuses_with_its_own_message(kernel_sweep):
    """1 GiB devdax at 1 GiB align: nd_pfn_init() leaves no data after a 1 GiB offset."""
    folder, _ = kernel_sweep
    df = pl.read_parquet(folder / "model=memmap" / "*.parquet").filter(
        (pl.col("param_namespace_size") == GiB) & (pl.col("param_align") == GiB) & (pl.col("param_strategy") == "slow"))
    kernel = df.filter(pl.col("source") == "kernel")
    assert (kernel["status"] == "infeasible").all() and (df.filter(pl.col("source") == "model")["status"]
                                                         == "infeasible").all()
    assert kernel["reason"].str.contains("unable to satisfy requested alignment").any(), kernel["reason"].to_list()
    other = pl.read_parquet(folder / "model=memmap" / "*.parquet").filter(
        (pl.col("source") == "kernel") & (pl.col("param_strategy") == "template_nt_inline"))
    assert (other["status"] == "infeasible").all() and other["reason"].str.contains("strategy 'slow' only").all()
