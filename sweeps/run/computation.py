"""What a sweep folder's rows were computed with, and how two such computations differ.

A sweep folder holds the rows of one computation. Its identity is what fixes the rows:

- the spec's meaning: its models and sources, the set of values of each axis in each block, the
  [measure] settings, `chunk_points` and `plugins`; not its description, nor the order of a list;
- the profile's content digest (its name is shown, not compared);
- each model's version, and the version of the package that provides a plugin model.

The manifest records it (`computation`), with the order in which the grid was run (`order`), and
every part carries its digest (`memsweep.computation` in the Parquet key-value metadata), so a part
of another computation left in the folder is found by its footer alone. A rerun whose identity
differs is refused with the differences (`differences`); one that differs only in the order of
values is run in the folder's own order (`in_order`), so it resumes the same chunks.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import importlib.metadata
import json

from sweeps.exceptions import DatasetError
from sweeps.spec.load import SweepSpec
from workers import MODELS, get_model
from workers.source import backends
from workers.dataset import COMPUTATION, LAYOUT, SPEC_FILE, parse_part_path
from workers.dataset.folder import Location, exists, part_infos, read_manifest, read_text
from workers.dataset.parts import mismatch_message, stray

from .store import check_schema


def identity(spec: SweepSpec) -> dict:
    """The computation a spec stands for, as plain JSON data (lists sorted where order means nothing)."""
    return {
        "spec": {
            "models": sorted(spec.models),
            "sources": sorted(spec.sources),
            "plugins": sorted(spec.plugins),
            "chunk_points": spec.chunk_points,
            # each source's settings (workers.source.Settings: [measure] in every identity, others where asked for)
            **settings_identity(spec),
            "axes": {m: [{a: sorted(labels) for a, labels in block.items()} for block in _labels(spec, m)]
                     for m in sorted(spec.models)},
        },
        "profile": {"name": spec.profile_name, "digest": spec.profile.digest()},
        "models": {m: {"version": get_model(m).version, "package": package_version(m)} for m in sorted(spec.models)},
    }


def settings_identity(spec: SweepSpec) -> dict:
    """What of each source's settings fixes the rows, under its table's name: [measure]'s always (it entered
    every digest before the kernel source existed), any other's only where the spec asks for its rows."""
    return {b.settings.table: b.settings.identity(spec.settings[name]) for name, b in backends().items()
            if b.settings is not None and (b.settings.in_every_identity or name in spec.sources)}


def order(spec: SweepSpec) -> dict:
    """model -> blocks -> axis -> value labels in the order the grid runs them (chunk ids depend on it)."""
    return {m: _labels(spec, m) for m in spec.models}


def record(spec: SweepSpec, ident: dict | None = None) -> dict:
    """What the manifest keeps under workers.dataset.COMPUTATION: digest, identity and run order. A run works it
    out once, in its plan (sweeps.run.chunks.RunPlan.computation), from the identity it checked the folder with
    (`ident`: the spec's, which the order of its values does not change)."""
    ident = identity(spec) if ident is None else ident
    return {"digest": digest(ident), "identity": ident, "order": order(spec)}


def digest(ident: dict) -> str:
    return hashlib.blake2b(json.dumps(ident, sort_keys=True).encode(), digest_size=16).hexdigest()


def package_version(model: str) -> str | None:
    """'<package> <version>' of the installed package that provides a plugin model; None for memsweep's
    own models (their `version` says all) and for a spec's `plugins` modules (their model's does)."""
    plugin = MODELS.plugin(model)
    if not plugin.is_entry_point or plugin.dist is None or plugin.dist.lower() == "memsweep":
        return None
    try:
        return f"{plugin.dist} {importlib.metadata.version(plugin.dist)}"
    except importlib.metadata.PackageNotFoundError:
        return f"{plugin.dist} (version unknown)"


def _labels(spec: SweepSpec, model: str) -> list[dict[str, list[str]]]:
    axes = {a.name: a for a in get_model(model).axes}
    return [{name: [axes[name].label(v) for v in values] for name, values in block} for block in spec.blocks(model)]


def in_order(spec: SweepSpec, folder_order: dict) -> SweepSpec:
    """The spec with each axis' values in the folder's order (the same values, as identity() checked)."""
    axes = {}
    for m, blocks in spec.axes.items():
        labels_of = {a.name: a.label for a in get_model(m).axes}
        new_blocks = []
        for block, wanted in zip(blocks, folder_order.get(m, [])):
            by_label = {name: {labels_of[name](v): v for v in values} for name, values in block}
            new_blocks.append(tuple((name, tuple(by_label[name][lab] for lab in wanted[name])) for name, _ in block))
        axes[m] = tuple(new_blocks) if len(new_blocks) == len(blocks) else blocks
    return dataclasses.replace(spec, axes=axes)


def differences(old: dict, new: dict) -> list[str]:
    """One line per difference between two identities (old: the folder's, new: the rerun's)."""
    out: list[str] = []
    if old["profile"]["digest"] != new["profile"]["digest"]:
        same = " (the same name: the file's values changed)" if old["profile"]["name"] == new["profile"]["name"] else ""
        out.append(f"profile: {old['profile']['name']} ({old['profile']['digest']}) -> "
                   f"{new['profile']['name']} ({new['profile']['digest']}){same}")
    for m in sorted(set(old["models"]) | set(new["models"])):
        a, b = old["models"].get(m), new["models"].get(m)
        if a is not None and b is not None and a != b:
            out += [f"model {m}: {k} {a.get(k)} -> {b.get(k)}" for k in ("version", "package") if a.get(k) != b.get(k)]
    out += _spec_differences(old["spec"], new["spec"])
    return out


def _spec_differences(old: dict, new: dict) -> list[str]:
    out = []
    tables = [b.settings.table for b in backends().values() if b.settings is not None]
    for key in ("models", "sources", "plugins", "chunk_points", *tables):
        if old.get(key) != new.get(key):
            out.append(f"{key}: {_short(old.get(key))} -> {_short(new.get(key))}")
    for m in sorted(set(old["axes"]) & set(new["axes"])):
        a, b = old["axes"][m], new["axes"][m]
        if len(a) != len(b):
            out.append(f"axes.{m}: {len(a)} blocks -> {len(b)} blocks")
            continue
        for i, (x, y) in enumerate(zip(a, b)):
            where = f"axes.{m}" + (f"[{i}]" if len(a) > 1 else "")
            for axis in sorted(set(x) | set(y)):
                added = [v for v in y.get(axis, []) if v not in x.get(axis, [])]
                removed = [v for v in x.get(axis, []) if v not in y.get(axis, [])]
                if added or removed:
                    out.append(f"{where}.{axis}: " + "; ".join(
                        p for p in (_listed("added", added), _listed("removed", removed)) if p))
    return out


def _listed(what: str, values: list[str], most: int = 6) -> str:
    if not values:
        return ""
    more = f" and {len(values) - most} more" if len(values) > most else ""
    return f"{what} {', '.join(values[:most])}{more}"


def _short(v: object) -> str:
    text = json.dumps(v, sort_keys=True)
    return text if len(text) <= 120 else text[:117] + "..."


def check_spec(loc: Location, spec: SweepSpec, say=None, ident: dict | None = None) -> SweepSpec:
    """The spec to run into OUT/<sweep> (reads only): refused with DatasetError when the folder was written
    with another dataset schema, holds rows of another computation (the differences listed), or mixes
    computations already (with refuse_foreign); put in the folder's order of values when only that order
    differs. `say` prints a note when the folder keeps its own _spec.toml. `ident`: identity(spec), where the
    caller has it already."""
    check_schema(loc)
    manifest = read_manifest(loc, LAYOUT) or {}
    ran = manifest.get(COMPUTATION)
    if ran is not None:
        diffs = differences(ran["identity"], identity(spec) if ident is None else ident)
        spec = in_order(spec, ran["order"]) if not diffs else spec
    else:
        diffs = _legacy_differences(loc, manifest, spec)
    if diffs:
        raise DatasetError(
            f"{loc.uri} holds rows of another computation; this run differs in:\n"
            + "\n".join(f"  {d}" for d in diffs)
            + "\nrerun with --fresh to replace its rows, or give the spec another 'name' to keep both."
        )
    spec_path = loc.path(SPEC_FILE)
    if say is not None and exists(loc, spec_path) and read_text(loc, spec_path) != spec.text:
        say(f"memsweep: the spec differs from the one {loc.uri} was run with only in its description or the "
            f"order of values: the rows are the same computation; the folder keeps its {SPEC_FILE} and its order.")
    return spec


def _legacy_differences(loc: Location, manifest: dict, spec: SweepSpec) -> list[str]:
    """A folder written before computations were recorded: its spec text, profile digest and model versions."""
    out = []
    if manifest.get("profile_digest") not in (None, spec.profile.digest()):
        out.append(f"profile: {manifest.get('profile')} ({manifest['profile_digest']}) -> "
                   f"{spec.profile_name} ({spec.profile.digest()})")
    for m, info in manifest.get("models", {}).items():
        if m in spec.models and str(info.get("version")) != str(get_model(m).version):
            out.append(f"model {m}: version {info.get('version')} -> {get_model(m).version}")
    spec_path = loc.path(SPEC_FILE)
    if exists(loc, spec_path):
        old = read_text(loc, spec_path)
        if old != spec.text:
            lines = list(difflib.unified_diff(old.splitlines(), spec.text.splitlines(), "spec as run", "this spec",
                                              n=0, lineterm=""))
            out += lines[:12] + ([f"... and {len(lines) - 12} more lines"] if len(lines) > 12 else [])
    return out


def refuse_foreign(loc: Location, own: str, planned: set[str]) -> None:
    """DatasetError when the folder holds parts whose chunk ids are not `planned` (the chunk ids of the spec
    check_spec returned, whose computation's digest is `own`): a duplicate of a part under another name, or rows
    of another computation (a folder mixed before memsweep recorded computations, or one whose run stopped before
    its first manifest), which a run must not add to. Each is named with the verdict `verify` gives it
    (workers.dataset.parts.unlisted_verdict)."""
    prefix = loc.root.rstrip("/") + "/"
    strays = [stray(loc, i, own) for infos in part_infos(loc).values() for i in infos
              if parse_part_path(i.path.removeprefix(prefix))[1] not in planned]
    if strays:
        raise DatasetError(mismatch_message(loc.uri, strays, "Nothing was run."))
