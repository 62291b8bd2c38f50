"""A table of one column (pyarrow Table or RecordBatch, Polars DataFrame,
DuckDB relation) is read as that column, by hash_arrow, hash_arrow_u64 and
hash_files; a table of several columns is refused with their names. (A
struct column is a column: test_nested.py.)"""

import struct

import blake3
import pyarrow as pa
import pytest

import blake3_batch as bb
from conftest import framed

TEXTS = ["alpha", None, "", "x" * 3000, "beta"]


def digests(values):
    return [None if v is None else blake3.blake3(v.encode()).digest() for v in values]


def one_column_tables():
    table = pa.table({"text": pa.chunked_array([TEXTS[:2], TEXTS[2:]])})
    found = [pytest.param(table, id="pyarrow Table"), pytest.param(table.combine_chunks().to_batches()[0], id="RecordBatch")]
    try:
        import polars as pl

        found.append(pytest.param(pl.DataFrame({"text": TEXTS}), id="Polars DataFrame"))
    except ImportError:
        pass
    return found


@pytest.mark.parametrize("table", one_column_tables())
def test_a_table_of_one_column_is_that_column(table):
    assert bb.hash_arrow(table).to_pylist() == digests(TEXTS)
    assert bb.hash_arrow(table, hex=True).to_pylist() == [None if d is None else d.hex() for d in digests(TEXTS)]
    keys = bb.hash_arrow_u64(table).to_pylist()
    assert keys == [None if d is None else int.from_bytes(d[:8], "little") for d in digests(TEXTS)]


def test_a_duckdb_query_of_one_column():
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    con.execute("create table docs as select * from (values (1, 'alpha'), (2, NULL), (3, 'beta')) v(id, text)")
    got = bb.hash_arrow(con.sql("select text from docs order by id"))
    assert got.to_pylist() == digests(["alpha", None, "beta"])
    with pytest.raises(TypeError, match=r"2 columns \(id, text\).*table\[\"id\"\]"):
        bb.hash_arrow(con.sql("select id, text from docs"))


def test_a_table_of_several_columns_names_them():
    table = pa.table({"a": ["x"], "b": [b"y"], "c": [1]})
    for call in (bb.hash_arrow, bb.hash_arrow_u64, bb.hash_files):
        with pytest.raises(TypeError, match=r"3 columns \(a, b, c\)"):
            call(table)
    with pytest.raises(TypeError, match=r"0 columns"):
        bb.hash_arrow(pa.table({}))


def test_the_type_of_a_tables_column_is_named_when_it_cannot_be_hashed():
    no_fields = pa.array([{}, {}], pa.struct([]))
    with pytest.raises(TypeError, match=r"cannot hash a column of type Struct\(\)"):
        bb.hash_arrow(pa.table({"empty": no_fields}))


def test_hash_files_takes_a_table_of_one_column_of_paths(tmp_path):
    paths = []
    for index, data in enumerate([b"one", b"", b"three" * 1000]):
        path = tmp_path / f"f{index}"
        path.write_bytes(data)
        paths.append(str(path))
    expected = [blake3.blake3(open(p, "rb").read()).digest() for p in paths]
    assert bb.hash_files(pa.table({"path": paths})) == expected
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    con.execute("create table files(path varchar)")
    con.executemany("insert into files values (?)", [[p] for p in paths])
    assert sorted(bb.hash_files(con.sql("select path from files"))) == sorted(expected)


def test_pandas_series_and_one_column_data_frames():
    # pandas 2's Series has no Arrow export: it is converted as pandas 3
    # exports it, so both give these digests.
    pd = pytest.importorskip("pandas")
    series = pd.Series(TEXTS)
    assert bb.hash_arrow(series).to_pylist() == digests(TEXTS)
    assert bb.hash_arrow(pd.DataFrame({"text": series})).to_pylist() == digests(TEXTS)
    categories = pd.Series(pd.Categorical(["red", None, "red", "blue"]))
    assert bb.hash_arrow(categories).to_pylist() == digests(["red", None, "red", "blue"])
    numbers = pd.Series([1.5, float("nan"), None])  # NaN and None both null, as pandas exports them
    assert bb.hash_arrow(numbers).to_pylist() == [blake3.blake3(struct.pack("<d", 1.5)).digest(), None, None]
    assert [d for b in bb.hash_arrow_batches(series) for d in b.to_pylist()] == digests(TEXTS)
    # Sparse columns are the values they stand for.
    sparse = pd.Series(pd.arrays.SparseArray([0.0, 1.5, 0.0, None]))
    dense = [blake3.blake3(struct.pack("<d", v)).digest() for v in (0.0, 1.5, 0.0)] + [None]
    assert bb.hash_arrow(sparse).to_pylist() == dense
    frame_ = pd.DataFrame({"s": sparse, "t": ["a", "b", "c", "d"]})
    assert bb.hash_arrow(frame_[["s"]]).to_pylist() == dense
    assert bb.hash_arrow(frame_, rows=True).to_pylist() == bb.hash_arrow(frame_.astype({"s": "float64"}), rows=True).to_pylist()
    # A MultiIndex is a column of tuples, each hashed as the row of its
    # levels (as a struct column's rows are), of one level or several.
    index = pd.MultiIndex.from_tuples([("a", 1), ("b", 2)], names=["key", None])
    levels = bb.hash_arrow(pa.table({"key": ["a", "b"], "1": [1, 2]}), rows=True).to_pylist()
    assert bb.hash_arrow(index).to_pylist() == levels
    assert bb.hash_arrow(index, rows=True).to_pylist() == levels
    one_level = bb.hash_arrow(pd.MultiIndex.from_arrays([TEXTS])).to_pylist()
    assert one_level == bb.hash_arrow(pa.table({"text": TEXTS}), rows=True).to_pylist()


def test_numpy_arrays_and_pandas_indexes_are_columns():
    np = pytest.importorskip("numpy")
    texts = np.array(["alpha", "", "beta"])
    assert bb.hash_arrow(texts).to_pylist() == digests(list(texts))
    assert bb.hash_arrow(np.array([b"x", None], dtype=object)).to_pylist() == [blake3.blake3(b"x").digest(), None]
    # Numbers and rows of any shape: the bytes hash_records hashes.
    for array in (np.arange(5, dtype="<u8"), np.arange(24, dtype="<f4").reshape(4, 3, 2), np.arange(12, dtype="<i2").reshape(3, 4).T):
        assert bb.hash_arrow(array).to_pylist() == [bytes(d) for d in bb.hash_records(np.ascontiguousarray(array))]
        keys = bb.hash_arrow_u64(array).to_pylist()
        assert keys == [int.from_bytes(bytes(d[:8]), "little") for d in bb.hash_records(np.ascontiguousarray(array))]
    assert [d for b in bb.hash_arrow_batches([texts[:1], texts[1:]]) for d in b.to_pylist()] == digests(list(texts))
    # Rows of no bytes and big-endian rows: the bytes of tobytes() all the same.
    for array in (np.zeros((3, 0)), np.arange(6, dtype=">u4").reshape(2, 3)):
        assert bb.hash_arrow(array).to_pylist() == [blake3.blake3(row.tobytes()).digest() for row in array]
    # Arrays of any shapes, each its tobytes() (the shape is not part of
    # it), None a null; arrays of Python objects have no bytes to hash.
    ragged = np.empty(4, dtype=object)
    ragged[0], ragged[1], ragged[3] = np.zeros((2, 3), "<f8"), np.arange(3, dtype="<i2"), np.arange(6.0).reshape(3, 2).T
    want = [blake3.blake3(ragged[0].tobytes()).digest(), blake3.blake3(ragged[1].tobytes()).digest(), None, blake3.blake3(ragged[3].tobytes()).digest()]
    assert bb.hash_arrow(ragged).to_pylist() == want
    assert bb.hash_arrow(ragged[2:]).to_pylist() == want[2:]
    assert bb.hash_arrow(np.array([None, None], dtype=object)).to_pylist() == [None, None]
    ragged[2] = np.array(["a", 1], dtype=object)
    with pytest.raises(TypeError, match="arrays of Python objects"):
        bb.hash_arrow(ragged)
    ragged[2] = [1, 2]
    with pytest.raises(TypeError, match="row 2 is a list; make every row an array"):
        bb.hash_arrow(ragged)
    # Bytes not yet cut into blobs are refused, as hash_records refuses them.
    for flat in (np.frombuffer(b"abc", np.uint8), np.zeros(3, np.int8), np.array(7)):
        with pytest.raises(TypeError, match=r"reshape bytes to \(blobs, blob_size\)"):
            bb.hash_arrow(flat)
    assert bb.hash_arrow(np.array([True, False])).to_pylist() == [blake3.blake3(b"\1").digest(), blake3.blake3(b"\0").digest()]
    pd = pytest.importorskip("pandas")
    assert bb.hash_arrow(pd.Index(["alpha", "beta"])).to_pylist() == digests(["alpha", "beta"])
    # A DataFrame's column of arrays of one shape is a tensor column too.
    tensors = np.arange(12, dtype="<f4").reshape(3, 4)
    frame_ = pd.DataFrame({"s": ["a", "b", "c"], "t": list(tensors)})
    assert bb.hash_arrow(frame_[["t"]]).to_pylist() == [bytes(d) for d in bb.hash_records(tensors)]
    rows = bb.hash_arrow(frame_, rows=True).to_pylist()
    assert rows[1] == blake3.blake3(frame(b"b") + frame(tensors[1].tobytes())).digest()
    images = pd.DataFrame({"image": [np.ones((2, 2), np.uint8), None, np.ones((1, 3), np.uint8)]})
    assert bb.hash_arrow(images).to_pylist() == [blake3.blake3(b"\1" * 4).digest(), None, blake3.blake3(b"\1" * 3).digest()]


def test_numpy_numbers_of_either_byte_order_are_values_and_those_without_an_arrow_type_bytes():
    np = pytest.importorskip("numpy")
    # A number is its value whichever byte order NumPy stored it in.
    for dtype in ("<i4", "<f8", "<u2", "<M8[s]", "<m8[ms]"):
        values = np.arange(4).astype(dtype)
        swapped = values.astype(np.dtype(dtype).newbyteorder(">"))
        want = [blake3.blake3(v.tobytes()).digest() for v in values]
        assert bb.hash_arrow(values).to_pylist() == want
        assert bb.hash_arrow(swapped).to_pylist() == want
    # Complex numbers and structured records have no Arrow type: each is
    # its bytes, as hash_records hashes a 1-D array of them.
    record = np.dtype([("id", "<u4"), ("score", "<f8"), ("tag", "S3")])
    for values in (
        np.array([1 + 2j, -0.5j, 3], "<c16"),
        np.array([1 + 2j, 0], "<c8"),
        np.array([(1, 0.5, b"ab"), (2, -1.0, b"xyz")], record),
    ):
        want = [blake3.blake3(v.tobytes()).digest() for v in values]
        assert bb.hash_arrow(values).to_pylist() == want
        assert want == [bytes(d) for d in bb.hash_records(values)]
    # So are a pandas Series or DataFrame column of complex numbers.
    pd = pytest.importorskip("pandas")
    waves = np.array([1 + 2j, -0.5j, 3], "<c16")
    want = [blake3.blake3(v.tobytes()).digest() for v in waves]
    assert bb.hash_arrow(pd.Series(waves)).to_pylist() == want
    assert bb.hash_arrow(pd.DataFrame({"wave": waves})).to_pylist() == want
    frame_ = pd.DataFrame({"id": [1, 2, 3], "wave": waves})
    assert bb.hash_arrow(frame_, rows=True).to_pylist() == [
        blake3.blake3(frame(struct.pack("<q", i)) + frame(w.tobytes())).digest() for i, w in zip([1, 2, 3], waves)
    ]
    swapped = np.array([1 + 2j, 3], ">c16")
    assert bb.hash_arrow(swapped).to_pylist() == bb.hash_arrow(swapped.astype("<c16")).to_pylist()
    with pytest.raises(TypeError, match="arrays of Python objects"):
        bb.hash_arrow(np.array([(1, "a")], [("id", "<u4"), ("name", object)]))
    # Long doubles pad their bytes with what is not part of the value.
    if np.dtype(np.longdouble).itemsize > 8:
        with pytest.raises(TypeError, match=r"padding .*\.astype\(numpy\.float64\)"):
            bb.hash_arrow(np.ones(2, np.longdouble))


def test_numpy_strings_are_their_values_and_a_tensor_of_them_the_list_of_them():
    np = pytest.importorskip("numpy")
    # A NUL inside a value is part of it (pyarrow's conversion would cut
    # the value there); the padding up to the dtype's width is not.
    texts = np.array(["a\0b", "c", "", "\0"], "<U6")
    assert bb.hash_arrow(texts).to_pylist() == digests(["a\0b", "c", "", ""])
    assert bb.hash_arrow(texts.astype(">U6")).to_pylist() == digests(["a\0b", "c", "", ""])
    blobs = np.array([b"x\0y", b"zz", b"\0\0w\0"])
    assert bb.hash_arrow(blobs).to_pylist() == [blake3.blake3(b).digest() for b in (b"x\0y", b"zz", b"\0\0w")]
    # A tensor of strings is a list of them, framed as an Arrow list of
    # strings, whatever width NumPy gave it.
    tensors = np.array([[["ab", "c"], ["d", "éfg"]], [["", "x"], ["y\0z", "w"]]])
    want = [blake3.blake3(framed([s.encode() for s in t.reshape(-1).tolist()])).digest() for t in tensors]
    assert bb.hash_arrow(tensors).to_pylist() == want
    assert bb.hash_arrow(tensors.astype("<U9")).to_pylist() == want
    assert bb.hash_arrow(pa.array([t.reshape(-1).tolist() for t in tensors], pa.list_(pa.string()))).to_pylist() == want
    rows = np.array([[b"ab", b"c"], [b"", b"d\0"]])
    want_rows = [blake3.blake3(framed([b"ab", b"c"])).digest(), blake3.blake3(framed([b"", b"d"])).digest()]
    assert bb.hash_arrow(rows).to_pylist() == want_rows
    # Arrays of them of any shapes (a pandas or numpy batch's tensor column).
    ragged = np.empty(3, dtype=object)
    ragged[0], ragged[2] = tensors[0].astype("<U3"), np.array(["y\0z"])
    assert bb.hash_arrow(ragged).to_pylist() == [want[0], None, blake3.blake3(framed([b"y\0z"])).digest()]
    ragged[1] = np.zeros(2, "<f4")
    with pytest.raises(TypeError, match="mix strings"):
        bb.hash_arrow(ragged)
    # Arrays of Python strings or bytes (a Ray numpy batch's list<string>
    # column), None a null value: the list of them, as Arrow's.
    tags = np.empty(3, dtype=object)
    tags[0], tags[2] = np.array(["a", None, "b\0"], dtype=object), np.array([], dtype=object)
    tag_lists = [["a", None, "b\0"], None, []]
    want_tags = [blake3.blake3(framed([b"a", None, b"b\0"])).digest(), None, blake3.blake3(b"").digest()]
    assert bb.hash_arrow(tags).to_pylist() == want_tags
    assert bb.hash_arrow(pa.array(tag_lists, pa.list_(pa.string()))).to_pylist() == want_tags
    tags[0] = np.array([b"a", None, b"b\0"], dtype=object)
    assert bb.hash_arrow(tags).to_pylist() == want_tags
    grid = np.array([["ab", "c"], ["d", "éfg"]], dtype=object)
    assert bb.hash_arrow(grid).to_pylist() == bb.hash_arrow(tensors[0]).to_pylist()
    for bad in (np.array(["a", b"b"], dtype=object), np.array(["a", 1], dtype=object)):
        tags[0] = bad
        with pytest.raises(TypeError, match="arrays of Python objects.*batch_format=\"pyarrow\""):
            bb.hash_arrow(tags)
    # Python objects of no one Arrow type (a Ray numpy batch's map column).
    with pytest.raises(TypeError, match="no one Arrow type.*batch_format=\"pyarrow\""):
        bb.hash_arrow(np.array([{"a": 1}, {"a": "x"}], dtype=object))
    ragged[1] = np.array([b"ab"])
    with pytest.raises(TypeError, match="mix strings"):
        bb.hash_arrow(ragged)


def test_a_lazy_query_is_asked_to_run_first():
    pl = pytest.importorskip("polars")
    with pytest.raises(TypeError, match=r"not LazyFrame; run a lazy query first \(\.collect\(\)\)"):
        bb.hash_arrow(pl.DataFrame({"a": ["x"]}).lazy())
    with pytest.raises(TypeError, match="not list; for a list of bytes use hash_many"):
        bb.hash_arrow([b"x"])


def frame(data):
    return b"\1" + len(data).to_bytes(8, "little") + data


def test_a_data_frames_index_is_not_one_of_its_columns():
    # pandas' Arrow export adds an index that is not a plain range as a
    # column: after a sort every row would have its own digest.
    pd = pytest.importorskip("pandas")
    frame_ = pd.DataFrame({"text": ["x", "y", "x"], "n": [1, 2, 1]})
    row = {("x", 1): blake3.blake3(frame(b"x") + frame((1).to_bytes(8, "little"))).digest(),
           ("y", 2): blake3.blake3(frame(b"y") + frame((2).to_bytes(8, "little"))).digest()}
    for changed in (frame_.sort_values("n"), frame_.iloc[[2, 0, 1]], frame_.set_axis(["a", "b", "c"])):
        want = [row[(t, n)] for t, n in zip(changed["text"], changed["n"])]
        assert bb.hash_arrow(changed, rows=True).to_pylist() == want
        assert [d for b in bb.hash_arrow_batches(changed, rows=True) for d in b.to_pylist()] == want
        assert bb.hash_arrow(changed[["text"]]).to_pylist() == digests(list(changed["text"]))
    # A named index too: set_index moves the column out of the row.
    assert bb.hash_arrow(frame_.set_index("n")).to_pylist() == digests(["x", "y", "x"])
    with pytest.raises(TypeError, match=r"2 columns \(text, n\)"):
        bb.hash_arrow(frame_.sort_values("n"))


def test_hash_files_takes_a_sorted_pandas_frame_of_paths(tmp_path):
    pd = pytest.importorskip("pandas")
    paths = []
    for index, data in enumerate([b"one", b"two"]):
        path = tmp_path / f"f{index}"
        path.write_bytes(data)
        paths.append(str(path))
    table = pd.DataFrame({"path": paths}).sort_values("path", ascending=False)
    assert bb.hash_files(table) == [blake3.blake3(open(p, "rb").read()).digest() for p in reversed(paths)]
    assert bb.hash_files(table["path"]) == bb.hash_files(table)
    assert bb.hash_files(table["path"].to_numpy().astype(str)) == bb.hash_files(table)
