"""Ray Data helpers: a digest column added to every batch of a dataset, one
engine per worker.

    ds = ray.data.read_parquet(path)
    ds = ds.map_batches(blake3_batch.ray.HashColumn("text", out="blake3"),
                        batch_format="pyarrow", batch_size=65536, concurrency=4)

Passing the class instance makes Ray run it in actors (``concurrency=N``);
each actor builds its :class:`~blake3_batch.Engine` once, on first use, in
its own process. Add ``num_gpus=1`` and ``backend="gpu"`` on GPU hosts.
"""

from __future__ import annotations

from typing import Any, Optional, Union

from . import Engine
from ._native import check_options

__all__ = ["HashColumn"]


class HashColumn:
    """Adds the BLAKE3 digest of one binary or string column to a
    ``pyarrow.Table`` (or ``RecordBatch``) batch.

    ``out`` names the new column (replaced if present). ``as_u64=True``
    stores the first 8 digest bytes as ``uint64`` instead of ``length``
    bytes of binary. ``key``/``derive_key`` select the keyed or key
    derivation mode; ``backend`` and ``threads`` configure each worker's
    engine (``threads`` defaults to the CPUs Ray gave the worker, or all).
    """

    def __init__(
        self,
        column: str,
        out: str = "blake3",
        *,
        length: int = 32,
        as_u64: bool = False,
        key: Optional[Union[bytes, bytearray]] = None,
        derive_key: Optional[str] = None,
        backend: str = "auto",
        threads: Optional[int] = None,
    ) -> None:
        # Bad arguments fail here, in the driver, not later in every actor.
        check_options(length=length, key=key, derive_key=derive_key)
        self.column = column
        self.out = out
        self.length = length
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

        if isinstance(batch, pa.RecordBatch):
            batch = pa.Table.from_batches([batch])
        if not isinstance(batch, pa.Table):
            raise TypeError(
                f"HashColumn takes pyarrow batches, got {type(batch).__name__}: "
                'pass batch_format="pyarrow" to map_batches'
            )
        if self.column not in batch.column_names:
            raise KeyError(
                f"HashColumn: the batch has no column {self.column!r} "
                f"(its columns: {', '.join(batch.column_names)})"
            )
        engine = self._get_engine()
        values = batch.column(self.column)
        if self.as_u64:
            digests = engine.hash_arrow_u64(values, key=self.key, derive_key=self.derive_key)
        else:
            digests = engine.hash_arrow(
                values, length=self.length, key=self.key, derive_key=self.derive_key
            )
        if self.out in batch.column_names:
            return batch.set_column(batch.column_names.index(self.out), self.out, digests)
        return batch.append_column(self.out, digests)


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
