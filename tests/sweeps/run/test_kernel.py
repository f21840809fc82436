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
                                                 r"\['debian:6.12', 'debian:6.1', 'series:6.12', 'base:6.12'\] "
                                                 r"\(got 'debian:5.10'\)"),
    (('accel = "tcg"', 'base = "linux-base"'), r"'kernel.base' must be a path, beside an image that is a path "
                                              r"\(got image 'debian:6.12', base '.*linux-base'\)"),
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


def test_a_base_that_is_no_kernel_is_named_as_the_base(tmp_path, spec_file):
    """[kernel] base beside a user's image: a base that is no kernel is refused as the base, nothing written."""
    from tests.workers.guest.test_guest import bzimage, modules_dir

    image, modules = bzimage(tmp_path / "bzImage"), modules_dir(tmp_path)
    spec = spec_file(SPEC.replace('accel = "tcg"', f'accel = "tcg"\nimage = "{image}"\nmodules = "{modules}"\n'
                                                   'base = "no/such/base"'))
    before = tree_state(tmp_path)
    r = memsweep("run", str(spec), "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert r.stderr.startswith("memsweep run: error: 'kernel.base' must be a kernel image or build folder, as "
                               "'image' is ('image' must be an existing kernel image file (got "), r.stderr
    assert tree_state(tmp_path) == before


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
        # under TCG's instruction counter: an instruction count (the median of one boot's 3 binds), one sample
        assert row["metric_init_instructions"] > 0 and row["metric_init_ms"] is None, key
        assert row["measure_repeats"] == 1, key
        assert row["measure_min"] == row["measure_median"] == row["measure_max"] == row["metric_init_instructions"], key


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


@pytest.fixture(scope="module")
def series_sweep(tmp_path_factory):
    """The same points bound by the seed series' build (make kernels) at its shipped strategy only."""
    out = tmp_path_factory.mktemp("series")
    (out / "series.toml").write_text(SPEC.replace('name = "kern"', 'name = "series"').replace(
        'strategy = ["slow", "template_nt_inline"]', 'strategy = ["template_nt_inline"]'))
    r = memsweep("run", "series.toml", "--out", "out", "--kernel", "series:6.12", "--quiet", "--no-report", cwd=out,
                 timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return out / "out" / "series"


LABELS = {GiB: "1GiB", 2 * GiB: "2GiB", 2 * MiB: "2MiB"}


@pytest.mark.guest
def test_pair_gives_the_series_shipped_path_against_debians_slow_path_as_a_join_does(kernel_sweep, series_sweep):
    """`compare DEBIAN SERIES --pair strategy=slow:template_nt_inline --format mail`: without a flag for the
    rows or the metric, the kernel rows' instructions; each listed configuration's change is the one a
    polars join of the two sweeps' kernel rows on every other axis gives, and its rows cover the join."""
    deb, _ = kernel_sweep
    r = memsweep("compare", str(deb), str(series_sweep), "--pair", "strategy=slow:template_nt_inline",
                 "--format", "mail")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "paired: A at strategy=slow, B at strategy=template_nt_inline" in lines
    assert "memmap init_instructions: kernel rows, lower is better" in lines
    assert re.search(r"^A: kern: profile seed; kernel debian:6\.12, image [0-9a-f]{8}, 6\.12\.", r.stdout, re.M)
    assert re.search(r"^B: series: profile seed; kernel series:6\.12, image [0-9a-f]{8}, 6\.12\.", r.stdout, re.M)
    assert max(map(len, lines)) < 80

    def kernel_rows(folder, strategy):
        return pl.read_parquet(folder / "model=memmap" / "*.parquet").filter(
            (pl.col("source") == "kernel") & (pl.col("status") == "ok") & (pl.col("param_strategy") == strategy))
    axes = ["param_namespace_size", "param_align", "param_mode", "param_map"]
    joined = kernel_rows(deb, "slow").join(kernel_rows(series_sweep, "template_nt_inline"), on=axes, suffix="_b")
    assert joined.height > 0
    change = {tuple(LABELS.get(v, v) for v in row[:4]): f"({(row[5] - row[4]) / row[4] * 100:+.1f}%)"
              for row in joined.select(*axes, "metric_init_instructions", "metric_init_instructions_b").rows()}
    covered = 0
    for config, points, shown in mail_rows(lines, ["namespace_size", "align", "mode", "map"]):
        matches = [k for k in change if all(c in ("*", v) for c, v in zip(config, k))]
        assert len(matches) >= points and all(change[k] == shown for k in matches), (config, shown, matches)
        covered += points
    assert covered == joined.height
    devdax = [v for k, v in change.items() if k[1] == "2MiB" and k[2] == "devdax" and k[3] == "dev"]
    assert devdax and all(v.startswith("(-2") for v in devdax)  # the template copy: ~27% fewer instructions


def mail_rows(lines: list[str], axes: list[str]) -> list[tuple[list[str], int, str]]:
    """(the axis values, the points, the change) of each row of a mail block's table, whether the table fits
    a line (the axes as columns) or puts each configuration on a line of its own ("axis=value ...")."""
    first = next(i for i, line in enumerate(lines) if line.startswith("each of the ") or " largest changes " in line)
    head, out = lines[first + 1].split(), []
    body = lines[first + 2:]
    if head[:len(axes)] == axes:  # one line per row
        for line in body:
            cells = line.split()
            if not cells or not cells[-1].startswith(("(", "**")):
                break
            points = int(cells[len(axes)]) if head[len(axes)] == "points" else 1
            out.append((cells[:len(axes)], points, cells[-2] if cells[-1] == "**" else cells[-1]))
        return out
    for config, values in zip(body[::2], body[1::2]):
        if "=" not in config:
            break
        named = dict(pair.split("=", 1) for pair in config.split())
        cells = values.split()
        points = int(cells[0]) if head[0] == "points" else 1
        out.append(([named[a] for a in axes], points, cells[-2] if cells[-1] == "**" else cells[-1]))
    return out


@pytest.mark.guest
def test_three_boots_are_three_samples_that_repeat_exactly_and_carry_the_sampled_rule(tmp_path):
    """[kernel] boots = 3 on the series' build: each row's samples are its three boots, which TCG's counter
    repeats exactly (min = median = max); within the sweep, --pair strategy=slow:template_nt_inline finds the
    template copy 20-40% under the series' own slow path (31% at 1 GiB devdax map=mem) by LKP's rule (`**`),
    and says the samples are boots."""
    spec = SPEC.replace('name = "kern"', 'name = "boots"').replace('accel = "tcg"', 'accel = "tcg"\nboots = 3')
    spec = re.sub(r'namespace_size = \[.*\]', 'namespace_size = ["1GiB"]', spec)
    spec = re.sub(r'align = \[.*\]', 'align = ["2MiB"]', spec)
    spec = spec.replace('mode = ["fsdax", "devdax"]', 'mode = ["devdax"]')
    spec = spec.replace('map = ["dev", "mem"]', 'map = ["mem"]')
    (tmp_path / "boots.toml").write_text(spec)
    r = memsweep("run", "boots.toml", "--out", "out", "--kernel", "series:6.12", "--quiet", "--no-report",
                 cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    folder = tmp_path / "out" / "boots"
    rows = pl.read_parquet(folder / "model=memmap" / "*.parquet").filter(pl.col("source") == "kernel")
    assert rows.height == 2 and (rows["status"] == "ok").all()
    assert (rows["measure_repeats"] == 3).all()
    assert (rows["measure_min"] == rows["measure_max"]).all()
    assert (rows["measure_median"] == rows["metric_init_instructions"].cast(pl.Float64)).all()
    r = memsweep("compare", str(folder), str(folder), "--pair", "strategy=slow:template_nt_inline", "--format", "mail")
    assert r.returncode == 0, r.stderr
    [marked] = [line.split() for line in r.stdout.splitlines() if line.endswith("  **")]
    assert -40 < float(marked[-2].strip("(%)")) < -20 and "**: a change by the sampled rule above" in r.stdout
    assert "samples of the kernel rows: A 3 boots, B 3 boots a point" in " ".join(r.stdout.split())


def test_the_example_kernel_ab_spec_boots_each_kernel_three_times():
    """examples/kernel-ab.toml, the README's kernel A/B: four devdax points a strategy, three boots a kernel."""
    from tests.conftest import ROOT

    spec = parse_spec((ROOT / "examples" / "kernel-ab.toml").read_text())
    assert spec.settings["kernel"].boots == 3 and spec.settings["kernel"].image == "series:6.12"
    assert spec.points("memmap") == 8


@pytest.mark.guest
def test_the_series_rows_are_read_against_their_base_and_debians_kernel(series_sweep):
    """With the series' build, each ok kernel row holds the same namespace's instructions on the slow path of
    its base (base:6.12, built by make kernels: the same source and config without the patches) and of
    Debian's 6.12: the patches' effect and the config's are two numbers, and the report says both."""
    rows = pl.read_parquet(series_sweep / "model=memmap" / "*.parquet").filter(
        (pl.col("source") == "kernel") & (pl.col("status") == "ok"))
    assert rows.height > 0 and rows["kernel_base"].is_not_null().all() and rows["kernel_stock"].is_not_null().all()
    patches = rows["kernel_base"] / rows["metric_init_instructions"]
    devdax = (rows["param_mode"] == "devdax") & (rows["param_align"] == 2 * MiB) & (rows["param_map"] == "dev")
    assert (patches.filter(devdax) > 1.1).all()  # the template copy: the shipped path does less than unpatched code
    assert (patches.filter(rows["param_mode"] == "fsdax") < 1.05).all()  # fsdax has no compound pages to template
    r = memsweep("report", str(series_sweep))
    assert r.returncode == 0, r.stderr
    html = (series_sweep / "_report" / "report.html").read_text()
    assert "what the patches change and what the config changes (patches " in html and ", config " in html


@pytest.mark.guest
def test_a_count_against_a_kernel_its_costs_were_not_fit_to_gets_no_verdict_until_calibrate_fits_them(
        kernel_sweep, tmp_path):
    """The model prices instructions with memsweep's series:6.12 build's costs; against Debian's 6.12 rows,
    `compare --sources model:kernel` says the model was not fit to that kernel (no better or worse).
    `calibrate --from` fits Debian's build to its kernel rows and `--save` writes a profile; a sweep run with
    it prices that build, names it in kernel_build, and is compared point by point again."""
    deb, _ = kernel_sweep
    kernel = pl.read_parquet(deb / "model=memmap" / "*.parquet").filter(
        (pl.col("source") == "kernel") & (pl.col("status") == "ok"))
    assert set(kernel["kernel_build"]) == {"debian:6.12"}
    r = memsweep_here("compare", str(deb), str(deb), "--sources", "model:kernel")
    assert r.returncode == 0, r.stderr
    assert re.search(r"points compared: B/A median \S+ \(min \S+, max \S+\); all \d+ not fit: the model was not "
                     r"fit to that kernel: A's modeled counts price build series:6\.12's instructions per "
                     r"operation, B's kernel rows ran build debian:6\.12", r.stdout), r.stdout
    assert " better, " not in r.stdout

    saved = tmp_path / "deb612.toml"
    r = memsweep_here("calibrate", "--from", str(deb), "--holdout", "1GiB", "--save", str(saved))
    assert r.returncode == 2 and "'--holdout' chooses how measured rows are fit" in r.stderr and not saved.exists()
    r = memsweep_here("calibrate", "--from", str(deb), "--save", str(saved))
    assert r.returncode == 0, r.stderr
    assert "instructions of build debian:6.12: nnls over" in r.stdout and "worst leave-one-out error" in r.stdout
    (tmp_path / "priced.toml").write_text(SPEC.replace('name = "kern"', 'name = "priced"\nprofile = "deb612.toml"')
                                          .replace('source = ["model", "kernel"]', 'source = ["model"]'))
    r = memsweep("run", "priced.toml", "--out", "out", "--quiet", "--no-report", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    priced = tmp_path / "out" / "priced"
    model = pl.read_parquet(priced / "model=memmap" / "*.parquet").filter(pl.col("status") == "ok")
    counted = model.filter(pl.col("param_strategy") == "slow")  # Debian's build has no template copy to price
    assert set(counted["kernel_build"]) == {"debian:6.12"} and counted["metric_init_instructions"].is_not_null().all()
    assert model.filter(pl.col("param_strategy") != "slow")["metric_init_instructions"].is_null().all()
    r = memsweep_here("compare", str(priced), str(deb), "--sources", "model:kernel")
    assert r.returncode == 0, r.stderr
    assert "not fit" not in r.stdout and "init_instructions, model (A) vs kernel (B)" in r.stdout


@pytest.mark.guest
def test_a_users_build_folder_given_with_its_base_is_read_against_it(tmp_path):
    """A user's patched tree and its base tree (here the series' build and its base, laid out as make leaves
    them): each kernel row holds the same namespace's instructions on the base, slow path (kernel_base), no
    distribution kernel's (kernel_stock), and names its build by release and image digest; the report gives
    the patches' effect alone."""
    from tests.workers.guest.test_build import build_folder
    from workers.guest import build

    series, base = build.cached_build(), build.cached_build(name=build.BASE)
    assert series is not None and base is not None, "run `make kernels` first"
    build_folder(tmp_path / "linux", series)
    build_folder(tmp_path / "linux-base", base)
    (tmp_path / "mine.toml").write_text(SPEC.replace('name = "kern"', 'name = "mine"').replace(
        '[kernel]\n', '[kernel]\nimage = "linux"\nbase = "linux-base"\n').replace(
        'align = ["2MiB", "1GiB"]', 'align = ["2MiB"]').replace('namespace_size = ["1GiB", "2GiB"]',
                                                                   'namespace_size = ["1GiB"]'))
    r = memsweep("run", "mine.toml", "--out", "out", "--quiet", cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    folder = tmp_path / "out" / "mine"
    rows = pl.read_parquet(folder / "model=memmap" / "*.parquet").filter(
        (pl.col("source") == "kernel") & (pl.col("status") == "ok"))
    assert rows.height == 8 and rows["kernel_base"].is_not_null().all() and rows["kernel_stock"].is_null().all()
    assert rows["kernel_build"].str.contains(rf"^{re.escape(series.release)}@[0-9a-f]{{16}}$").all()
    shipped = rows.filter((pl.col("param_mode") == "devdax") & (pl.col("param_strategy") == "template_nt_inline"))
    assert ((shipped["kernel_base"] / shipped["metric_init_instructions"]) > 1.1).all()  # the template copy
    html = (folder / "_report" / "report.html").read_text()
    assert "what the patches change (patches " in html and "what the config changes" not in html
    r = memsweep_here("compare", str(folder), str(folder))
    assert r.returncode == 0 and re.search(r"^A's patches: its base .* median \d\.\d{3}x", r.stdout, re.M), r.stdout
