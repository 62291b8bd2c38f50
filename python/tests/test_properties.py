"""Random columns of every supported Arrow type, with nulls, slices and
chunks, in all modes and digest lengths, equal blake3-py row by row."""

import numpy as np
import pyarrow as pa
from conftest import kwargs_of, reference
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import blake3_batch as bb

ARROW_TYPES = [
    pa.binary(),
    pa.large_binary(),
    pa.string(),
    pa.large_string(),
    pa.binary_view(),
    pa.string_view(),
]

# Lengths 0..5000, most of them small, where lanes and bins differ most.
lengths = st.one_of(st.integers(0, 80), st.integers(0, 1100), st.integers(0, 5000))
rows = st.lists(st.one_of(st.none(), lengths), max_size=200)
modes = st.sampled_from(["hash", "keyed_hash", "derive_key"])


def values_of(row_lengths, seed, text):
    rng = np.random.default_rng(seed)
    values = []
    for length in row_lengths:
        if length is None:
            values.append(None)
        elif text:
            values.append("".join(chr(c) for c in rng.integers(32, 127, length)))
        else:
            values.append(rng.integers(0, 256, length, dtype=np.uint8).tobytes())
    return values


def as_bytes(value):
    return value.encode() if isinstance(value, str) else value


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    row_lengths=rows,
    seed=st.integers(0, 2**32 - 1),
    arrow_type=st.sampled_from(ARROW_TYPES),
    mode=modes,
    length=st.integers(1, 200),
    cut=st.tuples(st.integers(0, 200), st.integers(0, 200)),
    chunks=st.integers(1, 4),
)
def test_random_columns_match_blake3(row_lengths, seed, arrow_type, mode, length, cut, chunks):
    text = pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type) or pa.types.is_string_view(arrow_type)
    values = values_of(row_lengths, seed, text)
    column = pa.array(values, type=arrow_type)
    start = min(cut[0], len(values))
    stop = max(start, min(len(values), cut[1]))
    column = column.slice(start, stop - start)
    values = values[start:stop]
    expected = [None if v is None else reference(as_bytes(v), mode, length) for v in values]

    got = bb.hash_arrow(column, length=length, **kwargs_of(mode))
    assert isinstance(got, pa.FixedSizeBinaryArray)
    assert got.type == pa.binary(length)
    assert got.to_pylist() == expected

    # The same rows as a chunked array: one output chunk per input chunk.
    bounds = sorted({0, len(values), *np.random.default_rng(seed).integers(0, len(values) + 1, chunks - 1)})
    pieces = [pa.array(values[a:b], type=arrow_type) for a, b in zip(bounds, bounds[1:])]
    chunked = pa.chunked_array(pieces, type=arrow_type)
    got = bb.hash_arrow(chunked, length=length, **kwargs_of(mode))
    assert isinstance(got, pa.ChunkedArray)
    assert got.num_chunks == chunked.num_chunks
    assert [len(c) for c in got.chunks] == [len(c) for c in chunked.chunks]
    assert got.to_pylist() == expected
    hexes = bb.hash_arrow(chunked, length=length, hex=True, **kwargs_of(mode))
    assert hexes.type == pa.string()
    assert [len(c) for c in hexes.chunks] == [len(c) for c in chunked.chunks]
    assert hexes.to_pylist() == [None if e is None else e.hex() for e in expected]

    keys = bb.hash_arrow_u64(column, **kwargs_of(mode)).to_pylist()
    assert keys == [None if v is None else int.from_bytes(reference(as_bytes(v), mode, 8), "little") for v in values]


@settings(max_examples=60, deadline=None)
@given(
    size=st.integers(0, 1100),
    count=st.integers(0, 70),
    nulls=st.lists(st.booleans(), max_size=70),
    seed=st.integers(0, 2**32 - 1),
    mode=modes,
    offset=st.integers(0, 5),
)
def test_fixed_size_binary_and_records_match_blake3(size, count, nulls, seed, mode, offset):
    data = np.random.default_rng(seed).integers(0, 256, (count + offset) * size, dtype=np.uint8)
    records = data.reshape(count + offset, size)
    rows = [records[i].tobytes() for i in range(count + offset)]
    mask = [i < len(nulls) and nulls[i] for i in range(count + offset)]
    column = pa.array([None if m else r for r, m in zip(rows, mask)], type=pa.binary(size)).slice(offset)
    expected = [None if m else reference(r, mode, 32) for r, m in zip(rows, mask)][offset:]
    assert bb.hash_arrow(column, **kwargs_of(mode)).to_pylist() == expected

    got = bb.hash_records(np.ascontiguousarray(records[offset:]), **kwargs_of(mode))
    assert got.shape == (count, 32)
    assert [bytes(r) for r in got] == [reference(r, mode, 32) for r in rows[offset:]]

    # Extended output, both as an Arrow column and from records.
    length = 33 + seed % 100
    expected = [None if m else reference(r, mode, length) for r, m in zip(rows, mask)][offset:]
    assert bb.hash_arrow(column, length=length, **kwargs_of(mode)).to_pylist() == expected
    got = bb.hash_records(np.ascontiguousarray(records[offset:]), length=length, **kwargs_of(mode))
    assert got.shape == (count, length)
    assert [bytes(r) for r in got] == [reference(r, mode, length) for r in rows[offset:]]


@settings(max_examples=60, deadline=None)
@given(row_lengths=st.lists(lengths, max_size=100), seed=st.integers(0, 2**32 - 1), mode=modes, length=st.integers(1, 200))
def test_hash_many_matches_blake3_for_every_bytes_like(row_lengths, seed, mode, length):
    values = values_of(row_lengths, seed, text=False)
    items = [[bytes, bytearray, memoryview][i % 3](v) for i, v in enumerate(values)]
    assert bb.hash_many(items, length=length, **kwargs_of(mode)) == [reference(v, mode, length) for v in values]


# Seeks within the digest, within the first output kilobyte (the lanes'),
# past it, and anywhere in the 2**64-byte output.
seeks = st.one_of(st.integers(0, 40), st.integers(0, 1100), st.integers(0, 2**64 - 1))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    row_lengths=rows,
    seed=st.integers(0, 2**32 - 1),
    arrow_type=st.sampled_from(ARROW_TYPES),
    mode=modes,
    length=st.integers(1, 200),
    seek=seeks,
)
def test_outputs_from_any_seek_match_blake3(row_lengths, seed, arrow_type, mode, length, seek):
    text = pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type) or pa.types.is_string_view(arrow_type)
    values = values_of(row_lengths, seed, text)
    expected = [None if v is None else reference(as_bytes(v), mode, length, seek) for v in values]
    column = pa.array(values, type=arrow_type)
    got = bb.hash_arrow(column, length=length, seek=seek, **kwargs_of(mode))
    assert got.type == pa.binary(length)
    assert got.to_pylist() == expected

    hexes = bb.hash_arrow(column, length=length, seek=seek, hex=True, **kwargs_of(mode))
    assert hexes.type == pa.string()
    assert hexes.to_pylist() == [None if e is None else e.hex() for e in expected]

    present = [as_bytes(v) for v in values if v is not None]
    many = bb.hash_many(present, length=length, seek=seek, **kwargs_of(mode))
    assert many == [e for e in expected if e is not None]
    assert bb.hash_many(present, length=length, seek=seek, hex=True, **kwargs_of(mode)) == [m.hex() for m in many]

    # Records: every row cut to the shortest present one.
    size = min((len(v) for v in present), default=0)
    records = np.frombuffer(b"".join(v[:size] for v in present), np.uint8).reshape(len(present), size)
    got = bb.hash_records(records, length=length, seek=seek, **kwargs_of(mode))
    assert [bytes(r) for r in got] == [reference(v[:size], mode, length, seek) for v in present]
