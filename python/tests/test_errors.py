"""Bad input raises the exception that fits, with a message that says what to
fix, and returns nothing half-made."""

import ctypes
import os
import subprocess
import sys

import blake3
import numpy as np
import pyarrow as pa
import pytest

import blake3_batch as bb
from blake3_batch._native import check_options

COLUMN = pa.array([b"alpha", b"beta"])


@pytest.mark.parametrize(
    "column, words",
    [
        # Values that cannot be hashed: structs of no fields, alone, in
        # runs, in a dictionary and in a chunked array.
        (pa.RunEndEncodedArray.from_arrays([1], pa.array([{}], pa.struct([]))), "run_end_encoded"),
        (pa.array([{}], pa.struct([])), "struct<>"),
        (pa.DictionaryArray.from_arrays([0, 0], pa.array([{}], pa.struct([]))), "dictionary<values=struct<>"),
        (pa.chunked_array([pa.array([{}], pa.struct([]))]), "struct<>"),
    ],
)
def test_a_column_that_is_not_binary_is_a_type_error_naming_its_type(column, words):
    with pytest.raises(TypeError, match=f"(?i){words}"):
        bb.hash_arrow(column)
    with pytest.raises(TypeError, match=f"(?i){words}"):
        bb.hash_arrow_u64(column)


@pytest.mark.parametrize("not_arrow", [[b"a"], b"abc", None, np.zeros(3, dtype=np.uint8)])
def test_an_object_that_is_not_arrow_is_a_type_error(not_arrow):
    with pytest.raises(TypeError, match="Arrow"):
        bb.hash_arrow(not_arrow)


@pytest.mark.parametrize("key", [b"", b"x" * 31, b"x" * 33, bytearray(16)])
def test_a_key_that_is_not_32_bytes_is_a_value_error(key):
    for call in [
        lambda: bb.hash_arrow(COLUMN, key=key),
        lambda: bb.hash_many([b"a"], key=key),
        lambda: bb.hash_records(np.zeros((1, 4), np.uint8), key=key),
        lambda: bb.hash_arrow_u64(COLUMN, key=key),
    ]:
        with pytest.raises(ValueError, match="32 bytes"):
            call()


def test_a_key_of_another_type_is_a_type_error():
    with pytest.raises(TypeError, match="key"):
        bb.hash_many([b"a"], key="k" * 32)


def test_key_and_derive_key_together_are_a_value_error():
    with pytest.raises(ValueError, match="not both"):
        bb.hash_arrow(COLUMN, key=b"k" * 32, derive_key="context")


@pytest.mark.parametrize("length", [0, 2**31])
def test_a_length_of_zero_or_past_arrows_widest_is_a_value_error(length):
    with pytest.raises(ValueError, match="1 to 2147483647"):
        bb.hash_arrow(COLUMN, length=length)
    with pytest.raises(ValueError, match="1 to 2147483647"):
        bb.hash_many([b"a"], length=length)
    with pytest.raises(ValueError, match="1 to 2147483647"):
        bb.hash_records(np.zeros((1, 1), np.uint8), length=length)


def test_an_arrow_output_row_pyarrow_would_misread_is_a_value_error():
    # pyarrow counts a fixed_size_binary row's bits in 32 bits when it
    # imports one: rows of 2**28 bytes would come back with a wrong buffer.
    calls = [
        lambda **options: bb.hash_arrow(COLUMN, **options),
        lambda **options: bb.hash_arrow(COLUMN, hex=True, **options),
        lambda **options: bb.hash_arrow_batches([COLUMN], **options),
        lambda **options: check_options(**options),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="Arrow output: give 1 to 268435455 bytes"):
            call(length=2**28)
    widest = bb.hash_arrow(pa.array([b"a"]), length=2**28 - 1)
    widest.validate(full=True)
    assert widest[0].as_py() == blake3.blake3(b"a").digest(2**28 - 1)
    # Outside Arrow, the same length is no problem.
    assert bb.hash_many([b"a"], length=2**28)[0] == blake3.blake3(b"a").digest(2**28)


def test_extended_output_too_large_to_hold_is_a_memory_error():
    # 2**30 rows of 2**31 - 1 bytes: no machine holds it; nothing is hashed.
    records = np.zeros((2**30, 0), np.uint8)
    with pytest.raises(MemoryError, match="output"):
        bb.hash_records(records, length=2**31 - 1)


@pytest.mark.parametrize("seek", [-1, 2**64])
def test_a_seek_outside_the_output_is_a_value_error(seek):
    with pytest.raises(ValueError, match=r"seek=.* 0 to 2\*\*64 - 1"):
        bb.hash_arrow(COLUMN, seek=seek)
    with pytest.raises(ValueError, match="seek="):
        bb.hash_many([b"a"], length=64, seek=seek)
    with pytest.raises(ValueError, match="seek="):
        bb.hash_records(np.zeros((1, 1), np.uint8), seek=seek)
    with pytest.raises(TypeError):
        bb.hash_many([b"a"], seek=1.5)


@pytest.mark.parametrize("value", [-1, 2**70])
def test_integers_out_of_range_are_value_errors_naming_the_argument(value, tmp_path):
    # Negative or wider than 64 bits: a ValueError that names the argument
    # and its range, as for 0, not the OverflowError of a conversion.
    path = tmp_path / "file"
    path.write_bytes(b"abc")
    for call in [
        lambda: bb.hash_arrow(COLUMN, length=value),
        lambda: bb.hash_many([b"a"], length=value),
        lambda: bb.hash_records(np.zeros((1, 1), np.uint8), length=value),
        lambda: bb.hash_file(path, length=value),
        lambda: bb.hash_iter([b"a"], length=value),
    ]:
        with pytest.raises(ValueError, match=rf"length={value} is out of range: give 1 to"):
            call()
    with pytest.raises(ValueError, match=rf"threads={value} is out of range: give 1 to \d+"):
        bb.Engine(threads=value)
    with pytest.raises(ValueError, match=rf"nbytes={value} is out of range"):
        bb.default_engine().pinned_buffer(value)
    with pytest.raises(ValueError, match="batch_size=-1: .* at least 1"):
        bb.hash_iter([b"a"], batch_size=-1)


def test_a_batch_size_past_any_count_is_one_batch():
    items = [bytes([i]) * i for i in range(100)]
    assert list(bb.hash_iter(iter(items), batch_size=2**70)) == bb.hash_many(items)


def test_records_that_are_not_contiguous_are_a_value_error():
    records = np.zeros((8, 8), dtype=np.uint8)
    with pytest.raises(ValueError, match="C-contiguous"):
        bb.hash_records(records[:, ::2])
    with pytest.raises(ValueError, match="C-contiguous"):
        bb.hash_records(np.asfortranarray(records))


def test_records_of_flat_bytes_or_not_an_array_are_errors():
    # (Other dtypes and shapes: test_rows_of_numbers.py.)
    with pytest.raises(ValueError, match="row per record"):
        bb.hash_records(np.zeros(8, dtype=np.uint8))
    with pytest.raises(TypeError, match="numpy"):
        bb.hash_records([[1, 2], [3, 4]])


def test_hash_many_rejects_what_is_not_bytes_like():
    with pytest.raises(TypeError, match="item 1 is str.*encode"):
        bb.hash_many([b"a", "text"])
    with pytest.raises(TypeError, match="item 0 is int"):
        bb.hash_many([5])
    with pytest.raises(TypeError, match="wrap it in a list"):
        bb.hash_many(b"one blob")
    with pytest.raises(TypeError, match="sequence"):
        bb.hash_many(42)


@pytest.mark.parametrize(
    "objects",
    [
        np.array([b"a"] * 1000, dtype=object),  # read in place were it bytes
        np.array([b"a"], dtype=object),  # copied were it bytes
        np.zeros(2, [("Obj", "<i4"), ("b", "O")]),  # an object field
        memoryview(np.array([1, 2], dtype=object)),
        (ctypes.py_object * 2)(),
    ],
    ids=["large array", "small array", "struct field", "memoryview", "ctypes"],
)
def test_a_buffer_of_python_objects_is_a_type_error_not_their_addresses(objects):
    """A buffer of Python objects holds their memory addresses: hashed, they
    would give digests that change from run to run."""
    with pytest.raises(TypeError, match="item 1 is a buffer of Python objects.*memory addresses"):
        bb.hash_many([b"", objects])
    with pytest.raises(TypeError, match="item 1 is a buffer of Python objects"):
        list(bb.hash_iter([b"", objects]))
    chunks = iter([objects, b""])
    reader = type("Reader", (), {"read": lambda self, size=-1: next(chunks)})()
    with pytest.raises(TypeError, match="read\\(n\\) result is a buffer of Python objects"):
        bb.hash_reader(reader)
    # A field merely named with an O is no object.
    named = np.zeros(3000, [("Obj", "<i4")])
    assert bb.hash_many([named]) == [blake3.blake3(named.tobytes()).digest()]


def test_an_unknown_backend_or_thread_count_is_a_value_error():
    with pytest.raises(ValueError, match="backend"):
        bb.Engine(backend="tpu")
    with pytest.raises(ValueError, match="cpu_backend"):
        bb.Engine(cpu_backend="mmx")
    with pytest.raises(ValueError, match="thread"):
        bb.Engine(threads=0)
    # Refused before any thread starts: a pool this size would take minutes.
    with pytest.raises(ValueError, match=r"threads\(200000\).*ask for at most"):
        bb.Engine(threads=200_000)


def test_a_cpu_backend_this_machine_lacks_is_a_runtime_error():
    missing = [name for name in ["avx512", "avx2", "sse41", "neon"] if not _runs(name)]
    if not missing:
        pytest.skip("this machine runs every CPU backend")
    with pytest.raises(RuntimeError, match=missing[0]):
        bb.Engine(backend="cpu", cpu_backend=missing[0])


def _runs(name):
    try:
        bb.Engine(backend="cpu", cpu_backend=name)
        return True
    except RuntimeError:
        return False


def test_the_gpu_without_an_adapter_is_a_runtime_error_with_the_engines_message():
    # No Vulkan driver at all: wgpu finds no adapter.
    env = dict(os.environ, VK_ICD_FILENAMES="/nonexistent.json", VK_DRIVER_FILES="/nonexistent.json", WGPU_BACKEND="vulkan")
    code = (
        "import blake3_batch as bb\n"
        "try:\n"
        "    bb.Engine(backend='gpu')\n"
        "except RuntimeError as error:\n"
        "    print('RuntimeError:', error)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "RuntimeError:" in result.stdout and "gpu" in result.stdout.lower(), result.stdout


def test_a_closed_engine_is_a_value_error_and_a_context_manager_closes():
    engine = bb.Engine(backend="cpu", threads=1)
    assert engine.hash_many([b"a"])
    engine.close()
    assert engine.closed
    for call in [
        lambda: engine.hash_many([b"a"]),
        lambda: engine.hash_arrow(COLUMN),
        lambda: engine.hash_records(np.zeros((1, 1), np.uint8)),
        lambda: engine.info(),
    ]:
        with pytest.raises(ValueError, match="closed"):
            call()
    with bb.Engine(backend="cpu", threads=1) as engine:
        assert len(engine.hash_many([b"a", b"b"])) == 2
    assert engine.closed


def test_an_engine_from_before_a_fork_is_refused_in_the_child_and_the_default_is_rebuilt():
    if not hasattr(os, "fork"):
        pytest.skip("no fork here")
    engine = bb.Engine(backend="cpu", threads=2)
    bb.hash_many([b"warm the default engine"])
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, never return into pytest
        status = b"?"
        try:
            try:
                engine.hash_many([b"a"])
                status = b"no error"
            except RuntimeError as error:
                status = b"refused" if b"another process" in str(error).encode() else b"other"
            import blake3

            ok = bb.hash_many([b"child"]) == [blake3.blake3(b"child").digest()]
            status += b" default ok" if ok else b" default wrong"
        finally:
            os.write(write, status)
            os._exit(0)
    os.close(write)
    _, code = os.waitpid(pid, 0)
    assert os.read(read, 100) == b"refused default ok"


def test_hash_iter_refuses_bad_arguments_at_the_call_and_bad_items_at_their_batch():
    with pytest.raises(ValueError, match="batch_size"):
        bb.hash_iter([b"a"], batch_size=0)
    with pytest.raises(ValueError, match="32 bytes"):
        bb.hash_iter([b"a"], key=b"short")
    with pytest.raises(TypeError, match="wrap it in a list"):
        bb.hash_iter(b"abc")
    with pytest.raises(TypeError, match="iterable"):
        bb.hash_iter(42)
    digests = bb.hash_iter(iter([b"a", b"b", "text", b"d"]), batch_size=2)
    assert next(digests) == bb.hash_many([b"a"])[0]
    assert next(digests) == bb.hash_many([b"b"])[0]
    with pytest.raises(TypeError, match=r"hash_iter: item 2 is str.*encode"):
        next(digests)

    def failing():
        yield b"a"
        raise OSError("the cursor broke")

    with pytest.raises(OSError, match="the cursor broke"):
        list(bb.hash_iter(failing()))

    engine = bb.Engine(backend="cpu", threads=1)
    digests = engine.hash_iter(iter([b"a", b"b"]), batch_size=1)
    assert next(digests) == bb.hash_many([b"a"])[0]
    engine.close()
    with pytest.raises(ValueError, match="closed"):
        next(digests)
    with pytest.raises(ValueError, match="closed"):
        engine.hash_iter([b"a"])
