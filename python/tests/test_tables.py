"""A table of one column (pyarrow Table or RecordBatch, Polars DataFrame,
DuckDB relation) is read as that column, by hash_arrow, hash_arrow_u64 and
hash_files; a table of several columns is refused with their names. (A
struct column is a column: test_nested.py.)"""

import blake3
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import blake3_batch as bb

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
    with pytest.raises(TypeError, match="cannot hash a column of type RunEndEncoded"):
        bb.hash_arrow(pa.table({"runs": pc.run_end_encode(pa.array(["a", "a"]))}))


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
    pd = pytest.importorskip("pandas")
    if not hasattr(pd.Series([], dtype=object), "__arrow_c_stream__"):
        pytest.skip(f"pandas {pd.__version__} does not export Arrow streams")
    series = pd.Series(TEXTS)
    assert bb.hash_arrow(series).to_pylist() == digests(TEXTS)
    assert bb.hash_arrow(pd.DataFrame({"text": series})).to_pylist() == digests(TEXTS)
    categories = pd.Series(pd.Categorical(["red", None, "red", "blue"]))
    assert bb.hash_arrow(categories).to_pylist() == digests(["red", None, "red", "blue"])
