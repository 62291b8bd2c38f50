"""DuckDB SQL functions: ``register`` makes a BLAKE3 function callable in the
SQL of one connection, each vector of rows DuckDB hands it hashed at once as
:func:`blake3_batch.hash_arrow` hashes a column (read in place, the GIL
released)::

    import duckdb
    from blake3_batch import duckdb as b3

    con = duckdb.connect()
    b3.register(con)                                     # blake3(VARCHAR) -> BLOB of 32 bytes
    b3.register(con, "blake3_hex", hex=True)             # -> VARCHAR of lowercase hex
    b3.register(con, "row_key", as_u64=True, derive_key="myapp 2026 ids")  # -> UBIGINT
    b3.register(con, "blake3_blob", input="BLOB")
    b3.register(con, "id_key", input="BIGINT", as_u64=True)   # a number's little-endian bytes
    b3.register(con, "tokens_key", input="INTEGER[]", as_u64=True)
    b3.register(con, "pair_key", input="STRUCT(id BIGINT, text VARCHAR)", as_u64=True)
    b3.register(con, "id_text_key", input=["BIGINT", "VARCHAR"], as_u64=True)  # id_text_key(id, text)
    b3.register(con, "blake3_file", files=True)          # a path -> the digest of its file
    con.sql("SELECT text, blake3(text), row_key(text) FROM docs")
    con.sql("SELECT file, blake3_file(file) FROM glob('data/*.parquet')")
    con.sql("SELECT pair_key({'id': id, 'text': text}), id_text_key(id, text) FROM docs")  # equal keys

A DuckDB function has one signature, so each input type gets a function of
its own (``input``: any SQL type whose Arrow form ``hash_arrow`` takes:
VARCHAR, BLOB, ENUM, numbers, dates and timestamps, BOOLEAN, and lists,
arrays, MAPs and STRUCTs of those, nested to any depth; a list of types
gives a function of that many arguments, hashed as one row). A VARCHAR is hashed as its UTF-8 bytes, a
BLOB as its bytes, a number as its little-endian bytes (a BIGINT as 8, an
INTEGER as 4), a STRUCT over all its fields as ``hash_arrow(...,
rows=True)`` hashes a table's rows (for a key over several columns). The
options are fixed when the function is registered and checked there; NULL
gives NULL.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, Optional, Union

import duckdb
import pyarrow as pa

from ._duckdb import CAST, holds_time_with_time_zone
from ._native import Engine, check_options, default_engine

__all__ = ["register"]

Key = Union[bytes, bytearray]


def register(
    con: Any = None,
    name: str = "blake3",
    *,
    input: Any = "VARCHAR",
    files: bool = False,
    length: int = 32,
    seek: int = 0,
    hex: bool = False,
    as_u64: bool = False,
    key: Optional[Key] = None,
    derive_key: Optional[str] = None,
    errors: str = "raise",
    engine: Optional[Engine] = None,
) -> None:
    """Registers the SQL function ``name(x)`` on the DuckDB connection
    ``con`` (by default DuckDB's default connection, which ``duckdb.sql``
    uses).

    ``input`` is the SQL type of its argument (a string, or a DuckDB type
    object such as ``con.type("mood")`` for a type of your own), or a list
    of types, one per argument, for a function of several arguments that
    hashes them as one row (as a STRUCT of them is hashed; NULL arguments
    are part of the row, which is never NULL). It
    returns ``length`` bytes of BLAKE3 output from byte ``seek`` on as a
    BLOB (over 32: the extended output), with ``hex=True`` as a VARCHAR of lowercase hex, or with
    ``as_u64=True`` the digest's first 8 bytes as a little-endian UBIGINT
    (keys for ``GROUP BY`` and joins). ``key`` (32 bytes) selects the keyed
    mode, ``derive_key`` (a context string) key derivation. With
    ``files=True`` the argument is a VARCHAR path and the function hashes
    the file it names, as :func:`blake3_batch.hash_files` does; a file that
    cannot be read fails the query (``errors="raise"``) or gives NULL
    (``errors="none"``). ``engine`` is the :class:`~blake3_batch.Engine`
    to hash on (default: the shared one).

    Bad options raise ``ValueError`` and an ``input`` type whose values
    cannot be hashed ``TypeError``, here rather than when a query runs; a
    type DuckDB does not know, or a name the connection already has, raises
    DuckDB's error.
    """
    if isinstance(con, str):
        raise TypeError(f"register(con, name, ...) takes the connection first, got the string {con!r}")
    check_options(length=length, seek=seek, key=key, derive_key=derive_key)
    if as_u64 and (length, seek, hex) != (32, 0, False):
        raise ValueError("as_u64=True returns each digest's first 8 bytes: leave length=, seek= and hex= out")
    if files and as_u64:
        raise ValueError("files=True returns digests of files: leave as_u64= out")
    if errors not in ("raise", "none"):
        raise ValueError(f'errors={errors!r}: give "raise" or "none"')
    if errors != "raise" and not files:
        raise ValueError('errors= applies to files=True only: a value that cannot be hashed always raises')
    options: Dict[str, Any] = {"key": bytes(key) if key is not None else None, "derive_key": derive_key}
    if not as_u64:
        options.update(length=length, seek=seek, hex=hex)
    # The module's functions use the default connection. Any: see _check_input.
    target: Any = con if con is not None else duckdb
    # The caller's connection parses the type, so its own types (CREATE TYPE) resolve.
    several = isinstance(input, (list, tuple))
    if several and not input:
        raise ValueError("input=[]: give one SQL type, or a list of one type per argument")
    sql_types = [target.type(t) if isinstance(t, str) else t for t in (input if several else [input])]
    if files and (several or str(sql_types[0]) != "VARCHAR"):
        raise ValueError(f"files=True takes VARCHAR paths: leave input={input!r} out")
    if files:
        hash_batch = _files_function(engine, options, errors)
    else:
        for sql_type in sql_types:
            _check_input(sql_type, engine)
        hash_batch = _column_function(engine, options, as_u64, len(sql_types) if several else None)
    target.create_function(
        name,
        hash_batch,
        sql_types,
        "UBIGINT" if as_u64 else "VARCHAR" if hex else "BLOB",
        type="arrow",
        null_handling="special",  # NULL rows reach hash_batch, which keeps them NULL
        # A value's digest never changes, so DuckDB may fold constants; a
        # file's may between two queries.
        side_effects=files,
    )


def _column_function(
    engine: Optional[Engine], options: Dict[str, Any], as_u64: bool, arguments: Optional[int]
) -> Callable[..., Any]:
    """The function DuckDB calls with a vector of each argument: one, or
    ``arguments`` of them hashed as the columns of one row."""
    several = arguments is not None

    def hash_column(*columns: Any) -> Any:
        hashing = engine or default_engine()
        # Several arguments are the columns of one row, as a STRUCT's fields
        # are; either is hashed over all of them.
        values = pa.table({f"a{i}": c for i, c in enumerate(columns)}) if several else columns[0]
        rows = several or pa.types.is_struct(values.type)
        if as_u64:
            return hashing.hash_arrow_u64(values, rows=rows, **options)
        return _as_blobs(hashing.hash_arrow(values, rows=rows, **options))

    if arguments is not None:
        # DuckDB counts a function's parameters from its signature.
        parameters = [inspect.Parameter(f"a{i}", inspect.Parameter.POSITIONAL_ONLY) for i in range(arguments)]
        hash_column.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    return hash_column


def _as_blobs(digests: Any) -> Any:
    """Fixed-size binary digests as variable-size binary, a copy of 32
    bytes a row: DuckDB before 1.3 reads the rows after a NULL of a
    fixed-size binary result from the wrong place, and the functions stay
    right on those versions too. Hex strings pass as they are."""
    if pa.types.is_fixed_size_binary(digests.type):
        return digests.cast(pa.large_binary())
    return digests


def _files_function(engine: Optional[Engine], options: Dict[str, Any], errors: str) -> Callable[[Any], Any]:
    kind = pa.string() if options["hex"] else pa.large_binary()  # not fixed-size: see _as_blobs

    def hash_files(paths: Any) -> Any:
        digests = (engine or default_engine()).hash_files(paths, errors=errors, **options)
        return pa.array(digests, type=kind)

    return hash_files


def _check_input(sql_type: Any, engine: Optional[Engine]) -> None:
    """Raises ``TypeError`` if DuckDB hands values of ``sql_type`` to a
    function as an Arrow type that ``hash_arrow`` refuses (none in DuckDB
    2.0, but one a later DuckDB may add). A database of its own finds the
    Arrow type from the type's full definition, so the caller's sees
    nothing of it."""
    if holds_time_with_time_zone(sql_type):
        raise TypeError(
            f"input={str(sql_type)!r} reaches Python as an Arrow time without its offset, so times that "
            f"differ would hash alike: register the function for VARCHAR and {CAST}"
        )
    arrow_types = []

    def record_type(values: Any) -> Any:
        arrow_types.append(values.type)
        return pa.nulls(len(values), pa.binary())

    # Typed as Any: DuckDB's stubs name the UDF kinds by enums that moved
    # between versions, while the strings work in every one.
    probe: Any = duckdb.connect()
    try:
        probe.create_function(
            "arrow_type_of", record_type, [probe.type(str(sql_type))], "BLOB", type="arrow", null_handling="special"
        )
        probe.execute("SELECT arrow_type_of(NULL)").fetchall()
    except (duckdb.Error, RuntimeError):
        return  # a definition that does not parse again: the query reports any type it refuses
    finally:
        probe.close()
    try:
        arrow_type = arrow_types[0]
        (engine or default_engine()).hash_arrow(pa.nulls(0, arrow_type), rows=pa.types.is_struct(arrow_type))
    except TypeError as error:
        raise TypeError(
            f"input={str(sql_type)!r} reaches Python as Arrow {arrow_types[0]}, which cannot be hashed: register "
            "the function for VARCHAR, BLOB, an ENUM, a number, BOOLEAN, or a list, array, MAP, STRUCT or UNION of "
            "those, and convert in SQL"
        ) from error
