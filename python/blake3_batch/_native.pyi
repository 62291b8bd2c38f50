import os
from typing import Any, Iterable, List, Optional, Tuple, Type, Union, final

import numpy as np
import numpy.typing as npt
import pyarrow as pa

__all__ = [
    "Engine",
    "DigestIterator",
    "ArrowDigestBatches",
    "PinnedBuffer",
    "default_engine",
    "check_options",
    "__version__",
]

__version__: str

_Key = Union[bytes, bytearray]

@final
class Engine:
    """A BLAKE3 batch engine: a backend and a number of threads, reused
    across calls and shared between threads."""

    def __new__(
        cls,
        backend: str = "auto",
        threads: Optional[int] = None,
        cpu_backend: Optional[str] = None,
    ) -> "Engine": ...
    def hash_arrow(
        self,
        column: Any,
        *,
        length: int = 32,
        seek: int = 0,
        hex: bool = False,
        key: Optional[_Key] = None,
        derive_key: Optional[str] = None,
        rows: bool = False,
    ) -> Union[pa.FixedSizeBinaryArray, pa.StringArray, pa.LargeStringArray, pa.ChunkedArray]: ...
    def hash_arrow_u64(
        self,
        column: Any,
        *,
        key: Optional[_Key] = None,
        derive_key: Optional[str] = None,
        rows: bool = False,
    ) -> Union[pa.UInt64Array, pa.ChunkedArray]: ...
    def hash_arrow_batches(
        self,
        source: Any,
        *,
        length: int = 32,
        seek: int = 0,
        hex: bool = False,
        as_u64: bool = False,
        key: Optional[_Key] = None,
        derive_key: Optional[str] = None,
        rows: bool = False,
    ) -> "ArrowDigestBatches": ...
    def hash_many(
        self,
        items: Iterable[Any],
        *,
        length: int = 32,
        seek: int = 0,
        hex: bool = False,
        key: Optional[_Key] = None,
        derive_key: Optional[str] = None,
    ) -> Union[List[bytes], List[str]]: ...
    def hash_iter(
        self,
        items: Iterable[Any],
        *,
        batch_size: int = 65536,
        length: int = 32,
        seek: int = 0,
        hex: bool = False,
        key: Optional[_Key] = None,
        derive_key: Optional[str] = None,
    ) -> "DigestIterator": ...
    def hash_file(
        self,
        path: Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"],
        *,
        length: int = 32,
        seek: int = 0,
        hex: bool = False,
        key: Optional[_Key] = None,
        derive_key: Optional[str] = None,
    ) -> Union[bytes, str]: ...
    def hash_reader(
        self,
        reader: Any,
        *,
        length: int = 32,
        seek: int = 0,
        hex: bool = False,
        key: Optional[_Key] = None,
        derive_key: Optional[str] = None,
    ) -> Union[bytes, str]: ...
    def hash_files(
        self,
        paths: Union[Iterable[Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]", None]], pa.Array, pa.ChunkedArray, Any],
        *,
        length: int = 32,
        seek: int = 0,
        hex: bool = False,
        key: Optional[_Key] = None,
        derive_key: Optional[str] = None,
        errors: str = "raise",
    ) -> Union[List[Optional[bytes]], List[Optional[str]]]: ...
    def hash_records(
        self,
        records: npt.NDArray[Any],
        *,
        length: int = 32,
        seek: int = 0,
        key: Optional[_Key] = None,
        derive_key: Optional[str] = None,
        out: Optional[npt.NDArray[np.uint8]] = None,
    ) -> npt.NDArray[np.uint8]: ...
    def pinned_buffer(self, nbytes: int) -> "PinnedBuffer": ...
    def info(self) -> dict: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    def __enter__(self) -> "Engine": ...
    def __exit__(self, *args: Any) -> bool: ...
    def __reduce__(self) -> Tuple[Type["Engine"], Tuple[str, Optional[int], Optional[str]]]: ...

@final
class DigestIterator:
    """What ``hash_iter`` returns: the outputs (``bytes``, or ``str`` with
    ``hex=True``) of an iterable's items, hashed a batch at a time."""

    def __iter__(self) -> "DigestIterator": ...
    def __next__(self) -> Union[bytes, str]: ...

@final
class ArrowDigestBatches:
    """What ``hash_arrow_batches`` returns: one output array per input
    batch, each batch read when the last one's output is taken."""

    def __iter__(self) -> "ArrowDigestBatches": ...
    def __next__(self) -> Union[pa.FixedSizeBinaryArray, pa.StringArray, pa.LargeStringArray, pa.UInt64Array]: ...

@final
class PinnedBuffer:
    """Bytes in pinned host memory of an engine's GPU (ordinary memory
    where it has none); ``numpy.asarray(buffer)`` is a writable view."""

    @property
    def pinned(self) -> bool: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def __array_interface__(self) -> dict: ...
    def __len__(self) -> int: ...

def default_engine() -> Engine: ...
def check_options(
    *,
    length: int = 32,
    seek: int = 0,
    key: Optional[_Key] = None,
    derive_key: Optional[str] = None,
) -> None: ...
