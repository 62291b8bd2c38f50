"""The official BLAKE3 test vectors, in all three modes, through every entry
point and engine, against the expected bytes and against blake3-py."""

import blake3
import numpy as np
import pyarrow as pa
import pytest

from conftest import engines


def vector_input(length):
    return bytes(i % 251 for i in range(length))


MODES = ["hash", "keyed_hash", "derive_key"]


def mode_kwargs(mode, vectors):
    if mode == "keyed_hash":
        return {"key": vectors["key"].encode()}
    if mode == "derive_key":
        return {"derive_key": vectors["context_string"]}
    return {}


def reference(data, mode, vectors):
    if mode == "keyed_hash":
        return blake3.blake3(data, key=vectors["key"].encode()).digest()
    if mode == "derive_key":
        return blake3.blake3(data, derive_key_context=vectors["context_string"]).digest()
    return blake3.blake3(data).digest()


@pytest.mark.parametrize("engine", engines())
@pytest.mark.parametrize("mode", MODES)
def test_every_vector_through_every_entry_point(engine, mode, vectors):
    cases = vectors["cases"]
    inputs = [vector_input(case["input_len"]) for case in cases]
    expected = [bytes.fromhex(case[mode])[:32] for case in cases]
    assert expected == [reference(data, mode, vectors) for data in inputs]
    kwargs = mode_kwargs(mode, vectors)

    assert engine.hash_many(inputs, **kwargs) == expected
    for arrow_type in [pa.binary(), pa.large_binary(), pa.binary_view()]:
        column = pa.array(inputs, type=arrow_type)
        assert engine.hash_arrow(column, **kwargs).to_pylist() == expected, arrow_type
    # Records: every vector of the same length as one (n, len) array.
    for data, want in zip(inputs, expected):
        records = np.frombuffer(data * 3, dtype=np.uint8).reshape(3, len(data))
        got = engine.hash_records(records, **kwargs)
        assert got.shape == (3, 32)
        assert [bytes(row) for row in got] == [want] * 3
    # The same records written into a pinned buffer of the engine (copied
    # to its GPU where they lie), their digests into another.
    for data, want in zip(inputs, expected):
        records = np.asarray(engine.pinned_buffer(3 * len(data))).reshape(3, len(data))
        records[:] = np.frombuffer(data, dtype=np.uint8)
        out = np.asarray(engine.pinned_buffer(3 * 32)).reshape(3, 32)
        assert engine.hash_records(records, out=out, **kwargs) is out
        assert [bytes(row) for row in out] == [want] * 3, len(data)


@pytest.mark.parametrize("mode", MODES)
def test_prefixes_and_u64_keys_are_the_digest_read_short(mode, vectors):
    import blake3_batch as bb

    inputs = [vector_input(case["input_len"]) for case in vectors["cases"]]
    column = pa.array(inputs)
    kwargs = mode_kwargs(mode, vectors)
    full = [reference(data, mode, vectors) for data in inputs]
    for length in [1, 8, 16, 31]:
        assert bb.hash_arrow(column, length=length, **kwargs).to_pylist() == [d[:length] for d in full]
        assert bb.hash_many(inputs, length=length, **kwargs) == [d[:length] for d in full]
    keys = bb.hash_arrow_u64(column, **kwargs)
    assert keys.type == pa.uint64()
    assert keys.to_pylist() == [int.from_bytes(d[:8], "little") for d in full]


@pytest.mark.parametrize("engine", engines())
@pytest.mark.parametrize("mode", MODES)
def test_extended_output_is_every_vectors_131_bytes(engine, mode, vectors):
    cases = vectors["cases"]
    inputs = [vector_input(case["input_len"]) for case in cases]
    kwargs = mode_kwargs(mode, vectors)
    for length in [33, 64, 65, 131]:
        expected = [bytes.fromhex(case[mode])[:length] for case in cases]
        assert engine.hash_many(inputs, length=length, **kwargs) == expected, length
        for arrow_type in [pa.binary(), pa.large_string(), pa.binary_view()]:
            values = [data.decode("latin-1") for data in inputs] if arrow_type == pa.large_string() else inputs
            column = pa.array(values, type=arrow_type)
            if arrow_type == pa.large_string():
                # latin-1 text re-encodes as UTF-8: compare with blake3-py.
                want = [blake3_xof(value.encode(), mode, vectors, length) for value in values]
            else:
                want = expected
            got = engine.hash_arrow(column, length=length, **kwargs)
            assert got.type == pa.binary(length)
            assert got.to_pylist() == want, (arrow_type, length)
        for data, want in zip(inputs, expected):
            records = np.frombuffer(data * 2, dtype=np.uint8).reshape(2, len(data))
            got = engine.hash_records(records, length=length, **kwargs)
            assert got.shape == (2, length)
            assert [bytes(row) for row in got] == [want] * 2, (len(data), length)


def blake3_xof(data, mode, vectors, length):
    if mode == "keyed_hash":
        return blake3.blake3(data, key=vectors["key"].encode()).digest(length)
    if mode == "derive_key":
        return blake3.blake3(data, derive_key_context=vectors["context_string"]).digest(length)
    return blake3.blake3(data).digest(length)
