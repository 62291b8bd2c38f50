"""Polars data as the Arrow data the hashing reads.

Polars' Arrow export departs from the format in three places, none of
which its schema announces:

- An ``Object`` column goes out as ``fixed_size_binary[8]`` holding each
  object's memory address: hashed, it would give digests that change from
  run to run and say nothing of the values. It is refused (Polars allows
  objects at the top level only, so the columns are all there is to see).
- ``Int128`` and ``UInt128`` go out in a format of Polars' own
  (``_pli128``) that no Arrow reader knows. A column of them is read here
  as ``decimal128(38, 0)`` over the same 16 little-endian bytes a value,
  the type DuckDB exports its ``HUGEINT`` and ``UHUGEINT`` as, so a value
  has one digest from either; inside a List, Array or Struct they are
  refused, with what to cast them to.
- The ``Null`` type goes out with a buffer the format does not allow,
  which arrow-rs refuses and pyarrow passes over: data holding it at any
  depth is read through pyarrow first.
"""

from __future__ import annotations

from typing import Any


def as_arrow(data: Any) -> Any:
    """``data`` as the Arrow data to hash: a Polars Series or DataFrame as
    it is, or through pyarrow where it holds the ``Null`` type or 128-bit
    integer columns; a ``TypeError`` that names its ``Object`` columns or
    those with 128-bit integers nested in them; anything else as it is."""
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
    wide = [name for name, dtype in columns.items() if _holds(dtype, wide_integers, nested=False)]
    nested = [name for name, dtype in columns.items() if _holds(dtype, wide_integers) and name not in wide]
    if nested:
        raise TypeError(
            f"cannot hash the Polars column(s) {_names(nested)} with 128-bit integers inside: "
            "Polars exports them to Arrow in a format of its own that Arrow readers do not know; "
            "cast them first, e.g. to pl.Decimal(38, 0) for values below 10**38 (a column of "
            "them alone is hashed as that decimal), or to pl.String"
        )
    if not wide and not any(_holds(dtype, [pl.Null]) for dtype in columns.values()):
        return data
    import pyarrow as pa

    if isinstance(data, pl.Series):
        return pa.chunked_array([_as_decimal(data)] if wide else data)
    # The other columns through pyarrow, which reads the Null type.
    others = pa.table(data.drop(wide))
    arrays = [pa.chunked_array([_as_decimal(data[name])]) if name in wide else others.column(name) for name in columns]
    return pa.table(arrays, names=list(columns))


def _as_decimal(series: Any) -> Any:
    """A Polars ``Int128`` or ``UInt128`` Series as a pyarrow
    ``decimal128(38, 0)`` array of the same 16 little-endian bytes a value
    (two's complement, as Arrow lays out a decimal), nulls kept."""
    import numpy as np
    import polars as pl
    import pyarrow as pa

    filled = series.fill_null(0)
    high_type = pl.Int64 if series.dtype == pl.Int128 else pl.UInt64
    words = np.empty((len(series), 2), dtype="<u8")
    words[:, 0] = (filled & (2**64 - 1)).cast(pl.UInt64).to_numpy()
    words[:, 1] = (filled // 2**64).cast(high_type).to_numpy().view("<u8")
    nulls = series.null_count()
    validity = pa.array(series.is_not_null().to_numpy()).buffers()[1] if nulls else None
    return pa.Array.from_buffers(pa.decimal128(38, 0), len(series), [validity, pa.py_buffer(words)], null_count=nulls)


def _wide_integers(pl: Any) -> list:
    """Polars' 128-bit integer types (older Polars has no ``UInt128``)."""
    return [kind for kind in (getattr(pl, "Int128", None), getattr(pl, "UInt128", None)) if kind is not None]


def _holds(dtype: Any, kinds: list, nested: bool = True) -> bool:
    """Whether a Polars ``dtype`` is one of ``kinds`` or (where ``nested``)
    holds one at any depth (in a List's or Array's values or a Struct's
    fields)."""
    import polars as pl

    if any(dtype == kind for kind in kinds):
        return True
    if not nested:
        return False
    if isinstance(dtype, pl.Struct):
        return any(_holds(field.dtype, kinds) for field in dtype.fields)
    if isinstance(dtype, (pl.List, pl.Array)):
        return _holds(dtype.inner, kinds)
    return False


def _names(columns: list) -> str:
    return ", ".join(repr(name) for name in columns)
