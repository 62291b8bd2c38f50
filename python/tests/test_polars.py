"""The `.blake3` namespace on Polars expressions and Series: digests, hex
and u64 keys inside eager, lazy and streaming queries, equal to blake3-py
row by row, with the options checked when the expression is built."""

import pickle

import blake3
import numpy as np
import pyarrow as pa
import pytest

import blake3_batch as bb

pl = pytest.importorskip("polars")
import blake3_batch.polars  # noqa: E402,F401  (registers .blake3)
from conftest import framed  # noqa: E402

KEY = bytes(range(32))
CONTEXT = "blake3-batch 2026-12-05 polars"
TEXTS = ["alpha", None, "", "x" * 3000, "beta"]


def digest(data, length=32, seek=0, key=None, derive_key=None):
    if data is None:
        return None
    data = data.encode() if isinstance(data, str) else data
    if key is not None:
        return blake3.blake3(data, key=key).digest(length, seek=seek)
    if derive_key is not None:
        return blake3.blake3(data, derive_key_context=derive_key).digest(length, seek=seek)
    return blake3.blake3(data).digest(length, seek=seek)


@pytest.mark.parametrize("options", [{}, {"key": KEY}, {"derive_key": CONTEXT}, {"length": 64, "seek": 7}], ids=str)
def test_digest_hexdigest_and_u64_in_an_eager_query(options):
    df = pl.DataFrame({"text": TEXTS})
    out = df.with_columns(
        pl.col("text").blake3.digest(**options).alias("d"),
        pl.col("text").blake3.hexdigest(**options).alias("h"),
    )
    expected = [digest(t, **options) for t in TEXTS]
    assert out.schema["d"] == pl.Binary and out.schema["h"] == pl.String
    assert out["d"].to_list() == expected
    assert out["h"].to_list() == [None if d is None else d.hex() for d in expected]
    modes = {k: v for k, v in options.items() if k in ("key", "derive_key")}
    keys = df.select(pl.col("text").blake3.u64(**modes))["text"]
    assert keys.dtype == pl.UInt64
    assert keys.to_list() == [None if t is None else int.from_bytes(digest(t, **modes)[:8], "little") for t in TEXTS]


@pytest.mark.parametrize("engine", ["in-memory", "streaming"])
def test_a_lazy_query_hashes_every_batch(engine):
    texts = [f"row {i}" * (i % 9) for i in range(20_000)]
    lazy = pl.LazyFrame({"text": texts, "n": range(len(texts))})
    out = (
        lazy.filter(pl.col("n") % 3 != 0)
        .with_columns(pl.col("text").blake3.digest().alias("d"))
        .collect(engine=engine)
    )
    assert out.height == len(texts) - len(range(0, len(texts), 3))
    assert all(d == digest(t) for t, d in zip(out["text"], out["d"]))


def test_exact_deduplication_by_u64_keys():
    texts = [f"doc {i % 1000}" for i in range(5000)]
    df = pl.DataFrame({"text": texts}).with_columns(key=pl.col("text").blake3.u64())
    assert df.unique("key").height == 1000 == df["text"].n_unique()


def test_columns_of_every_kind_the_engine_takes():
    df = pl.DataFrame(
        {
            "binary": pl.Series([b"\x00\xff", None, b"abc"], dtype=pl.Binary),
            "category": pl.Series(["red", "blue", "red"], dtype=pl.Categorical),
            "tokens": pl.Series([[1, 2, 3], [], None], dtype=pl.List(pl.Int32)),
            "embedding": pl.Series(np.arange(6, dtype="<f4").reshape(3, 2), dtype=pl.Array(pl.Float32, 2)),
            "id": pl.Series([7, None, -1], dtype=pl.Int64),
            "price": pl.Series([0.5, 1.5, None], dtype=pl.Float32),
        }
    )
    out = df.select(pl.all().blake3.digest())
    assert out["binary"].to_list() == [digest(b"\x00\xff"), None, digest(b"abc")]
    assert out["category"].to_list() == [digest("red"), digest("blue"), digest("red")]
    assert out["tokens"].to_list() == [digest(np.array([1, 2, 3], "<i4").tobytes()), digest(b""), None]
    assert out["embedding"].to_list() == [digest(np.arange(2 * i, 2 * i + 2, dtype="<f4").tobytes()) for i in range(3)]
    assert out["id"].to_list() == [digest(np.int64(7).tobytes()), None, digest(np.int64(-1).tobytes())]
    assert out["price"].to_list() == [digest(np.float32(0.5).tobytes()), digest(np.float32(1.5).tobytes()), None]


def test_a_struct_of_columns_is_hashed_a_row_at_a_time_in_a_lazy_query():
    ids = [7, None, -1, 7, 7]
    df = pl.DataFrame({"id": pl.Series(ids, dtype=pl.Int64), "text": TEXTS})
    out = df.lazy().select(
        d=pl.struct("id", "text").blake3.digest(),
        k=pl.struct(pl.all()).blake3.u64(),
        n=pl.when(pl.col("id") > 0).then(pl.struct("id", "text")).blake3.digest(),
    ).collect()
    expected = [
        digest(framed([None if i is None else np.int64(i).tobytes(), None if t is None else t.encode()]))
        for i, t in zip(ids, TEXTS)
    ]
    assert out["d"].to_list() == expected
    assert out["k"].to_list() == [int.from_bytes(e[:8], "little") for e in expected]
    assert out["n"].to_list() == [e if i is not None and i > 0 else None for e, i in zip(expected, ids)]


def test_series_methods_and_an_engine_of_ones_own():
    series = pl.Series("text", TEXTS)
    engine = bb.Engine(backend="cpu", threads=1)
    assert series.blake3.digest(engine=engine).to_list() == [digest(t) for t in TEXTS]
    assert series.blake3.digest(engine=engine).name == "text"
    assert series.blake3.hexdigest(length=8).to_list() == [None if t is None else digest(t, 8).hex() for t in TEXTS]
    assert series.blake3.u64(key=KEY).to_list()[0] == int.from_bytes(digest("alpha", key=KEY)[:8], "little")
    empty = pl.Series("e", [], dtype=pl.String)
    assert empty.blake3.digest().dtype == pl.Binary and len(empty.blake3.digest()) == 0
    nulls = pl.Series("n", [None, None])  # dtype Null
    assert nulls.blake3.digest().to_list() == [None, None]


def test_bad_options_fail_when_the_expression_is_built_and_bad_columns_when_it_runs():
    with pytest.raises(ValueError, match="32 bytes"):
        pl.col("text").blake3.digest(key=b"short")
    with pytest.raises(ValueError, match="length"):
        pl.col("text").blake3.hexdigest(length=0)
    with pytest.raises(TypeError):
        pl.col("text").blake3.u64(length=8)
    with pytest.raises(ValueError, match="Arrow output"):
        pl.col("text").blake3.digest(length=2**28)
    # Booleans are one byte each; lists of strings their values framed.
    df = pl.DataFrame({"flag": [True, False], "tags": [["a", "bc"], ["ab", "c"]]})
    out = df.select(pl.col("flag").blake3.digest(), pl.col("tags").blake3.digest())
    assert out["flag"].to_list() == [blake3.blake3(b"\1").digest(), blake3.blake3(b"\0").digest()]
    assert out["tags"].to_list() == [blake3.blake3(framed([b"a", b"bc"])).digest(), blake3.blake3(framed([b"ab", b"c"])).digest()]


def test_a_column_of_python_objects_is_refused_not_hashed_as_their_addresses():
    # Polars exports an Object column as each object's memory address, with
    # nothing in the schema to say so: its digests would change every run.
    df = pl.DataFrame({"o": pl.Series([object(), 7], dtype=pl.Object), "text": ["a", "b"]})
    calls = [
        lambda: df.select(pl.col("o").blake3.digest()),
        lambda: df.lazy().select(pl.col("o").blake3.u64()).collect(),
        lambda: df["o"].blake3.hexdigest(),
        lambda: bb.hash_arrow(df["o"]),
        lambda: bb.hash_arrow(df, rows=True),
        lambda: list(bb.hash_arrow_batches(df, rows=True)),
    ]
    for call in calls:
        with pytest.raises(TypeError, match="Object column.*'o'.*memory addresses"):
            call()
    # The other column, and the objects once converted to bytes, are hashed.
    assert bb.hash_arrow(df["text"]).to_pylist() == [digest(t) for t in ["a", "b"]]
    pickled = df["o"].map_elements(pickle.dumps, return_dtype=pl.Binary)
    assert pickled.blake3.digest().to_list() == [digest(p) for p in pickled.to_list()]


def test_the_null_type_at_any_depth_hashes_as_pyarrows():
    # Polars exports the Null type with a buffer Arrow's format does not
    # allow: the digests are those of the same data built in pyarrow.
    fields = pa.struct([("a", pa.int64()), ("b", pa.null())])
    df = pl.DataFrame({"s": [{"a": 1, "b": None}, None]}, schema={"s": pl.Struct({"a": pl.Int64, "b": pl.Null})})
    want = bb.hash_arrow(pa.array([{"a": 1, "b": None}, None], fields)).to_pylist()
    assert df.select(pl.col("s").blake3.digest())["s"].to_list() == want
    assert bb.hash_arrow(df["s"]).to_pylist() == want
    nulls = pl.Series("n", [[None, None], [], None], dtype=pl.List(pl.Null))
    assert nulls.blake3.digest().to_list() == bb.hash_arrow(pa.array([[None, None], [], None], pa.list_(pa.null()))).to_pylist()
    table = pl.DataFrame({"id": [1, 2], "n": pl.Series([None, None], dtype=pl.Null)})
    pyarrow_rows = bb.hash_arrow(pa.table({"id": pa.array([1, 2], pa.int64()), "n": pa.nulls(2)}), rows=True).to_pylist()
    assert bb.hash_arrow(table, rows=True).to_pylist() == pyarrow_rows
    assert [d for b in bb.hash_arrow_batches(table, rows=True) for d in b.to_pylist()] == pyarrow_rows
    assert bb.hash_arrow(pl.Series([None, None])).to_pylist() == [None, None]


WIDE_VALUES = [1, -2, None, -(2**127), 2**127 - 1, 0, 2**64, -(2**64) - 1]


def test_a_128_bit_integer_column_hashes_as_its_16_little_endian_bytes():
    """Polars exports Int128 and UInt128 in a format of its own; a column
    of them is hashed as each value's 16 little-endian bytes, in every call
    that takes Polars data, nulls kept."""
    signed = pl.Series("big", WIDE_VALUES, dtype=pl.Int128)
    want = [None if v is None else digest(v.to_bytes(16, "little", signed=True)) for v in WIDE_VALUES]
    assert bb.hash_arrow(signed).to_pylist() == want
    assert signed.blake3.digest().to_list() == want
    assert pl.DataFrame({"big": signed}).select(pl.col("big").blake3.digest())["big"].to_list() == want
    lazy = pl.DataFrame({"big": signed}).lazy().select(pl.col("big").blake3.digest())
    assert lazy.collect(engine="streaming")["big"].to_list() == want
    assert bb.hash_arrow(signed.slice(2, 3)).to_pylist() == want[2:5]
    two_chunks = pl.concat([signed, signed], rechunk=False)
    assert bb.hash_arrow(two_chunks).to_pylist() == want * 2
    u64 = [None if d is None else int.from_bytes(d[:8], "little") for d in want]
    assert bb.hash_arrow_u64(signed).to_pylist() == u64
    assert [d for batch in bb.hash_arrow_batches(pl.DataFrame({"big": signed})) for d in batch.to_pylist()] == want
    if hasattr(pl, "UInt128"):  # Polars 1.34 and later
        values = [0, 2**128 - 1, None, 2**127, 2**64 - 1]
        unsigned = pl.Series("u", values, dtype=pl.UInt128)
        assert unsigned.blake3.digest().to_list() == [None if v is None else digest(v.to_bytes(16, "little")) for v in values]


def test_a_table_with_128_bit_integers_has_the_row_digests_of_duckdbs_hugeint():
    """DuckDB exports HUGEINT as decimal128(38, 0), its 16 little-endian
    bytes; Polars' Int128 columns are read as the same, so a table's rows
    have one digest from either, whatever its other columns hold."""
    duckdb = pytest.importorskip("duckdb")
    values = [v for v in WIDE_VALUES if v is None or abs(v) < 10**38]
    df = pl.DataFrame({"name": [f"r{i}" for i in range(len(values))], "big": pl.Series(values, dtype=pl.Int128), "n": pl.Series([None] * len(values), dtype=pl.Null)})
    con = duckdb.connect()
    con.register("frame", df.with_columns(pl.col("big").cast(pl.Decimal(38, 0))).to_arrow())
    from_duckdb = con.sql("SELECT name, big::HUGEINT AS big, n FROM frame").arrow()
    from_duckdb = from_duckdb.read_all() if hasattr(from_duckdb, "read_all") else from_duckdb
    assert from_duckdb.schema.field("big").type == pa.decimal128(38, 0)
    assert bb.hash_arrow(df, rows=True).to_pylist() == bb.hash_arrow(from_duckdb, rows=True).to_pylist()
    assert bb.hash_arrow(df["big"]).to_pylist() == bb.hash_arrow(from_duckdb.column("big")).to_pylist()


def test_128_bit_integers_nested_in_a_column_are_refused_naming_it():
    deep = pl.DataFrame({"deep": pl.Series([[1], [2]], dtype=pl.List(pl.Int128)), "ok": [1, 2]})
    for call in (
        lambda: deep.select(pl.col("deep").blake3.digest()),
        lambda: bb.hash_arrow(deep["deep"]),
        lambda: bb.hash_arrow(deep, rows=True),
        lambda: bb.hash_arrow(pl.Series("s", [{"a": 1}], dtype=pl.Struct({"a": pl.Int128}))),
    ):
        with pytest.raises(TypeError, match=r"'(deep|s)' with 128-bit integers inside.*cast"):
            call()
    as_decimals = deep["deep"].cast(pl.List(pl.Decimal(38, 0)))
    assert bb.hash_arrow(as_decimals).to_pylist() == [digest(v.to_bytes(16, "little", signed=True)) for v in (1, 2)]
