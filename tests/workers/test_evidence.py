"""What each answer rests on (workers/evidence.py), derived from the models' declarations and the profile."""

from __future__ import annotations

from sweeps.run.sources import SourceSettings, model_rows
from sweeps.spec.grid import decode, grid_for
from sweeps.spec.load import parse_spec
from workers import evidence, get_model
from workers.evaluate import evaluate
from workers.model import points_frame
from workers.profiles import load_profile

SEED = load_profile("seed")
MEMMAP = get_model("memmap")
# The seed series' own point (one of the eight figures), and 4 TiB at 1 GiB align: the issue's question.
SEED_POINT = dict(namespace_size="100GiB", align="2MiB", mode="fsdax", map="dev", strategy="template")
BIG = dict(namespace_size="4TiB", align="1GiB", mode="devdax", map="dev", strategy="template_nt_inline")


def labels(model, points: list[dict], profile=SEED, metric=None) -> list[tuple[str, str]]:
    rows = evaluate(model, points_frame(model, points), profile)
    return evidence.label(model, profile, rows, metric).rows()


def test_the_seed_point_is_fit():
    """The point of a published figure the profile was fit to is `fit`, naming the figure."""
    assert labels(MEMMAP, [SEED_POINT]) == [("fit", "fit to memmap/fsdax/template")]


def test_a_validation_point_is_validated():
    """The point of one of the profile's validation figures (published elsewhere, never fit) is `validated`."""
    young = get_model("young")
    point = dict(namespace_size="8GiB", align="2MiB", compound_order=4, young_fraction=1.0, arch="arm64",
                 first_pte_cont=True, batching="per_pte", lru="classic")
    point.update(next(v["params"] for v in SEED.validation if v["id"] == "young/validation/classic/arm64/per_pte"))
    assert labels(young, [point]) == [("validated", "validated by young/validation/classic/arm64/per_pte")]


def test_4tib_at_1gib_align_is_extrapolated_along_both_axes():
    """A point no figure has is `extrapolated`, naming each axis and how far it is from the figures' values."""
    [(label, note)] = labels(MEMMAP, [BIG])
    assert label == "extrapolated"
    assert note == ("namespace_size 4TiB: 41x the largest with a figure (100GiB); "
                    "align 1GiB: 512x the largest with a figure (2MiB)")


def test_pmem_rests_on_costs_from_another_machine():
    """medium = pmem (map=dev) is `assumed`: its costs are not this profile's fit; map=mem on pmem is not."""
    [(label, note), (mem_label, mem_note)] = labels(MEMMAP, [{**SEED_POINT, "medium": "pmem"},
                                                             {**BIG, "map": "mem", "medium": "pmem"}])
    assert label == "assumed"
    assert note == ("medium pmem: no figure (figures at dram); assumed: pmem costs: another machine's "
                    "DRAM-to-Optane ratios (memmap.pmem_*_ratio)")
    assert "pmem costs" not in mem_note


def test_struct_pages_that_fit_the_llc_rest_on_a_warm_llc():
    """map=mem at 4 TiB / 1 GiB stores a few MiB of struct pages: priced LLC-warm, and its label says so;
    a 100 GiB map=dev memmap (1.6 GiB of struct pages) is not."""
    [(label, note), (_, seed_note)] = labels(MEMMAP, [{**BIG, "map": "mem"}, SEED_POINT])
    assert label == "assumed" and note.endswith("assumed: LLC-warm struct pages (copy.warm_llc)")
    assert "map mem: no figure (figures at dev)" in note and "LLC" not in seed_note


def test_an_uncalibrated_profile_is_assumed_everywhere():
    """epyc_genoa (NOT calibrated): even the seed's own point is `assumed`, and the note says why."""
    genoa = load_profile("epyc_genoa")
    [(label, note)] = labels(MEMMAP, [SEED_POINT], profile=genoa)
    assert (label, note) == ("assumed", "at the point of memmap/fsdax/template; assumed: profile epyc_genoa "
                                        "not calibrated (what-if)")


def test_a_profile_that_changes_a_fitted_base_is_a_what_if():
    """guest_4k_host sets pfnmap.virtualized apart from seed's fit: its rows at a fit point are `assumed`;
    bare_metal restates seed's values and keeps `fit`."""
    pfnmap = get_model("pfnmap")
    figure = pfnmap.calibration.figures[0]
    [(guest, note)] = labels(pfnmap, [figure.params], profile=load_profile("guest_4k_host"))
    [(bare, _)] = labels(pfnmap, [figure.params], profile=load_profile("bare_metal"))
    assert guest == "assumed" and "sets pfnmap.virtualized apart from the costs fit in seed" in note
    assert bare == "fit"


def test_a_count_the_kernel_gives_is_kernel_checked_only_where_a_guest_bound_it():
    """memmap_pages is the kernel's own arithmetic (KernelCheck.exact): `kernel-checked` at a point the
    recorded kernel results bound (the `kernel` spec's 2 GiB devdax 2 MiB map=mem), `extrapolated` at 4 TiB,
    on pmem, at a 2 MiB start offset, at P = 80 and at the seed's 100 GiB, none of which a guest bound."""
    bound = dict(namespace_size="2GiB", align="2MiB", mode="devdax", map="mem", strategy="template")
    points = [bound, BIG, {**bound, "medium": "pmem", "map": "dev"}, {**bound, "start_offset": "2MiB"},
              {**bound, "struct_page_size": 80}, SEED_POINT]
    got = labels(MEMMAP, points, metric="metric_memmap_pages")
    assert [label for label, _ in got] == ["kernel-checked"] + ["extrapolated"] * 5
    assert got[0][1] == "memmap_pages: the kernel's own arithmetic, equal to a guest's at this point"
    assert got[1][1] == "memmap_pages: the kernel's own arithmetic; no guest bound this point"


def test_a_count_no_cost_bears_on_is_never_fit():
    """At the seed's fit point the time is `fit`; the DRAM bytes of the same row (the kernel's arithmetic,
    Model.arithmetic, which no guest gives) are not: `extrapolated`, even where a guest bound the point."""
    bound = dict(namespace_size="2GiB", align="2MiB", mode="devdax", map="mem", strategy="template")
    assert labels(MEMMAP, [SEED_POINT])[0][0] == "fit"
    got = labels(MEMMAP, [SEED_POINT, bound], metric="metric_memmap_dram_bytes")
    assert got == [("extrapolated", "memmap_dram_bytes: the kernel's own arithmetic; no guest gives it")] * 2


def test_modeled_rows_carry_evidence():
    """The model backend labels every row it writes, the sweep's own answer among them."""
    spec = parse_spec('name = "e"\nmodels = ["memmap"]\n[axes.memmap]\nnamespace_size = ["100GiB", "4TiB"]\n'
                      'strategy = ["template"]\nmode = ["fsdax"]\nalign = ["2MiB"]\n')
    params = decode(grid_for(spec, "memmap"), 0, 2).drop("point_id")
    out = model_rows(MEMMAP, params, spec.profile, SourceSettings())
    assert sorted(out["evidence"].to_list()) == ["extrapolated", "fit"]


def test_an_assumption_about_costs_is_no_part_of_a_counts_evidence():
    """LLC-warm bears on memmap's times: the DRAM bytes of the same map=mem point are extrapolated, not assumed."""
    point = [{**BIG, "map": "mem"}]
    [(time_label, _)] = labels(MEMMAP, point)
    [(bytes_label, note)] = labels(MEMMAP, point, metric="metric_memmap_dram_bytes")
    assert (time_label, bytes_label) == ("assumed", "extrapolated") and "LLC" not in note


def test_a_byte_count_axis_reads_as_a_size():
    """start_offset counts bytes (an int axis): its note gives 10MiB, not 10485760."""
    [(label, note)] = labels(MEMMAP, [{**SEED_POINT, "start_offset": 10 * 2 ** 20}])
    assert label == "extrapolated" and "start_offset 10MiB: no figure (figures at 0)" in note
