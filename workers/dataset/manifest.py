"""The shape of a sweep folder's manifest, checked once where it is read (folder.read_manifest), so that no
command meets a manifest it cannot use halfway through: a JSON list, a `parts` that is a number, a record
that is null, a row count that is text. Every command that opens a sweep folder reads its manifest through
that one function, so each gets the same one-line refusal (SweepFolderError: exit 2) naming the file and
the first thing wrong, and `run` refuses it unless given --fresh.

The schema (JSON Schema, checked with `jsonschema`, which Ray already requires) requires the entries every
manifest has carried since the first memsweep and names the types of the others it reads: a manifest of an
older memsweep (schema 1-2, records without seconds or a computation) has fewer entries and is still one.
Unknown entries are allowed.
"""

from __future__ import annotations

import json

import jsonschema

from workers.exceptions import SweepFolderError

COUNT = {"type": "integer", "minimum": 0}
TEXT = {"type": "string"}

# One part's record (sweeps.run.task.run_chunk, the driver's _finished): what every check of the parts reads.
RECORD = {
    "type": "object",
    "required": ["model", "rows", "status"],
    "properties": {
        "model": TEXT, "chunk_id": TEXT, "source": TEXT, "node": TEXT, "checksum": TEXT,
        "rows": COUNT, "bytes": COUNT, "start": COUNT, "stop": COUNT,
        "seconds": {"type": "number", "minimum": 0},
        "status": {"type": "object", "additionalProperties": COUNT},
        "errors": {"type": "array", "items": TEXT},
    },
}

# What every manifest has carried since the first (sweeps.run.driver._manifest), which status prints.
REQUIRED = ["sweep", "profile", "models", "chunks_expected", "chunks_done", "rows", "points_expected", "parts",
            "updated"]

SCHEMA = {
    "type": "object",
    "required": REQUIRED,
    "properties": {
        "schema_version": {"type": ["string", "integer"]},
        "sweep": TEXT, "profile": TEXT, "profile_digest": TEXT, "spec": TEXT, "updated": TEXT,
        "profile_data": {"type": "object"},
        "models": {"type": "object", "additionalProperties": {
            "type": "object", "required": ["version", "points"],
            "properties": {"version": {"type": ["string", "integer"]}, "points": COUNT}}},
        "chunks_expected": COUNT, "chunks_done": COUNT, "rows": COUNT, "points_expected": COUNT,
        "rows_expected": COUNT,
        "sources": {"type": "array", "items": TEXT},
        "parts": {"type": "object", "additionalProperties": RECORD},
        "computation": {"type": "object", "required": ["digest", "identity", "order"],
                        "properties": {"digest": TEXT, "identity": {"type": "object"}, "order": {"type": "object"}}},
        "driver": {"type": "object"},
        "slurm": {"type": ["object", "array"]},
    },
}

TYPE_WORDS = {"object": "an object", "array": "a list", "integer": "a whole number", "string": "text",
              "number": "a number"}
_VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def problem(manifest: object) -> str | None:
    """The first thing wrong with `manifest` (the parsed JSON) in words, with where it is; None when it has
    the shape memsweep reads."""
    error = jsonschema.exceptions.best_match(_VALIDATOR.iter_errors(manifest))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    what = error.message
    if error.validator == "type":  # in JSON's words: null, not Python's None
        types = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        shown = json.dumps(error.instance)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        what = f"{shown} where {' or '.join(TYPE_WORDS.get(t, t) for t in types)} belongs"
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [f"'{k}'" for k in error.validator_value if k not in error.instance]
        what = f"no {', '.join(missing)} {'entry' if len(missing) == 1 else 'entries'}"
    return f"{'at ' + where if where else 'the whole file'}: {what}"


def check(manifest: object, name: str, advice: str) -> dict:
    """`manifest` when it has the shape memsweep reads; SweepFolderError naming `name` (the file, with its
    folder) and `advice` otherwise."""
    found = problem(manifest)
    if found is not None:
        raise SweepFolderError(f"{name} is not a manifest memsweep can read ({found}); {advice}.")
    return manifest
