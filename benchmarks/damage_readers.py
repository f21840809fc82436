"""Every kind of damage a sweep folder meets, through every command that reads it: what each one answers.

    .venv/bin/python benchmarks/damage_readers.py [--keep DIR]

A real 24-point copy sweep in three parts (an embedded Ray, once), copied afresh for each damage; then, in this
process (sweeps.cli.main, as a user's shell runs it), `table`, `compare`, `report`, `calibrate --from`, `verify`,
`status`, analysis.scan and `run` (which also resumes). Each cell is what the command did:

- `ok` it answered, and its answer is the undamaged folder's (the damage left the rows alone);
- `ALTERED` it answered with something else than the undamaged folder (the failure this is here to find);
- `refused N` one line naming the problem, exit status N, nothing written into the folder (`said so`: status's
  "disagree", "holds what memsweep does not write" or "no _manifest.json" line, exit 0); for run, `recomputed`
  (it computed the damaged part again and the folder then verifies, its table the undamaged one's) or `ran;
  verify 1` (it had nothing to compute; verify still names what is not memsweep's);
- `TRACEBACK` a Python traceback reached the user.

The report's page is not compared (it carries the time it was made): an answer from `report` reads `ok` when
its exit status and last line are the undamaged folder's; it reads its rows through the same checked reading
as `table` and analysis.scan.

Prints one Markdown table. Not a test: tests/sweeps/run/test_damage.py holds the cases that must not regress.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import sys
import tempfile
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sweeps.cli import main  # noqa: E402
from workers.dataset import LEASE_FILE, MANIFEST, SPEC_FILE  # noqa: E402

SPEC = """name = "cp"
models = ["copy"]
chunk_points = 10
[axes.copy]
struct_page_size = [64, 80]
dst_offset = [0, 8]
strategy = ["memcpy", "nt_call", "nt_inline"]
inline_sizes = ["mainline", "patched"]
"""
TABLE = ["table", "{d}", "--model", "copy", "--rows", "struct_page_size", "--cols", "strategy", "--metric", "copies"]
READERS = {
    "table": TABLE,
    "compare": ["compare", "{d}", "{d}", "--out", "{o}/cmp.html"],
    "report": ["report", "{d}", "--out", "{o}/r.html"],
    "calibrate --from": ["calibrate", "--from", "{d}", "--model", "copy"],
    "verify": ["verify", "{d}"],
    "status": ["status", "{d}"],
}


def parts(d: Path) -> list[Path]:
    return sorted((d / "model=copy").glob("part-*.parquet"))


def manifest(d: Path) -> dict:
    return json.loads((d / MANIFEST).read_text())


def set_manifest(d: Path, m) -> None:
    (d / MANIFEST).write_text(json.dumps(m))


def change_value(p: Path) -> None:
    """metric_copies of row 0 + 1, the footer's every key kept (as a rewrite with pyarrow keeps it)."""
    footer = {k: v for k, v in pq.read_metadata(p).metadata.items() if k != b"ARROW:schema"}
    t = pq.read_table(p).replace_schema_metadata(footer)
    i = t.schema.get_field_index("metric_copies")
    v = t.column(i).to_pylist()
    v[0] += 1
    pq.write_table(t.set_column(i, t.schema.field(i), pc.cast(v, t.schema.field(i).type)), p, compression="zstd")


def forget(d: Path, p: Path, what: str) -> None:
    m = manifest(d)
    cid = p.stem.removeprefix("part-")
    if what == "record":
        m["parts"].pop(cid)
        m["chunks_done"] -= 1
    else:
        del m["parts"][cid][what]
    set_manifest(d, m)


def flip_bit(p: Path) -> None:
    data = bytearray(p.read_bytes())
    data[len(data) // 3] ^= 0x10
    p.write_bytes(bytes(data))


def link_out(d: Path, p: Path) -> None:
    outside = d.parent / "outside.parquet"
    outside.write_bytes(p.read_bytes()[:100])
    p.unlink()
    p.symlink_to(outside)


DAMAGE = {
    "a bit flipped in a part": lambda d: flip_bit(parts(d)[0]),
    "a value rewritten, footer kept": lambda d: change_value(parts(d)[0]),
    "a part deleted": lambda d: parts(d)[0].unlink(),
    "a part truncated": lambda d: parts(d)[0].write_bytes(parts(d)[0].read_bytes()[:500]),
    "a part emptied (0 bytes)": lambda d: parts(d)[0].write_bytes(b""),
    "a part copied under another part's name": lambda d: shutil.copy(parts(d)[0], parts(d)[0].with_name(
        "part-0000000000000000.parquet")),
    "a part copied as extra.parquet": lambda d: shutil.copy(parts(d)[0], parts(d)[0].with_name("extra.parquet")),
    "a part copied into a folder of its own": lambda d: (d / "model=copy" / "sub").mkdir() or shutil.copy(
        parts(d)[0], d / "model=copy" / "sub"),
    "a part recorded nowhere, value rewritten": lambda d: (change_value(parts(d)[0]), forget(d, parts(d)[0],
                                                                                              "record")),
    "the manifest deleted, a value rewritten": lambda d: (change_value(parts(d)[0]), (d / MANIFEST).unlink()),
    "a record's checksum deleted, value rewritten": lambda d: (change_value(parts(d)[0]),
                                                              forget(d, parts(d)[0], "checksum")),
    "a record's rows changed": lambda d: set_manifest(d, {**manifest(d), "parts": {
        k: {**r, "rows": r["rows"] + 1} if i == 0 else r for i, (k, r) in enumerate(manifest(d)["parts"].items())}}),
    "the manifest not JSON": lambda d: (d / MANIFEST).write_text("{not json"),
    "the manifest a list": lambda d: set_manifest(d, []),
    "the manifest's parts a number": lambda d: set_manifest(d, {**manifest(d), "parts": 5}),
    "a manifest record null": lambda d: set_manifest(d, {**manifest(d), "parts": {
        **manifest(d)["parts"], next(iter(manifest(d)["parts"])): None}}),
    "the manifest without 'updated'": lambda d: set_manifest(d, {k: v for k, v in manifest(d).items()
                                                               if k != "updated"}),
    "the manifest a folder": lambda d: ((d / MANIFEST).unlink(), (d / MANIFEST).mkdir()),
    "the spec a folder": lambda d: ((d / SPEC_FILE).unlink(), (d / SPEC_FILE).mkdir()),
    "the lease a folder": lambda d: (d / LEASE_FILE).mkdir(),
    "_report a file": lambda d: (d / "_report").write_text("x"),
    "a model folder a file": lambda d: (d / "model=memmap").write_text("x"),
    "a part linked out of the folder, damaged": lambda d: link_out(d, parts(d)[0]),
    "a note left in the folder": lambda d: (d / "notes.txt").write_text("binds on the test box\n"),
}


def call(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        except BaseException:  # noqa: BLE001 - what reached the user: a traceback
            import traceback
            traceback.print_exc(file=err)
            code = 1
    return code, out.getvalue(), err.getvalue()


def tree(path: Path) -> dict:
    return {str(p.relative_to(path)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(path.rglob("*"))
            if p.is_file() and not p.is_symlink()}


def same(text: str, *paths: Path) -> str:
    """`text` with the folders it names written as placeholders, to compare a damaged copy's answer with the
    undamaged folder's."""
    for path, mark in zip(paths, ("<D>", "<O>")):
        text = text.replace(str(path), mark)
    return text


def verdict(name: str, argv: list[str], d: Path, pristine: dict) -> str:
    before = tree(d)
    code, out, err = call(argv)
    out, err = same(out, d, d.parent), same(err, d, d.parent)
    if "Traceback" in err:
        return "TRACEBACK"
    wrote = tree(d) != before
    if name == "status":
        said = "disagree" in out or "does not write" in out or f"no {MANIFEST}" in out or code != 0
        return f"refused {code}" if said and code else "said so" if said else \
            ("ok" if out == pristine[name][1] else "ALTERED")
    if code == pristine[name][0] and (out == pristine[name][1] or name == "report") and \
            err.strip().splitlines()[-1:] == pristine[name][2].strip().splitlines()[-1:]:
        return "ok"
    if code in (1, 2) and name in ("verify",) and out.count("problem") >= 1:
        return f"refused {code}"
    if code in (1, 2) and len(err.strip().splitlines()) == 1 and not wrote:
        return f"refused {code}"
    return "ALTERED" if code == 0 else f"exit {code}, {len(err.strip().splitlines())} lines"


def scan_verdict(d: Path, pristine_rows) -> str:
    import analysis
    from workers.exceptions import SweepFolderError
    try:
        rows = analysis.scan(str(d), model="copy").collect().sort("point_id")
    except SweepFolderError:
        return "refused"
    except Exception as e:  # noqa: BLE001
        return f"TRACEBACK ({type(e).__name__})"
    return "ok" if rows.select("metric_copies").equals(pristine_rows.select("metric_copies")) else "ALTERED"


def run_verdict(d: Path, spec: Path, out: Path, pristine_table: str) -> str:
    code, _, err = call(["run", str(spec), "--out", str(out), "--no-report", "--quiet"])
    if "Traceback" in err:
        return "TRACEBACK"
    if code == 2 and len(err.strip().splitlines()) == 1:
        return "refused 2"
    code_v, _, _ = call(["verify", str(d)])
    table = call([a.format(d=d) for a in TABLE])[1]
    if code == 0 and code_v == 0:
        return "recomputed" if same(table, d) == pristine_table else "ALTERED"
    if code == 0 and code_v == 1:
        return "ran; verify 1"
    return f"exit {code}, verify {code_v}"


def main_() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", help="a folder to keep the damaged copies in (default: a temporary one)")
    a = ap.parse_args()
    base = Path(a.keep or tempfile.mkdtemp(prefix="memsweep-damage-"))
    (base / "spec.toml").write_text(SPEC)
    code, _, err = call(["run", str(base / "spec.toml"), "--out", str(base / "pristine"), "--no-report", "--quiet"])
    assert code == 0, err
    clean = base / "pristine" / "cp"
    import analysis
    pristine_rows = analysis.scan(str(clean), model="copy").collect().sort("point_id")
    pristine = {}
    for name, argv in READERS.items():
        code, out, err = call([x.format(d=clean, o=base / "pristine") for x in argv])
        pristine[name] = (code, same(out, clean, base / "pristine"), same(err, clean, base / "pristine"))
    names = [*READERS, "analysis.scan", "run"]
    print("| damage | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for i, (what, damage) in enumerate(DAMAGE.items()):
        out = base / f"d{i}"
        shutil.copytree(base / "pristine", out, symlinks=True)
        d = out / "cp"
        damage(d)
        cells = [verdict(n, [x.format(d=d, o=out) for x in argv], d, pristine) for n, argv in READERS.items()]
        cells.append(scan_verdict(d, pristine_rows))
        cells.append(run_verdict(d, base / "spec.toml", out, pristine["table"][1]))
        print(f"| {what} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main_()
