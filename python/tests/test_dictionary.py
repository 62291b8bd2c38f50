"""Dictionary-encoded columns (pandas and Polars categoricals, Parquet's
dictionary pages): each row's digest is its decoded value's, whether the
dictionary is smaller than the array (each value hashed once) or larger (a
slice of a shared dictionary: each row's value hashed where it lies)."""

import blake3
import numpy as np
import pyarrow as pa
import pytest
from conftest import engines
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import blake3_batch as bb

KEY = bytes(range(32))
CONTEXT = "blake3-batch 2026-12-05 dictionaries"
VALUE_TYPES = [pa.string(), pa.large_string(), pa.binary(), pa.large_binary(), pa.string_view(), pa.binary(5)]
KEY_TYPES = [pa.int8(), pa.uint8(), pa.int16(), pa.int32(), pa.uint32(), pa.int64()]


def reference(value, mode="hash", length=32, seek=0):
    if value is None:
        return None
    data = value.encode() if isinstance(value, str) else value
    if mode == "keyed_hash":
        return blake3.blake3(data, key=KEY).digest(length, seek=seek)
    if mode == "derive_key":
        return blake3.blake3(data, derive_key_context=CONTEXT).digest(length, seek=seek)
    return blake3.blake3(data).digest(length, seek=seek)


def kwargs_of(mode):
    return {"keyed_hash": {"key": KEY}, "derive_key": {"derive_key": CONTEXT}}.get(mode, {})


def dictionary_column(value_type, key_type, values, keys):
    """A dictionary array of `keys` (None: a null key) into `values`."""
    dictionary = pa.array(values, type=value_type)
    return pa.DictionaryArray.from_arrays(pa.array(keys, type=key_type), dictionary)


def value_of(value_type, rng, length):
    raw = rng.integers(0, 256, 5 if pa.types.is_fixed_size_binary(value_type) else length, dtype=np.uint8)
    if pa.types.is_string(value_type) or pa.types.is_large_string(value_type) or pa.types.is_string_view(value_type):
        return "".join(chr(33 + b % 90) for b in raw)
    return raw.tobytes()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    value_type=st.sampled_from(VALUE_TYPES),
    key_type=st.sampled_from(KEY_TYPES),
    value_count=st.integers(1, 120),
    row_count=st.integers(0, 300),
    value_lengths=st.sampled_from([(0, 40), (0, 1100), (900, 3000)]),
    null_values=st.booleans(),
    null_keys=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
    mode=st.sampled_from(["hash", "keyed_hash", "derive_key"]),
    length=st.integers(1, 80),
    seek=st.sampled_from([0, 5, 2**40]),
    cut=st.tuples(st.integers(0, 300), st.integers(0, 300)),
)
def test_random_dictionary_columns_equal_their_decoded_values(
    value_type, key_type, value_count, row_count, value_lengths, null_values, null_keys, seed, mode, length, seek, cut
):
    rng = np.random.default_rng(seed)
    values = [value_of(value_type, rng, int(rng.integers(*value_lengths))) for _ in range(value_count)]
    if null_values:
        values[int(rng.integers(value_count))] = None
    keys = [int(k) for k in rng.integers(0, value_count, row_count)]
    if null_keys:
        keys = [None if i % 5 == 1 else k for i, k in enumerate(keys)]
    column = dictionary_column(value_type, key_type, values, keys)
    output = {"length": length, "seek": seek, **kwargs_of(mode)}
    expected = [reference(v, mode, length, seek) for v in column.to_pylist()]
    assert bb.hash_arrow(column, **output).to_pylist() == expected
    # A slice keeps the whole dictionary: often more values than rows.
    start, end = sorted(cut)
    assert bb.hash_arrow(column.slice(start, end - start), **output).to_pylist() == expected[start:end]
    keys64 = bb.hash_arrow_u64(column, **kwargs_of(mode)).to_pylist()
    assert keys64 == [None if v is None else int.from_bytes(reference(v, mode)[:8], "little") for v in column.to_pylist()]


@pytest.mark.parametrize("engine", engines())
def test_few_and_many_values_on_every_engine(engine):
    rng = np.random.default_rng(3)
    values = [rng.integers(0, 256, n, dtype=np.uint8).tobytes() for n in [0, 1, 64, 65, 1024, 1025, 5000]]
    keys = [int(k) for k in rng.integers(0, len(values), 500)]
    column = dictionary_column(pa.binary(), pa.int16(), values, keys)
    expected = [reference(values[k]) for k in keys]
    assert engine.hash_arrow(column).to_pylist() == expected  # fewer values than rows
    assert engine.hash_arrow(column.slice(100, 3)).to_pylist() == expected[100:103]  # more values than rows
    chunked = pa.chunked_array([column.slice(0, 250), column.slice(250)])
    assert engine.hash_arrow(chunked, hex=True).to_pylist() == [d.hex() for d in expected]


def test_an_empty_dictionary_with_only_null_keys():
    column = dictionary_column(pa.string(), pa.int32(), [], [None, None])
    assert bb.hash_arrow(column).to_pylist() == [None, None]
    assert bb.hash_arrow(column.slice(0, 0)).to_pylist() == []


def test_pandas_categoricals_and_polars_categoricals_and_enums():
    pd = pytest.importorskip("pandas")
    words = ["red", "green", None, "red", "blue"]
    expected = [reference(w) for w in words]
    assert bb.hash_arrow(pa.array(pd.Categorical(words))).to_pylist() == expected
    pl = pytest.importorskip("polars")
    assert bb.hash_arrow(pl.Series(words, dtype=pl.Categorical)).to_pylist() == expected
    enum = pl.Enum(["blue", "green", "red"])
    assert bb.hash_arrow(pl.Series(words, dtype=enum)).to_pylist() == expected


def test_keys_past_the_dictionary_are_a_value_error_naming_the_row():
    dictionary = pa.array(["a", "b"])
    for key_bytes, shown in [(bytes([0, 1, 7]), "key 7"), (bytes([0, 255, 1]), "key -1")]:
        bad = pa.DictionaryArray.from_buffers(
            pa.dictionary(pa.int8(), pa.string()), 3, [None, pa.py_buffer(key_bytes)], dictionary=dictionary
        )
        row = 2 if shown == "key 7" else 1
        with pytest.raises(ValueError, match=f"row {row} of .* {shown}, but the dictionary holds 2 values"):
            bb.hash_arrow(bad)


@pytest.mark.parametrize("rows", [1, 4], ids=["more values than rows", "fewer values than rows"])
def test_dictionary_values_with_bad_offsets_are_a_value_error(rows):
    offsets = np.array([0, 2, 1, 3], np.int32)  # the second value ends before it starts
    values = pa.Array.from_buffers(pa.binary(), 3, [None, pa.py_buffer(offsets), pa.py_buffer(b"abc")])
    keys = pa.array([1] * rows, pa.int32())
    column = pa.DictionaryArray.from_arrays(keys, values)
    with pytest.raises(ValueError, match="offsets"):
        bb.hash_arrow(column)


def test_dictionaries_of_numbers_hash_each_rows_number():
    values = pa.array([7, None, -3, 2**40], pa.int64())
    keys = pa.array([0, 2, None, 1, 3, 0], pa.int8())
    column = pa.DictionaryArray.from_arrays(keys, values)
    expected = [None if v is None else reference(np.array([v], "<i8").tobytes()) for v in column.to_pylist()]
    assert bb.hash_arrow(column).to_pylist() == expected
    assert bb.hash_arrow(column.slice(1, 4)).to_pylist() == expected[1:5]
    pd = pytest.importorskip("pandas")
    categorical = pd.Series([1.5, 2.5, 1.5], dtype="category")
    expected = [reference(np.array([v], "<f8").tobytes()) for v in [1.5, 2.5, 1.5]]
    assert bb.hash_arrow(pa.Array.from_pandas(categorical)).to_pylist() == expected


OTHER_VALUES = {
    "booleans": pa.array([True, False, None]),
    "lists of numbers": pa.array([[1, 2], [], None, [3]], pa.list_(pa.int32())),
    "lists of strings": pa.array([["a", "bc"], ["ab", "c"], None], pa.list_(pa.string())),
    "structs": pa.array(
        [{"id": 1, "tags": ["x"]}, {"id": None, "tags": []}, None],
        pa.struct([("id", pa.int64()), ("tags", pa.list_(pa.string()))]),
    ),
    "fixed-size lists": pa.array([[1, 2], [3, 4]], pa.list_(pa.int8(), 2)),
    "run-end encoded strings": pa.RunEndEncodedArray.from_arrays([2, 3], ["p", "q"]),
}


@pytest.mark.parametrize("engine", engines())
@pytest.mark.parametrize("values", OTHER_VALUES.values(), ids=OTHER_VALUES.keys())
def test_dictionaries_of_any_other_values_hash_each_rows_decoded_value(values, engine):
    rng = np.random.default_rng(len(values))
    keys = [None if k < 0 else int(k) for k in rng.integers(-1, len(values), 40)]
    column = pa.DictionaryArray.from_arrays(pa.array(keys, pa.int32()), values)
    value_type = values.type.value_type if pa.types.is_run_end_encoded(values.type) else values.type
    decoded = pa.array(column.to_pylist(), value_type)
    expected = bb.hash_arrow(decoded).to_pylist()
    assert None in expected
    assert engine.hash_arrow(column).to_pylist() == expected  # fewer values than rows
    assert engine.hash_arrow(column.slice(5, 2)).to_pylist() == expected[5:7]  # more values than rows
    assert engine.hash_arrow_u64(column).to_pylist() == bb.hash_arrow_u64(decoded).to_pylist()
    # In a table's rows, and in a list, as the decoded values there (a list
    # of booleans or tensors is its values unframed, a list of dictionary
    # values framed, as a list of dictionary numbers is: tests/arrow_nested.rs).
    if value_type != pa.bool_() and not pa.types.is_fixed_size_list(value_type):
        lists = pa.ListArray.from_arrays(pa.array([0, 3, 3, 40], pa.int32()), column)
        decoded_lists = pa.ListArray.from_arrays(pa.array([0, 3, 3, 40], pa.int32()), decoded)
        assert engine.hash_arrow(lists).to_pylist() == bb.hash_arrow(decoded_lists).to_pylist()
    table = pa.table({"n": range(40), "v": column})
    decoded_table = pa.table({"n": range(40), "v": decoded})
    assert engine.hash_arrow(table, rows=True).to_pylist() == bb.hash_arrow(decoded_table, rows=True).to_pylist()


def test_a_dictionary_of_booleans_hashes_one_byte_a_row():
    column = pa.array([True, False, None, True]).dictionary_encode()
    assert bb.hash_arrow(column).to_pylist() == [reference(b"\x01"), reference(b"\x00"), None, reference(b"\x01")]


def test_a_dictionary_value_holding_a_null_number_is_refused_where_a_row_uses_it():
    values = pa.array([[1, 2], [None], [3]], pa.list_(pa.int32()))
    used = pa.DictionaryArray.from_arrays(pa.array([0, 2, 1], pa.int8()), values)
    with pytest.raises(ValueError, match="row 2 .*null"):
        bb.hash_arrow(used)
    unused = pa.DictionaryArray.from_arrays(pa.array([0, None, 2], pa.int8()), values)
    numbers = [reference(np.array([1, 2], "<i4").tobytes()), None, reference(np.array([3], "<i4").tobytes())]
    assert bb.hash_arrow(unused).to_pylist() == numbers


def test_a_key_past_a_dictionary_of_structs_is_a_value_error():
    values = pa.array([{"a": 1}, {"a": 2}])
    bad = pa.DictionaryArray.from_buffers(
        pa.dictionary(pa.int8(), values.type), 2, [None, pa.py_buffer(bytes([1, 9]))], dictionary=values
    )
    with pytest.raises(ValueError, match="row 1 of .* key 9, but the dictionary holds 2 values"):
        bb.hash_arrow(bad)
