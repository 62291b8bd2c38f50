"""Columns and table rows of booleans, lists of anything, maps and structs
nested to any depth: each row hashed as its encoding, built here from the
values pyarrow reads back (to_pylist) as the README documents it — a
boolean one byte; a list of numbers or booleans its values' bytes back to
back; a struct's fields, and any other list's values, framed (0x00 for a
null; 0x01, the length as 8 little-endian bytes, the encoding); a map the
list of its (key, value) entries — against blake3-py, in every mode; and
the rows refused, at the caller's row."""

import struct

import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

import blake3_batch as bb
from conftest import KEY, framed, kwargs_of, reference


def is_unframed(t):
    if pa.types.is_fixed_size_list(t):  # a tensor's rows: their length is fixed too
        return is_unframed(t.value_type)
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)


def encode(value, t):
    """The bytes a value (not None) of Arrow type `t` is hashed as."""
    if pa.types.is_boolean(t):
        return bytes([value])
    if pa.types.is_integer(t):
        return value.to_bytes(t.bit_width // 8, "little", signed=pa.types.is_signed_integer(t))
    if pa.types.is_floating(t):
        return struct.pack({32: "<f", 64: "<d"}[t.bit_width], value)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return value.encode()
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t) or pa.types.is_fixed_size_binary(t):
        return value
    if pa.types.is_dictionary(t):
        return encode(value, t.value_type)
    if pa.types.is_map(t):
        entry = pa.struct([("key", t.key_type), ("value", t.item_type)])
        return b"".join(frame({"key": k, "value": v}, entry) for k, v in value)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        if is_unframed(t.value_type):
            return b"".join(encode(v, t.value_type) for v in value)
        return b"".join(frame(v, t.value_type) for v in value)
    if pa.types.is_struct(t):
        return b"".join(frame(value[field.name], field.type) for field in t)
    raise AssertionError(f"no reference encoding for {t}")


def frame(value, t):
    if value is None:
        return b"\0"
    data = encode(value, t)
    return b"\1" + len(data).to_bytes(8, "little") + data


def expected(column, mode="hash"):
    t = column.type
    return [None if v is None else reference(encode(v, t), mode) for v in column.to_pylist()]


TAGS = pa.list_(pa.string())
COLUMNS = {
    "bool": pa.array([True, False, None], pa.bool_()),
    "list<string>": pa.array([["a", "bc"], ["ab", "c"], [], [""], [None], None], TAGS),
    "large_list<binary_view>": pa.array([[b"x"], None, [b"", None]], pa.large_list(pa.binary_view())),
    "fixed_size_list<string, 2>": pa.array([["a", None], ["", "b"], None], pa.list_(pa.string(), 2)),
    "list<bool>": pa.array([[True, False], [], None], pa.list_(pa.bool_())),
    "list<list<int32>>": pa.array([[[1, 2], [3]], [[1], [2, 3]], [None], [[]], None], pa.list_(pa.list_(pa.int32()))),
    "list<null>": pa.array([[None, None], [], None], pa.list_(pa.null())),
    "fixed_size_list<fixed_size_list<int16, 2>, 2>": pa.array(
        [[[1, 2], [3, 4]], None, [[-1, 0], [5, 6]]], pa.list_(pa.list_(pa.int16(), 2), 2)
    ),
    "list<fixed_size_list<bool, 3>>": pa.array(
        [[[True, False, True]], [], None, [[False] * 3, [True] * 3]], pa.list_(pa.list_(pa.bool_(), 3))
    ),
    "list<dictionary>": pa.array([["x", "y"], None], pa.list_(pa.string())).cast(
        pa.list_(pa.dictionary(pa.int8(), pa.string()))
    ),
    "map<string, int64>": pa.array([[("a", 1), ("b", None)], [], None], pa.map_(pa.string(), pa.int64())),
    "list<struct>": pa.array(
        [[{"id": 1, "tags": ["x"]}, None], [{"id": None, "tags": None}], None],
        pa.list_(pa.struct([("id", pa.int64()), ("tags", TAGS)])),
    ),
    "struct<struct, list>": pa.array(
        [{"inner": {"flag": True, "name": "n"}, "names": ["a"]}, {"inner": None, "names": None}, None],
        pa.struct([("inner", pa.struct([("flag", pa.bool_()), ("name", pa.string())])), ("names", TAGS)]),
    ),
}


@pytest.mark.parametrize("mode", ["hash", "keyed_hash", "derive_key"])
@pytest.mark.parametrize("name", list(COLUMNS))
def test_nested_columns_hash_each_rows_encoding(name, mode):
    column = COLUMNS[name]
    got = bb.hash_arrow(column, **kwargs_of(mode)).to_pylist()
    assert got == expected(column, mode)
    sliced = column.slice(1)
    assert bb.hash_arrow(sliced, **kwargs_of(mode)).to_pylist() == expected(sliced, mode)
    if pa.types.is_struct(column.type):
        # A struct column's rows are its values: rows=True agrees.
        assert bb.hash_arrow(column, rows=True, **kwargs_of(mode)).to_pylist() == expected(column, mode)


def test_different_nested_values_give_different_digests():
    digests = [d for d in bb.hash_arrow(COLUMNS["list<string>"]).to_pylist() if d is not None]
    assert len(set(digests)) == len(digests)
    digests = [d for d in bb.hash_arrow(COLUMNS["list<list<int32>>"]).to_pylist() if d is not None]
    assert len(set(digests)) == len(digests)
    assert bb.hash_arrow(pa.array([True, False])).to_pylist() == [reference(b"\1"), reference(b"\0")]


def test_a_table_with_every_nested_column_hashes_its_rows():
    count = 3
    table = pa.table({name: column.slice(0, count) for name, column in COLUMNS.items() if len(column) >= count})
    struct_type = pa.struct(list(table.schema))
    rows = table.to_pylist()
    want = [reference(encode(row, struct_type)) for row in rows]
    assert bb.hash_arrow(table, rows=True).to_pylist() == want
    assert bb.hash_arrow_u64(table, rows=True).to_pylist() == [int.from_bytes(d[:8], "little") for d in want]
    batches = list(bb.hash_arrow_batches(table.to_batches(max_chunksize=2), rows=True))
    assert [d for batch in batches for d in batch.to_pylist()] == want


nested_values = st.recursive(
    st.one_of(st.none(), st.text(max_size=5)),
    lambda children: st.one_of(st.none(), st.lists(children, max_size=4)),
    max_leaves=20,
)


@given(st.lists(st.lists(nested_values, max_size=4), max_size=30))
@settings(max_examples=60, deadline=None)
def test_random_lists_of_lists_of_strings(rows):
    # Three levels of lists with strings at the bottom; values that do not
    # fit the type become nulls (a list where a string goes, and so on).
    def shape(value, depth):
        if depth == 0:
            return value if isinstance(value, str) else None
        return [shape(v, depth - 1) for v in value] if isinstance(value, list) else None

    t = pa.list_(pa.list_(pa.large_list(pa.string())))
    column = pa.array([shape(row, 3) for row in rows], t)
    assert bb.hash_arrow(column, key=KEY).to_pylist() == [
        None if v is None else reference(encode(v, t), "keyed_hash") for v in column.to_pylist()
    ]


def test_a_null_inside_a_nested_list_of_numbers_names_the_callers_row():
    column = pa.array([[[1]], None, [[2], [3, None]]], pa.list_(pa.list_(pa.int32())))
    with pytest.raises(ValueError, match="row 2 of the .* column holds a list of numbers or booleans with a null"):
        bb.hash_arrow(column)
    table = pa.table({"id": [1, 2, 3], "deep": column})
    with pytest.raises(ValueError, match="row 2 of the table holds a list of numbers or booleans with a null"):
        bb.hash_arrow(table, rows=True)
    # Under a null row the value is never read.
    masked = pa.array([[[1]], None, None], pa.list_(pa.list_(pa.int32())))
    assert bb.hash_arrow(masked).to_pylist() == expected(masked)
    flags = pa.array([{"f": [True, None]}, {"f": [False]}], pa.struct([("f", pa.list_(pa.bool_()))]))
    with pytest.raises(ValueError, match="row 0 of the table"):
        bb.hash_arrow(pa.table({"s": flags, "n": [1, 2]}), rows=True)


def test_malformed_nested_arrays_are_value_errors():
    values = pa.array(["a", "b", "c"])
    # Row 1 runs from value 3 back to value 1: pyarrow's cheap validation
    # reads only the first and last offsets.
    offsets = pa.array([0, 3, 1, 3], pa.int32())
    lists = pa.Array.from_buffers(pa.list_(pa.string()), 3, [None, offsets.buffers()[1]], children=[values])
    with pytest.raises(ValueError, match="row 1 of an Arrow list array runs from value 3 to 1"):
        bb.hash_arrow(lists)
    # A dictionary key past its values, inside a list.
    keys = pa.array([0, 7], pa.int8())
    dictionary = pa.DictionaryArray.from_buffers(
        pa.dictionary(pa.int8(), pa.string()), 2, keys.buffers(), dictionary=pa.array(["x"])
    )
    nested = pa.ListArray.from_arrays(pa.array([0, 1, 2], pa.int32()), dictionary)
    with pytest.raises(ValueError, match="row 1 of the .* column has dictionary key 7"):
        bb.hash_arrow(nested)


def test_types_still_without_bytes_raise_type_errors():
    # (Run-end encoded columns and list views: test_encodings.py.)
    no_fields = pa.array([{}, {}, {}], pa.struct([]))
    with pytest.raises(TypeError, match="cannot hash a column of type"):
        bb.hash_arrow(no_fields)
    table = pa.table({"text": ["a", "a", "b"], "choice": no_fields})
    with pytest.raises(TypeError, match=r"columns choice \(Struct\(\)"):
        bb.hash_arrow(table, rows=True)


@pytest.mark.parametrize(
    "column",
    [
        pa.array(
            [{"s": {"f": 1}, "n": 1}, {"s": None, "n": 2}, {"s": {"f": 3}, "n": None}],
            pa.struct([("s", pa.struct([("f", pa.int8())])), ("n", pa.int8())]),
        ),
        pa.array([[{"f": 1}], [{"f": 2}], None], pa.list_(pa.struct([("f", pa.int8())]), 1)),
    ],
    ids=["struct<struct>", "fixed_size_list<struct>"],
)
def test_slices_of_structs_in_structs_hash_as_their_rows(column):
    # arrow-rs cannot import these slices as they are (apache/arrow-rs#9235):
    # pyarrow's are copied first, in every entry point.
    sliced = column.slice(1)
    want = expected(sliced)
    assert bb.hash_arrow(sliced).to_pylist() == want
    assert bb.hash_arrow(pa.chunked_array([column.slice(0, 1), sliced])).to_pylist()[1:] == want
    table = pa.table({"c": column, "n": [1, 2, 3]}).slice(1)
    rows = [reference(encode(row, pa.struct(list(table.schema)))) for row in table.to_pylist()]
    assert bb.hash_arrow(table, rows=True).to_pylist() == rows
    assert bb.hash_arrow(table.to_batches()[0], rows=True).to_pylist() == rows
    assert [d for b in bb.hash_arrow_batches(table, rows=True) for d in b.to_pylist()] == rows
    assert bb.default_engine().hash_arrow(table.select(["c"])).to_pylist() == want


ONE_FIELD = pa.StructArray.from_arrays(
    [pa.array(["p", None, "", "q"])], names=["f"], mask=pa.array([False, False, False, True])
)
TWO_FIELDS = pa.StructArray.from_arrays([pa.array(["p", "", None]), pa.array([1, None, 3], pa.int8())], names=["f", "n"])


@pytest.mark.parametrize("column", [ONE_FIELD, TWO_FIELDS], ids=["one field", "two fields"])
def test_a_struct_column_is_its_values_and_a_tables_struct_its_columns(column):
    # As Rust's hash_arrow, Polars and DuckDB hash it: each field framed,
    # a null row null, one field or several; rows=True agrees.
    want = expected(column)
    assert bb.hash_arrow(column).to_pylist() == want
    assert bb.hash_arrow(column, rows=True).to_pylist() == want
    keys = [None if d is None else int.from_bytes(d[:8], "little") for d in want]
    assert bb.hash_arrow_u64(column).to_pylist() == keys
    chunked = pa.chunked_array([column.slice(0, 1), column.slice(1)])
    assert bb.hash_arrow(chunked).to_pylist() == want
    assert [d for b in bb.hash_arrow_batches(chunked) for d in b.to_pylist()] == want
    assert [d for b in bb.hash_arrow_batches([column.slice(0, 2), column.slice(2)]) for d in b.to_pylist()] == want
    # A table of that one struct column is that column.
    table = pa.table({"s": column})
    assert bb.hash_arrow(table).to_pylist() == want
    assert bb.hash_arrow(table.to_batches()[0]).to_pylist() == want
    assert [d for b in bb.hash_arrow_batches(table) for d in b.to_pylist()] == want
    if column.null_count == 0:
        # A table's own struct is its columns: several need rows=True.
        with pytest.raises(TypeError, match=r"2 columns \(f, n\)"):
            bb.hash_arrow(pa.Table.from_struct_array(column))
    pl = pytest.importorskip("polars")
    series = pl.Series("s", column)
    assert bb.hash_arrow(series).to_pylist() == want


class Producer:
    """Arrow data from a producer other than pyarrow: only its capsules."""

    def __init__(self, data):
        self.data = data

    def __arrow_c_array__(self, requested_schema=None):
        return self.data.__arrow_c_array__(requested_schema)


def test_another_producers_slice_that_arrow_rs_cannot_import_is_a_value_error():
    struct_type = pa.struct([("s", pa.struct([("f", pa.int8())])), ("n", pa.int8())])
    sliced = pa.array([{"s": {"f": 1}, "n": 1}, {"s": None, "n": 2}], struct_type).slice(1)
    with pytest.raises(ValueError, match=r"apache/arrow-rs#9235\): pass a copy that is not sliced"):
        bb.hash_arrow(Producer(sliced), rows=True)
    copy = Producer(pa.concat_arrays([sliced]))
    assert bb.hash_arrow(copy, rows=True).to_pylist() == expected(sliced)
    assert [d for b in bb.hash_arrow_batches([copy], rows=True) for d in b.to_pylist()] == expected(sliced)


def union_encodings(column):
    """Each row of a union column as it is hashed (None: a null value):
    its type code as one byte, then its member's value's encoding."""
    t = column.type
    codes = column.type_codes.to_pylist()
    at = column.offsets.to_pylist() if t.mode == "dense" else range(len(column))
    members = {t.type_codes[i]: (column.field(i).to_pylist(), t.field(i).type) for i in range(t.num_fields)}
    rows = []
    for code, index in zip(codes, at):
        values, member_type = members[code]
        value = values[index]
        rows.append(None if value is None else bytes([code]) + encode(value, member_type))
    return rows


UNIONS = {
    "sparse<int32, string>": pa.UnionArray.from_sparse(
        pa.array([0, 1, 1, 0, 1], pa.int8()),
        [pa.array([7, 8, None, -1, 9], pa.int32()), pa.array(["x", "ab", "c", "d", None])],
        ["n", "s"],
    ),
    "dense<binary, list<int32>> at codes 5, 2": pa.UnionArray.from_dense(
        pa.array([5, 2, 5, 2, 5], pa.int8()),
        pa.array([1, 0, 0, 2, 3], pa.int32()),
        [pa.array([b"", b"\0" * 1025, None, b"y"]), pa.array([[1, 2], None, []], pa.list_(pa.int32()))],
        ["blob", "ids"],
        [5, 2],
    ),
    "dense<string, string>": pa.UnionArray.from_dense(
        pa.array([0, 1, 0, 1], pa.int8()),
        pa.array([0, 0, 1, 1], pa.int32()),
        [pa.array(["ab", "c"]), pa.array(["ab", None])],
        ["first", "second"],
    ),
}


@pytest.mark.parametrize("mode", ["hash", "keyed_hash", "derive_key"])
@pytest.mark.parametrize("name", list(UNIONS))
def test_a_union_row_is_its_type_code_then_its_value(name, mode):
    column = UNIONS[name]
    # (pyarrow's type_codes and offsets of a slice ignore its offset: the
    # slices' rows are taken from the whole column's.)
    want = [None if e is None else reference(e, mode) for e in union_encodings(column)]
    for start, stop in [(0, len(column)), (1, len(column)), (2, 4)]:
        part = column.slice(start, stop - start)
        assert bb.hash_arrow(part, **kwargs_of(mode)).to_pylist() == want[start:stop]
    # As a table's column, framed as any column is.
    table = pa.table({"id": pa.array(range(len(column)), pa.int8()), "u": column})
    rows = [framed([bytes([i]), e]) for i, e in enumerate(union_encodings(column))]
    assert bb.hash_arrow(table, rows=True, **kwargs_of(mode)).to_pylist() == [reference(r, mode) for r in rows]


def test_the_same_bytes_in_two_members_of_a_union_differ():
    digests = bb.hash_arrow(UNIONS["dense<string, string>"]).to_pylist()
    assert digests[0] != digests[1]  # "ab" as the first member and as the second
    assert digests[0] != bb.hash_arrow(pa.array(["ab"])).to_pylist()[0]
    assert digests[3] is None


def test_a_null_inside_a_union_members_list_of_numbers_names_the_callers_row():
    lists = pa.array([[1], [2, None]], pa.list_(pa.int32()))
    column = pa.UnionArray.from_dense(pa.array([0, 0, 1], pa.int8()), pa.array([0, 1, 0], pa.int32()), [lists, pa.array(["x"])])
    with pytest.raises(ValueError, match="row 1 of the .* column holds a list of numbers or booleans with a null"):
        bb.hash_arrow(column)
    assert bb.hash_arrow(column.slice(2)).to_pylist() == [reference(b"\1x")]


def test_malformed_unions_are_value_errors():
    codes = pa.py_buffer(bytes([0, 3, 1]))
    members = [pa.array([1, 2, 3], pa.int32()), pa.array(["a", "b", "c"])]
    sparse = pa.Array.from_buffers(pa.sparse_union([pa.field("n", pa.int32()), pa.field("s", pa.string())]), 3, [None, codes], children=members)
    with pytest.raises(ValueError, match="union array is malformed: row 1 has type id 3, which names none of the union's members"):
        bb.hash_arrow(sparse)
    offsets = pa.array([0, 5, 1], pa.int32()).buffers()[1]
    dense_type = pa.dense_union([pa.field("n", pa.int32()), pa.field("s", pa.string())])
    dense = pa.Array.from_buffers(dense_type, 3, [None, pa.py_buffer(bytes([0, 1, 1])), offsets], children=members)
    with pytest.raises(ValueError, match="row 1 is value 5 of member 1, which holds 3 values"):
        bb.hash_arrow(dense)
    with pytest.raises(ValueError, match="row 1 is value 5"):
        bb.hash_arrow(pa.table({"u": dense}), rows=True)
    with pytest.raises(ValueError, match="row 1 is value 5"):
        bb.hash_arrow(pa.ListArray.from_arrays(pa.array([0, 3], pa.int32()), dense))
