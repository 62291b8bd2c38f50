"""Ray Data helpers: a digest column added to every batch of a dataset, one
engine per worker: of a column of any type ``hash_arrow`` takes (binary,
strings, numbers, lists, structs; tensor columns, each tensor hashed as
its values whatever the shapes in the block), or
of each row over several columns (``HashColumn``), or of
the files a column of paths names, read where the worker runs
(``HashFiles``: only the digests travel, not the files' bytes).

    ds = ray.data.read_parquet(path)
    ds = ds.map_batches(blake3_batch.ray.HashColumn("text", out="blake3"),
                        batch_format="pyarrow", batch_size=65536, concurrency=4)
    ds = ds.map_batches(blake3_batch.ray.HashColumn(["title", "text"], out="key", as_u64=True),
                        batch_format="pyarrow", concurrency=4)
    files = ray.data.from_items([{"path": p} for p in paths])
    files = files.map_batches(blake3_batch.ray.HashFiles("path"),
                              batch_format="pyarrow", concurrency=4)

Batches of every format Ray hands out work: ``"pyarrow"`` (the columns
read in place), ``"pandas"`` (converted by pyarrow, the index left out)
and ``"numpy"``, Ray's default (a tensor column's rows hashed as their
bytes, as ``row.tobytes()`` gives them, or as lists of their strings),
all with the same digests (but where Ray's conversion to NumPy changes
the values: integers with nulls become floats, structs Python objects; see
the README); the digests come back in the
batch's format: a ``fixed_size_binary`` column, pandas' Arrow-backed
column, or a NumPy array of ``bytes`` objects (``uint64`` for
``as_u64=True``).

Passing the class instance makes Ray run it in actors (``concurrency=N``);
each actor builds its :class:`~blake3_batch.Engine` once, on first use, in
its own process. Add ``num_gpus=1`` and ``backend="gpu"`` on GPU hosts.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Union, cast

from . import Engine
from ._converted import as_arrow, numpy_column
from ._native import check_options

__all__ = ["HashColumn", "HashFiles"]


class HashColumn:
    """Adds the BLAKE3 digest of one column to a
    ``pyarrow.Table`` (or ``RecordBatch``) batch, or, for a list of
    columns, of each row over those columns in that order, framed as
    :func:`blake3_batch.hash_arrow` frames rows with ``rows=True``.

    ``out`` names the new column (replaced if present). ``length`` bytes
    of binary from byte ``seek`` of each output on (BLAKE3's extended
    output past 32), with ``hex=True`` as lowercase hex strings, or with
    ``as_u64=True`` the first 8 digest bytes as ``uint64``. ``key``/``derive_key`` select the keyed or key
    derivation mode; ``backend`` and ``threads`` configure each worker's
    engine (``threads`` defaults to the CPUs Ray gave the worker, or all).
    """

    def __init__(
        self,
        column: Union[str, Sequence[str]],
        out: str = "blake3",
        *,
        length: int = 32,
        seek: int = 0,
        hex: bool = False,
        as_u64: bool = False,
        key: Optional[Union[bytes, bytearray]] = None,
        derive_key: Optional[str] = None,
        backend: str = "auto",
        threads: Optional[int] = None,
    ) -> None:
        # Bad arguments fail here, in the driver, not later in every actor.
        check_options(length=length, seek=seek, key=key, derive_key=derive_key)
        if as_u64 and (length, seek, hex) != (32, 0, False):
            raise ValueError(
                "as_u64=True stores each digest's first 8 bytes: leave length=, seek= and hex= out"
            )
        if not isinstance(column, str):
            column = list(column)
            if not column or not all(isinstance(name, str) for name in column):
                raise TypeError(f"column={column!r}: give a column's name or a non-empty list of names")
        self.column = column
        self.out = out
        self.length = length
        self.seek = seek
        self.hex = hex
        self.as_u64 = as_u64
        self.key = bytes(key) if key is not None else None
        self.derive_key = derive_key
        self.backend = backend
        self.threads = threads
        self._engine: Optional[Engine] = None

    def _get_engine(self) -> Engine:
        if self._engine is None:
            self._engine = Engine(backend=self.backend, threads=self.threads or _worker_cpus())
        return self._engine

    def __getstate__(self) -> dict:
        # The engine (threads, GPU) stays in the process that built it.
        state = self.__dict__.copy()
        state["_engine"] = None
        return state

    def __call__(self, batch: Any) -> Any:
        import pyarrow as pa

        names = [self.column] if isinstance(self.column, str) else self.column
        columns = _columns(batch, names, "HashColumn")
        engine = self._get_engine()
        rows = not isinstance(self.column, str)
        if rows:
            values = pa.table({name: _storage(columns[name], name) for name in names})
        else:
            values = _storage(columns[names[0]], names[0])
        if self.as_u64:
            digests = engine.hash_arrow_u64(values, key=self.key, derive_key=self.derive_key, rows=rows)
        else:
            digests = engine.hash_arrow(
                values,
                length=self.length,
                seek=self.seek,
                hex=self.hex,
                key=self.key,
                derive_key=self.derive_key,
                rows=rows,
            )
        return _with_column(batch, self.out, digests)


class HashFiles(HashColumn):
    """Adds the BLAKE3 digest of the file each row of a string column of
    paths names, read and hashed on the worker (``Engine.hash_files``:
    small files side by side in batches, large ones streamed). A null path
    gets a null digest. A file that cannot be read fails the batch
    (``errors="raise"``) or gets a null digest (``errors="none"``). The
    other arguments are :class:`HashColumn`'s, without ``as_u64``.
    """

    def __init__(
        self,
        column: str = "path",
        out: str = "blake3",
        *,
        length: int = 32,
        seek: int = 0,
        hex: bool = False,
        key: Optional[Union[bytes, bytearray]] = None,
        derive_key: Optional[str] = None,
        errors: str = "raise",
        backend: str = "auto",
        threads: Optional[int] = None,
    ) -> None:
        if errors not in ("raise", "none"):
            raise ValueError(f'errors={errors!r}: give "raise" or "none"')
        check_options(length=length, seek=seek, key=key, derive_key=derive_key)
        super().__init__(
            column,
            out,
            length=length,
            seek=seek,
            hex=hex,
            key=key,
            derive_key=derive_key,
            backend=backend,
            threads=threads,
        )
        self.errors = errors

    def __call__(self, batch: Any) -> Any:
        import pyarrow as pa

        column = cast(str, self.column)  # HashFiles takes one column's name
        paths = _columns(batch, [column], "HashFiles")[column]
        digests = self._get_engine().hash_files(
            paths,
            length=self.length,
            seek=self.seek,
            hex=self.hex,
            key=self.key,
            derive_key=self.derive_key,
            errors=self.errors,
        )
        kind = pa.string() if self.hex else pa.binary(self.length)
        return _with_column(batch, self.out, pa.array(digests, type=kind))


def _columns(batch: Any, names: Sequence[str], helper: str) -> Dict[str, Any]:
    """The columns ``names`` of a batch of any of Ray's formats, as pyarrow
    (chunked) arrays: a pyarrow table or record batch's own; a pandas
    DataFrame's or a dict of NumPy arrays' converted as ``hash_arrow``
    converts them (a tensor column's rows as their values)."""
    import pyarrow as pa

    if isinstance(batch, pa.RecordBatch):
        batch = pa.Table.from_batches([batch])
    if isinstance(batch, pa.Table):
        available = batch.schema.names
    elif isinstance(batch, dict):
        available = list(batch)
    elif type(batch).__module__.startswith("pandas") and type(batch).__name__ == "DataFrame":
        available = [str(name) for name in batch.columns]
    else:
        raise TypeError(
            f"{helper} takes Ray's batches (pyarrow, pandas or numpy), got {type(batch).__name__}"
        )
    for name in names:
        if name not in available:
            raise KeyError(f"{helper}: the batch has no column {name!r} (its columns: {', '.join(available)})")
    if isinstance(batch, pa.Table):
        return {name: batch.column(name) for name in names}
    if isinstance(batch, dict):
        return {name: numpy_column(batch[name], f"column {name!r}") for name in names}
    table = as_arrow(batch[list(names)])
    return {name: table.column(name) for name in names}


def _storage(values: Any, name: str) -> Any:
    """An extension column as the bytes to hash: Ray's tensors as their
    values, whatever their shapes, and its pickled objects refused
    (:mod:`blake3_batch._ray_columns`); any other
    as its storage (some Ray versions write an extension's metadata as
    pickled bytes, which the Arrow C interface refuses as a field's)."""
    import pyarrow as pa

    from ._ray_columns import column_values

    values = column_values(values, f"column {name!r}")
    kind = values.type
    if not isinstance(kind, pa.ExtensionType):
        return values
    return pa.chunked_array([chunk.storage for chunk in values.chunks], type=kind.storage_type)


def _with_column(batch: Any, out: str, digests: Any) -> Any:
    """The batch with ``out`` set to ``digests`` (replaced if present), in
    the batch's own format."""
    import pyarrow as pa

    if isinstance(batch, pa.RecordBatch):
        batch = pa.Table.from_batches([batch])
    if isinstance(batch, pa.Table):
        if out in batch.schema.names:
            return batch.set_column(batch.schema.names.index(out), out, digests)
        return batch.append_column(out, digests)
    if isinstance(batch, dict):
        import numpy as np

        if pa.types.is_uint64(digests.type) and digests.null_count == 0:
            column = np.asarray(digests)
        else:
            column = np.array(digests.to_pylist(), dtype=object)
        return {**batch, out: column}
    import pandas as pd

    batch = batch.copy(deep=False)
    batch[out] = pd.arrays.ArrowExtensionArray(digests)
    return batch


def _worker_cpus() -> Optional[int]:
    """The CPUs Ray assigned to this worker, when running inside Ray."""
    try:
        import ray

        if ray.is_initialized():
            cpus = ray.get_runtime_context().get_assigned_resources().get("CPU")
            if cpus and cpus >= 1:
                return int(cpus)
    except Exception:  # not in a Ray worker, or an older Ray
        pass
    return None
