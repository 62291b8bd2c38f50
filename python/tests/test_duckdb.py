"""SQL functions on a DuckDB connection (`blake3_batch.duckdb.register`):
every input type and output form equal to blake3-py row by row, over
queries of several DuckDB vectors, NULLs kept; files by path; and the
options and input types refused when the function is registered."""

import blake3
import numpy as np
import pyarrow as pa
import pytest

import blake3_batch as bb
from conftest import CONTEXT, KEY, engines, framed

duckdb = pytest.importorskip("duckdb")
from blake3_batch import duckdb as b3  # noqa: E402

# More rows than one DuckDB vector (2048), so a query calls the function
# several times and the outputs must come back in order.
ROWS = 5000


def digest(data, length=32, seek=0, key=None, derive_key=None):
    if data is None:
        return None
    data = data.encode() if isinstance(data, str) else bytes(data)
    if key is not None:
        return blake3.blake3(data, key=key).digest(length, seek=seek)
    if derive_key is not None:
        return blake3.blake3(data, derive_key_context=derive_key).digest(length, seek=seek)
    return blake3.blake3(data).digest(length, seek=seek)


def texts(rng):
    """Strings of 0..3000 UTF-8 bytes (some not ASCII), every seventh NULL."""
    alphabet = list("abcxyz019 ") + ["é", "€", "𝄞"]
    out = []
    for i in range(ROWS):
        n = int(rng.integers(0, 1000)) if i % 50 else int(rng.integers(1000, 1100))
        out.append(None if i % 7 == 3 else "".join(rng.choice(alphabet, n)))
    return out


@pytest.fixture
def con():
    connection = duckdb.connect()
    yield connection
    connection.close()


@pytest.mark.parametrize("engine", engines())
def test_varchar_and_blob_columns_digest_as_blake3_py_in_row_order(con, engine):
    rng = np.random.default_rng(1)
    values = texts(rng)
    blobs = [None if t is None else bytes(rng.integers(0, 256, len(t) + i % 3, dtype=np.uint8)) for i, t in enumerate(values)]
    source = pa.table({"i": range(ROWS), "s": pa.array(values, pa.string()), "b": pa.array(blobs, pa.binary())})
    con.register("source", source)
    con.execute("CREATE TABLE t AS SELECT * FROM source")
    b3.register(con, engine=engine)
    b3.register(con, "blake3_blob", input="BLOB", engine=engine)
    rows = con.execute("SELECT blake3(s), blake3_blob(b) FROM t ORDER BY i").fetchall()
    assert [r[0] for r in rows] == [digest(t) for t in values]
    assert [r[1] for r in rows] == [digest(b) for b in blobs]


@pytest.mark.parametrize(
    "options", [{}, {"key": KEY}, {"derive_key": CONTEXT}, {"length": 100, "seek": 5}, {"length": 8}], ids=str
)
def test_hex_u64_and_every_mode_and_length(con, options):
    values = texts(np.random.default_rng(2))
    con.register("t", pa.table({"i": range(ROWS), "s": pa.array(values, pa.string())}))
    b3.register(con, "d", **options)
    b3.register(con, "h", hex=True, **options)
    rows = con.execute("SELECT d(s), h(s) FROM t ORDER BY i").fetchall()
    expected = [digest(t, **options) for t in values]
    assert [r[0] for r in rows] == expected
    assert [r[1] for r in rows] == [None if e is None else e.hex() for e in expected]
    if "length" not in options:
        b3.register(con, "k", as_u64=True, **options)
        keys = [r[0] for r in con.execute("SELECT k(s) FROM t ORDER BY i").fetchall()]
        assert keys == [None if e is None else int.from_bytes(e[:8], "little") for e in expected]


def test_duckdb_reads_hash_arrow_digest_columns_with_nulls(con):
    # DuckDB before 1.3 read the rows after a null of a fixed-size binary
    # column from the wrong place: the reason for the [duckdb] floor.
    values = pa.array([b"a", None, b"c", None, b"e"])
    digests = pa.table({"d": bb.hash_arrow(values)})
    con.register("digests", digests)
    assert [r[0] for r in con.execute("SELECT d FROM digests").fetchall()] == [digest(v) for v in values.to_pylist()]


def test_u64_keys_deduplicate_in_sql(con):
    b3.register(con, "k", as_u64=True)
    con.execute("CREATE TABLE t AS SELECT (i % 1000)::VARCHAR AS s FROM range(10000) r(i)")
    (distinct,) = con.execute("SELECT count(DISTINCT k(s)) FROM t").fetchone()
    assert distinct == 1000


def test_numbers_lists_and_arrays_hash_their_little_endian_bytes(con):
    b3.register(con, "tokens", input="INTEGER[]")
    b3.register(con, "embedding", input="FLOAT[3]")
    b3.register(con, "id_key", input="BIGINT")
    b3.register(con, "price", input="DOUBLE", as_u64=True)
    rows = [[1, 2, 3], [], None, [-1, 2**31 - 1]] * 700
    con.register("t", pa.table({"i": range(len(rows)), "tok": pa.array(rows, pa.list_(pa.int32()))}))
    got = [r[0] for r in con.execute("SELECT tokens(tok) FROM t ORDER BY i").fetchall()]
    assert got == [None if r is None else digest(np.array(r, "<i4").tobytes()) for r in rows]
    (e,) = con.execute("SELECT embedding([0.5, -1, 3]::FLOAT[3])").fetchone()
    assert e == digest(np.array([0.5, -1, 3], "<f4").tobytes())
    ids = con.execute("SELECT id_key(i) FROM (VALUES (123456789012::BIGINT), (-1), (NULL)) v(i)").fetchall()
    assert ids == [(digest((123456789012).to_bytes(8, "little")),), (digest(b"\xff" * 8),), (None,)]
    (p,) = con.execute("SELECT price(2.5)").fetchone()
    assert p == int.from_bytes(digest(np.float64(2.5).tobytes())[:8], "little")


def test_a_struct_is_hashed_over_all_its_fields(con):
    b3.register(con, "pair", input="STRUCT(id BIGINT, text VARCHAR)")
    b3.register(con, "pair_key", input="STRUCT(id BIGINT, text VARCHAR)", as_u64=True)
    rng = np.random.default_rng(4)
    text = texts(rng)
    ids = [None if i % 5 == 1 else int(i * 7919) for i in range(ROWS)]
    con.register("t", pa.table({"i": range(ROWS), "id": pa.array(ids, pa.int64()), "text": text}))
    query = "SELECT pair({'id': id, 'text': text}), pair_key({'id': id, 'text': text}) FROM t ORDER BY i"
    got = con.execute(query).fetchall()
    expected = [
        digest(framed([None if n is None else n.to_bytes(8, "little"), None if s is None else s.encode()]))
        for n, s in zip(ids, text)
    ]
    assert got == [(e, int.from_bytes(e[:8], "little")) for e in expected]
    assert con.execute("SELECT pair(NULL)").fetchall() == [(None,)]
    # A function of several arguments hashes them as one row, NULLs included.
    b3.register(con, "row_of", input=["BIGINT", con.type("VARCHAR")])
    b3.register(con, "row_hex", input=("BIGINT", "VARCHAR"), hex=True, key=KEY)
    got = con.execute("SELECT row_of(id, text), row_hex(id, text) FROM t ORDER BY i").fetchall()
    keyed = [
        blake3.blake3(framed([None if n is None else n.to_bytes(8, "little"), None if s is None else s.encode()]), key=KEY)
        for n, s in zip(ids, text)
    ]
    assert got == [(e, k.hexdigest()) for e, k in zip(expected, keyed)]
    assert con.execute("SELECT row_of(NULL, NULL)").fetchall() == [(digest(b"\0\0"),)]
    # Outside SQL, a query of several columns hashes its rows the same way.
    assert bb.hash_arrow(con.sql("SELECT id, text FROM t ORDER BY i"), rows=True).to_pylist() == expected


def test_booleans_lists_maps_and_nested_structs_hash_their_encodings(con):
    b3.register(con, "flag", input="BOOLEAN")
    b3.register(con, "tags", input="VARCHAR[]")
    b3.register(con, "attrs", input="MAP(VARCHAR, INTEGER)")
    b3.register(con, "doc", input="STRUCT(title VARCHAR, meta STRUCT(draft BOOLEAN, tags VARCHAR[]))")
    assert con.execute("SELECT flag(true), flag(false), flag(NULL)").fetchone() == (digest(b"\1"), digest(b"\0"), None)
    assert con.execute("SELECT tags(['ab', 'c']), tags(['a', NULL]), tags([])").fetchone() == (
        digest(framed([b"ab", b"c"])),
        digest(framed([b"a", None])),
        digest(b""),
    )
    entries = framed([framed([b"k", (7).to_bytes(4, "little", signed=True)]), framed([b"z", None])])
    assert con.execute("SELECT attrs(MAP {'k': 7, 'z': NULL})").fetchone() == (digest(entries),)
    meta = framed([b"\1", framed([b"x"])])
    query = "SELECT doc({'title': 't', 'meta': {'draft': true, 'tags': ['x']}}), doc({'title': NULL, 'meta': NULL})"
    assert con.execute(query).fetchone() == (digest(framed([b"t", meta])), digest(b"\0\0"))


def test_enum_columns_of_a_type_of_ones_own_digest_their_values(con):
    con.execute("CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')")
    b3.register(con, "e", input="mood")
    b3.register(con, "e2", input=con.type("mood"), hex=True)
    rows = con.execute("SELECT e(m::mood), e2(m::mood) FROM (VALUES ('ok'), ('happy'), (NULL), ('ok')) v(m)").fetchall()
    expected = [digest("ok"), digest("happy"), None, digest("ok")]
    assert rows == [(e, None if e is None else e.hex()) for e in expected]


def test_a_null_inside_a_list_fails_the_query_with_hash_arrows_message(con):
    b3.register(con, "tokens", input="INTEGER[]")
    with pytest.raises(duckdb.Error, match="null value"):
        con.execute("SELECT tokens([1, NULL, 3])").fetchall()
    b3.register(con, "flags", input="BOOLEAN[][]")
    with pytest.raises(duckdb.Error, match="null value"):
        con.execute("SELECT flags([[true], [NULL]])").fetchall()


def test_files_by_path_with_glob_and_missing_files(con, tmp_path):
    contents = {f"f{i}.bin": bytes([i]) * (i * 977) for i in range(40)}
    for name, data in contents.items():
        (tmp_path / name).write_bytes(data)
    b3.register(con, "blake3_file", files=True)
    b3.register(con, "blake3_file_hex", files=True, hex=True, length=40, key=KEY)
    b3.register(con, "blake3_file_or_null", files=True, errors="none")
    rows = con.execute(
        "SELECT file, blake3_file(file), blake3_file_hex(file) FROM glob(?) ORDER BY file", [str(tmp_path / "*.bin")]
    ).fetchall()
    assert len(rows) == len(contents)
    for path, d, h in rows:
        data = contents[path.replace("\\", "/").rsplit("/", 1)[1]]
        assert d == digest(data)
        assert h == digest(data, length=40, key=KEY).hex()
    missing = str(tmp_path / "missing.bin")
    assert con.execute("SELECT blake3_file_or_null(?), blake3_file(NULL)", [missing]).fetchone() == (None, None)
    with pytest.raises(duckdb.Error, match="missing.bin"):
        con.execute("SELECT blake3_file(?)", [missing]).fetchall()


def test_a_prepared_query_reads_a_file_again_each_time(con, tmp_path):
    # A file's digest is not a constant DuckDB may fold when it plans the
    # statement: it can change between two runs.
    path = tmp_path / "changing.bin"
    path.write_bytes(b"one")
    b3.register(con, "blake3_file", files=True)
    con.execute("PREPARE q AS SELECT blake3_file('" + str(path).replace("'", "''") + "')")
    assert con.execute("EXECUTE q").fetchall() == [(digest(b"one"),)]
    path.write_bytes(b"two")
    assert con.execute("EXECUTE q").fetchall() == [(digest(b"two"),)]


def test_the_default_connection_and_an_engine_of_ones_own():
    name = "blake3_batch_test_default_connection"
    b3.register(None, name, engine=bb.Engine(backend="cpu", threads=1))
    try:
        assert duckdb.sql(f"SELECT {name}('abc')").fetchall() == [(digest("abc"),)]
    finally:
        duckdb.remove_function(name)


def test_a_closed_engine_fails_the_query(con):
    engine = bb.Engine(backend="cpu", threads=1)
    b3.register(con, engine=engine)
    engine.close()
    with pytest.raises(duckdb.Error, match="closed"):
        con.execute("SELECT blake3('abc')").fetchall()


UNION = "UNION(n INTEGER, s VARCHAR)"


def test_a_union_hashes_as_its_members_tag_then_its_value(con):
    b3.register(con, "h", input=UNION)
    values = "SELECT * FROM (VALUES (1, 7::INTEGER::UNION(n INTEGER, s VARCHAR)), (2, 'ab'), (3, NULL), (4, '7'))"
    got = con.execute(f"SELECT h(col1) FROM ({values}) ORDER BY col0").fetchall()
    # Tag 0 (n) then 7 as 4 little-endian bytes; tag 1 (s) then the text.
    expected = [digest(b"\0" + (7).to_bytes(4, "little")), digest(b"\1ab"), None, digest(b"\0017")]
    assert got == [(e,) for e in expected]


@pytest.mark.parametrize("input", [UNION, f"{UNION}[]", f"STRUCT(a INTEGER, b {UNION})", ["BIGINT", UNION]])
def test_a_union_anywhere_in_an_input_hashes_as_its_arrow_rows_do(con, input):
    b3.register(con, "h", input=input)
    con.execute("CREATE TABLE u AS SELECT range AS i, (CASE WHEN range % 3 = 0 THEN range::INTEGER::UNION(n INTEGER, s VARCHAR) ELSE 'v' || range END) AS u FROM range(3000)")
    column = {UNION: "u", f"{UNION}[]": "[u, NULL, u]", f"STRUCT(a INTEGER, b {UNION})": "{'a': i::INTEGER, 'b': u}"}
    args = column.get(input if isinstance(input, str) else "", "i, u")
    got = [row[0] for row in con.execute(f"SELECT h({args}) FROM u ORDER BY i").fetchall()]
    table = con.sql(f"SELECT {args} FROM u ORDER BY i").arrow()
    table = table.read_all() if hasattr(table, "read_all") else table
    rows = isinstance(input, list)
    assert got == bb.hash_arrow(table if rows else table.column(0), rows=rows).to_pylist()


def test_an_input_type_that_cannot_be_hashed_is_refused_at_registration(con, monkeypatch):
    # DuckDB hands over no type that cannot be hashed now, so an engine
    # that refuses every type stands in for one DuckDB might add.
    class Refusing:
        def hash_arrow(self, *args, **kwargs):
            raise TypeError("cannot hash a column of type x")

    monkeypatch.setattr(b3, "default_engine", Refusing)
    with pytest.raises(TypeError, match="reaches Python as Arrow int32, which cannot be hashed"):
        b3.register(con, "h", input="INTEGER")
    assert con.execute("SELECT count(*) FROM duckdb_functions() WHERE function_name = 'h'").fetchone() == (0,)


TIMETZ = "TIME WITH TIME ZONE"


@pytest.mark.parametrize("input", [TIMETZ, f"MAP(VARCHAR, {TIMETZ}[])", ["BIGINT", f"STRUCT(a {TIMETZ})"]])
def test_a_time_with_time_zone_which_duckdb_exports_without_its_offset_is_refused(con, input):
    # DuckDB's Arrow export drops the offset: these two would hash alike.
    times = "SELECT '12:00:01+02'::TIMETZ AS t UNION ALL SELECT '12:00:01-05'::TIMETZ"
    with pytest.raises(TypeError, match="without its offset.*t::VARCHAR"):
        b3.register(con, "h", input=input)
    assert con.execute("SELECT count(*) FROM duckdb_functions() WHERE function_name = 'h'").fetchall() == [(0,)]
    for call in (
        lambda: bb.hash_arrow(con.sql(times)),
        lambda: bb.hash_arrow(con.sql(f"SELECT 1 AS id, [{{'at': t}}] AS t FROM ({times})"), rows=True),
        lambda: list(bb.hash_arrow_batches(con.sql(times))),
    ):
        with pytest.raises(TypeError, match="column.*'t'.*without its offset"):
            call()
    # As text the offsets are kept, and the digests differ.
    assert bb.hash_arrow(con.sql(f"SELECT t::VARCHAR FROM ({times})")).to_pylist() == [
        digest("12:00:01+02"),
        digest("12:00:01-05"),
    ]


@pytest.mark.parametrize(
    "options, error",
    [
        ({"length": 0}, "length=0"),
        ({"key": b"short"}, "32 bytes"),
        ({"key": KEY, "derive_key": "c"}, "key"),
        ({"as_u64": True, "hex": True}, "as_u64"),
        ({"as_u64": True, "length": 16}, "as_u64"),
        ({"files": True, "as_u64": True}, "as_u64"),
        ({"files": True, "input": "BLOB"}, "VARCHAR"),
        ({"files": True, "errors": "ignore"}, "errors"),
        ({"errors": "none"}, "files=True"),
        ({"input": []}, "input=\\[\\]"),
        ({"files": True, "input": ["VARCHAR"]}, "VARCHAR"),
    ],
    ids=str,
)
def test_bad_options_are_refused_at_registration(con, options, error):
    with pytest.raises(ValueError, match=error):
        b3.register(con, "h", **options)


def test_an_unknown_type_a_taken_name_and_a_missing_connection(con):
    with pytest.raises(duckdb.Error, match="NOSUCHTYPE"):
        b3.register(con, input="NOSUCHTYPE")
    b3.register(con)
    with pytest.raises(duckdb.Error, match="blake3"):
        b3.register(con)
    with pytest.raises(TypeError, match="connection first"):
        b3.register("blake3_hex", hex=True)
