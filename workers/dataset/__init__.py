"""The dataset's one home, the bottom layer every writer (sweeps) and reader (analysis, status, verify,
calibrate) derives from: here the schema version, the sweep folder's file names, the part-path rule, the
row sources (SOURCES: each one's name, the columns only it fills, where its backend is), the column registry
and a model's row layout (row_schema, lay_out); folder.py reads and writes the files; parts.py checks the
parts against the manifest and scans them.

    OUT/<sweep>/model=<name>/part-<chunk_id>.parquet   one part per chunk
    OUT/<sweep>/_manifest.json      chunks expected / done, rows, checksums, spec, versions
    OUT/<sweep>/_spec.toml          the spec as run
    OUT/<sweep>/_slurm.json         Slurm submissions (memsweep submit --slurm); _slurm-<job>.out their logs
    OUT/<sweep>/_lease.json         the running driver's lease
    OUT/<sweep>/_report/            report.html, figures as PNG and SVG

The folder's own files start with "_" (temporary files with "."), which pyarrow.dataset, polars and
duckdb globs skip, so `pyarrow.dataset.dataset("OUT/<sweep>")` sees the parts and nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import polars as pl
import pyarrow as pa

SCHEMA_VERSION = "9"
# Schema history:
#   1: identity, param_*, metric_*, env_* columns; key-value metadata memsweep.*
#   2: `source` ("model" | "measured") among the identity columns; measure_* columns after the
#      metrics (null on modeled rows); env_kernel_release, env_thp_mode, env_caches
#   3: the sweep folder's own files start with "_" (_manifest.json, _spec.toml, _slurm.json,
#      _lease.json, _report/) so pyarrow.dataset opens the folder; host facts as integer columns
#      env_l1d_bytes, env_l2_bytes, env_l3_bytes, env_tlb_4k_entries
#   4: `source` "kernel" (the real kernel path in a guest); env_guest_kernel, env_guest_cmdline, env_accel
#   5: `evidence` and `evidence_note` (what a modeled row's answer rests on, workers.evidence) after measure_*
#   6: one dtype per column across models (workers.registry refuses a model that breaks it): copy's per-copy
#      means metric_lines_partial, metric_rfo_bytes, metric_serial_misses (Float64) are named *_per_copy;
#      memmap's columns of those names stay Int64 counts. `model` is stored as Arrow string (ARROW_TYPES)
#   7: error bars: `lo_<name>` and `hi_<name>` (Float32) after the metrics, for each metric the profile's costs
#      price (Model.priced; workers.interval); null on measured and kernel rows. The evidence as data:
#      evidence_figure, evidence_error, evidence_axes (a list of structs), evidence_assumptions (a list)
#      between `evidence` and `evidence_note`
#   8: `measure_max` after measure_median: the largest sample (LKP's range is [min, max]); a kernel row's
#      samples are its boots ([kernel] boots), not the binds of one boot. `kernel_base` and `kernel_stock`
#      after measure_*: a patched build's row read against its base and the distribution's kernel
#   9: `kernel_build` after them: the kernel build a row's instruction count is of (kernel rows: the one booted;
#      modeled rows: the one whose per-operation instruction costs priced it)

# The row sources' names (a row's `source` column): the model's own answer, the user-space analog measured on a
# worker, the real kernel path in a guest. SOURCES below says what each fills and the order a run computes them.
MODELED, MEASURED, KERNEL = "model", "measured", "kernel"

# A row's `status`: an answer; a point that cannot exist (with a `reason` a person can read); a computation
# that raised (its exception in `reason`: workers.dataset.errors says them).
STATUSES = (STATUS_OK, STATUS_INFEASIBLE, STATUS_ERROR) = ("ok", "infeasible", "error")

MANIFEST = "_manifest.json"
SPEC_FILE = "_spec.toml"
SUBMISSIONS = "_slurm.json"  # written at submit time, before any manifest; every manifest carries it as "slurm"
SLURM_LOG = "_slurm-%j.out"  # a Slurm job's output (sbatch expands %j to the job id)
LEASE_FILE = "_lease.json"
REPORT_DIR = "_report"
TEMP_PREFIX = ".tmp-"  # every temporary file of a write starts with it (and lives beside its target)
LEASE_TEMP_PREFIX = TEMP_PREFIX + "lease-"  # a driver's attempt at the lease (sweeps.run.lease), in progress
# A folder holds the rows of one computation (sweeps.run.computation): the manifest records its digest under
# this key, and every part carries the digest of the computation that wrote it in its footer.
COMPUTATION = "computation"
PART_COMPUTATION = "memsweep.computation"
PART_CHUNK_ID = "memsweep.chunk_id"  # a part's footer names the chunk it holds (its file name's chunk id)
PART_MODEL = "memsweep.model"  # ... its model
PART_RANGE = "memsweep.range"  # ... and its range of the model's grid, "start:stop"
# ... and a digest of its rows as stored: its data pages, the bytes between Parquet's leading magic and its
# footer (workers.dataset.parts.content_digest). A part that is not in the manifest, or whose record has no
# checksum, proves its content by it before any command takes it.
PART_CONTENT = "memsweep.content"
# A part's footer lists the distinct evidence_axes entries of its rows (a JSON list of objects, EVIDENCE_AXIS's
# fields): a reader learns which values are far from a figure without decoding every row's list. Parts
# written before it have no such key; analysis.evidence then reads the rows.
PART_EVIDENCE_AXES = "memsweep.evidence_axes"


@dataclass(frozen=True, kw_only=True, slots=True)
class Layout:
    """The names of a sweep folder's own files, beside its model=<name>/ folders."""

    schemas: str  # the schema versions that name them so
    manifest: str
    spec: str
    submissions: str
    lease: str
    report: str


LAYOUT = Layout(schemas=SCHEMA_VERSION, manifest=MANIFEST, spec=SPEC_FILE, submissions=SUBMISSIONS,
                lease=LEASE_FILE, report=REPORT_DIR)
LEGACY_LAYOUT = Layout(schemas="1-2", manifest="manifest.json", spec="spec.toml", submissions="slurm.json",
                       lease="lease.json", report="report")


def layout_of(names: Iterable[str]) -> Layout:
    """The layout of a sweep folder whose top-level entries are `names`: schema 1-2's when it holds
    their manifest or spec and not schema 3's, else the current one (also for a new folder)."""
    names = set(names)
    if {LEGACY_LAYOUT.manifest, LEGACY_LAYOUT.spec} & names and not {MANIFEST, SPEC_FILE} & names:
        return LEGACY_LAYOUT
    return LAYOUT


# -- part paths --------------------------------------------------------------------------------------
_PART = re.compile(r"^model=([^/]+)/part-([^/]+)\.parquet$")


def model_dir(model: str) -> str:
    """The folder of one model's parts, relative to the sweep folder."""
    return f"model={model}"


def model_of_dir(name: str) -> str | None:
    """The model whose parts a top-level folder name holds (model_dir's inverse); None for another name."""
    prefix = model_dir("")
    return (name[len(prefix):] or None) if name.startswith(prefix) else None


def part_path(model: str, chunk_id: str) -> str:
    """A part's path relative to the sweep folder: model=<model>/part-<chunk_id>.parquet."""
    return f"{model_dir(model)}/part-{chunk_id}.parquet"


def parse_part_path(path: str) -> tuple[str, str] | None:
    """(model, chunk_id) of a part's path relative to the sweep folder; None for anything else (the
    folder's own files, temporary files, files in other folders)."""
    m = _PART.match(path)
    return (m.group(1), m.group(2)) if m else None


# -- the column registry: (name, polars dtype, unit, meaning) ------------------------------------------
IDENTITY = (
    ("sweep", pl.Utf8, "", "the spec's `name`"),
    ("model", pl.Utf8, "", "model name"),
    ("model_version", pl.Utf8, "", "model version; a new version never reuses old parts"),
    ("profile", pl.Utf8, "", "machine profile the costs came from"),
    ("source", pl.Utf8, "", "`model` (computed by the model), `measured` (the user-space analog run on the worker) or `kernel` (the real kernel path, in a guest)"),
    ("point_id", pl.UInt64, "", "64-bit hash of the model and its (axis, value) pairs: the same point has the same id in every sweep"),
    ("chunk_id", pl.Utf8, "", "content hash of the chunk that computed the row (its part file is `part-<chunk_id>.parquet`)"),
    ("status", pl.Utf8, "", "`ok`, `infeasible` (the point cannot exist) or `error` (the model raised)"),
    ("reason", pl.Utf8, "", "why a row is infeasible or failed; null when ok"),
)
MEASURE = (
    ("measure_repeats", pl.Int64, "", "measured rows: runs timed after the warm-up, at least the spec's repeats (null on modeled rows)"),
    ("measure_min", pl.Float64, "as the headline metric",
     "measured rows: the least disturbed value: per timed stretch the fastest run, summed (ns/load: the fastest slice)"),
    ("measure_median", pl.Float64, "as the headline metric", "measured rows: the median sample (the value in the metric column)"),
    ("measure_max", pl.Float64, "as the headline metric",
     "measured rows: the largest sample; kernel rows: the largest of the boots' values (with measure_min, LKP's range)"),
    ("measure_huge_pages", pl.Boolean, "", "measured rows that map memory: whether the mapping got 2 MiB pages (AnonHugePages)"),
)
# What a patched build's kernel row is read against ([kernel] references; workers.guest.settings.REFERENCES):
# the same point's sampled metric on the slow path of other kernels, each booted once.
REFERENCE = (
    ("kernel_base", pl.Float64, "as the sampled metric",
     "kernel rows of a patched build (the series', or a user's image given with [kernel] base): the same "
     "namespace on its base (the same source and config without the patches), slow path: the patches' effect is "
     "the row's value against it"),
    ("kernel_stock", pl.Float64, "as the sampled metric",
     "kernel rows of the series' build: the same namespace on Debian's kernel of the same source, slow path: "
     "the config's effect is kernel_base against it"),
)
# Which kernel build a row's count of the kernel's work belongs to (KernelCheck.work: memmap's instructions): a
# count priced with one build's instruction costs says nothing of another build's (workers.guest.settings.build_name).
BUILD = (
    ("kernel_build", pl.Utf8, "", "kernel rows: the build booted (a named kernel by its name, such as "
     "`debian:6.12`; a user's image as `<release>@<sha256, 16 digits>`); modeled rows of a model that prices a "
     "count of the kernel's work with a build's per-operation costs (KernelCheck.work): that build (its "
     "profile's, fit by memsweep calibrate --from, else the model's own); null elsewhere"),
)
# What a modeled row rests on (workers.evidence writes them, analysis.evidence reads them). An axis entry:
EVIDENCE_AXIS = pl.Struct({"axis": pl.Utf8, "value": pl.Utf8, "relation": pl.Utf8, "ratio": pl.Float64, "reference": pl.Utf8})
EVIDENCE = (
    ("evidence", pl.Utf8, "", "modeled rows: what the headline rests on, `fit`, `validated`, `kernel-checked`, "
     "`extrapolated` or `assumed` (workers.evidence; null on measured and kernel rows, which are observations)"),
    ("evidence_figure", pl.Utf8, "", "modeled rows: the published figure whose point it is (fit or validation figure)"),
    ("evidence_error", pl.Float64, "fraction", "modeled rows at a validation figure's point: the relative error "
     "against it"),
    ("evidence_axes", pl.List(EVIDENCE_AXIS), "", "modeled rows: each axis whose value no figure has: {axis, value, relation "
     "(`no figure`, `between`, `above`, `below` the values with figures), ratio (how many times past them), "
     "reference (those values)}"),
    ("evidence_assumptions", pl.List(pl.Utf8), "", "modeled rows: the assumptions its answer rests on, by name (and a "
     "what-if profile's reason)"),
    ("evidence_note", pl.Utf8, "", "modeled rows: all of the above in words, for a reader"),
)
PROVENANCE = (
    ("env_host", pl.Utf8, "", "host name of the worker that computed the row"),
    ("env_cpu_model", pl.Utf8, "", "its CPU model (/proc/cpuinfo)"),
    ("env_caches", pl.Utf8, "", "its L1d, L2, L3 sizes (/sys/devices/system/cpu/cpu0/cache)"),
    ("env_l1d_bytes", pl.Int64, "bytes", "its L1 data cache size (cpu0); null when unknown"),
    ("env_l2_bytes", pl.Int64, "bytes", "its L2 cache size (cpu0); null when unknown"),
    ("env_l3_bytes", pl.Int64, "bytes", "its L3 cache size (cpu0); null when unknown"),
    ("env_tlb_4k_entries", pl.Int64, "", "its TLB entries for 4 KiB pages (/proc/cpuinfo `TLB size`, AMD); null where the CPU does not say"),
    ("env_thp_mode", pl.Utf8, "", "transparent hugepage mode (/sys/kernel/mm/transparent_hugepage/enabled)"),
    ("env_kernel_release", pl.Utf8, "", "kernel release (uname -r)"),
    ("env_memsweep_version", pl.Utf8, "", "memsweep version on the worker"),
    ("env_git_sha", pl.Utf8, "", "commit of the driver's checkout, empty outside git"),
    ("env_ray_node_id", pl.Utf8, "", "Ray node id of the worker"),
    ("env_guest_kernel", pl.Utf8, "", "kernel rows: the guest kernel's release (uname -r in the guest); null on other rows"),
    ("env_guest_cmdline", pl.Utf8, "", "kernel rows: the guest kernel's command line (/proc/cmdline)"),
    ("env_accel", pl.Utf8, "", "kernel rows: the guest's accelerator, `kvm` (times are a machine's) or `tcg` (emulated: "
     "times proportional to the work, never compared with model or measured times)"),
)
# Arrow types a part stores in place of polars' own: `model` as string, not polars' large_string, because
# pyarrow.dataset's hive partitioning reads the model=<name> folder key as string and refuses to merge
# the two (ds.dataset(sweep, partitioning="hive") failed: "Field model has incompatible types").
ARROW_TYPES = {"model": pa.string()}
GUEST_COLUMNS = ("env_guest_kernel", "env_guest_cmdline", "env_accel")  # filled by the kernel row source
IDENTITY_COLUMNS = tuple(c[0] for c in IDENTITY)
MEASURE_COLUMNS = tuple(c[0] for c in MEASURE)
REFERENCE_COLUMNS = tuple(c[0] for c in REFERENCE)
BUILD_COLUMNS = tuple(c[0] for c in BUILD)
EVIDENCE_COLUMNS = tuple(c[0] for c in EVIDENCE)
PROVENANCE_COLUMNS = tuple(c[0] for c in PROVENANCE)
DTYPES = {c[0]: c[1] for c in (*IDENTITY, *MEASURE, *REFERENCE, *BUILD, *EVIDENCE, *PROVENANCE)}
_UNITS = {c[0]: c[2] for c in (*IDENTITY, *MEASURE, *REFERENCE, *BUILD, *EVIDENCE, *PROVENANCE)}


# -- the row sources ----------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True, slots=True)
class Source:
    """One row source as the dataset knows it. Its backend's rows give the points' param_* columns, status,
    reason, the model's metrics and `columns` (and the error bars where `bars`); the writer lays them out
    against the model's one row layout (row_schema), every column the source does not give null."""

    name: str  # a row's `source`
    columns: tuple[str, ...]  # the registry's columns only its rows fill (beside identity and host provenance)
    bars: bool  # whether its rows carry the error bars of the model's priced metrics (lo_*, hi_*)
    backend: str  # "package.module:NAME" of its workers.source.Backend, imported by workers.source.backends()


# One entry per row source, in the order a run computes them (adding a source: its package with its Backend,
# its columns in the registry above, one line here; README "A row source of your own").
SOURCES = (
    Source(name=MODELED, columns=(*BUILD_COLUMNS, *EVIDENCE_COLUMNS), bars=True, backend="workers.modeled:BACKEND"),
    Source(name=MEASURED, columns=MEASURE_COLUMNS, bars=False, backend="workers.measure.source:BACKEND"),
    Source(name=KERNEL, columns=(*MEASURE_COLUMNS, *REFERENCE_COLUMNS, *BUILD_COLUMNS, *GUEST_COLUMNS), bars=False,
           backend="workers.guest.source:BACKEND"),
)
SOURCE = {s.name: s for s in SOURCES}
SOURCE_NAMES = tuple(SOURCE)
_FILLED = {c for s in SOURCES for c in s.columns}
# The host's own provenance: every row has it, whichever source computed it.
HOST_COLUMNS = tuple(c for c in PROVENANCE_COLUMNS if c not in _FILLED)


def row_schema(params: Mapping[str, pl.DataType], metrics: Mapping[str, pl.DataType],
               bars: Mapping[str, pl.DataType]) -> dict[str, pl.DataType]:
    """A model's one row layout, for rows of every source: identity, the model's param_* columns, its metrics,
    their error bars, measure_*, the reference kernels' values, the build counted, the evidence, the provenance
    (the host's, then the guest's)."""
    return {**{c: DTYPES[c] for c in IDENTITY_COLUMNS}, **params, **metrics, **bars,
            **{c: DTYPES[c] for c in (*MEASURE_COLUMNS, *REFERENCE_COLUMNS, *BUILD_COLUMNS, *EVIDENCE_COLUMNS,
                                      *PROVENANCE_COLUMNS)}}


def lay_out(frame: pl.DataFrame, schema: Mapping[str, pl.DataType], source: Source,
            given: Iterable[str]) -> pl.DataFrame:
    """`frame` (a source's rows with the identity and host columns added) in `schema`'s order, every column the
    source does not fill null. `given`: the columns its backend's rows may hold besides its own (params, status,
    reason, metrics, bars where it has them). A column it fills that the source does not declare is a
    ValueError: two sources would each write it and no reader would know which."""
    own = {*given, *source.columns, *IDENTITY_COLUMNS, *HOST_COLUMNS}
    stray = [c for c in frame.columns if c not in own]
    if stray:
        raise ValueError(f"row source {source.name!r} gave columns it does not declare: {stray}")
    return frame.select(pl.col(c) if c in frame.columns else pl.lit(None, dtype=dt).alias(c)
                        for c, dt in schema.items())


# Unit tokens of metric names (STYLE: units live in names) and the unit each stands for.
UNIT_TOKENS = {"ns": "ns", "us": "µs", "ms": "ms", "s": "s", "bytes": "bytes", "gbs": "GB/s",
               "fraction": "fraction", "rate": "fraction"}


def unit_of(column: str) -> str:
    """A column's unit: the registry's for identity, measure and provenance columns, else the first
    unit token of its name after the prefix (metric_ns_per_load: ns, metric_setup_us: µs,
    metric_gbs: GB/s, metric_tlb_miss_rate: fraction); "" for counts, flags and ratios."""
    if column in _UNITS:
        return _UNITS[column]
    for token in column.split("_")[1:]:
        if token in UNIT_TOKENS:
            return UNIT_TOKENS[token]
    return ""


# Columns whose min/max a part's footer keeps: those readers filter whole parts on (a source, the status, an axis
# value), and the provenance, which analysis.read.Sweep.distinct reads from the footers (a part's is one worker's:
# min == max). Statistics of the other columns took a third of a part's encoding (the strings' min and max above all).
STATISTICS_COLUMNS = ("source", "status", *PROVENANCE_COLUMNS)


def parquet_options(schema: pa.Schema) -> dict:
    """pyarrow.parquet.write_table's options for a part of `schema`: zstd; dictionary encoding for every column but
    the floats and point_id (a chunk's floats are mostly distinct: pyarrow builds a dictionary, finds it too big
    and falls back, which made writing random float64 three times slower than plain encoding); statistics for
    STATISTICS_COLUMNS and the axes (param_*)."""
    names = schema.names
    return {"compression": "zstd",
            "use_dictionary": [f.name for f in schema if f.name != "point_id" and not pa.types.is_floating(f.type)],
            "write_statistics": [n for n in names if n in STATISTICS_COLUMNS or n.startswith("param_")]}


def part_table(frame: pl.DataFrame) -> pa.Table:
    """A chunk's rows as the Arrow table its part stores: polars' types, and ARROW_TYPES' where it names one."""
    table = frame.to_arrow()
    for name, arrow_type in ARROW_TYPES.items():
        i = table.schema.get_field_index(name)
        if i >= 0:
            table = table.set_column(i, pa.field(name, arrow_type), table.column(i).cast(arrow_type))
    return table
