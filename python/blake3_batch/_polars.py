"""Polars data as the Arrow data the hashing reads.

Polars' Arrow export departs from the format in three places, none of
which its schema announces:

- An ``Object`` column goes out as ``fixed_size_binary[8]`` holding each
  object's memory address: hashed, it would give digests that change from
  run to run and say nothing of the values. It is refused (Polars allows
  objects at the top level only, so the columns are all there is to see).
- ``Int128`` and ``UInt128`` go out in a format of Polars' own
  (``_pli128``) that no Arrow reader knows: refused, with what to cast
  them to.
- The ``Null`` type goes out with a buffer the format does not allow,
  which arrow-rs refuses and pyarrow passes over: data holding it at any
  depth is read through pyarrow first.
"""

from __future__ import annotations

from typing import Any


def as_arrow(data: Any) -> Any:
    """``data`` as the Arrow data to hash: a Polars Series or DataFrame as
    it is, or through pyarrow where it holds the ``Null`` type; a
    ``TypeError`` that names its ``Object`` or 128-bit integer columns;
    anything else as it is."""
    import polars as pl

    if isinstance(data, pl.Series):
        columns = {data.name: data.dtype}
    elif isinstance(data, pl.DataFrame):
        columns = dict(data.schema)
    else:
        return data
    objects = [name for name, dtype in columns.items() if dtype == pl.Object]
    if objects:
        raise TypeError(
            f"cannot hash the Polars Object column(s) {_names(objects)}: Polars exports Python "
            "objects to Arrow as their memory addresses, not their values; convert them to bytes "
            "or strings first, e.g. .map_elements(pickle.dumps, return_dtype=pl.Binary)"
        )
    wide_integers = _wide_integers(pl)
    wide = [name for name, dtype in columns.items() if _holds(dtype, wide_integers)]
    if wide:
        raise TypeError(
            f"cannot hash the Polars column(s) {_names(wide)} of 128-bit integers: Polars exports "
            "them to Arrow in a format of its own that Arrow readers do not know; cast them first, "
            "e.g. .cast(pl.Decimal(38, 0)) for values below 10**38, or .cast(pl.String)"
        )
    if any(_holds(dtype, [pl.Null]) for dtype in columns.values()):
        import pyarrow as pa

        return pa.chunked_array(data) if isinstance(data, pl.Series) else pa.table(data)
    return data


def _wide_integers(pl: Any) -> list:
    """Polars' 128-bit integer types (older Polars has no ``UInt128``)."""
    return [kind for kind in (getattr(pl, "Int128", None), getattr(pl, "UInt128", None)) if kind is not None]


def _holds(dtype: Any, kinds: list) -> bool:
    """Whether a Polars ``dtype`` is one of ``kinds`` or holds one at any
    depth (in a List's or Array's values or a Struct's fields)."""
    import polars as pl

    if any(dtype == kind for kind in kinds):
        return True
    if isinstance(dtype, pl.Struct):
        return any(_holds(field.dtype, kinds) for field in dtype.fields)
    if isinstance(dtype, (pl.List, pl.Array)):
        return _holds(dtype.inner, kinds)
    return False


def _names(columns: list) -> str:
    return ", ".join(repr(name) for name in columns)
