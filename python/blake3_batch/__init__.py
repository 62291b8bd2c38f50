"""Hash Arrow columns, NumPy records and many small bytes objects with BLAKE3
at once: every SIMD lane a different blob, on every core (or a GPU), without
copying the data and without holding the GIL. Digests are bit-identical to
``blake3.blake3(x).digest()`` (and its keyed and derive-key modes).

The module-level functions share one engine per process (backend "auto",
every core); build an :class:`Engine` for another backend or thread count.
"""

from __future__ import annotations

import os
from typing import Any, Iterable, List, Optional, Union

from ._native import ArrowDigestBatches, DigestIterator, Engine, PinnedBuffer, __version__, default_engine

__all__ = [
    "Engine",
    "default_engine",
    "hash_arrow",
    "hash_arrow_batches",
    "hash_arrow_u64",
    "hash_file",
    "hash_files",
    "hash_iter",
    "hash_many",
    "hash_reader",
    "hash_records",
    "pinned_buffer",
    "PinnedBuffer",
    "__version__",
]

Key = Union[bytes, bytearray]


def hash_arrow(
    column: Any,
    *,
    length: int = 32,
    seek: int = 0,
    hex: bool = False,
    key: Optional[Key] = None,
    derive_key: Optional[str] = None,
    rows: bool = False,
) -> Any:
    """Digests of an Arrow column of binary or string values, of numbers,
    booleans, or lists, maps, structs and unions of any of these; with
    ``rows=True``, of a table's rows.

    ``column`` is any object with ``__arrow_c_array__`` or
    ``__arrow_c_stream__`` (pyarrow, Polars, DuckDB, nanoarrow, arro3) of type
    binary, large_binary, string, large_string, binary_view, string_view or
    fixed_size_binary, or of fixed-width numbers (integers, floats,
    decimals, dates, timestamps, ...: each hashed as its little-endian
    bytes, as ``numpy``'s ``tobytes()`` gives them), or a dictionary of
    any type here (as categoricals are: each row gets its value's digest),
    or a run-end encoded column of any type here (each row gets its run's
    value's digest), or a list, large_list, fixed_size_list or list view
    of fixed-width numbers (token ids,
    embeddings, tensors; also of fixed-size lists of them, a tensor of more
    dimensions in row-major order), whose rows are hashed as the bytes of their
    values (a null value inside a valid row is a ``ValueError``); it is
    read in place. Booleans are one byte each (a list of them, those bytes
    back to back); a list of any other values (strings, variable-size lists, structs),
    a map (a list of key-value structs) or a struct value is hashed as its
    values framed as ``rows=True`` frames a row's columns, and a union
    value as its type code (one byte) then its member's value, nested to
    any depth (see the README). Returns a
    ``pyarrow.FixedSizeBinaryArray`` of ``length`` bytes a row (a
    ``pyarrow.ChunkedArray``, one chunk per input chunk, for a stream); null
    rows stay null. ``length`` < 32 keeps a prefix of the digest; over 32
    gives BLAKE3's extended output (up to 2**28 - 1 bytes a row here, as
    pyarrow misreads wider rows); ``seek`` starts each output at that
    byte of the extended output, as ``blake3(data).digest(length, seek=…)``
    does; ``hex=True`` gives lowercase hex strings instead of bytes, as
    ``hexdigest`` does (a ``pyarrow.string`` array here, ``large_string``
    past 2 GiB of digits). ``key`` (32 bytes) hashes in keyed mode, ``derive_key`` (a
    context string) in key derivation mode; every function here takes
    ``length``, ``seek``, ``key`` and ``derive_key`` alike, and all but
    ``hash_records`` take ``hex``.

    pandas objects and NumPy arrays are converted by pyarrow first: a
    DataFrame without its index, an array of more than one dimension as a
    column of its rows' bytes (as ``hash_records`` hashes them), and so a
    1-D array of complex numbers or structured records, which have no Arrow
    type.

    A table of one column (a pyarrow ``Table`` or ``RecordBatch``, a
    DataFrame, a query) is that column; one of several is a ``TypeError``
    unless ``rows=True``. A struct column (an array or a series) is a
    column, each row its fields framed as ``rows=True`` frames a table's
    columns. ``rows=True`` hashes each row of a table (or of a struct
    column) over all its columns, for deduplication on several columns:
    each column's value in column order, a null one as the byte ``0x00``,
    any other as ``0x01``, its length in bytes as a little-endian 8-byte
    integer, then its bytes as that column alone would be hashed, so
    ``("ab", "c")`` and ``("a", "bc")`` differ, and so do a null and an
    empty value. A null row of a struct column gets a null output.
    """
    return default_engine().hash_arrow(
        column, length=length, seek=seek, hex=hex, key=key, derive_key=derive_key, rows=rows
    )


def hash_arrow_u64(
    column: Any, *, key: Optional[Key] = None, derive_key: Optional[str] = None, rows: bool = False
) -> Any:
    """The first 8 bytes of each row's digest as little-endian
    ``pyarrow.uint64`` values: compact keys for deduplication and joins.
    Nulls stay null; ``rows=True`` as for ``hash_arrow``."""
    return default_engine().hash_arrow_u64(column, key=key, derive_key=derive_key, rows=rows)


def hash_arrow_batches(
    source: Any,
    *,
    length: int = 32,
    seek: int = 0,
    hex: bool = False,
    as_u64: bool = False,
    key: Optional[Key] = None,
    derive_key: Optional[str] = None,
    rows: bool = False,
) -> ArrowDigestBatches:
    """The outputs of an Arrow stream, a batch at a time: an iterator that
    yields, for each batch of ``source``, what ``hash_arrow`` (or, with
    ``as_u64=True``, ``hash_arrow_u64``) returns for it.

    ``source`` is anything with ``__arrow_c_stream__`` (a chunked array, a
    ``pyarrow.RecordBatchReader`` such as a Parquet or dataset scanner's, a
    DuckDB query, a one-column table) or an iterable of Arrow arrays and
    record batches (``pyarrow.parquet.ParquetFile.iter_batches``). Each
    batch is read only when the previous one's output is taken, so a column
    larger than memory is hashed in the memory of one batch. Options are
    checked at the call; a batch that cannot be hashed raises when it is
    reached, the message naming the batch and the row counted from the
    stream's start, and the iteration goes on past it. ``rows=True``
    hashes each batch's rows over all its columns, as ``hash_arrow`` does.
    """
    return default_engine().hash_arrow_batches(
        source, length=length, seek=seek, hex=hex, as_u64=as_u64, key=key, derive_key=derive_key, rows=rows
    )


def hash_many(
    items: Iterable[Any],
    *,
    length: int = 32,
    seek: int = 0,
    hex: bool = False,
    key: Optional[Key] = None,
    derive_key: Optional[str] = None,
) -> Union[List[bytes], List[str]]:
    """Digests of a sequence of bytes-like objects, as a list of ``bytes``
    of ``length`` bytes each, in order."""
    return default_engine().hash_many(items, length=length, seek=seek, hex=hex, key=key, derive_key=derive_key)


def hash_iter(
    items: Iterable[Any],
    *,
    batch_size: int = 65536,
    length: int = 32,
    seek: int = 0,
    hex: bool = False,
    key: Optional[Key] = None,
    derive_key: Optional[str] = None,
) -> DigestIterator:
    """Digests of an iterable of bytes-like objects (a generator, a
    database cursor), yielded in order as each batch of ``batch_size``
    items (fewer once they hold 64 MiB) is hashed as by ``hash_many``: a
    stream of any length in one batch's memory."""
    return default_engine().hash_iter(
        items, batch_size=batch_size, length=length, seek=seek, hex=hex, key=key, derive_key=derive_key
    )


def hash_file(
    path: Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"],
    *,
    length: int = 32,
    seek: int = 0,
    hex: bool = False,
    key: Optional[Key] = None,
    derive_key: Optional[str] = None,
) -> Union[bytes, str]:
    """The digest of the file at ``path``, as ``bytes`` of ``length`` bytes
    (over 32: BLAKE3's extended output): read whole (up to 64 MiB) or in
    windows hashed while the next is read (on the GPU where the engine
    sends long inputs there), with the GIL released. Raises
    ``FileNotFoundError``, ``IsADirectoryError`` or another ``OSError``
    where the file cannot be read, or changes length while it is read."""
    return default_engine().hash_file(path, length=length, seek=seek, hex=hex, key=key, derive_key=derive_key)


def hash_reader(
    reader: Any,
    *,
    length: int = 32,
    seek: int = 0,
    hex: bool = False,
    key: Optional[Key] = None,
    derive_key: Optional[str] = None,
) -> Union[bytes, str]:
    """The digest of everything the binary file object ``reader`` gives
    (``read(n)``, giving bytes or another bytes-like object, until it
    gives nothing: an open file, ``io.BytesIO``, ``sys.stdin.buffer``, a
    socket's or an fsspec file), as ``bytes`` of
    ``length`` bytes (over 32: BLAKE3's extended output). Read in windows,
    each hashed while the next is read, with the GIL released but for each
    read. An exception a read raises is raised here; a text-mode file is a
    ``TypeError``."""
    return default_engine().hash_reader(reader, length=length, seek=seek, hex=hex, key=key, derive_key=derive_key)


def hash_files(
    paths: Union[Iterable[Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]", None]], Any],
    *,
    length: int = 32,
    seek: int = 0,
    hex: bool = False,
    key: Optional[Key] = None,
    derive_key: Optional[str] = None,
    errors: str = "raise",
) -> Union[List[Optional[bytes]], List[Optional[str]]]:
    """Digests of the files at ``paths`` (an iterable of ``str``, ``bytes`` or
    ``os.PathLike``, or an Arrow array of strings or binary names), as a list of ``bytes``
    of ``length`` bytes in order (over 32: BLAKE3's extended output),
    ``None`` for a null path: small files read side by side and hashed in
    batches, larger ones streamed, with the GIL released. A file that
    cannot be read, is a directory or changes while it is read raises the
    ``OSError`` that fits once every file is hashed (``errors="raise"``),
    or gets ``None`` (``errors="none"``)."""
    return default_engine().hash_files(
        paths, length=length, seek=seek, hex=hex, key=key, derive_key=derive_key, errors=errors
    )


def hash_records(
    records: Any,
    *,
    length: int = 32,
    seek: int = 0,
    key: Optional[Key] = None,
    derive_key: Optional[str] = None,
    out: Any = None,
) -> Any:
    """Digests of the records of a C-contiguous NumPy array of any dtype
    without Python objects, one a row along its first axis, each hashed as
    ``records[i].tobytes()`` (a 1-D array of one-byte items is refused: cut
    it into rows first): a new ``(n, length)`` ``uint8`` array,
    or ``out`` (a writable C-contiguous ``(n, length)`` ``uint8`` array)
    filled and returned; if hashing fails, ``out`` is left all zeros."""
    return default_engine().hash_records(
        records, length=length, seek=seek, key=key, derive_key=derive_key, out=out
    )


def pinned_buffer(nbytes: int) -> PinnedBuffer:
    """A zeroed buffer of ``nbytes`` in pinned host memory of the default
    engine's GPU (ordinary memory without one; ``.pinned`` tells).
    ``numpy.asarray(buffer)`` is a writable ``uint8`` view: records and
    equal-length blobs written there and hashed from there are copied to
    the GPU where they lie, with no core packing them."""
    return default_engine().pinned_buffer(nbytes)


def __getattr__(name: str) -> Any:
    # `blake3_batch.ray` and `.polars` import Ray and Polars only when
    # they are used (`.polars` registers the `.blake3` namespaces).
    if name in ("ray", "polars"):
        import importlib

        return importlib.import_module(".ray", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
