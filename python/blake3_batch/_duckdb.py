"""DuckDB data as the Arrow data the hashing reads.

DuckDB exports ``TIME WITH TIME ZONE`` to Arrow as ``time64`` without its
offset, with nothing in the schema to say so: ``'12:00:01+02'`` and
``'12:00:01-05'`` would get one digest. A relation holding the type at
any depth is refused, with what to cast it to; so is a function
registered for it (``blake3_batch.duckdb.register``).
"""

from __future__ import annotations

from typing import Any

# What to do instead, for both messages.
CAST = "cast it in SQL first, e.g. t::VARCHAR, which keeps the offset"


def as_arrow(data: Any) -> Any:
    """``data`` as it is, or, for a DuckDB relation with a ``TIME WITH
    TIME ZONE`` at any depth, a ``TypeError`` that names its columns."""
    names, types = getattr(data, "columns", None), getattr(data, "types", None)
    if not isinstance(names, list) or not isinstance(types, list):
        return data
    lossy = [name for name, sql_type in zip(names, types) if holds_time_with_time_zone(sql_type)]
    if lossy:
        raise TypeError(
            f"cannot hash the DuckDB column(s) {', '.join(repr(name) for name in lossy)}: DuckDB exports "
            f"TIME WITH TIME ZONE to Arrow without its offset, so times that differ would hash alike; {CAST}"
        )
    return data


def holds_time_with_time_zone(sql_type: Any) -> bool:
    """Whether a DuckDB type is ``TIME WITH TIME ZONE`` or holds one at any
    depth (a STRUCT's fields, a list's or array's values, a MAP's keys or
    values, a UNION's members)."""
    kind = getattr(sql_type, "id", None)
    if kind == "time with time zone":
        return True
    if kind not in ("struct", "list", "array", "map", "union"):
        return False
    # Children are (name, type) pairs, an ARRAY's size among them.
    return any(holds_time_with_time_zone(child) for _, child in sql_type.children if hasattr(child, "id"))
