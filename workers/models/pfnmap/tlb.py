"""pfnmap access cost: TLB entries, hits and misses, page walks, and where the walk's lines live.

The mapping's leaves (geometry) become TLB entries of one size each:
the leaf size, or in a guest the smaller of the guest leaf and the host page
backing it (a TLB entry caches guest-virtual -> host-physical). Per entry size
the profile gives L1 and L2 TLB entries (treated as separate pools).

Access patterns:
- lat_mem_rd_random (lmbench `lat_mem_rd -t`, thrash_initialize(): a random
  cyclic order of the pages, each load to a different page). A 4 KiB entry is
  reused only after every other page was visited, so an LRU TLB hits it iff
  all of them fit; a larger entry is touched at random, hit rate E/n.
- memcpy_seq: one streaming pass; every entry misses once per pass unless all
  entries of its size fit the L2 TLB.

A miss walks the tables: per dimension, the leaf level and the levels above it
that the walk caches do not hold (`walk_cache_levels`). In a guest each guest
reference and the final address need a host walk: g x (1 + h) + h references
(24 for 4 + 4 levels with no walk cache), less the host walks a nested TLB of
`tlb_nested_entries` guest-physical -> host-physical translations saves (the
guest's table pages and data pages, one entry per page; random: E/n hits;
streaming: one host walk per new page). Each reference costs `walk_ref_ns`
plus the latency of the cache level holding its line. The levels, nearest
first, are the L1, the L2, the part of the last level a core's own fills stay
in first (`cluster_l3`: on the seed's Kunpeng 920, its four-core cluster's
share of the L3), and the whole last level (`llc`: the die's L3). Where a line
lives follows from its reuse distance D (bytes of distinct lines touched
between two uses of it) against each cache, LRU with `ways` ways per set and
lines hashed to sets: the line survives iff fewer than `ways` of the D/64
lines land in its set, P(Poisson(ways * D / size) < ways) (normal
approximation, logistic form). A level no larger than the one before it is
left out (a measured host's profile sets cluster_l3 to its own L2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workers.exceptions import ProfileError
from workers.profiles import Profile
from workers.units import GiB

from .footprint import touched
from .geometry import CONT, ENTRY_BYTES, PAGE, PMD, PUD

LINE = 64  # bytes per cache line
ENTRIES_PER_LINE = LINE // ENTRY_BYTES  # 8 page-table entries per line
KINDS = ("plain", "cont", "pmd", "pud")
KIND_SIZE = {"plain": PAGE, "cont": CONT, "pmd": PMD, "pud": PUD}
KIND_LEVEL = {"plain": 1, "cont": 1, "pmd": 2, "pud": 3}  # 1 = PTE table, 2 = PMD, 3 = PUD, 4 = PGD
LEVEL_SPAN = {1: PAGE, 2: PMD, 3: PUD, 4: 512 * GiB, 5: 256 * 1024 * GiB}
HOST_LEAF_LEVEL = {PAGE: 1, PMD: 2, PUD: 3}
ENTRY_SIZES = (PAGE, CONT, PMD, PUD)
SIZE_KEY = {PAGE: "4k", CONT: "64k", PMD: "2m", PUD: "1g"}
TINY = 1e-12
# The profile's cache levels, nearest first: {level}_bytes, _ways, _latency_ns each. cluster_l3 is the
# part of the last level a core's own fills stay in first (its cluster's share of the L3); llc the whole.
CACHE_LEVELS = ("l1", "l2", "cluster_l3", "llc")


@dataclass(frozen=True, kw_only=True, slots=True)
class Machine:
    """The [pfnmap] numbers the access model needs, read once from a profile."""

    virtualized: bool
    host_page: int
    levels: int
    walk_cache_levels: int
    tlb_l1: dict[int, float]
    tlb_l2: dict[int, float]
    tlb_l2_hit_ns: float
    tlb_nested: float
    caches: tuple[tuple[float, float, float, float], ...]  # (bytes, ways, latency ns, lines filled per miss)
    dram_ns: float
    walk_ref_ns: float
    memcpy_test_gbs: float
    copy_tlb_miss_ns: float

    @classmethod
    def from_profile(cls, profile: Profile) -> Machine:
        v = lambda key: profile.value("pfnmap", key)  # noqa: E731
        fill = 1.0 + float(v("prefetch_lines_per_miss"))  # adjacent-line prefetch fills L2 and LLC only
        host = int(v("host_page_size"))
        if host not in HOST_LEAF_LEVEL:
            raise ProfileError(f"'pfnmap.host_page_size' must be 4096, 2097152 or 1073741824 bytes "
                               f"(got {host!r}); fix it in the {profile.name} profile.")
        return cls(
            virtualized=bool(v("virtualized")), host_page=host, levels=int(v("page_table_levels")),
            walk_cache_levels=int(v("walk_cache_levels")),
            tlb_l1={s: float(v(f"tlb_l1_entries_{SIZE_KEY[s]}")) for s in ENTRY_SIZES},
            tlb_l2={s: float(v(f"tlb_l2_entries_{SIZE_KEY[s]}")) for s in ENTRY_SIZES},
            tlb_l2_hit_ns=float(v("tlb_l2_hit_ns")), tlb_nested=float(v("tlb_nested_entries")),
            caches=_levels(profile, fill),
            dram_ns=float(v("dram_latency_ns")), walk_ref_ns=float(v("walk_ref_ns")),
            memcpy_test_gbs=float(v("memcpy_test_gbs")), copy_tlb_miss_ns=float(v("copy_tlb_miss_ns")),
        )

    @property
    def structure(self) -> tuple:
        """What the counts of an access rest on (the TLBs' sizes, the table levels, the host page), as against
        the latencies and bandwidths that price them: machines of one structure count alike."""
        return (self.virtualized, self.host_page, self.levels, self.walk_cache_levels, tuple(self.tlb_l1.items()),
                tuple(self.tlb_l2.items()), self.tlb_nested, tuple((c[0], c[1], c[3]) for c in self.caches))

    def entry_size(self, kind: str) -> int:
        """Bytes one TLB entry of this leaf kind covers (min(leaf, host page) in a guest)."""
        size = KIND_SIZE[kind]
        return min(size, self.host_page) if self.virtualized else size

    def guest_levels(self, kind: str) -> tuple[int, ...]:
        """Table levels a walk for this leaf kind reads: the leaf and the uncached levels above it."""
        leaf = KIND_LEVEL[kind]
        refs = max(1, (self.levels + 1 - leaf) - self.walk_cache_levels)
        return tuple(range(leaf, leaf + refs))

    def host_levels(self) -> tuple[int, ...]:
        """Host table levels one host (stage-2 / EPT) walk reads; () on bare metal."""
        if not self.virtualized:
            return ()
        leaf = HOST_LEAF_LEVEL[self.host_page]
        return tuple(range(leaf, leaf + max(1, (self.levels + 1 - leaf) - self.walk_cache_levels)))

    def line_ns(self, data_lines, pt_lines):
        """Latency (ns) of a load whose line was last used `data_lines` data and `pt_lines` table lines ago."""
        return self.price(self.shares(data_lines, pt_lines))

    def shares(self, data_lines, pt_lines) -> tuple:
        """Of the loads whose line was last used `data_lines` data and `pt_lines` table lines ago, the share
        each cache level serves (nearest first), then DRAM's: the cache sizes' part of line_ns(), which no
        latency moves (part of `structure`), so a refit prices them again by price() alone."""
        below, out = 0.0, []
        for size, ways, _, fill in self.caches:
            present = np.maximum(below, _survives(LINE * (fill * data_lines + pt_lines), size, ways))
            out.append(present - below)
            below = present
        return (*out, 1.0 - below)

    def price(self, shares: tuple):
        """ns of a load served in the proportions `shares` (shares()): each level's latency times its share."""
        t = 0.0
        for (_, _, lat, _), share in zip(self.caches, shares):
            t = t + lat * share
        return t + self.dram_ns * shares[-1]


def _levels(profile: Profile, fill: float) -> tuple[tuple[float, float, float, float], ...]:
    """(bytes, ways, latency ns, lines filled per miss) of each cache level, nearest first; a level no
    larger than the one before it holds nothing more and is left out."""
    out: list[tuple[float, float, float, float]] = []
    for c in CACHE_LEVELS:
        size = float(profile.value("pfnmap", f"{c}_bytes"))
        if out and size <= out[-1][0]:
            continue
        out.append((size, float(profile.value("pfnmap", f"{c}_ways")),
                    float(profile.value("pfnmap", f"{c}_latency_ns")), 1.0 if c == "l1" else fill))
    return tuple(out)


def _survives(reuse_bytes, size: float, ways: float):
    """P(line still cached) after `reuse_bytes` of other lines, LRU with `ways` ways per set.

    float32 inside (no free parameter enters here), float64 out: the latencies
    that multiply it are fit by finite differences.
    """
    lam = np.asarray(reuse_bytes, dtype=np.float32) * np.float32(ways / size)
    z = (np.float32(ways - 0.5) - lam) / np.sqrt(np.maximum(lam, np.float32(TINY)))
    z = np.clip(z, np.float32(-40.0), np.float32(40.0))
    return (np.float32(1.0) / (np.float32(1.0) + np.exp(np.float32(-1.702) * z))).astype(np.float64)


def _distinct(n_lines, rate, gap):
    """Expected distinct lines of a class of `n_lines` touched at `rate` per access within `gap` accesses."""
    x = (gap * (rate / np.maximum(n_lines, 1.0))).astype(np.float32)
    return n_lines * (np.float32(1.0) - np.exp(-x))


def entries(m: Machine, kb: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], dict[int, np.ndarray]]:
    """TLB entries per leaf kind and per entry size."""
    per_kind = {k: kb[k] // m.entry_size(k) for k in KINDS}
    per_size = {s: sum(per_kind[k] for k in KINDS if m.entry_size(k) == s) for s in ENTRY_SIZES}
    return per_kind, {s: n for s, n in per_size.items() if not isinstance(n, int)}


def reach(m: Machine, per_size: dict[int, np.ndarray], tlb: dict[int, float]) -> np.ndarray:
    """Bytes of this mapping the TLB level can hold at once."""
    return sum(np.minimum(n, tlb[s]).astype(np.int64) * s for s, n in per_size.items())


def _hits(n: np.ndarray, cap: float, cyclic: bool) -> np.ndarray:
    """Hit rate of a pool of `cap` entries over n entries: cyclic LRU (step) or random (E/n)."""
    if cyclic:
        return (n <= cap).astype(np.float64)
    return np.minimum(1.0, cap / np.maximum(n, 1))


def _tlb_hits(touched_entries, chosen_pages, cap: float) -> np.ndarray:
    """Hit rate of an LRU pool of `cap` entries under lat_mem_rd's chase.

    Each lap visits the chosen pages in one fixed random order. An entry's first
    visit in a lap comes a whole lap after its last one, so it hits only if every
    touched entry fits (cyclic LRU); its further visits in the lap (entries
    holding several chosen pages) come at random, and hit cap / touched.
    """
    d = np.maximum(touched_entries, TINY)
    first = np.minimum(1.0, d / np.maximum(chosen_pages, TINY))
    return first * (d <= cap) + (1.0 - first) * np.minimum(1.0, cap / d)


def random_counts(m: Machine, g: dict, kb: dict, length: np.ndarray, working_set: np.ndarray) -> dict:
    """What lat_mem_rd_random's cost rests on that no latency or bandwidth moves: the TLB misses per load by
    leaf kind, its L2 hits, the host walks per guest walk, and for each line class a walk reads (and for
    the data) the share of its loads each cache level serves (m.shares()), which m.price() prices. Counts of the points, the leaves and
    the machine's structure only (Machine.structure), so the refits of a chunk's error bars reuse them.

    `working_set` bytes of pages are chosen at random from the whole mapping
    (footprint); the counts below are of what they touch.
    """
    lf = length.astype(np.float64)
    total, chosen = lf / PAGE, working_set.astype(np.float64) / PAGE
    q = {k: kb[k] / lf for k in KINDS}  # share of the chosen pages under each leaf kind
    # Distinct TLB entries touched per entry size, and the chosen pages they hold.
    seen = {k: touched(kb[k] / m.entry_size(k), total, chosen, m.entry_size(k) // PAGE) for k in KINDS}
    sizes = {m.entry_size(k) for k in KINDS}
    d = {s: sum(seen[k] for k in KINDS if m.entry_size(k) == s) for s in sizes}
    c = {s: chosen * sum(q[k] for k in KINDS if m.entry_size(k) == s) for s in sizes}
    hit1 = {s: _tlb_hits(d[s], c[s], m.tlb_l1[s]) for s in sizes}
    hit2 = {s: np.maximum(hit1[s], _tlb_hits(d[s], c[s], m.tlb_l2[s])) for s in sizes}
    miss = {k: q[k] * (1.0 - hit2[m.entry_size(k)]) for k in KINDS}  # misses per load, by kind
    l2_hits = sum(q[k] * (hit2[m.entry_size(k)] - hit1[m.entry_size(k)]) for k in KINDS)
    walked = [k for k in KINDS if miss[k].any()]  # kinds whose walks happen at all in this frame
    # Host walks per guest walk: one per guest table page and one for the data page the nested TLB misses.
    host_walks = {k: 0.0 for k in walked}
    if m.virtualized:
        tables = {1: touched(g["pte_tables"], total, chosen, PMD // PAGE),
                  2: touched(g["pmd_tables"], total, chosen, PUD // PAGE)}
        pages = touched(np.ceil(lf / m.host_page), total, chosen, m.host_page // PAGE)
        for k in walked:
            host_walks[k] = (sum(1.0 - _hits(tables.get(lvl, 1), m.tlb_nested, False) for lvl in m.guest_levels(k))
                             + 1.0 - _hits(pages, m.tlb_nested, False))
    # Line classes a walk reads: guest table levels 1..levels, then host levels (keys 'h1'..): the
    # distinct lines the chosen pages touch (a line holds 8 entries: 8 x the level's span).
    per_line = {lvl: ENTRIES_PER_LINE * LEVEL_SPAN[lvl] // PAGE for lvl in LEVEL_SPAN}
    lines = {1: touched(np.ceil(g["pte"] / ENTRIES_PER_LINE), total, chosen, per_line[1]),
             2: touched(np.ceil(g["pmd_entries"] / ENTRIES_PER_LINE), total, chosen, per_line[2]),
             3: touched(np.ceil(g["pud_entries"] / ENTRIES_PER_LINE), total, chosen, per_line[3])}
    rate = {lvl: sum(miss[k] for k in walked if lvl in m.guest_levels(k))
            for lvl in sorted({lvl for k in walked for lvl in m.guest_levels(k)})}
    for lvl in m.host_levels() if walked else ():
        lines[f"h{lvl}"] = touched(np.ceil(np.ceil(lf / LEVEL_SPAN[lvl]) / ENTRIES_PER_LINE), total, chosen,
                                   per_line[lvl])
        rate[f"h{lvl}"] = sum(miss[k] * host_walks[k] for k in walked)
    for key in rate:
        lines.setdefault(key, np.ones_like(lf))
    # Every load is to a new data line until the chase has visited every line of the working set.
    data_lines = working_set.astype(np.float64) / LINE

    def since(gap):
        """Where a line last used `gap` loads ago is found: m.shares() of the data and table lines used since."""
        return m.shares(np.minimum(gap, data_lines), sum(_distinct(lines[c], rate[c], gap) for c in rate))

    return {"lf": lf, "miss": miss, "l2_hits": l2_hits, "walked": walked, "host_walks": host_walks,
            "found": {c: since(np.maximum(lines[c], 1.0) / np.maximum(rate[c], TINY)) for c in rate},
            "found_data": since(data_lines)}


def random_access(m: Machine, n: dict) -> dict[str, np.ndarray]:
    """lat_mem_rd_random: ns per load, miss rate, and the mean walk (ns, references): the counts
    random_counts() gave on a machine of m's structure, priced by m's latencies."""
    walked, host_walks = n["walked"], n["host_walks"]
    t = {c: m.price(found) for c, found in n["found"].items()}
    t_data = m.price(n["found_data"])
    h = len(m.host_levels())
    host_ns = sum(t[f"h{lvl}"] for lvl in m.host_levels()) + m.walk_ref_ns * h if walked and h else 0.0
    refs = {k: len(m.guest_levels(k)) + host_walks[k] * h for k in walked}
    walk = {k: sum(t[lvl] for lvl in m.guest_levels(k)) + m.walk_ref_ns * len(m.guest_levels(k))
            + host_walks[k] * host_ns for k in walked}
    return _summary(n["lf"], n["miss"], walk, refs, t_data + n["l2_hits"] * m.tlb_l2_hit_ns, per_access=1.0)


def sequential_counts(m: Machine, g: dict, kb: dict, length: np.ndarray, working_set: np.ndarray) -> dict:
    """What memcpy_seq's cost rests on that no latency or bandwidth moves (as random_counts()): the TLB
    misses and L2 TLB hits of one pass, and where a line first used this pass is found."""
    per_kind, per_size = entries(m, kb)
    lf = working_set.astype(np.float64)
    fits_l2 = {s: n <= m.tlb_l2[s] for s, n in per_size.items()}
    l2_hits = sum(np.where(fits_l2[s] & (n > m.tlb_l1[s]), n, 0) for s, n in per_size.items())
    miss = {k: np.where(fits_l2[m.entry_size(k)], 0, per_kind[k]).astype(np.float64) for k in KINDS}
    # A line first used this pass was last used a whole copy ago (source and destination streams).
    return {"lf": lf, "miss": miss, "l2_hits": l2_hits,
            "found_pass": m.shares(2.0 * lf / LINE, g["pt_pages"] * (PAGE / LINE))}


def sequential_copy(m: Machine, n: dict) -> dict[str, np.ndarray]:
    """memcpy_seq: ns for one streaming copy of the working set (the first `working_set` bytes of the
    mapping), misses per line, and the mean walk: the counts sequential_counts() gave on a machine of m's
    structure, priced by m's latencies and bandwidth."""
    t_pass = m.price(n["found_pass"])

    def ref_ns(lvl: int, spacing: int):
        """One reference to a level-lvl line by walks `spacing` bytes apart: mostly the same line."""
        first = min(1.0, spacing / (ENTRIES_PER_LINE * LEVEL_SPAN[lvl]))  # walks that open a new line
        return (1.0 - first) * m.line_ns(2.0 * spacing / LINE, 0.0) + first * t_pass

    h = len(m.host_levels())
    host_ns = sum(ref_ns(lvl, m.host_page) for lvl in m.host_levels()) + m.walk_ref_ns * h
    walk, refs = {}, {}
    for k in KINDS:
        e = m.entry_size(k)
        guest = m.guest_levels(k)
        # One host walk per new guest table page (512 entries) and per new host page of data.
        host_walks = (sum(min(1.0, e / (512 * LEVEL_SPAN[lvl])) for lvl in guest) + min(1.0, e / m.host_page)
                      if m.virtualized else 0.0)
        refs[k] = len(guest) + host_walks * h
        walk[k] = sum(ref_ns(lvl, e) for lvl in guest) + m.walk_ref_ns * len(guest) + host_walks * host_ns
    lf, miss = n["lf"], n["miss"]
    other = lf / m.memcpy_test_gbs + sum(miss.values()) * m.copy_tlb_miss_ns + n["l2_hits"] * m.tlb_l2_hit_ns
    return _summary(lf, miss, walk, refs, other, per_access=LINE / lf)


def _summary(lf, miss: dict, walk: dict, refs: dict, other, per_access) -> dict[str, np.ndarray]:
    """Totals of an access pattern: time, misses and walk time per access, the mean walk."""
    misses = sum(miss.values())
    walk_time = sum((miss[k] * walk[k] for k in walk), np.zeros_like(lf))
    ref_count = sum((miss[k] * refs[k] for k in walk), np.zeros_like(lf))
    safe = np.maximum(misses, TINY)
    return {
        "ns": other + walk_time, "miss_rate": misses * per_access, "walk_ns_per_access": walk_time * per_access,
        "walk_ns": np.where(misses > 0, walk_time / safe, 0.0),
        "walk_refs": np.where(misses > 0, ref_count / safe, 0.0),
    }
