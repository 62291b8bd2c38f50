"""Run-end encoded columns and list views: encodings of values that
hash_arrow otherwise takes. A run-end encoded row's digest is its value's,
as if the column were decoded (each run's value repeated); a list view
row's is the list of the same values' (a list of numbers its values' bytes
back to back, any other list its values framed). Checked against blake3-py
and against the decoded columns, with nulls, slices inside runs and rows
whose values overlap; and malformed run ends and list views, which only
unvalidated arrays hold, are ValueErrors that say what is wrong."""

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings, strategies as st

import blake3_batch as bb
from conftest import framed, kwargs_of, reference

RUN_VALUES = {
    "string": pa.array(["a", None, "", "grace hopper" * 100, "b"]),
    "binary_view": pa.array([b"\0" * 1025, b"x", None, b"", b"yz"], pa.binary_view()),
    "int64": pa.array([7, -1, None, 2**40, 0], pa.int64()),
    "bool": pa.array([True, False, None, True, False]),
    "list<int32>": pa.array([[1, 2], [], None, [3], [4, 5, 6]], pa.list_(pa.int32())),
    "struct": pa.array(
        [{"id": 1, "name": "a"}, {"id": None, "name": "b"}, None, {"id": 3, "name": None}, {"id": 4, "name": ""}],
        pa.struct([("id", pa.int64()), ("name", pa.string())]),
    ),
    "dictionary": pa.array(["x", "y", None, "x", "z"]).dictionary_encode(),
}


def runs_of(values, lengths, end_type=pa.int32()):
    """`values` repeated in runs of `lengths` rows."""
    ends = pa.array(np.cumsum(lengths, dtype=np.int64), end_type)
    # (pyarrow 16's RunEndEncodedArray.from_arrays refuses an array of ends.)
    run_type = pa.run_end_encoded(end_type, values.type)
    return pa.Array.from_buffers(run_type, int(sum(lengths)), [None], children=[ends, values])


def decoded(values, lengths):
    """The column `runs_of(values, lengths)` encodes, from the values'
    Python objects (pyarrow's run_end_decode and take have no kernels for
    views)."""
    rows = [value for value, n in zip(values.to_pylist(), lengths) for _ in range(n)]
    return pa.array(rows, values.type)


@pytest.mark.parametrize("mode", ["hash", "keyed_hash", "derive_key"])
@pytest.mark.parametrize("end_type", [pa.int16(), pa.int32(), pa.int64()])
@pytest.mark.parametrize("name", list(RUN_VALUES))
def test_run_end_encoded_rows_hash_as_the_decoded_column(name, end_type, mode):
    lengths = [3, 1, 4, 2, 5]
    runs = runs_of(RUN_VALUES[name], lengths, end_type)
    plain = decoded(RUN_VALUES[name], lengths)
    kwargs = kwargs_of(mode)
    want = bb.hash_arrow(plain, **kwargs).to_pylist()
    assert bb.hash_arrow(runs, **kwargs).to_pylist() == want
    # The null value's run is null.
    null_rows = sum(n for value, n in zip(RUN_VALUES[name].to_pylist(), lengths) if value is None)
    assert null_rows > 0 and want.count(None) == null_rows
    # Slices that start and end inside runs, and one inside one run.
    for start, length in [(2, 9), (4, 1), (8, 7), (15, 0)]:
        sliced = runs.slice(start, length)
        assert bb.hash_arrow(sliced, **kwargs).to_pylist() == want[start : start + length]
    assert bb.hash_arrow_u64(runs, **kwargs).to_pylist() == bb.hash_arrow_u64(plain, **kwargs).to_pylist()


def test_run_end_encoded_strings_hash_their_bytes():
    runs = pc.run_end_encode(pa.array(["ada", "ada", None, "grace", "grace", "grace"]))
    want = [reference(b"ada")] * 2 + [None] + [reference(b"grace")] * 3
    assert bb.hash_arrow(runs).to_pylist() == want
    assert bb.hash_arrow(runs, length=80, seek=7).to_pylist() == [
        None if v is None else reference(v, length=80, seek=7) for v in [b"ada"] * 2 + [None] + [b"grace"] * 3
    ]
    # A stream of them, and a chunked array.
    chunks = pa.chunked_array([runs, runs.slice(3)])
    assert bb.hash_arrow(chunks).to_pylist() == want + want[3:]
    batches = [b.to_pylist() for b in bb.hash_arrow_batches(chunks)]
    assert batches == [want, want[3:]]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.one_of(st.none(), st.binary(max_size=1100)), st.integers(1, 6)), max_size=40),
    st.integers(0, 300),
    st.integers(0, 300),
)
def test_random_runs_and_slices_of_binary(runs, start, length):
    values = pa.array([value for value, _ in runs], pa.binary())
    column = runs_of(values, [count for _, count in runs])
    rows = [value for value, count in runs for _ in range(count)]
    start = min(start, len(rows))
    length = min(length, len(rows) - start)
    got = bb.hash_arrow(column.slice(start, length)).to_pylist()
    assert got == [None if v is None else reference(v) for v in rows[start : start + length]]


def list_view(offsets, sizes, values, nulls=None, large=False):
    offset_type = pa.int64() if large else pa.int32()
    mask = None if nulls is None else pa.array(nulls)
    view = pa.LargeListViewArray if large else pa.ListViewArray
    return view.from_arrays(pa.array(offsets, offset_type), pa.array(sizes, offset_type), values, mask=mask)


@pytest.mark.parametrize("large", [False, True])
def test_list_views_hash_as_lists_of_the_same_values(large):
    numbers = pa.array(np.arange(-5, 15, dtype=np.int32))
    # Rows out of order, overlapping, empty, null and sharing values.
    offsets, sizes = [10, 0, 3, 7, 0, 3], [4, 5, 6, 0, 20, 6]
    nulls = [False, False, False, False, True, False]
    view = list_view(offsets, sizes, numbers, nulls, large)
    rows = view.to_pylist()
    want = [None if row is None else reference(np.array(row, np.int32).tobytes()) for row in rows]
    assert bb.hash_arrow(view).to_pylist() == want
    assert bb.hash_arrow(view.slice(2, 3)).to_pylist() == want[2:5]
    as_list = pa.array(rows, pa.large_list(pa.int32()) if large else pa.list_(pa.int32()))
    assert bb.hash_arrow(as_list).to_pylist() == want

    # Strings are framed, as a list's are.
    strings = pa.array(["a", "bc", None, "", "d"])
    view = list_view([1, 0, 2, 4], [2, 3, 0, 1], strings, [False, False, True, False], large)
    want = [None if row is None else reference(framed([None if s is None else s.encode() for s in row])) for row in view.to_pylist()]
    assert bb.hash_arrow(view).to_pylist() == want
    assert bb.hash_arrow(view).to_pylist() == bb.hash_arrow(pa.array(view.to_pylist(), pa.list_(pa.string()))).to_pylist()


def test_list_views_and_runs_nested_and_in_table_rows():
    inner = list_view([2, 0, 1], [1, 2, 2], pa.array([1, 2, 3], pa.int8()))
    nested = list_view([1, 0], [2, 3], inner)
    as_lists = pa.array(nested.to_pylist(), pa.list_(pa.list_(pa.int8())))
    assert bb.hash_arrow(nested).to_pylist() == bb.hash_arrow(as_lists).to_pylist()

    values, lengths = pa.array(["x", None, "y"]), [2, 1, 3]
    runs = runs_of(values, lengths)
    views = list_view([0, 1, 0, 2, 1, 0], [1, 2, 3, 1, 0, 2], pa.array(["p", "q", "r"]))
    table = pa.table({"runs": runs, "views": views, "n": pa.array(range(6))})
    plain = pa.table(
        {"runs": decoded(values, lengths), "views": pa.array(views.to_pylist(), pa.list_(pa.string())), "n": pa.array(range(6))}
    )
    want = bb.hash_arrow(plain, rows=True).to_pylist()
    assert bb.hash_arrow(table, rows=True).to_pylist() == want
    assert bb.hash_arrow(table.slice(1, 4), rows=True).to_pylist() == want[1:5]
    # A list of runs and a struct of them.
    lists = pa.ListArray.from_arrays(pa.array([0, 2, 6], pa.int32()), runs)
    assert bb.hash_arrow(lists).to_pylist() == bb.hash_arrow(pa.array(lists.to_pylist(), pa.list_(pa.string()))).to_pylist()


def test_a_null_inside_a_runs_list_of_numbers_names_the_callers_row():
    values = pa.array([[1], [2, None], [3]], pa.list_(pa.int32()))
    runs = runs_of(values, [2, 3, 1])
    with pytest.raises(ValueError, match="row 2 of the .* column holds a list of numbers or booleans with a null"):
        bb.hash_arrow(runs)
    with pytest.raises(ValueError, match="row 0 of"):
        bb.hash_arrow(runs.slice(3))
    assert bb.hash_arrow(runs.slice(5)).to_pylist() == [reference(np.array([3], np.int32).tobytes())]


def unvalidated_runs(ends, values, length, offset=0):
    return pa.Array.from_buffers(
        pa.run_end_encoded(pa.int32(), values.type), length, [None], offset=offset, children=[pa.array(ends, pa.int32()), values]
    )


def test_malformed_run_ends_are_value_errors():
    values = pa.array(["x", "y", "z"])
    with pytest.raises(ValueError, match="run-end encoded array is malformed: run 1 ends at row 1, not after the run before it"):
        bb.hash_arrow(unvalidated_runs([2, 1, 6], values, 6))
    with pytest.raises(ValueError, match="run 0 ends at row 0"):
        bb.hash_arrow(unvalidated_runs([0, 4, 6], values, 3))
    # Run ends changed after pyarrow checked them (the buffer is NumPy's):
    # the rows outlast the runs.
    ends = np.array([2, 4, 6], np.int32)
    runs = pa.Array.from_buffers(
        pa.run_end_encoded(pa.int32(), pa.string()), 6, [None], children=[pa.Array.from_buffers(pa.int32(), 3, [None, pa.py_buffer(ends)]), values]
    )
    ends[2] = 5
    with pytest.raises(ValueError, match="Last run end is 5 but it should match 6"):
        bb.hash_arrow(runs)  # pyarrow's own check finds it first (its words)
    # Nested in a struct, and in a table's rows.
    bad = unvalidated_runs([3, 3], pa.array(["a", "b"]), 3)
    with pytest.raises(ValueError, match="run 1 ends at row 3"):
        bb.hash_arrow(pa.StructArray.from_arrays([bad], ["r"]))
    with pytest.raises(ValueError, match="run 1 ends at row 3"):
        bb.hash_arrow(pa.table({"r": bad, "n": [1, 2, 3]}), rows=True)


def unvalidated_view(offsets, sizes, values, large=False):
    dtype = np.int64 if large else np.int32
    view_type = pa.large_list_view(values.type) if large else pa.list_view(values.type)
    buffers = [None, pa.py_buffer(np.array(offsets, dtype)), pa.py_buffer(np.array(sizes, dtype))]
    return pa.Array.from_buffers(view_type, len(offsets), buffers, children=[values])


@pytest.mark.parametrize("large", [False, True])
def test_malformed_list_views_are_value_errors(large):
    numbers = pa.array([1, 2, 3], pa.int32())
    strings = pa.array(["a", "b", "c"])
    cases = [
        (unvalidated_view([0, 2], [1, 2], numbers, large), "row 1 of an Arrow list array runs from value 2 to 4"),
        (unvalidated_view([0, -1], [1, 2], strings, large), "row 1 of an Arrow list array runs from value -1 to 1"),
        (unvalidated_view([1, 0], [-1, 1], strings, large), "row 0 of an Arrow list array runs from value 1 to 0"),
    ]
    for view, message in cases:
        with pytest.raises(ValueError, match=message):
            bb.hash_arrow(view)
        with pytest.raises(ValueError, match=message):
            bb.hash_arrow(pa.table({"v": view}), rows=True)


def test_types_still_without_bytes_raise_type_errors():
    no_fields = pa.array([{}, {}], pa.struct([]))
    runs_of_them = runs_of(no_fields, [1, 2])
    for column in [no_fields, runs_of_them]:
        with pytest.raises(TypeError, match="cannot hash a column of type"):
            bb.hash_arrow(column)


def test_an_array_pyarrow_finds_invalid_is_a_value_error_not_read_past_its_buffers():
    # pyarrow 16 to 26 cast this list view to a list whose offsets buffer is
    # one offset short; arrow-rs would read the missing offset from past the
    # buffer's end. A pyarrow that casts it soundly gives the view's digests.
    view = list_view([0, 2, 3, 3], [2, 1, 0, 0], pa.array([1, 2, 3], pa.int32()), [False, False, True, False])
    cast = view.cast(pa.list_(pa.int32()))
    try:
        cast.validate()
    except pa.ArrowInvalid:
        with pytest.raises(ValueError, match="Offsets buffer size"):
            bb.hash_arrow(cast)
        with pytest.raises(ValueError, match="Offsets buffer size"):
            bb.hash_arrow(pa.table({"c": cast}), rows=True)
    else:
        assert bb.hash_arrow(cast).to_pylist() == bb.hash_arrow(view).to_pylist()
