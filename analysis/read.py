"""Reading a sweep's dataset: its manifest, its spec, and one lazy scan per model.

A sweep folder (local path or pyarrow filesystem URI) holds `model=<name>/part-*.parquet`,
`_manifest.json` and `_spec.toml` (schema 1-2: `manifest.json`, `spec.toml`; workers.dataset has the
layout). Different models have different columns, so each model's folder is scanned on its own;
nothing is collected here except the small per-axis value counts.
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from workers import MODELS, load_plugins
from workers.axes import Axis
from workers.dataset import KERNEL, MANIFEST, MEASURED, MODELED, PROVENANCE_COLUMNS, Layout  # noqa: F401 (the row sources, re-exported)
from workers.dataset.folder import at, layout, read_manifest, read_text, scan_parts
from workers.dataset.parts import checked_parts
from workers.exceptions import ProfileError, SweepFolderError
from workers.model import STATUS_OK, Model
from workers.plots import Cond, Either
from workers.profiles import Profile, calibration_status, load_profile, profile_from_dict

from .exceptions import AnalysisError

SOURCE = "source"  # identity column since schema 2: "model" (modeled) or "measured" rows; schema 4: "kernel"
EQUAL_REL = 1e-9  # values this close are the same (deterministic models; float summation order)
BATCH_ROWS = 4_000_000  # rows per batch of scan_batches(): about 0.7 GB of streaming group_by state at most
DEFAULT = "default"  # scan(): the modeled rows, or the measured ones when a model has only those


class Sweep:
    """One sweep on disk: name, manifest, spec text, the models with parts, lazy scans."""

    def __init__(self, sweep_dir: str, batch_rows: int = BATCH_ROWS, field: str = "OUT/SWEEP") -> None:
        """`field`: what the user calls `sweep_dir` (the argument, or compare's A and B), named in errors."""
        self.uri = str(sweep_dir).rstrip("/")
        try:
            self.loc = at(self.uri, field)
            self.fs, self.root = self.loc.fs, self.loc.root
            if self.fs.get_file_info(self.root).type != pafs.FileType.Directory:
                raise AnalysisError(
                    f"'{field}' must be a sweep folder written by 'memsweep run' (got {sweep_dir!r}: no such folder)."
                )
            self.layout: Layout = layout(self.loc)
            manifest = read_manifest(self.loc, self.layout)
        except SweepFolderError as e:
            raise AnalysisError(str(e)) from None
        if manifest is None:
            raise AnalysisError(
                f"'{field}' must hold a {self.layout.manifest} written by 'memsweep run' (got {sweep_dir!r}: none there)."
            )
        self.manifest: dict = manifest
        self.spec_text: str = self._read(self.layout.spec) or self.manifest.get("spec", "")
        self.spec: dict = _toml(self.spec_text)
        self.name: str = str(self.manifest.get("sweep") or self.spec.get("name") or os.path.basename(self.root))
        self.description: str = str(self.spec.get("description", ""))
        self.plugin_errors: list[str] = _load_plugins(self.spec.get("plugins", []))
        try:
            self._parts: dict[str, list[str]] = checked_parts(self.loc, self.manifest)  # nothing unchecked is read
        except SweepFolderError as e:
            raise AnalysisError(str(e)) from None
        self.models: tuple[str, ...] = self._models_with_parts()
        self._schemas: dict[str, dict[str, pl.DataType]] = {}
        self._values: dict[str, dict[str, pl.DataFrame]] = {}
        self._sources: dict[str, list[str]] = {}
        self._footers: dict[str, dict[str, pq.FileMetaData]] = {}
        self._memo: dict[tuple, object] = {}
        self.batch_rows = batch_rows  # rows per batch of scan_batches()

    def _read(self, name: str) -> str | None:
        try:
            return read_text(self.loc, f"{self.root}/{name}")
        except (OSError, UnicodeDecodeError):
            return None

    def _models_with_parts(self) -> tuple[str, ...]:
        order = list(self.manifest.get("models", {}))
        return tuple(sorted(self._parts, key=lambda m: (order.index(m) if m in order else len(order), m)))

    def named_models(self) -> list[str]:
        """Every model the sweep names, in report order: its spec's models in the spec's order, then the
        manifest's, then any other model with parts (a model named but without rows is included: its
        figures say so)."""
        listed = self.spec.get("models")
        names = [*(listed if isinstance(listed, list) else []), *self.manifest.get("models", {}), *self.models]
        return [n for n in dict.fromkeys(names) if isinstance(n, str)]

    def scan(self, model: str, source: str | None = DEFAULT) -> pl.LazyFrame:
        """A lazy scan of one model's parts (hive partitioning off: `model` is in the file).

        `source`: the rows of one source ("model" or "measured"); DEFAULT is the modeled rows when
        there are any, else the measured ones; None is every row."""
        if model not in self.models:
            raise AnalysisError(f"'model' must be one of the models in this sweep {list(self.models)} (got {model!r}).")
        keep = self._source_filter(model, source)
        lf = self._scan_parts(model)
        return lf if keep is None else lf.filter(keep)

    def _source_filter(self, model: str, source: str | None) -> pl.Expr | None:
        if source is None or SOURCE not in self.schema(model):
            return None
        return pl.col(SOURCE) == (self.default_source(model) if source == DEFAULT else source)

    def _scan_parts(self, model: str) -> pl.LazyFrame:
        """workers.dataset.folder's reader: polars' own scan locally, pyarrow's filesystem for URIs."""
        return scan_parts(self.fs, self._parts[model])

    def scan_batches(self, model: str, source: str | None = DEFAULT, batch_rows: int | None = None) \
            -> list[pl.LazyFrame]:
        """scan(model, source) as several scans, each over consecutive parts holding about `batch_rows` rows
        (the sweep's own when None; counted from the parts' footers; a part is never split), for aggregations
        folded batch by batch (metrics.reduce_batches): polars' streaming group_by holds more the more rows it
        reads."""
        scan = self.scan(model, source)  # checks the model
        batch_rows = self.batch_rows if batch_rows is None else batch_rows
        counts = self._part_rows(model)
        groups: list[list[str]] = [[]]
        held = 0
        for path in self._parts[model]:
            if groups[-1] and held + counts[path] > batch_rows:
                groups.append([])
                held = 0
            groups[-1].append(path)
            held += counts[path]
        if len(groups) == 1:
            return [scan]
        keep = self._source_filter(model, source)
        frames = [scan_parts(self.fs, paths) for paths in groups]
        return frames if keep is None else [lf.filter(keep) for lf in frames]

    def memo(self, key: tuple, compute):
        """compute(), once per key for this sweep: aggregates several report sections ask for."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def forget(self, kind: str) -> None:
        """Drop what memo() keeps under keys of `kind` (their first item): for a caller that knows no later
        reader asks for it, and whose next step needs the memory."""
        for key in [k for k in self._memo if k[0] == kind]:
            del self._memo[key]

    def footers(self, model: str) -> dict[str, pq.FileMetaData]:
        """Each part of the model (its path) -> its footer, read once (the parts are checked when the sweep is
        opened: a footer read here is the one the manifest's checksum covers)."""
        if model not in self._footers:
            self._footers[model] = {p: pq.read_metadata(p, filesystem=self.fs) for p in self._parts[model]}
        return self._footers[model]

    def _part_rows(self, model: str) -> dict[str, int]:
        return {p: meta.num_rows for p, meta in self.footers(model).items()}

    def sources(self, model: str) -> list[str]:
        """The sources of this model's rows: ["model"], ["measured"] or both (schema 1 has only "model")."""
        if model not in self._sources:
            if SOURCE not in self.schema(model):
                self._sources[model] = [MODELED]
            else:
                found = self.scan(model, None).group_by(SOURCE).len().collect(engine="streaming")[SOURCE].to_list()
                self._sources[model] = sorted((s for s in found if s), key=lambda s: (s != MODELED, s))
        return self._sources[model]

    def default_source(self, model: str) -> str:
        found = self.sources(model)
        return MODELED if MODELED in found or not found else found[0]

    def schema(self, model: str) -> dict[str, pl.DataType]:
        if model not in self._schemas:
            self._schemas[model] = dict(self.scan(model, None).collect_schema())
        return self._schemas[model]

    def params(self, model: str) -> list[str]:
        """The model's `param_*` columns, in dataset order."""
        return [c for c in self.schema(model) if c.startswith("param_")]

    def metrics(self, model: str) -> list[str]:
        return [c for c in self.schema(model) if c.startswith("metric_")]

    def model_object(self, model: str) -> Model | None:
        """The registered model of that name, or None (a sweep may outlive a model)."""
        return MODELS.get(model)

    def profile_status(self) -> str:
        """`name: description; calibrated (...)`: the profile the sweep ran with and how far it is
        calibrated for the costs its models fit (workers.profiles.calibration_status)."""
        profile = self.profile_object()
        if profile is None:
            return f"{self.manifest.get('profile', '?')}: (not readable)"
        # the profile sections the sweep's models read (their own, and those their fits set), and every cost
        # a fit of any model sets in them (copy's costs are fitted by memmap's figures)
        objs = [obj for m in self.models if (obj := self.model_object(m)) is not None]
        sections = {o.name for o in objs} | {p.section for o in objs for p in o.calibration.free_params}
        keys = [(p.section, p.key) for o in MODELS.values() for p in o.calibration.free_params if p.section in sections]
        return f"{profile.name}: {profile.description}; {calibration_status(profile, keys)}"

    def profile_change(self) -> str | None:
        """A sentence when the profile the sweep ran with has changed since (a shipped profile of another
        memsweep version, or an edited file at the absolute path the spec named): its digest now is not the
        manifest's. None when it is the same, or cannot be told: a relative path was the spec file's folder's,
        which the sweep does not record."""
        name, then = self.manifest.get("profile"), self.manifest.get("profile_digest")
        if not isinstance(name, str) or not then or (Path(name).suffix and not Path(name).is_absolute()):
            return None
        try:
            now = load_profile(name).digest()
        except ProfileError:
            return None
        if now == then:
            return None
        return (f"The profile {name} has changed since this sweep ran (digest {then} then, {now} now): every "
                "number here was computed with the values the run used (kept in its manifest); rerun the sweep "
                "with --fresh to use the new ones.")

    def profile_object(self) -> Profile | None:
        """The machine profile the sweep ran with: as the manifest keeps it, else (a folder written before
        it did) a shipped name or a path that still exists; None when neither is there."""
        try:
            if isinstance(self.manifest.get("profile_data"), dict):
                return profile_from_dict(self.manifest["profile_data"], origin=MANIFEST)
            return load_profile(str(self.manifest.get("profile") or self.spec.get("profile") or "seed"))
        except ProfileError:
            return None

    def axis_values(self, model: str) -> dict[str, pl.DataFrame]:
        """param column -> frame (value, n_ok) of its distinct values among ok rows, most common first
        (then by value). One streaming pass per column: memory stays flat whatever the rows."""
        cache = self._values
        if model not in cache:
            lf = self.scan(model).filter(pl.col("status") == STATUS_OK)
            cache[model] = {
                c: lf.group_by(pl.col(c).alias("value")).agg(pl.len().alias("n_ok")).collect(engine="streaming")
                .sort(["n_ok", "value"], descending=[True, False], nulls_last=True)
                for c in self.params(model)}
        return cache[model]

    def distinct(self, model: str, columns: list[str]) -> dict[str, set]:
        """Distinct non-null values of `columns` over all of the model's rows (every source), e.g. the
        provenance columns: from each part's Parquet statistics where a row group holds one value
        (min == max, exact), otherwise from that part's rows. A part's provenance is one worker's, so
        this reads footers only, whatever the number of rows."""
        seen: dict[str, set] = {c: set() for c in columns}
        for path, meta in self.footers(model).items():
            found = {c: set() for c in columns if c in meta.schema.names}
            exact = True
            for r in range(meta.num_row_groups):
                group = meta.row_group(r)
                for i in range(group.num_columns):
                    col = group.column(i)
                    if col.path_in_schema in found:
                        known, value = _one_value(col.statistics, group.num_rows)
                        exact = exact and known
                        if known and value is not None:
                            found[col.path_in_schema].add(value)
            if not exact:
                table = pq.read_table(path, columns=list(found), filesystem=self.fs)
                found = {c: {v for v in table.column(c).unique().to_pylist() if v is not None} for c in found}
            for c, values in found.items():
                seen[c] |= values
        return seen

    def provenance(self) -> dict[str, set]:
        """Every provenance column (workers.dataset) -> its distinct non-null, non-empty values over all
        models' rows (columns a sweep of an older schema lacks stay empty)."""
        seen: dict[str, set] = {c: set() for c in PROVENANCE_COLUMNS}
        for m in self.models:
            for c, values in self.distinct(m, [c for c in PROVENANCE_COLUMNS if c in self.schema(m)]).items():
                seen[c] |= {v for v in values if v != ""}
        return seen

    def varying(self, model: str) -> list[str]:
        """Param columns that take more than one value among ok rows."""
        return [c for c, f in self.axis_values(model).items() if f.height > 1]

    def rows(self, model: str) -> ModelRows:
        """One model's rows of this sweep, as the value analysis passes around."""
        return ModelRows(self, model)


@dataclass(frozen=True, slots=True)
class ModelRows:
    """One model's rows in one sweep: what analysis passes around instead of (sweep, model name).
    Everything is read lazily through the sweep, which caches it."""

    sweep: Sweep
    name: str

    @property
    def model(self) -> Model | None:
        """The registered model of that name, or None (a sweep may outlive a model)."""
        return self.sweep.model_object(self.name)

    def scan(self, source: str | None = DEFAULT) -> pl.LazyFrame:
        return self.sweep.scan(self.name, source)

    def scan_batches(self, source: str | None = DEFAULT, batch_rows: int | None = None) -> list[pl.LazyFrame]:
        return self.sweep.scan_batches(self.name, source, batch_rows)

    def modeled(self, *columns: str) -> pl.LazyFrame | None:
        """The model's ok modeled rows, or None when the sweep lacks the model, its modeled rows or one of
        `columns`."""
        if self.name not in self.sweep.models or MODELED not in self.sources():
            return None
        schema = self.schema()
        if any(c not in schema for c in columns):
            return None
        return self.scan(MODELED).filter(pl.col("status") == STATUS_OK)

    def sources(self) -> list[str]:
        return self.sweep.sources(self.name)

    def default_source(self) -> str:
        return self.sweep.default_source(self.name)

    def schema(self) -> dict[str, pl.DataType]:
        return self.sweep.schema(self.name)

    def params(self) -> list[str]:
        return self.sweep.params(self.name)

    def metrics(self) -> list[str]:
        return self.sweep.metrics(self.name)

    def axis_values(self) -> dict[str, pl.DataFrame]:
        return self.sweep.axis_values(self.name)

    def varying(self) -> list[str]:
        return self.sweep.varying(self.name)

    def distinct(self, columns: list[str]) -> dict[str, set]:
        return self.sweep.distinct(self.name, columns)

    def spec_order(self, values: list, column: str) -> list:
        """`values` of `column` in the order the sweep's spec lists them (the run order its manifest records,
        the first block that has the axis); values it does not list, or a manifest that records no order,
        after them in sort order. The first is the baseline a published comparison uses (young's per_pte
        before batched, the RFC's PTE before PMD)."""
        blocks = ((self.sweep.manifest.get("computation") or {}).get("order") or {}).get(self.name) or []
        axis = axis_of(self.model, column)
        listed = next((b[column.removeprefix("param_")] for b in blocks if column.removeprefix("param_") in b), [])
        place = {text: i for i, text in enumerate(listed)}

        def key(v: object) -> tuple:
            text = axis.label(v) if axis is not None else str(v)
            return (place.get(text, len(place)), v is None, v if v is not None else 0)
        return sorted(values, key=key)

    def label(self, column: str, value: object) -> str:
        """A short human label for an axis value: the model's `value_labels` (pfnmap's "PMD (order 9)"),
        else the axis' own (sizes as 2MiB, null order as auto)."""
        obj = self.model
        named = obj.value_label(column, value) if obj is not None else None
        if named is not None:
            return named
        axis = axis_of(obj, column)
        if axis is not None:
            return axis.label(value)
        return "auto" if value is None else str(value)

    def label_with_unit(self, column: str, value: object) -> str:
        """label(), with the axis' unit after a plain number ("80 B" for a struct page size, "64 CPUs"): for
        an int or float axis that has a unit, where the model declares no display name of the value."""
        text = self.label(column, value)
        obj = self.model
        axis = axis_of(obj, column)
        if value is None or axis is None or axis.kind not in ("int", "float") or not axis.unit \
                or obj.value_label(column, value) is not None:
            return text
        return f"{text} {UNIT_SHORT.get(axis.unit, axis.unit)}"

    def describe(self, held: dict[str, object]) -> str:
        """`align=2MiB, map=dev`: the axes a figure or table holds fixed (and the source of its rows
        when the model has both modeled and measured rows)."""
        parts = [f"{c.removeprefix('param_')}={self.label(c, v)}" for c, v in held.items()]
        if self.name in self.sweep.models and len(self.sources()) > 1:
            parts.insert(0, f"source={self.default_source()}")
        return ", ".join(parts)

    def pin(self, keep: list[str], prefer: dict[str, object] | None = None) -> tuple[pl.Expr, dict[str, object]]:
        """Hold every varying axis not in `keep` at one value: the `prefer`red value, else the axis
        default, when it has ok rows; else its most common value. Returns the filter and
        {param column: value held}."""
        obj = self.model
        expr, held = pl.lit(True), {}
        for col, counts in self.axis_values().items():
            if col in keep or counts.height <= 1:
                continue
            present = counts["value"].to_list()
            axis = axis_of(obj, col)
            wanted = []
            if prefer and col in prefer:
                wanted.append(prefer[col])
            if axis is not None:
                try:
                    wanted.append(axis.canonical(axis.default))
                except ValueError:
                    pass
            choice = next((w for w in wanted if w in present), None)
            if choice is None:
                choice = nearest(present, wanted[-1]) if wanted else present[0]
            expr = expr & value_expr(col, choice)
            held[col] = choice
        return expr, held


def collect_all(queries: list[pl.LazyFrame]) -> list[pl.DataFrame]:
    """pl.collect_all, streaming and without common-subplan elimination: with it polars holds the scan the
    queries share whole in memory to read it once (the `large` memmap's rows, 0.7 GB more for
    analysis.evidence.summarize's four counts, and slower than reading the parts four times from the page cache)."""
    return pl.collect_all(queries, engine="streaming", optimizations=pl.QueryOptFlags(comm_subplan_elim=False))


def _one_value(stats, rows: int) -> tuple[bool, object]:
    """(True, the value) when a column chunk's statistics show it holds one value (None: only
    nulls); (False, None) when they cannot tell."""
    if stats is None:
        return False, None
    if stats.has_null_count and stats.null_count == rows:
        return True, None
    exact = getattr(stats, "is_min_value_exact", True) and getattr(stats, "is_max_value_exact", True)
    if stats.has_min_max and exact and stats.min == stats.max and (not stats.has_null_count or stats.null_count == 0):
        return True, stats.min
    return False, None


def axis_of(model: Model | None, column: str) -> Axis | None:
    """The Axis behind a `param_<name>` column, if the model is known and has it."""
    if model is None:
        return None
    for a in model.axes:
        if a.column == column:
            return a
    return None


def _toml(text: str) -> dict:
    try:
        return tomllib.loads(text) if text else {}
    except tomllib.TOMLDecodeError:
        return {}


def _load_plugins(plugins: object) -> list[str]:
    """Import the spec's plugin modules so their models are known; return what failed."""
    if not isinstance(plugins, list):
        return []
    errors = []
    for p in plugins:
        try:
            load_plugins([p])
        except (Exception, SystemExit, KeyboardInterrupt) as e:  # noqa: BLE001 - whatever it raises on import
            errors.append(f"plugin {p!r} could not be imported: {type(e).__name__}: {e}")
    return errors


def cond_expr(c: Cond | Either, schema: dict, varying: set) -> pl.Expr | None:
    """A declared condition (workers.plots: Cond, Either) as a polars expression (`==` as value_expr:
    null-aware, floats with a tolerance); None where it does not apply: a column it names is absent
    from `schema`, or its `when_varying` axis is not among the `varying` ones."""
    if isinstance(c, Either):
        if c.when_varying and c.when_varying not in varying:
            return None
        groups = []
        for g in c.groups:
            parts = [cond_expr(k, schema, varying) for k in g]
            if any(e is None for e in parts):
                return None
            groups.append(pl.all_horizontal(parts))
        return pl.any_horizontal(groups)
    if c.column not in schema or (c.op == "== column" and c.value not in schema):
        return None
    col = pl.col(c.column)
    if c.op == "not null":
        return col.is_not_null()
    if c.op == "in":
        return col.is_in(list(c.value))
    if c.op == "== column":
        return col == pl.col(c.value)
    if c.op == "==":
        return value_expr(c.column, c.value)
    v = pl.lit(c.value)
    return {"!=": col != v, ">=": col >= v, ">": col > v, "<=": col <= v, "<": col < v}[c.op]


def parse_where(items: list[str] | tuple[str, ...] | None, flag: str = "--where") -> list[tuple[str, str]]:
    """["arch=arm64"] -> [("arch", "arm64")]: the `--where AXIS=VALUE` filters of table and compare."""
    out = []
    for item in items or ():
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise AnalysisError(f"'{flag}' must be AXIS=VALUE, e.g. arch=arm64 (got {item!r}).")
        out.append((name.strip(), value.strip()))
    return out


def literal(text: str) -> object:
    """A command-line value as a spec would hold it: 9, 0.25, true; else the text itself."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def axis_value(sides, column: str, text: str, field: str) -> object:
    """The value of `column` that `text` names (`field`: the option, named in errors): read by the model's
    Axis (as a spec value is), or a label the sweeps show ("PMD (order 9)"); it must be one the ok rows of
    `sides` (ModelRows of one model, in one or more sweeps) have."""
    a = sides[0]
    present = list(dict.fromkeys(v for s in sides for v in s.axis_values()[column]["value"].to_list()))
    present.sort(key=lambda v: (v is None, str(type(v)), v if v is not None else 0))
    labels = {a.label(column, v): v for v in present}
    axis = axis_of(a.model, column)
    value, problem = text, None
    if text in labels:
        value = labels[text]
    elif axis is not None:
        for raw in dict.fromkeys((text, literal(text))):
            try:
                value, problem = axis.canonical(raw), None
                break
            except ValueError as e:
                problem = problem or e
        if problem is not None:
            raise AnalysisError(f"'{field}' {problem}.")
    else:
        value = literal(text)
    for v in present:
        if v == value or (isinstance(v, float) and isinstance(value, (int, float))
                          and math.isclose(v, value, rel_tol=EQUAL_REL)):
            return v
    raise AnalysisError(f"'{field}' must be one of the values the sweeps have, {list(labels)} (got {text!r}).")


def value_expr(column: str, value: object) -> pl.Expr:
    """`column == value`, with null meaning "auto" and a tolerance for floats."""
    if value is None:
        return pl.col(column).is_null()
    if isinstance(value, float):
        return (pl.col(column) - value).abs() <= 1e-9 * max(1.0, abs(value))
    return pl.col(column) == value


def nearest(present: list, target: object) -> object:
    """The present value closest to `target` (by ratio for positive numbers), else the first."""
    nums = [v for v in present if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if not nums or not isinstance(target, (int, float)) or isinstance(target, bool):
        return present[0]
    if target > 0 and all(v > 0 for v in nums):
        return min(nums, key=lambda v: abs(math.log(v / target)))
    return min(nums, key=lambda v: abs(v - target))


UNIT_SHORT = {"bytes": "B"}
