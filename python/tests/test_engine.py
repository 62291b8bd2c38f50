"""Engines: their settings, sharing one between threads, and the default."""

import array
import concurrent.futures
import mmap
import multiprocessing
import operator
import pickle

import blake3
import numpy as np
import pyarrow as pa
import pytest

import blake3_batch as bb


def test_info_reports_the_engine():
    engine = bb.Engine(backend="cpu", threads=1, cpu_backend="portable")
    info = engine.info()
    assert info == {"backend": "cpu", "cpu_backend": "portable", "lanes": 16, "threads": 1, "gpu": None}
    assert "portable" in repr(engine)


def test_the_default_engine_is_built_once():
    assert bb.default_engine() is bb.default_engine()
    assert bb.default_engine().info()["backend"] == "auto"


def test_one_engine_shared_by_eight_threads_gives_exact_digests():
    engine = bb.Engine(backend="cpu", threads=2)
    rng = np.random.default_rng(7)

    def work(seed):
        rng = np.random.default_rng(seed)
        values = [rng.integers(0, 256, rng.integers(0, 3000), dtype=np.uint8).tobytes() for _ in range(300)]
        for _ in range(5):
            assert engine.hash_arrow(pa.array(values)).to_pylist() == [blake3.blake3(v).digest() for v in values]
            assert engine.hash_many(values) == [blake3.blake3(v).digest() for v in values]
        return True

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        assert all(pool.map(work, rng.integers(0, 2**32, 8)))


def test_empty_inputs_give_empty_outputs():
    assert bb.hash_many([]) == []
    assert len(bb.hash_arrow(pa.array([], type=pa.binary()))) == 0
    assert bb.hash_records(np.zeros((0, 16), np.uint8)).shape == (0, 32)
    empty_records = bb.hash_records(np.zeros((3, 0), np.uint8))
    assert [bytes(row) for row in empty_records] == [blake3.blake3(b"").digest()] * 3


def test_a_column_of_only_nulls_stays_null():
    got = bb.hash_arrow(pa.array([None, None], type=pa.string()))
    assert got.null_count == 2 and got.to_pylist() == [None, None]
    assert bb.hash_arrow_u64(pa.array([None], type=pa.binary())).to_pylist() == [None]


BUFFER_KINDS = {
    "bytearray": bytearray,
    "memoryview": memoryview,
    "numpy uint8": lambda data: np.frombuffer(data, np.uint8),
    "numpy int32 rows": lambda data: np.frombuffer(data[: len(data) // 8 * 8], "<i4").reshape(-1, 2),
    "memoryview of ints": lambda data: memoryview(data[: len(data) // 4 * 4]).cast("i"),
    "array.array": lambda data: array.array("B", data),
    "every other byte": lambda data: memoryview(data)[::2],
    "fortran order": lambda data: np.asfortranarray(np.frombuffer(data[: len(data) // 2 * 2], np.uint8).reshape(-1, 2)),
    "mmap": lambda data: mapped(data),
}


def mapped(data):
    region = mmap.mmap(-1, max(len(data), 1))
    region[: len(data)] = data
    return memoryview(region)[: len(data)]


@pytest.mark.parametrize("kind", BUFFER_KINDS)
def test_hash_many_reads_every_bytes_like_object_either_side_of_the_in_place_size(kind):
    """Below 4 KiB another bytes-like object is copied, from there on read
    in place (where it is C-contiguous): the digest is its bytes' either way,
    as memoryview(item).tobytes() gives them."""
    rng = np.random.default_rng(5)
    sizes = [0, 1, 63, 4095, 4096, 4097, 8190, 100_003, 1 << 20]
    items = [BUFFER_KINDS[kind](rng.integers(0, 256, size, dtype=np.uint8).tobytes()) for size in sizes]
    expected = [blake3.blake3(memoryview(item).tobytes()).digest() for item in items]
    assert bb.hash_many(items) == expected
    assert list(bb.hash_iter(items, batch_size=4)) == expected
    key = bytes(range(32))
    assert bb.hash_many(items, key=key, length=40, seek=7) == [
        blake3.blake3(memoryview(item).tobytes(), key=key).digest(40, seek=7) for item in items
    ]


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_a_large_hex_column_is_formatted_on_the_engines_threads_exactly(threads):
    # 20 001 outputs of 61 bytes (1.2 MB): enough for a thread per 256 KiB,
    # in pieces that end inside an output.
    rng = np.random.default_rng(threads)
    values = [None if n % 9 == 0 else rng.bytes(int(n)) for n in rng.integers(0, 120, 20_001)]
    engine = bb.Engine(backend="cpu", threads=threads)
    hexes = engine.hash_arrow(pa.array(values, pa.binary()), length=61, seek=5, hex=True)
    assert hexes.type == pa.string()
    assert hexes.to_pylist() == [None if v is None else blake3.blake3(v).digest(61, seek=5).hex() for v in values]


def test_hash_iter_yields_each_batch_as_its_items_are_needed():
    rng = np.random.default_rng(11)
    values = [rng.integers(0, 256, rng.integers(0, 3000), dtype=np.uint8).tobytes() for _ in range(1000)]
    taken = []

    def source():
        for value in values:
            taken.append(value)
            # Every kind hash_many takes, not only bytes.
            yield bytearray(value) if len(taken) % 3 == 0 else value

    digests = bb.hash_iter(source(), batch_size=300)
    assert len(taken) == 0  # nothing is read before the first output is asked for
    first = next(digests)
    assert first == blake3.blake3(values[0]).digest()
    assert len(taken) == 300
    rest = list(digests)
    assert [first] + rest == [blake3.blake3(v).digest() for v in values]
    assert list(digests) == []


def test_hash_iter_ends_a_batch_of_large_items_at_64_mib():
    taken = []

    def source():
        for index in range(200):
            taken.append(index)
            # 1 MiB + 1 each, in every kind hash_many reads in place.
            value = bytes([index]) * ((1 << 20) + 1)
            yield [value, bytearray(value), memoryview(value)][index % 3]

    digests = bb.hash_iter(source())
    assert next(digests) == blake3.blake3(bytes([0]) * ((1 << 20) + 1)).digest()
    # The item that brings the batch to 64 MiB ends it: 64 items, not 200.
    assert len(taken) == 64
    rest = list(digests)
    assert len(rest) == 199
    assert rest[-1] == blake3.blake3(bytes([199]) * ((1 << 20) + 1)).digest()
    # A lone item larger than the budget is a batch of its own.
    huge = [b"a" * (65 << 20), b"b"]
    assert list(bb.hash_iter(huge)) == [blake3.blake3(item).digest() for item in huge]


def test_hash_iter_takes_every_option_of_hash_many():
    key = bytes(range(32))
    values = [b"", b"a", b"x" * 1025, bytes(range(200))]
    engine = bb.Engine(backend="cpu", threads=2)
    cases = [
        ({}, [blake3.blake3(v).digest() for v in values]),
        ({"key": key, "length": 40, "seek": 7}, [blake3.blake3(v, key=key).digest(40, seek=7) for v in values]),
        ({"derive_key": "ctx", "hex": True}, [blake3.blake3(v, derive_key_context="ctx").hexdigest() for v in values]),
    ]
    for options, want in cases:
        assert list(engine.hash_iter(iter(values), batch_size=3, **options)) == want
        assert list(engine.hash_iter(values, **options)) == engine.hash_many(values, **options)


def test_an_engine_pickles_as_its_arguments_and_loads_as_an_engine_of_its_own():
    blobs = [b"", b"a" * 100, b"b" * 5000]
    want = [blake3.blake3(blob).digest() for blob in blobs]
    engine = bb.Engine(backend="cpu", threads=2, cpu_backend="portable")
    loaded = pickle.loads(pickle.dumps(engine))
    assert loaded is not engine and loaded.info() == engine.info()
    assert loaded.hash_many(blobs) == want
    engine.close()
    reopened = pickle.loads(pickle.dumps(engine))  # a closed one's arguments
    assert not reopened.closed and reopened.hash_many(blobs) == want
    assert loaded.hash_many(blobs) == want  # its own threads, still open
    assert pickle.loads(pickle.dumps(bb.Engine())).info() == bb.Engine().info()
    # In a process started afresh, which has only the pickle.
    spawn = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=spawn) as pool:
        info, digests = pool.submit(operator.methodcaller("info"), loaded), pool.submit(
            operator.methodcaller("hash_many", blobs), loaded
        )
        assert info.result(timeout=120) == loaded.info() and digests.result(timeout=120) == want
