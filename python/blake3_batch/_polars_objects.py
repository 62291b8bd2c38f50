"""Polars ``Object`` columns refused before their Arrow data is read.

Polars exports a column of Python objects as ``fixed_size_binary[8]``
holding each object's memory address, with nothing in the schema to say
so: hashed, it would give digests that change from run to run and say
nothing of the values. No other Polars type is exported that way, and
Polars allows objects only at the top level (not in lists or structs), so
the schema's own columns are all there is to look at.
"""

from __future__ import annotations

from typing import Any


def without_objects(data: Any) -> Any:
    """``data`` (a Polars Series or DataFrame) as it is, or a ``TypeError``
    that names its ``Object`` columns."""
    import polars as pl

    if isinstance(data, pl.Series):
        columns = {data.name: data.dtype}
    elif isinstance(data, pl.DataFrame):
        columns = dict(data.schema)
    else:
        return data
    objects = [name for name, dtype in columns.items() if dtype == pl.Object]
    if objects:
        names = ", ".join(repr(name) for name in objects)
        raise TypeError(
            f"cannot hash the Polars Object column(s) {names}: Polars exports Python objects "
            "to Arrow as their memory addresses, not their values; convert them to bytes or "
            "strings first, e.g. .map_elements(pickle.dumps, return_dtype=pl.Binary)"
        )
    return data
