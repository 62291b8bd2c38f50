import json
import pathlib
import os
import threading
import time

import blake3
import pytest

import blake3_batch as bb

VECTORS = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "blake3_test_vectors.json"

# The key and context the differential tests hash with in keyed and key
# derivation modes ("hash", "keyed_hash", "derive_key").
KEY = bytes(range(32))
CONTEXT = "blake3-batch 2026-11-26 property tests"


def reference(data, mode="hash", length=32, seek=0):
    """blake3-py's output of `data` in `mode`: `length` bytes from `seek`."""
    if mode == "keyed_hash":
        hasher = blake3.blake3(data, key=KEY)
    elif mode == "derive_key":
        hasher = blake3.blake3(data, derive_key_context=CONTEXT)
    else:
        hasher = blake3.blake3(data)
    return hasher.digest(length, seek=seek)


def framed(values):
    """A table row's input as hash_arrow(rows=True) frames it, from each
    column's value as bytes (None: a null): 0x00 for a null; 0x01, the
    length as 8 little-endian bytes, the bytes."""
    return b"".join(b"\0" if v is None else b"\1" + len(v).to_bytes(8, "little") + v for v in values)


def kwargs_of(mode):
    """The keyword arguments that select `mode` with KEY and CONTEXT."""
    return {"keyed_hash": {"key": KEY}, "derive_key": {"derive_key": CONTEXT}}.get(mode, {})


@pytest.fixture(scope="session")
def vectors():
    return json.loads(VECTORS.read_text())


def supported_cpu_backends():
    """Every CPU instruction set this machine runs, by trying each."""
    names = []
    for name in ["avx512", "avx2", "sse41", "neon", "portable"]:
        try:
            bb.Engine(backend="cpu", cpu_backend=name, threads=2)
        except RuntimeError:
            continue
        names.append(name)
    return names


def engines():
    """One engine per CPU backend here, the default engine, and the GPU
    when an adapter (lavapipe in CI) is present."""
    found = [pytest.param(bb.Engine(backend="cpu", cpu_backend=n, threads=2), id=n) for n in supported_cpu_backends()]
    found.append(pytest.param(bb.default_engine(), id="default"))
    try:
        found.append(pytest.param(bb.Engine(backend="gpu", threads=2), id="gpu"))
    except RuntimeError:
        # Where CI promises a GPU (lavapipe), its absence is a failure.
        if os.environ.get("B3BATCH_REQUIRE_GPU") == "1":
            raise
    return found


def assert_releases_the_gil(call):
    """Runs ``call()`` while another Python thread counts, and asserts that
    the thread kept counting: holding the GIL for the whole call would
    leave it a handful of switch intervals at most."""
    counter = [0]
    running = threading.Event()
    stop = threading.Event()

    def count():
        running.set()
        while not stop.is_set():
            counter[0] += 1

    thread = threading.Thread(target=count)
    thread.start()
    running.wait()
    try:
        start_count, start = counter[0], time.perf_counter()
        call()
        counted, took = counter[0] - start_count, time.perf_counter() - start
    finally:
        stop.set()
        thread.join()
    print(f"the other thread counted {counted} times in {took:.2f} s of hashing")
    assert took > 0.05, "the call is too short to tell"
    assert counted > 100_000 * took, counted
