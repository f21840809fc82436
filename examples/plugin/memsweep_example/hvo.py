"""hvo: HugeTLB Vmemmap Optimization (HVO) when `nr_hugepages` grows, per folio or batched.

Writing N to /proc/sys/vm/nr_hugepages (or hugepages-2048kB/nr_hugepages) allocates N 2 MiB
hugetlb folios in set_max_huge_pages() (mm/hugetlb.c): per folio, an order-9 buddy allocation
whose prep_compound_page() writes its 512 struct pages. With HVO on, hugetlb_vmemmap_optimize_folio()
(mm/hugetlb_vmemmap.c) then frees the folio's vmemmap but one page: the folio's 512 struct pages
fill n = 512 * P / 4096 vmemmap pages (8 at P = 64 bytes); vmemmap_remap_free() allocates a new
head page and copy_page()s the first one into it, walks the n PTEs (walk_page_range_novma()),
points each at the new head page (vmemmap_remap_pte(), set_pte_at()) and frees the n old pages
(free_vmemmap_page_list()). Boot memory's vmemmap is PMD-mapped on x86_64 (vmemmap_populate()
uses vmemmap_populate_hugepages() with PSE), so the first folio in each 2 MiB of vmemmap splits
that PMD: vmemmap_split_pmd() allocates a PTE page and writes 512 PTEs. HVO needs sizeof(struct
page) to be a power of two (hugetlb_vmemmap_optimizable_size()); otherwise it does nothing.

Every change of the kernel's own page tables needs a TLB flush on every CPU: flush_tlb_kernel_range()
and flush_tlb_all() (arch/x86/mm/tlb.c) are on_each_cpu() IPIs, so a flush costs more the more
CPUs there are, and more in a guest, where each IPI traps to the hypervisor.
- batching = per_folio, the kernel before the batching series (next-20230824): each folio's
  vmemmap_remap_range() flushes its n pages, and each PMD split flushes its 2 MiB.
- batching = batched, Mike Kravetz's series (v6.7, hugetlb_vmemmap_optimize_folios()): the whole
  write is one list; all PMDs are split, one flush_tlb_all(), all folios remapped, one more
  flush_tlb_all(): 2 flushes, made whether or not HVO is on (prep_and_add_allocated_folios()
  always hands the list over).

Assumptions: the folios fill consecutive 2 MiB vmemmap blocks (so each block is split once);
the pool starts empty and every allocation succeeds. Not modeled: the synchronize_rcu() later
kernels add to HVO (2024, after the published figures), 1 GiB folios (alloc_contig_pages()), the
free path (hugetlb_vmemmap_restore_folios()).

Costs come from the profile's [hvo] section. A plugin cannot add a section to the shipped
profiles, so its defaults live in code (DEFAULTS below, the model's `costs`): a spec's profile
takes those it lacks (a profile file with `base = "seed"` and an [hvo] section overrides any), so
a changed default changes the profile's digest and with it the chunk ids.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from workers.model import Axis, Lines, Medians, Metric, Model, Quantity

SECTION = "hvo"
PAGE = 4096
PMD_SIZE = 2 << 20
PAGES_PER_FOLIO = 512  # 2 MiB / 4 KiB: HPAGE_PMD_ORDER 9

# Per-operation costs (ns) of the machine in the batching series' cover letter (Mike Kravetz, [PATCH v2 00/11]
# Batch hugetlb vmemmap modification operations, 5 Sep 2023: 8-socket Xeon E7-8895, `time echo 500000 >
# nr_hugepages`). Two are set by hand from two of its four times (noted); the others are assumed.
DEFAULTS = {
    "folio_alloc_ns": Quantity(value=5166.0, unit="ns", source="calibrated", note=(
        "one order-9 buddy allocation with hugetlb's prep and pool enqueue (alloc_buddy_hugetlb_folio(), "
        "__prep_new_hugetlb_folio(), enqueue_hugetlb_folio()), not counting the struct page writes: set so "
        "that 500000 folios take the published 4.119 s with HVO off (8238 ns each, less 512 x 6 ns)")),
    "struct_page_ns": Quantity(value=6.0, unit="ns", source="assumed", note=(
        "one struct page written by prep_compound_page() (prep_compound_tail(): a few stores to a cold "
        "64-byte line)")),
    "walk_ns": Quantity(value=400.0, unit="ns", source="assumed", note=(
        "one vmemmap_remap_range(): mmap_read_lock(&init_mm), walk_page_range_novma() down four levels")),
    "page_alloc_ns": Quantity(value=250.0, unit="ns", source="assumed", note=(
        "one order-0 page from the per-CPU lists (the new head vmemmap page; a split's PTE page)")),
    "copy_page_ns": Quantity(value=250.0, unit="ns", source="assumed", note="one copy_page() of 4 KiB"),
    "pte_set_ns": Quantity(value=5.0, unit="ns", source="assumed", note=(
        "one set_pte_at() in the walk or the split, with its list_add() of the old page")),
    "page_free_ns": Quantity(value=400.0, unit="ns", source="assumed", note=(
        "one free_vmemmap_page(): boot vmemmap is PG_reserved, so free_reserved_page() with its atomic "
        "updates of the zone's and the global managed page counts")),
    "flush_base_ns": Quantity(value=1000.0, unit="ns", source="assumed", note=(
        "a kernel TLB flush on the CPU that starts it: its own flush and on_each_cpu()'s setup")),
    "ipi_cpu_ns": Quantity(value=150.0, unit="ns", source="calibrated", note=(
        "per other CPU of a flush's IPI on bare metal (queue the call, send, wait for the ack): set so that "
        "the per-folio HVO-on figure (28.973 s, 507,813 flushes on 288 CPUs) comes out within 2% "
        "(152.7 ns would match it exactly)")),
    "ipi_cpu_guest_ns": Quantity(value=1000.0, unit="ns", source="assumed", note=(
        "per other vCPU in a guest: sending each IPI traps to the hypervisor (a VM exit, ~1 us)")),
}

NR_HUGEPAGES = Axis(name="nr_hugepages", kind="int", unit="folios", default=1024,
                    doc="2 MiB hugetlb folios allocated by one write to nr_hugepages (the pool starts empty)",
                    rule="at least 1", check=lambda v: v >= 1)
HVO = Axis(name="hvo", kind="bool", default=True,
           doc="vm.hugetlb_optimize_vmemmap: free the folios' vmemmap but one page each")
BATCHING = Axis(name="batching", kind="choice", choices=("per_folio", "batched"), default="batched",
                doc="per_folio: optimize and flush per folio (next-20230824); batched: split all, flush, remap "
                    "all, flush (the v6.7 batching series)")
CPUS = Axis(name="cpus", kind="int", unit="CPUs", default=64, doc="online CPUs: every kernel TLB flush IPIs them all",
            rule="from 1 to 8192", check=lambda v: 1 <= v <= 8192)
VIRTUALIZED = Axis(name="virtualized", kind="bool", default=False,
                   doc="in a guest: each flush IPI traps to the hypervisor")

INT, FLOAT = pl.Int64, pl.Float64

# The report's key finding, as data (workers.findings): what HVO costs a write, per folio and batched.
FINDINGS = (
    Medians(id="hvo_cost", figure="hvo_alloc", metric="metric_slowdown_vs_no_hvo",
            where={"hvo": True}, by="batching",
            quote=(("per_folio", "per_folio"), ("batched", "batched")),
            text="With HVO on, a write to nr_hugepages takes a median {per_folio}x as long as with HVO off when "
                 "each folio is optimized and flushed on its own ({per_folio_n} points), and {batched}x batched "
                 "({batched_n} points)."),
)


# The report's figure, as data (workers.plots): drawn by memsweep's generic figure path.
PLOTS = (
    Lines(id="hvo_alloc", title="hvo: nr_hugepages write time vs folios, per-folio vs batched flushes",
          x=dict(column="nr_hugepages", scale="log", label="hugetlb folios allocated (2 MiB)"),
          y=dict(metric="metric_alloc_ms", label="write time (ms)"),
          hue=dict(column="batching", order=("per_folio", "batched")),
          panels=dict(split="virtualized", facets=("cpus",), most=4),
          hold={"hvo": True, "struct_page_size": 64},
          caption="Modeled time of one write to nr_hugepages with HVO on: per_folio optimizes and flushes each "
                  "folio on its own (a kernel TLB flush per folio and per vmemmap PMD split, each an IPI to "
                  "every CPU); batched remaps the whole list and flushes twice."),
)


def counts(folios: np.ndarray, struct_page: np.ndarray, hvo: np.ndarray, batched: np.ndarray) -> dict:
    """The operations of one write to nr_hugepages, per point (int64 arrays)."""
    vm_pages = PAGES_PER_FOLIO * struct_page // PAGE  # vmemmap pages per folio (n)
    optimize = hvo & (struct_page & (struct_page - 1) == 0)  # hugetlb_vmemmap_optimizable_size() > 0
    opt = np.where(optimize, folios, 0)
    vmemmap_bytes = opt * PAGES_PER_FOLIO * struct_page
    splits = -(-vmemmap_bytes // PMD_SIZE)  # one vmemmap PMD split per 2 MiB of struct pages
    return {
        "folios": folios,
        "struct_pages": folios * PAGES_PER_FOLIO,
        "optimized": opt,
        "ptes": opt * vm_pages,  # the head PTE too: it moves to the newly allocated copy
        "freed": opt * vm_pages,
        "saved_bytes": opt * (vm_pages - 1) * PAGE,
        "splits": splits,
        "flushes": np.where(batched, np.where(folios > 0, 2, 0), opt + splits),
    }


class HvoModel(Model):
    # The core: name, axes, metrics, headline and evaluate() (version, description, costs, infeasible have
    # defaults). A shared axis is named, not imported.
    name = "hvo"
    version = "1"
    description = ("HugeTLB vmemmap optimization when nr_hugepages grows: vmemmap pages freed, PTEs remapped, "
                   "PMD splits and kernel TLB flushes, per folio or batched")
    axes = (NR_HUGEPAGES, "struct_page_size", HVO, BATCHING, CPUS, VIRTUALIZED)
    metrics = (
        Metric(column="metric_folios", dtype=INT, doc="2 MiB hugetlb folios allocated"),
        Metric(column="metric_struct_pages_init", dtype=INT,
               doc="struct pages written by prep_compound_page() (512 per folio)"),
        Metric(column="metric_vmemmap_ptes_remapped", dtype=INT,
               doc="vmemmap PTEs pointed at the new head page (n per optimized folio)"),
        Metric(column="metric_vmemmap_pages_freed", dtype=INT,
               doc="vmemmap pages freed to the buddy allocator (n per optimized folio)"),
        Metric(column="metric_vmemmap_saved_bytes", dtype=INT,
               doc="vmemmap memory saved: (n - 1) pages per optimized folio"),
        Metric(column="metric_pmd_splits", dtype=INT,
               doc="vmemmap PMD mappings split into PTEs (one per 2 MiB of optimized struct pages)"),
        Metric(column="metric_tlb_flushes", dtype=INT, doc="kernel TLB flushes, each an IPI to every CPU"),
        Metric(column="metric_alloc_ms", dtype=FLOAT, better="lower",
               doc="modeled time of the write (what `time echo N > nr_hugepages` reports)"),
        Metric(column="metric_hvo_ms", dtype=FLOAT, better="lower",
               doc="of which remapping and freeing vmemmap and splitting PMDs, flushes not counted"),
        Metric(column="metric_flush_ms", dtype=FLOAT, better="lower", doc="of which kernel TLB flushes"),
        Metric(column="metric_slowdown_vs_no_hvo", dtype=FLOAT, better="lower",
               doc="alloc time over that of the same write with HVO off"),
    )
    headline = "metric_alloc_ms"
    points_per_second = 2e6
    costs = DEFAULTS  # its own [hvo] section: no shipped profile has one
    # Why a point cannot exist (the axes' rules already keep specs from such points).
    infeasible = ((pl.col("param_nr_hugepages") < 1, "nr_hugepages must be at least 1"),
                  (pl.col("param_cpus") < 1, "cpus must be at least 1"))
    # Optional: what the report says of it; the comparison is the batching series' question (by the headline).
    report = dict(comparison=dict(axis="batching", baseline="per_folio"), best_keys=("cpus", "virtualized"),
                  value_labels={"hvo": {True: "HVO on", False: "HVO off"}}, findings=FINDINGS, plots=PLOTS)

    def evaluate(self, points: pl.DataFrame, profile) -> dict:
        """Counts and modeled times (ns summed, reported in ms) for every point: metric column -> values."""
        a = {c: points[f"param_{c}"].to_numpy() for c in ("nr_hugepages", "struct_page_size", "cpus")}
        folios = np.clip(a["nr_hugepages"], 0, None).astype(np.int64)
        p = a["struct_page_size"].astype(np.int64)
        hvo = points["param_hvo"].to_numpy().astype(bool)
        batched = (points["param_batching"] == "batched").to_numpy()
        guest = points["param_virtualized"].to_numpy().astype(bool)
        c = counts(folios, p, hvo, batched)
        k = {key: float(profile.value(SECTION, key)) for key in DEFAULTS}
        base_ns = folios * k["folio_alloc_ns"] + c["struct_pages"] * k["struct_page_ns"]
        hvo_ns = (c["optimized"] * (k["walk_ns"] + k["page_alloc_ns"] + k["copy_page_ns"])
                  + c["ptes"] * k["pte_set_ns"] + c["freed"] * k["page_free_ns"]
                  + c["splits"] * (k["page_alloc_ns"] + PAGES_PER_FOLIO * k["pte_set_ns"]))
        ipi = np.where(guest, k["ipi_cpu_guest_ns"], k["ipi_cpu_ns"])
        flush_one = k["flush_base_ns"] + (np.clip(a["cpus"], 1, None) - 1) * ipi
        flush_ns = c["flushes"] * flush_one
        total = base_ns + hvo_ns + flush_ns
        off = base_ns + np.where(batched, 2, 0) * flush_one  # the same write with HVO off
        with np.errstate(divide="ignore", invalid="ignore"):
            slowdown = total / off
        return {
            "metric_folios": c["folios"], "metric_struct_pages_init": c["struct_pages"],
            "metric_vmemmap_ptes_remapped": c["ptes"], "metric_vmemmap_pages_freed": c["freed"],
            "metric_vmemmap_saved_bytes": c["saved_bytes"], "metric_pmd_splits": c["splits"],
            "metric_tlb_flushes": c["flushes"], "metric_alloc_ms": total / 1e6, "metric_hvo_ms": hvo_ns / 1e6,
            "metric_flush_ms": flush_ns / 1e6, "metric_slowdown_vs_no_hvo": slowdown,
        }


MODEL = HvoModel()
