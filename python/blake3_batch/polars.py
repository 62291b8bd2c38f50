"""Polars expressions and Series methods: ``import blake3_batch.polars``
registers a ``blake3`` namespace on both, so digests can be taken inside
eager and lazy queries (the streaming engine included)::

    import polars as pl
    import blake3_batch.polars  # noqa: F401  (registers .blake3)

    df = df.with_columns(
        pl.col("text").blake3.digest().alias("blake3"),      # Binary, 32 bytes a row
        pl.col("text").blake3.u64().alias("key"),            # UInt64 dedup keys
        pl.col("tokens").blake3.hexdigest(length=16),        # String of hex
    )
    series.blake3.digest(key=key)                            # on a Series

Each batch of the column is hashed as :func:`blake3_batch.hash_arrow`
hashes it, read in place with the GIL released: String, Binary,
Categorical and Enum columns, numbers (each one's bytes), Booleans (one
byte each), Lists and Arrays of numbers (their values' bytes; an Array
of several dimensions, a tensor, its values in row-major order, as NumPy's
``tobytes()`` gives them) or of anything else (their values framed), and Structs
(``pl.struct("id", "text")``: each row over all its fields, framed as
``hash_arrow(..., rows=True)`` frames a table's rows), nested to any
depth; nulls stay null. ``length``,
``seek``, ``key`` and ``derive_key`` are ``hash_arrow``'s, checked when
the expression is built; ``engine`` an :class:`~blake3_batch.Engine` (default: the shared
one, as the module-level functions use).
"""

from __future__ import annotations

from typing import Any, Optional, Union

import polars as pl

from ._native import Engine, check_options, default_engine

__all__ = ["Blake3Expr", "Blake3Series"]

Key = Union[bytes, bytearray, memoryview]


class _Hashing:
    """One way of hashing a column (digest bytes, hex or u64 keys) with its
    options, applied to a Series."""

    def __init__(self, kind: str, engine: Optional[Engine], **options: Any) -> None:
        check_options(**options)
        self.kind = kind
        self.engine = engine
        self.options = options

    @property
    def dtype(self) -> Any:
        return {"digest": pl.Binary, "hexdigest": pl.String, "u64": pl.UInt64}[self.kind]

    def __call__(self, series: pl.Series) -> pl.Series:
        engine = self.engine or default_engine()
        # A struct (pl.struct("a", "b")) is a row of several columns.
        rows = isinstance(series.dtype, pl.Struct)
        if self.kind == "u64":
            out = engine.hash_arrow_u64(series, rows=rows, **self.options)
        else:
            out = engine.hash_arrow(series, hex=self.kind == "hexdigest", rows=rows, **self.options)
        return pl.Series(series.name, out, dtype=self.dtype)


@pl.api.register_expr_namespace("blake3")
class Blake3Expr:
    """``expr.blake3``: BLAKE3 digests of each row of an expression."""

    def __init__(self, expr: pl.Expr) -> None:
        self._expr = expr

    def _apply(self, hashing: _Hashing) -> pl.Expr:
        # A row's digest depends on that row alone.
        return self._expr.map_batches(hashing, return_dtype=hashing.dtype, is_elementwise=True)

    def digest(
        self,
        *,
        length: int = 32,
        seek: int = 0,
        key: Optional[Key] = None,
        derive_key: Optional[str] = None,
        engine: Optional[Engine] = None,
    ) -> pl.Expr:
        """A Binary column of ``length`` bytes a row (extended output past
        32, from byte ``seek`` on)."""
        return self._apply(_Hashing("digest", engine, length=length, seek=seek, key=key, derive_key=derive_key))

    def hexdigest(
        self,
        *,
        length: int = 32,
        seek: int = 0,
        key: Optional[Key] = None,
        derive_key: Optional[str] = None,
        engine: Optional[Engine] = None,
    ) -> pl.Expr:
        """A String column of lowercase hex, as blake3-py's ``hexdigest``."""
        return self._apply(_Hashing("hexdigest", engine, length=length, seek=seek, key=key, derive_key=derive_key))

    def u64(
        self,
        *,
        key: Optional[Key] = None,
        derive_key: Optional[str] = None,
        engine: Optional[Engine] = None,
    ) -> pl.Expr:
        """A UInt64 column of each digest's first 8 bytes, little-endian:
        compact keys for deduplication and joins."""
        return self._apply(_Hashing("u64", engine, key=key, derive_key=derive_key))


@pl.api.register_series_namespace("blake3")
class Blake3Series:
    """``series.blake3``: the same as ``expr.blake3``, on a Series."""

    def __init__(self, series: pl.Series) -> None:
        self._series = series

    def digest(
        self,
        *,
        length: int = 32,
        seek: int = 0,
        key: Optional[Key] = None,
        derive_key: Optional[str] = None,
        engine: Optional[Engine] = None,
    ) -> pl.Series:
        """A Binary Series, as :meth:`Blake3Expr.digest`."""
        return _Hashing("digest", engine, length=length, seek=seek, key=key, derive_key=derive_key)(self._series)

    def hexdigest(
        self,
        *,
        length: int = 32,
        seek: int = 0,
        key: Optional[Key] = None,
        derive_key: Optional[str] = None,
        engine: Optional[Engine] = None,
    ) -> pl.Series:
        """A String Series of hex, as :meth:`Blake3Expr.hexdigest`."""
        return _Hashing("hexdigest", engine, length=length, seek=seek, key=key, derive_key=derive_key)(self._series)

    def u64(
        self,
        *,
        key: Optional[Key] = None,
        derive_key: Optional[str] = None,
        engine: Optional[Engine] = None,
    ) -> pl.Series:
        """A UInt64 Series, as :meth:`Blake3Expr.u64`."""
        return _Hashing("u64", engine, key=key, derive_key=derive_key)(self._series)
