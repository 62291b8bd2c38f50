"""Pinned buffers: NumPy views of an engine's pinned host memory, filled from
Python and hashed from there (records, Arrow columns, digests written back
into one), exact against blake3-py on every engine."""

import gc
import os
import signal
import time

import blake3
import numpy as np
import pyarrow as pa
import pytest

import blake3_batch as bb
from conftest import engines

MODES = [{}, {"key": bytes(range(32))}, {"derive_key": "pinned buffers"}]


def reference(data, mode):
    if "key" in mode:
        return blake3.blake3(data, key=mode["key"]).digest()
    if "derive_key" in mode:
        return blake3.blake3(data, derive_key_context=mode["derive_key"]).digest()
    return blake3.blake3(data).digest()


def expect_pinned(engine, buffer):
    """Pinned exactly where the engine has a GPU; and on the GPU engine
    where the tests must have one (lavapipe in CI, which pins memory)."""
    has_gpu = engine.info()["gpu"] is not None
    if not has_gpu:
        assert not buffer.pinned
    if engine.info()["backend"] == "gpu" and os.environ.get("B3BATCH_REQUIRE_GPU") == "1":
        assert buffer.pinned


@pytest.mark.parametrize("engine", engines())
def test_a_view_is_writable_zeroed_memory_of_the_buffer(engine):
    buffer = engine.pinned_buffer(4096 + 3)
    expect_pinned(engine, buffer)
    assert len(buffer) == buffer.nbytes == 4099
    view = np.asarray(buffer)
    assert view.dtype == np.uint8 and view.shape == (4099,) and view.flags.writeable
    assert not view.any(), "zeroed when made"
    view[:] = np.arange(4099) % 251
    again = np.asarray(buffer)
    assert np.shares_memory(view, again) and bytes(again) == bytes(view)
    assert f"nbytes=4099, pinned={buffer.pinned}" in repr(buffer)


@pytest.mark.parametrize("engine", engines())
@pytest.mark.parametrize("size", [16, 64, 100, 1024, 1040])
def test_records_in_a_pinned_buffer_hash_exactly_in_every_mode(engine, size):
    rows = 300
    buffer = engine.pinned_buffer(rows * size + 8)
    rng = np.random.default_rng(size)
    # From byte 4 (a 4-byte boundary the GPU copies from) and from byte 1
    # (which it must pack instead).
    for start in [4, 1]:
        records = np.asarray(buffer)[start : start + rows * size].reshape(rows, size)
        records[:] = rng.integers(0, 256, records.shape, dtype=np.uint8)
        for mode in MODES:
            want = [reference(row.tobytes(), mode) for row in records]
            got = engine.hash_records(records, **mode)
            assert [bytes(row) for row in got] == want, (start, mode)
            prefix = engine.hash_records(records, length=5, **mode)
            assert [bytes(row) for row in prefix] == [digest[:5] for digest in want]


@pytest.mark.parametrize("engine", engines())
def test_digests_go_into_a_pinned_buffer_or_any_array_given_as_out(engine):
    rows, size = 257, 64
    data = engine.pinned_buffer(rows * size)
    records = np.asarray(data).reshape(rows, size)
    records[:] = np.random.default_rng(3).integers(0, 256, records.shape, dtype=np.uint8)
    want = [blake3.blake3(row.tobytes()).digest() for row in records]
    slots = engine.pinned_buffer(rows * 32 + 4)
    for out in [
        np.asarray(slots)[: rows * 32].reshape(rows, 32),  # digests copied by the GPU
        np.asarray(slots)[4:].reshape(rows, 32),  # still a 4-byte boundary
        np.full((rows, 32), 0xEE, np.uint8),  # ordinary memory
    ]:
        out[:] = 0xEE
        returned = engine.hash_records(records, out=out)
        assert returned is out
        assert [bytes(row) for row in out] == want
    short = np.zeros((rows, 8), np.uint8)
    engine.hash_records(records, length=8, out=short)
    assert [bytes(row) for row in short] == [digest[:8] for digest in want]
    assert bb.hash_records(records, out=np.zeros((rows, 32), np.uint8)).tolist() == [list(d) for d in want]


@pytest.mark.parametrize("engine", engines())
def test_arrow_columns_over_a_pinned_buffer_hash_exactly(engine):
    rows, size = 1000, 48
    buffer = engine.pinned_buffer(rows * size)
    view = np.asarray(buffer)
    view[:] = np.random.default_rng(5).integers(0, 256, view.shape, dtype=np.uint8)
    values = pa.py_buffer(view)
    want = [blake3.blake3(view[i * size : (i + 1) * size].tobytes()).digest() for i in range(rows)]
    fixed = pa.Array.from_buffers(pa.binary(size), rows, [None, values])
    offsets = pa.py_buffer((np.arange(rows + 1, dtype=np.int32) * size))
    packed = pa.Array.from_buffers(pa.binary(), rows, [None, offsets, values])
    for column in [fixed, packed, fixed.slice(10, 500)]:
        first = 10 if len(column) == 500 else 0
        got = engine.hash_arrow(column).to_pylist()
        assert got == want[first : first + len(column)]
    # Rows of mixed lengths from odd bytes over the same buffer.
    ends = np.cumsum(np.random.default_rng(6).integers(0, 97, rows)) % (rows * size)
    ends = np.sort(ends).astype(np.int64)
    mixed_offsets = np.concatenate([[3], np.maximum(ends, 3)]).astype(np.int64)
    mixed = pa.Array.from_buffers(pa.large_binary(), rows, [None, pa.py_buffer(mixed_offsets), values])
    got = engine.hash_arrow(mixed).to_pylist()
    flat = view.tobytes()
    assert got == [blake3.blake3(flat[a:b]).digest() for a, b in zip(mixed_offsets[:-1], mixed_offsets[1:])]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
@pytest.mark.parametrize("backend", ["cpu", "gpu"])
def test_a_forked_child_hashes_a_parents_pinned_buffer_and_lets_go_of_it(backend):
    """A child forked after its parent made an engine and a pinned buffer
    reads the buffer, hashes it with an engine of its own, and drops the
    parent's objects without tearing down what belongs to the parent (its
    GPU device); the parent goes on hashing with both."""
    try:
        engine = bb.Engine(backend=backend, threads=2)
    except RuntimeError:
        pytest.skip(f"no {backend} engine here")
    rows, size = 64, 100
    buffer = engine.pinned_buffer(rows * size)
    view = np.asarray(buffer).reshape(rows, size)
    view[:] = np.arange(rows * size).reshape(rows, size) % 251
    want = [blake3.blake3(row.tobytes()).digest() for row in view]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, never return into pytest
        status = b"?"
        try:
            got = [bytes(row) for row in bb.Engine(threads=2).hash_records(view)]
            status = b"hashed" if got == want else b"wrong"
            engine.close()
            del engine, buffer, view
            gc.collect()
            status += b" released"
        finally:
            os.write(write, status)
            os._exit(0)
    os.close(write)
    # Dropping the parent's GPU device in the child hung it on lavapipe:
    # wait a while, not for ever.
    deadline = time.monotonic() + 60
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the child hung letting go of its parent's engine")
        time.sleep(0.01)
    assert os.read(read, 100) == b"hashed released"
    assert [bytes(row) for row in engine.hash_records(view)] == want


def test_a_view_keeps_its_buffer_alive_after_the_engine_is_closed():
    engine = bb.Engine(threads=2)
    view = np.asarray(engine.pinned_buffer(64 * 100)).reshape(100, 64)
    engine.close()
    gc.collect()
    owner = view
    while isinstance(owner, np.ndarray):
        owner = owner.base
    assert isinstance(owner, bb.PinnedBuffer)
    view[:] = 7
    want = blake3.blake3(bytes([7] * 64)).digest()
    assert [bytes(row) for row in bb.Engine(threads=2).hash_records(view)] == [want] * 100
    with pytest.raises(ValueError, match="closed"):
        engine.pinned_buffer(16)


def test_an_empty_buffer_is_an_empty_view():
    buffer = bb.pinned_buffer(0)
    assert len(buffer) == 0 and np.asarray(buffer).shape == (0,)
    assert bb.hash_records(np.asarray(buffer).reshape(0, 16)).shape == (0, 32)


@pytest.mark.parametrize("engine", engines())
def test_a_size_no_memory_holds_is_a_memory_error(engine):
    with pytest.raises(MemoryError, match="ask for less"):
        engine.pinned_buffer(1 << 60)
    with pytest.raises(ValueError, match="nbytes=-1 is out of range"):
        engine.pinned_buffer(-1)
    with pytest.raises(TypeError):
        engine.pinned_buffer("64")


def test_bad_out_arrays_are_refused_and_left_untouched():
    records = np.zeros((4, 16), np.uint8)
    cases = [
        (np.zeros((4, 31), np.uint8), ValueError, r"shape \(4, 31\).*\(4, 32\)"),
        (np.zeros((3, 32), np.uint8), ValueError, "4 records need"),
        (np.zeros(128, np.uint8), ValueError, "2-D"),
        (np.zeros((4, 32), np.uint16), TypeError, "uint8"),
        (np.asfortranarray(np.zeros((4, 32), np.uint8)), ValueError, "C-contiguous"),
        (np.zeros((4, 64), np.uint8)[:, ::2], ValueError, "C-contiguous"),
        ([[0] * 32] * 4, TypeError, "numpy"),
    ]
    for out, error, words in cases:
        before = np.array(out, copy=True) if isinstance(out, np.ndarray) else None
        with pytest.raises(error, match=words):
            bb.hash_records(records, out=out)
        if before is not None:
            assert np.array_equal(out, before)
    read_only = np.zeros((4, 32), np.uint8)
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match="cannot be written"):
        bb.hash_records(records, out=read_only)
    whole = np.zeros(4 * 16 + 4 * 32, np.uint8)
    with pytest.raises(ValueError, match="over the records' memory"):
        bb.hash_records(whole[: 4 * 16].reshape(4, 16), out=whole[32 : 32 + 128].reshape(4, 32))
    # the same memory reached through two objects NumPy cannot relate
    records = np.frombuffer(memoryview(whole), np.uint8)[: 4 * 16].reshape(4, 16)
    out = np.frombuffer(memoryview(whole), np.uint8)[32 : 32 + 128].reshape(4, 32)
    assert out.flags.writeable
    with pytest.raises(ValueError, match="overlaps"):
        bb.hash_records(records, out=out)
    assert not whole.any(), "nothing written"
