"""The one check of a TOML table's keys, for every table a user writes (spec, [measure], [kernel])."""

from __future__ import annotations


def unknown_key(table: object, allowed, field: str = "", kind: str = "") -> str | None:
    """The message for `table` (at `field`; "" for a file's top level) when it is no table or names a key
    outside `allowed`, else None. `kind` names the keys in the message (default: `field`)."""
    allowed = sorted(allowed)
    if not isinstance(table, dict):
        return f"'{field}' must be a table with keys {allowed} (got {table!r})."
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        at = f"{field}.{unknown[0]}" if field else unknown[0]
        return f"'{at}' is not a {kind or field} key; allowed keys are {allowed}."
    return None
