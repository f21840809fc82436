"""Sweep specs: TOML in, a validated, frozen SweepSpec out.

    name = "default"
    models = ["memmap", "copy"]
    profile = "seed"                      # optional; a shipped profile name or a path (plus the
                                          # models' declared default costs it lacks)
    [axes]                                # shared axes, for every model that has them
    namespace_size = { from = "1GiB", to = "1TiB", scale = "log2" }
    struct_page_size = [64, 80, 96]
    [axes.memmap]                         # a model's own axes (and overrides of shared ones)
    strategy = ["slow", "template_nt_inline"]

A model's grid may also be several blocks, `[[axes.<model>]]` tables, each
expanded as a product and run one after another.

An axis the spec does not name takes the axis default. Every error names the
field, the rule and the value (SpecError); nothing is written before a spec
has loaded whole.
"""

from __future__ import annotations

import json
import math
import dataclasses
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from sweeps.exceptions import SpecError
from workers import MODELS, load_plugins
from workers.axes import SHARED_AXES, Axis
from workers.contract import one_line
from workers.dataset import KERNEL, MEASURED, MODELED, SOURCE_NAMES
from workers.exceptions import ProfileError, SettingsError
from workers.guest.build import build as build_series
from workers.guest.build import cached_build
from workers.guest.exceptions import GuestKernelError, GuestSetupError
from workers.guest.settings import BUILT, KernelSettings
from workers.model import with_costs
from workers.profiles import Profile, available_profiles, load_profile
from workers.keys import unknown_key
from workers.source import backends, default_settings
from workers.units import parse_size

SPEC_DIR = Path(__file__).parent / "shipped"
# The spec's own keys; each row source with settings adds its table ([measure], [kernel]: workers.source)
TOP_KEYS = {"name", "description", "models", "profile", "plugins", "chunk_points", "source", "axes"}
SOURCES = {**{s: (s,) for s in SOURCE_NAMES}, "both": (MODELED, MEASURED)}
RANGE_KEYS = {"from", "to", "scale", "step"}
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MAX_VALUES_PER_AXIS = 100_000
MAX_POINTS = 1 << 62


@dataclass(frozen=True, kw_only=True)
class SweepSpec:
    """A validated sweep: for each model, the ordered values of each of its axes."""

    name: str
    description: str
    models: tuple[str, ...]
    profile: Profile  # the named profile plus the models' default costs it lacks (workers.model.with_costs)
    profile_name: str
    plugins: tuple[str, ...]
    chunk_points: int | None
    sources: tuple[str, ...] = (MODELED,)  # model, measured and/or kernel rows (workers.dataset.SOURCES) of every point
    # source name -> its settings, the spec's table of it (workers.source.Settings): how measured rows are
    # sampled ([measure]), which kernel kernel rows boot ([kernel]); every source that has a table, asked or not
    settings: dict[str, object] = field(default_factory=default_settings)
    # model -> blocks; a block is ((axis, values), ...) in model axis order
    axes: dict[str, tuple[tuple[tuple[str, tuple], ...], ...]]
    text: str = field(default="", repr=False)  # the TOML as given, written beside the dataset

    def blocks(self, model: str) -> tuple[tuple[tuple[str, tuple], ...], ...]:
        return self.axes[model]

    def points(self, model: str) -> int:
        return sum(math.prod(len(values) for _, values in block) for block in self.axes[model])

    @property
    def total_points(self) -> int:
        return sum(self.points(m) for m in self.models)

    @property
    def total_rows(self) -> int:
        """Rows of the finished dataset: one per point and source."""
        return self.total_points * len(self.sources)


def shipped_specs() -> list[str]:
    return sorted(p.stem for p in SPEC_DIR.glob("*.toml"))


def resolve_spec_path(spec: str) -> Path:
    """A path to a spec file, or the name of a shipped spec ('default', 'seed', 'large')."""
    path = Path(spec)
    if path.is_file():
        return path
    shipped = SPEC_DIR / f"{spec}.toml"
    if not path.suffix and shipped.is_file():
        return shipped
    raise SpecError(
        f"'SPEC' must be a spec file or one of the shipped specs {shipped_specs()} (got {spec!r})."
    )


def load_spec(spec: str) -> SweepSpec:
    """Read and validate a spec file or shipped spec name."""
    path = resolve_spec_path(spec)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise SpecError(f"'SPEC' must be a readable TOML file (got {str(path)!r}: {e}).") from None
    return parse_spec(text, base_dir=path.resolve().parent)


def portable_spec(spec: str) -> tuple[str, dict[str, bytes]]:
    """A spec file's text to run elsewhere (a Ray job's working directory, a Slurm script), and the files
    it needs beside it: a profile file it names is one of them, its `profile` line then naming the file's
    base name (a top-level key: only lines before the first table are looked at)."""
    path = resolve_spec_path(spec)
    text = path.read_text()
    parsed = parse_spec(text, base_dir=path.resolve().parent)
    profile = Path(parsed.profile_name)
    if not profile.suffix:
        return text, {}
    source = profile if profile.is_absolute() else path.resolve().parent / profile
    head, sep, tables = text.partition("\n[")
    head = re.sub(r'(?m)^(profile\s*=\s*)(["\'])[^"\'\n]*\2', lambda m: f"{m.group(1)}{json.dumps(profile.name)}", head)
    return head + sep + tables, {profile.name: source.read_bytes()}


def parse_spec(text: str, base_dir: Path | None = None) -> SweepSpec:
    """Validate spec text; a relative profile path in it is read from `base_dir` (the spec file's
    folder), else from the current directory."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"the spec must be valid TOML: {e}.") from None
    tables = {b.settings.table: name for name, b in backends().items() if b.settings is not None}
    problem = unknown_key(data, TOP_KEYS | set(tables), kind="spec")
    if problem:
        raise SpecError(problem)
    name = _name(data)
    plugins = _plugins(data)
    load_plugins(plugins)
    models = _models(data)
    profile_name, profile = _profile(data, base_dir)
    profile = with_costs(profile, (MODELS[m] for m in models))  # a plugin's default costs are part of its profile
    chunk_points = _chunk_points(data)
    sources = _sources(data)
    settings = {name: _settings(data, table, base_dir) for table, name in tables.items()}
    axes = _axes(data.get("axes", {}), models)
    spec = SweepSpec(
        name=name, description=_str(data, "description", ""), models=models, profile=profile,
        profile_name=profile_name, plugins=plugins, chunk_points=chunk_points, sources=sources,
        settings=settings, axes=axes, text=text,
    )
    for m in models:
        if spec.points(m) > MAX_POINTS:
            raise SpecError(f"'axes' of model {m!r} make {spec.points(m)} points; at most {MAX_POINTS} are allowed.")
    return spec


def with_kernel(spec: SweepSpec, image: str | None = None, modules: str | None = None,
                accel: str | None = None, *, build: bool = False) -> SweepSpec:
    """`spec` with the command line's kernel (`--kernel`, `--modules`, `--accel`; paths from the current
    folder) in place of its [kernel] table's, and the kernel checked where kernel rows are asked for:
    SpecError names what is missing (no such image, no pmem drivers, Debian's kernel not fetched).
    With `build` (memsweep run), a named kernel this node builds (series:6.12, base:6.12, and the base a
    series' row is read against) is built first when it is not cached, its progress on stderr; a missing
    toolchain (named with the command that installs it) or a failed step is the SpecError, before the run
    writes anything. A model with a guest of its own readies it the same way (KernelCheck.prepare: a build or
    Debian's arm64 kernels). A `base` that is no kernel is named as the base."""
    given = {k: v for k, v in (("image", image), ("modules", modules), ("accel", accel)) if v is not None}
    if given and KERNEL not in spec.sources:
        raise SpecError(f"'--{next(iter(given)).replace('image', 'kernel')}' needs a spec whose 'source' has "
                        f"'kernel' (got {list(spec.sources)}).")
    try:
        kernel = spec.settings[KERNEL]
        kernel = KernelSettings.from_table({**_fields(kernel), **given}, Path.cwd()) if given else kernel
        if KERNEL in spec.sources:
            for m in spec.models if build else ():  # a model's own guest: its kernels, before anything is written
                if MODELS[m].kernel is not None:
                    MODELS[m].kernel.prepare_guest()
            for k in (kernel, *kernel.reference_settings().values()):
                if build and k.image in BUILT and cached_build(name=BUILT[k.image]) is None:
                    build_series(install=False, name=BUILT[k.image])  # the toolchain: the user's own install
                try:
                    k.kernel()
                except GuestKernelError as e:
                    if k is kernel or not kernel.base:
                        raise
                    raise SpecError(f"'kernel.base' must be a kernel image or build folder, as 'image' is ({e})") \
                        from None
    except (GuestKernelError, GuestSetupError) as e:
        raise SpecError(str(e)) from None
    return dataclasses.replace(spec, settings={**spec.settings, KERNEL: kernel})


def _fields(settings) -> dict:
    return {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)}


def _str(data: dict, key: str, default: str | None = None) -> str:
    v = data.get(key, default)
    if not isinstance(v, str):
        raise SpecError(f"'{key}' must be a string (got {v!r}).")
    return v


def _name(data: dict) -> str:
    if "name" not in data:
        raise SpecError("'name' must be given: the sweep's name, used as its folder under --out.")
    name = _str(data, "name")
    if not NAME_RE.match(name):
        raise SpecError(
            f"'name' must be 1-64 characters of letters, digits, '_', '.', '-', starting with a "
            f"letter or digit (got {name!r})."
        )
    return name


def _plugins(data: dict) -> tuple[str, ...]:
    plugins = data.get("plugins", [])
    if not isinstance(plugins, list) or not all(isinstance(p, str) and p for p in plugins):
        raise SpecError(f"'plugins' must be a list of importable module names (got {plugins!r}).")
    for p in plugins:
        try:
            load_plugins([p])
        except ImportError as e:
            raise SpecError(f"'plugins' must name importable modules (got {p!r}: {e}).") from None
        except (Exception, SystemExit, KeyboardInterrupt) as e:  # noqa: BLE001 - whatever a plugin raises on
            # import is its failure, an exit or interrupt it raises too: the command must not end as if it ran
            raise SpecError(f"'plugins' module {p!r} does not import ({type(e).__name__}: {one_line(e)}).") from None
    return tuple(plugins)


def _models(data: dict) -> tuple[str, ...]:
    models = data.get("models", sorted(MODELS))
    if not isinstance(models, list) or not models:
        raise SpecError(f"'models' must be a non-empty list of model names from {sorted(MODELS)} (got {models!r}).")
    for m in models:
        if m not in MODELS:
            raise SpecError(f"'models' must name models from {sorted(MODELS)} (got {m!r}).")
    if len(set(models)) != len(models):
        raise SpecError(f"'models' must not repeat a model (got {models!r}).")
    return tuple(models)


def _profile(data: dict, base_dir: Path | None) -> tuple[str, Profile]:
    """The profile the spec names: a shipped one by name, or a file (a relative path from `base_dir`)."""
    name = _str(data, "profile", "seed")
    path = Path(name)
    if path.suffix:
        path = path if path.is_absolute() or base_dir is None else base_dir / path
        if not path.is_file():
            raise SpecError(
                f"'profile' must be one of the shipped profiles {available_profiles()} or a profile file, a "
                f"relative path being read from the spec file's folder (got {name!r}: no file at {path.absolute()})."
            )
    try:
        return name, load_profile(str(path))
    except ProfileError as e:
        raise SpecError(str(e)) from None


def _chunk_points(data: dict) -> int | None:
    v = data.get("chunk_points")
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise SpecError(f"'chunk_points' must be a positive integer (got {v!r}).")
    return v


def _sources(data: dict) -> tuple[str, ...]:
    """`source`: one name ("both" is model and measured) or a list of them; in the order they run."""
    source = data.get("source", MODELED)
    names = [source] if isinstance(source, str) else source
    if not isinstance(names, list) or not names or any(not isinstance(s, str) or s not in SOURCES for s in names):
        raise SpecError(f"'source' must be one of {sorted(SOURCES)} or a list of {list(SOURCE_NAMES)} "
                        f"(got {source!r}).")
    chosen = {s for n in names for s in SOURCES[n]}
    return tuple(s for s in SOURCE_NAMES if s in chosen)


def _settings(data: dict, table: str, base_dir: Path | None) -> object:
    """A row source's table ([measure]: workers.measure.settings, [kernel]: workers.guest.settings; their keys,
    defaults and rules); relative paths from the spec file's folder."""
    load = next(b.settings.load for b in backends().values() if b.settings is not None and b.settings.table == table)
    try:
        return load(data.get(table, {}), base_dir)
    except SettingsError as e:
        raise SpecError(str(e)) from None


def _axes(table: object, models: tuple[str, ...]) -> dict[str, tuple]:
    if not isinstance(table, dict):
        raise SpecError(f"'axes' must be a table of axes (got {table!r}).")
    own = {k: v for k, v in table.items() if _is_model_table(v)}
    shared_values = {}
    for k, raw in table.items():
        if k in own:
            continue
        if k not in SHARED_AXES:
            hint = f"; a model's own axes go under [axes.<model>] for a model in 'models' {list(models)}"
            raise SpecError(f"'axes.{k}' is not a shared axis; shared axes are {sorted(SHARED_AXES)}{hint}.")
        shared_values[k] = _values(f"axes.{k}", SHARED_AXES[k], raw)
    for m in own:
        if m not in models:
            raise SpecError(f"'axes.{m}' must be a model listed in 'models' {list(models)} (got {m!r}).")
    out = {}
    for m in models:
        tables = own.get(m, {})
        if isinstance(tables, dict):
            out[m] = (_block(f"axes.{m}", MODELS[m], tables, shared_values),)
        else:
            out[m] = tuple(_block(f"axes.{m}[{i}]", MODELS[m], t, shared_values) for i, t in enumerate(tables))
    return out


def _is_model_table(v: object) -> bool:
    """[axes.<model>] (a table that is not a range) or [[axes.<model>]] (a list of tables)."""
    if isinstance(v, dict):
        return not _is_range(v)
    return isinstance(v, list) and bool(v) and all(isinstance(t, dict) for t in v)


def _block(prefix: str, model, mine: dict, shared_values: dict) -> tuple[tuple[str, tuple], ...]:
    """One block of a model's grid: its own values, else the shared ones, else the defaults."""
    known = {a.name for a in model.axes}
    for k in mine:
        if k not in known:
            raise SpecError(f"'{prefix}.{k}' is not an axis of model {model.name!r}; its axes are {sorted(known)}.")
    return tuple(
        (a.name, _values(f"{prefix}.{a.name}", a, mine[a.name]) if a.name in mine
         else shared_values.get(a.name) or _values(f"{prefix}.{a.name}", a, [a.default]))
        for a in model.axes
    )


def _is_range(v: dict) -> bool:
    return "from" in v or "to" in v


def _values(fieldname: str, axis: Axis, raw: object) -> tuple:
    """The axis values a spec entry stands for: a list, a range table, or one scalar."""
    if isinstance(raw, dict):
        items = _expand_range(fieldname, axis, raw)
    elif isinstance(raw, list):
        items = raw
    else:
        items = [raw]
    if not items:
        raise SpecError(f"'{fieldname}' must not be empty: give at least one value ({axis.allowed}).")
    if len(items) > MAX_VALUES_PER_AXIS:
        raise SpecError(f"'{fieldname}' must have at most {MAX_VALUES_PER_AXIS} values (got {len(items)}).")
    values = []
    for item in items:
        try:
            values.append(axis.canonical(item))
        except ValueError as e:
            raise SpecError(f"'{fieldname}' {e}.") from None
    if len(set(values)) != len(values):
        raise SpecError(f"'{fieldname}' must not repeat a value (got {raw!r}).")
    return tuple(values)


def _expand_range(fieldname: str, axis: Axis, r: dict) -> list:
    extra = sorted(set(r) - RANGE_KEYS)
    if extra:
        raise SpecError(f"'{fieldname}.{extra[0]}' is not a range key; a range has {sorted(RANGE_KEYS)}.")
    if axis.kind not in ("size", "extent", "int", "float"):
        raise SpecError(f"'{fieldname}' must be a list of values, not a range: it is {axis.allowed}.")
    if "from" not in r or "to" not in r:
        raise SpecError(f"'{fieldname}' range must give both 'from' and 'to' (got {r!r}).")
    try:
        lo, hi = axis.canonical(r["from"]), axis.canonical(r["to"])
    except ValueError as e:
        raise SpecError(f"'{fieldname}' range bound {e}.") from None
    if lo > hi:
        raise SpecError(f"'{fieldname}.from' must not exceed 'to' (got {r['from']!r} > {r['to']!r}).")
    scale = r.get("scale", "linear")
    if scale == "log2":
        if "step" in r:
            raise SpecError(f"'{fieldname}.step' goes with scale = 'linear'; a log2 range doubles each value.")
        if lo <= 0:
            raise SpecError(f"'{fieldname}.from' must be positive for a log2 range (got {r['from']!r}).")
        out, v = [], lo
        while v <= hi and len(out) <= MAX_VALUES_PER_AXIS:
            out.append(v)
            v = v * 2
        return out
    if scale != "linear":
        raise SpecError(f"'{fieldname}.scale' must be 'log2' or 'linear' (got {scale!r}).")
    if "step" not in r:
        raise SpecError(f"'{fieldname}.step' must be given for a linear range (got {r!r}).")
    step = _step(fieldname, axis, r["step"])
    n = int((hi - lo) / step + 1e-9) + 1
    if n > MAX_VALUES_PER_AXIS:
        raise SpecError(f"'{fieldname}' range must have at most {MAX_VALUES_PER_AXIS} values (got {n}).")
    if axis.kind == "float":
        return [round(lo + i * step, 12) for i in range(n)]
    return [lo + i * step for i in range(n)]


def _step(fieldname: str, axis: Axis, raw: object) -> int | float:
    """A linear range's step: a positive size, integer or number, as the axis kind (not its rule)."""
    try:
        if axis.kind in ("size", "extent"):
            step = parse_size(raw)
        elif axis.kind == "int" and not isinstance(raw, bool) and isinstance(raw, int):
            step = raw
        elif axis.kind == "float" and not isinstance(raw, bool) and isinstance(raw, (int, float)):
            step = float(raw)
        else:
            raise ValueError
    except ValueError:
        raise SpecError(f"'{fieldname}.step' must be a positive {axis.kind} (got {raw!r}).") from None
    if not step > 0:
        raise SpecError(f"'{fieldname}.step' must be positive (got {raw!r}).")
    return step
