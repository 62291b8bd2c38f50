"""Rows of numbers (ids, token ids, embeddings, tensors): Arrow columns of
fixed-width numbers and lists of them, and NumPy records of any dtype,
hash each row's bytes as they lie, equal to blake3-py over those bytes. The expected digests come
from the raw buffers the arrays are built over, not from the arrays."""

import blake3
import numpy as np
import pyarrow as pa
import pytest
from conftest import engines, kwargs_of, reference
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import blake3_batch as bb

# Every width Arrow's fixed-width types come in, through types of each
# family (bytes of any pattern are valid values of all of them).
VALUE_TYPES = [
    pa.int8(),
    pa.uint8(),
    pa.int16(),
    pa.float16(),
    pa.int32(),
    pa.float32(),
    pa.date32(),
    pa.int64(),
    pa.uint64(),
    pa.float64(),
    pa.timestamp("ns"),
    pa.duration("us"),
    pa.decimal128(20, 3),
    pa.month_day_nano_interval(),
    pa.decimal256(60, 2),
]
LIST_KINDS = ["list", "large_list", "fixed_size_list"]


def list_column(kind, value_type, counts, valid, rng, skip_values=0, list_size=None):
    """A list column over random value bytes, with the bytes of each row
    as the reference sees them. ``counts`` is each row's number of values
    (all ``list_size`` for a fixed-size list); ``skip_values`` values
    before the first row make the child's offsets start above 0."""
    width = value_type.byte_width
    total = skip_values + sum(counts)
    raw = rng.integers(0, 256, total * width, dtype=np.uint8).tobytes()
    values = pa.Array.from_buffers(value_type, total, [None, pa.py_buffer(raw)])
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64) + skip_values
    rows = [raw[starts[i] * width : starts[i + 1] * width] if valid[i] else None for i in range(len(counts))]
    mask = pa.array([not v for v in valid], pa.bool_())
    if kind == "fixed_size_list":
        values = values.slice(skip_values)
        assert all(count == list_size for count in counts)
        column = pa.FixedSizeListArray.from_arrays(values, list_size, mask=mask)
    elif kind == "list":
        column = pa.ListArray.from_arrays(pa.array(starts, pa.int32()), values, mask=mask)
    else:
        column = pa.LargeListArray.from_arrays(pa.array(starts, pa.int64()), values, mask=mask)
    return column, rows


def digests_of(rows, **kwargs):
    return [None if row is None else reference(row, **kwargs) for row in rows]


@pytest.mark.parametrize("engine", engines())
@pytest.mark.parametrize("kind", LIST_KINDS)
@pytest.mark.parametrize("value_type", VALUE_TYPES, ids=str)
def test_every_list_kind_and_value_width_on_every_engine(engine, kind, value_type):
    rng = np.random.default_rng(len(str(value_type)) * 7 + LIST_KINDS.index(kind))
    width = value_type.byte_width
    if kind == "fixed_size_list":
        counts = [1500 // width] * 40  # rows over one chunk
    else:
        # Empty rows, rows within a block, a chunk, and past one.
        counts = [int(n) for n in rng.integers(0, 3000 // width, 60)] + [0, 1, 1024 // width, 1025 // width + 1]
    valid = [i % 7 != 3 for i in range(len(counts))]
    column, rows = list_column(kind, value_type, counts, valid, rng, skip_values=5, list_size=counts[0])
    assert engine.hash_arrow(column).to_pylist() == digests_of(rows)
    # A slice of the column starts inside its offsets and its values.
    assert engine.hash_arrow(column.slice(9, 30)).to_pylist() == digests_of(rows[9:39])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(LIST_KINDS),
    value_type=st.sampled_from(VALUE_TYPES),
    counts=st.lists(st.integers(0, 300), max_size=80),
    fixed=st.integers(1, 70),
    nulls=st.integers(0, 5),
    seed=st.integers(0, 2**32 - 1),
    mode=st.sampled_from(["hash", "keyed_hash", "derive_key"]),
    length=st.integers(1, 100),
    seek=st.sampled_from([0, 1, 63, 2**40]),
    chunks=st.integers(1, 3),
)
def test_random_list_columns_in_all_modes_match_blake3(kind, value_type, counts, fixed, nulls, seed, mode, length, seek, chunks):
    rng = np.random.default_rng(seed)
    if kind == "fixed_size_list":
        counts = [fixed] * len(counts)
    valid = [nulls == 0 or i % (nulls + 1) != 0 for i in range(len(counts))]
    column, rows = list_column(kind, value_type, counts, valid, rng, skip_values=seed % 4, list_size=fixed)
    output = {"length": length, "seek": seek, **kwargs_of(mode)}
    expected = digests_of(rows, mode=mode, length=length, seek=seek)
    assert bb.hash_arrow(column, **output).to_pylist() == expected
    cuts = sorted(int(c) for c in rng.integers(0, len(column) + 1, chunks - 1))
    pieces = [column.slice(a, b - a) for a, b in zip([0] + cuts, cuts + [len(column)])]
    chunked = pa.chunked_array(pieces, type=column.type)
    assert bb.hash_arrow(chunked, **output).to_pylist() == expected
    keys = bb.hash_arrow_u64(column, **kwargs_of(mode)).to_pylist()
    assert keys == [None if r is None else int.from_bytes(reference(r, mode)[:8], "little") for r in rows]


def test_lists_of_one_byte_values_are_the_bytes_themselves():
    values = [b"alpha", b"", b"\x00\xff" * 600]
    lists = pa.array([list(v) for v in values], type=pa.list_(pa.uint8()))
    binary = pa.array(values, type=pa.binary())
    assert bb.hash_arrow(lists).to_pylist() == bb.hash_arrow(binary).to_pylist()
    assert bb.hash_arrow(lists, hex=True).to_pylist() == [blake3.blake3(v).hexdigest() for v in values]


def test_fixed_size_lists_of_no_values_are_the_empty_input():
    column = pa.array([[], None, []], type=pa.list_(pa.int32(), 0))
    assert bb.hash_arrow(column).to_pylist() == [reference(b""), None, reference(b"")]


def test_a_null_row_may_span_values_and_its_digest_is_null():
    values = pa.array(np.arange(10, dtype="<i4"))
    offsets = pa.array([0, 4, 8, 10], pa.int32())
    column = pa.ListArray.from_arrays(offsets, values, mask=pa.array([False, True, False]))
    expected = [reference(np.arange(4, dtype="<i4").tobytes()), None, reference(np.arange(8, 10, dtype="<i4").tobytes())]
    assert bb.hash_arrow(column).to_pylist() == expected


def test_a_null_value_inside_a_row_is_a_value_error_naming_the_row():
    column = pa.array([[1, 2], [3, None, 5], None, [6]], type=pa.list_(pa.int64()))
    with pytest.raises(ValueError, match=r"row 1 of the list<item: int64> column holds a list of numbers or booleans with a null value"):
        bb.hash_arrow(column)
    # In a stream, the row is counted over the whole column.
    chunked = pa.chunked_array([column.slice(0, 1), column.slice(2), column.slice(1, 1)])
    with pytest.raises(ValueError, match="row 3 of"):
        bb.hash_arrow(chunked)
    fixed = pa.array([[1.0, 2.0], [None, 4.0]], type=pa.list_(pa.float32(), 2))
    with pytest.raises(ValueError, match="row 1 of"):
        bb.hash_arrow_u64(fixed)
    # Null values under a null row are never read.
    values = pa.array([1, None, 3], pa.int16())
    column = pa.ListArray.from_arrays(pa.array([0, 1, 2, 3], pa.int32()), values, mask=pa.array([False, True, False]))
    expected = [reference(np.array([1], "<i2").tobytes()), None, reference(np.array([3], "<i2").tobytes())]
    assert bb.hash_arrow(column).to_pylist() == expected


@pytest.mark.parametrize("engine", engines())
@pytest.mark.parametrize("value_type", VALUE_TYPES, ids=str)
def test_a_column_of_numbers_hashes_each_numbers_bytes(engine, value_type):
    rng = np.random.default_rng(7)
    count, width = 3000, value_type.byte_width
    raw = rng.integers(0, 256, count * width, dtype=np.uint8).tobytes()
    valid = rng.random(count) > 0.1
    validity = pa.py_buffer(np.packbits(valid, bitorder="little").tobytes())
    column = pa.Array.from_buffers(value_type, count, [validity, pa.py_buffer(raw)])
    rows = [raw[i * width : (i + 1) * width] if valid[i] else None for i in range(count)]
    for mode in ["hash", "keyed_hash"]:
        expected = [None if r is None else reference(r, mode) for r in rows]
        assert engine.hash_arrow(column, **kwargs_of(mode)).to_pylist() == expected
        assert engine.hash_arrow(column.slice(1001, 998), **kwargs_of(mode)).to_pylist() == expected[1001:1999]
    keys = engine.hash_arrow_u64(pa.chunked_array([column.slice(0, 5), column.slice(5)])).to_pylist()
    assert keys == [None if r is None else int.from_bytes(reference(r)[:8], "little") for r in rows]


def test_numbers_from_numpy_pandas_and_polars_match_hash_records():
    ids = np.array([3, -1, 2**40, 0], "<i8")
    expected = [bytes(d) for d in bb.hash_records(ids)]
    assert expected == [reference(i.tobytes()) for i in ids]
    assert bb.hash_arrow(pa.array(ids)).to_pylist() == expected
    pd = pytest.importorskip("pandas")
    assert bb.hash_arrow(pa.Array.from_pandas(pd.Series(ids))).to_pylist() == expected
    pl = pytest.importorskip("polars")
    assert bb.hash_arrow(pl.Series("id", ids)).to_pylist() == expected


def test_polars_lists_and_arrays():
    pl = pytest.importorskip("polars")
    tokens = [[1, 2, 3], None, [], [2**40]]
    series = pl.Series("tokens", tokens, dtype=pl.List(pl.Int64))
    expected = [None if t is None else reference(np.array(t, "<i8").tobytes()) for t in tokens]
    assert bb.hash_arrow(series).to_pylist() == expected
    embeddings = np.arange(12, dtype="<f4").reshape(3, 4)
    series = pl.Series("embedding", embeddings, dtype=pl.Array(pl.Float32, 4))
    assert bb.hash_arrow(series).to_pylist() == [reference(row.tobytes()) for row in embeddings]


def test_a_fixed_shape_tensor_column_hashes_each_tensor():
    tensors = np.arange(5 * 3 * 4, dtype="<i2").reshape(5, 3, 4)
    column = pa.FixedShapeTensorArray.from_numpy_ndarray(tensors)
    assert bb.hash_arrow(column).to_pylist() == [reference(t.tobytes()) for t in tensors]


def test_a_tensor_as_nested_fixed_size_lists_hashes_as_its_values_in_row_major_order():
    # Polars' Array of several dimensions, DuckDB's FLOAT[3][2] and pyarrow's
    # nested fixed-size lists give each tensor the digest of its NumPy row
    # (hash_records, Ray's tensors, a flat fixed-shape tensor column).
    tensors = np.arange(4 * 2 * 3, dtype="<f4").reshape(4, 2, 3)
    expected = [reference(t.tobytes()) for t in tensors]
    assert [bytes(d) for d in bb.hash_records(tensors)] == expected
    nested = pa.array(tensors.tolist(), pa.list_(pa.list_(pa.float32(), 3), 2))
    assert bb.hash_arrow(nested).to_pylist() == expected
    assert bb.hash_arrow(nested.slice(1)).to_pylist() == expected[1:]
    assert bb.hash_arrow(pa.array(tensors.tolist(), pa.list_(pa.list_(pa.float32(), 3)))).to_pylist() == expected
    # A null tensor is a null digest; a null inside one is refused.
    with_null = pa.array([tensors[0].tolist(), None], nested.type)
    assert bb.hash_arrow(with_null).to_pylist() == [expected[0], None]
    with pytest.raises(ValueError, match="row 1"):
        bb.hash_arrow(pa.array([tensors[0].tolist(), [[1, 2, 3], None]], nested.type))
    with pytest.raises(ValueError, match="row 0"):
        bb.hash_arrow(pa.array([[[1, None, 3], [4, 5, 6]]], nested.type))
    with pytest.raises(ValueError, match="row 1"):  # a list of vectors with a null vector
        bb.hash_arrow(pa.array([[[1, 2, 3]], [[1, 2, 3], None]], pa.list_(pa.list_(pa.float32(), 3))))
    pl = pytest.importorskip("polars")
    series = pl.Series("t", tensors, dtype=pl.Array(pl.Float32, (2, 3)))
    assert bb.hash_arrow(series).to_pylist() == expected
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    con.register("t", pa.table({"t": nested}))
    assert bb.hash_arrow(con.sql("select t::FLOAT[3][2] as t from t")).to_pylist() == expected


# NumPy records of any dtype: row i is records[i].tobytes().

RECORD_ARRAYS = {
    "float32 embeddings": lambda rng: rng.standard_normal((50, 384)).astype("<f4"),
    "int64 3-D": lambda rng: rng.integers(-(2**62), 2**62, (40, 3, 5)).astype("<i8"),
    "big-endian uint32": lambda rng: rng.integers(0, 2**32, (30, 300)).astype(">u4"),
    "bool": lambda rng: rng.integers(0, 2, (20, 9)).astype(bool),
    "uint64 keys, 1-D": lambda rng: rng.integers(0, 2**63, 100).astype("<u8"),
    "datetime64 1-D": lambda rng: rng.integers(0, 2**40, 10).astype("datetime64[s]"),
    "bytes S7 1-D": lambda rng: np.array([bytes(rng.integers(1, 256, 7, dtype=np.uint8)) for _ in range(25)], "S7"),
    "structs 1-D": lambda rng: np.array(
        [(i, i * 0.5, b"id%d" % i) for i in range(33)], dtype=[("n", "<i2"), ("x", "<f8"), ("tag", "S5")]
    ),
    "float64 rows over a chunk": lambda rng: rng.standard_normal((6, 1000)),
    "empty rows": lambda rng: np.zeros((4, 0), "<f8"),
    "no rows": lambda rng: np.zeros((0, 3), "<i4"),
}


@pytest.mark.parametrize("engine", engines())
@pytest.mark.parametrize("make", RECORD_ARRAYS.values(), ids=RECORD_ARRAYS.keys())
def test_records_of_any_dtype_and_shape_hash_each_rows_bytes(engine, make):
    records = make(np.random.default_rng(7))
    expected = [reference(records[i].tobytes()) for i in range(len(records))]
    got = engine.hash_records(records)
    assert got.shape == (len(records), 32)
    assert [row.tobytes() for row in got] == expected
    # Into out=, and a row slice (a view at an offset).
    out = np.zeros((len(records), 32), np.uint8)
    assert engine.hash_records(records, out=out) is out
    assert [row.tobytes() for row in out] == expected
    tail = records[1:]
    assert [row.tobytes() for row in engine.hash_records(tail, length=40, seek=3)] == [
        reference(tail[i].tobytes(), length=40, seek=3) for i in range(len(tail))
    ]


def test_records_of_objects_flat_bytes_or_strided_views_are_errors():
    with pytest.raises(TypeError, match="Python objects"):
        bb.hash_records(np.array([[b"a"], [b"b"]], dtype=object))
    with pytest.raises(TypeError, match="Python objects"):
        bb.hash_records(np.zeros(3, dtype=[("n", "<i4"), ("o", object)]))
    for flat in [np.zeros(8, np.uint8), np.zeros(8, np.int8), np.zeros(8, "S1"), np.array(3.0)]:
        with pytest.raises(ValueError, match="reshape the bytes to"):
            bb.hash_records(flat)
    with pytest.raises(ValueError, match="C-contiguous"):
        bb.hash_records(np.zeros((8, 8), "<f4")[:, ::2])
    with pytest.raises(ValueError, match="C-contiguous"):
        bb.hash_records(np.zeros((8, 3), "<u2")[::2])
    # Nothing was hashed into out= either.
    out = np.zeros((4, 32), np.uint8)
    with pytest.raises(ValueError, match="C-contiguous"):
        bb.hash_records(np.zeros((8, 3), "<u2")[::2], out=out)
    assert not out.any()
