"""hash_file, hash_files and hash_reader: the digests of files and binary
file objects, read with the GIL released, against blake3-py in every mode
on every engine; paths from lists and Arrow arrays, nulls; paths that name
no file raise the OSError that fits or get None; a reader's exception is
raised as it is."""

import io
import os
import pathlib
import sys

import blake3
import numpy as np
import pyarrow as pa
import pytest

import blake3_batch as bb
from conftest import assert_releases_the_gil, engines

KEY = bytes(range(32))
# The CPU's windows: an input longer than one is hashed in subtrees.
WINDOW = 16 << 20


def pattern(size):
    return (bytes(range(251)) * (size // 251 + 1))[:size]


@pytest.mark.parametrize("engine", engines())
@pytest.mark.parametrize("size", [0, 1025, WINDOW, WINDOW + 1, 2 * WINDOW + 4097])
def test_files_match_blake3_in_every_mode(engine, size, tmp_path):
    data = pattern(size)
    path = tmp_path / "file"
    path.write_bytes(data)
    assert engine.hash_file(path) == blake3.blake3(data).digest()
    assert engine.hash_file(str(path), key=KEY) == blake3.blake3(data, key=KEY).digest()
    expected = blake3.blake3(data, derive_key_context="files 2026").digest()
    assert engine.hash_file(path, derive_key="files 2026") == expected
    assert engine.hash_file(path, length=8) == blake3.blake3(data).digest()[:8]
    # Extended output, past two output blocks.
    assert engine.hash_file(path, length=131) == blake3.blake3(data).digest(length=131)
    wide = engine.hash_file(path, length=100, key=KEY)
    assert wide == blake3.blake3(data, key=KEY).digest(length=100)
    # From a seek: within the digest, across its end, far past it.
    for seek, length in [(8, 8), (20, 20), (2**40 + 3, 50)]:
        assert engine.hash_file(path, seek=seek, length=length) == blake3.blake3(data).digest(length, seek=seek)
    assert engine.hash_file(path, hex=True) == blake3.blake3(data).hexdigest()
    assert engine.hash_file(path, hex=True, length=100) == blake3.blake3(data).hexdigest(length=100)


def test_the_module_function_uses_the_default_engine(tmp_path):
    path = tmp_path / "file"
    path.write_bytes(pattern(5000))
    assert bb.hash_file(path) == blake3.blake3(pattern(5000)).digest()


def test_paths_that_name_no_readable_file_raise_the_oserror_that_fits(tmp_path):
    missing = tmp_path / "missing"
    with pytest.raises(FileNotFoundError, match="missing"):
        bb.hash_file(missing)
    with pytest.raises(IsADirectoryError, match="directory"):
        bb.hash_file(tmp_path)
    path = tmp_path / "file"
    path.write_bytes(b"abc")
    with pytest.raises(ValueError, match="length"):
        bb.hash_file(path, length=0)
    with pytest.raises(ValueError, match="32 bytes"):
        bb.hash_file(path, key=b"short")
    with pytest.raises(TypeError):
        bb.hash_file(3.5)


def test_the_gil_is_released_while_a_file_is_hashed(tmp_path):
    path = tmp_path / "file"
    path.write_bytes(pattern(256 << 20))
    engine = bb.Engine(backend="cpu", threads=1)
    assert_releases_the_gil(lambda: engine.hash_file(path))


# hash_files: many paths, small files batched and large ones streamed.
SMALL_FILE = 1 << 20


def write_files(directory, sizes):
    paths = []
    for index, size in enumerate(sizes):
        path = directory / f"f{index}"
        path.write_bytes(pattern(size)[::-1] + bytes([index % 256]))
        paths.append(path)
    return paths


@pytest.mark.parametrize("engine", engines())
def test_many_files_match_blake3_in_order_in_every_mode(engine, tmp_path):
    sizes = [0, 1, 1023, 1024, 5000, SMALL_FILE - 1, SMALL_FILE, 3 * SMALL_FILE] * 3
    paths = write_files(tmp_path, sizes)
    contents = [path.read_bytes() for path in paths]
    assert engine.hash_files(paths) == [blake3.blake3(c).digest() for c in contents]
    keyed = engine.hash_files([str(p) for p in paths], key=KEY)
    assert keyed == [blake3.blake3(c, key=KEY).digest() for c in contents]
    derived = engine.hash_files(iter(paths), derive_key="files 2026", length=5)
    expected = [blake3.blake3(c, derive_key_context="files 2026").digest()[:5] for c in contents]
    assert derived == expected
    derived = engine.hash_files(paths, derive_key="files 2026", length=70)
    expected = [blake3.blake3(c, derive_key_context="files 2026").digest(length=70) for c in contents]
    assert derived == expected
    for seek, length in [(30, 2), (31, 2), (1000, 70)]:
        got = engine.hash_files(paths, seek=seek, length=length)
        assert got == [blake3.blake3(c).digest(length, seek=seek) for c in contents]
    hexes = engine.hash_files(paths[:3] + [None], hex=True)
    assert hexes == [blake3.blake3(c).hexdigest() for c in contents[:3]] + [None]
    assert engine.hash_files([]) == []
    assert engine.hash_files([], length=64) == []


def test_more_files_than_a_batch_holds(tmp_path):
    paths = write_files(tmp_path, [n % 300 for n in range(17000)])
    expected = [blake3.blake3(path.read_bytes()).digest() for path in paths]
    assert bb.hash_files(paths) == expected


def test_files_that_cannot_be_hashed_raise_or_get_none(tmp_path):
    good = tmp_path / "good"
    good.write_bytes(b"good")
    missing = tmp_path / "missing"
    paths = [good, missing, tmp_path, good]
    with pytest.raises(FileNotFoundError, match="missing"):
        bb.hash_files(paths)
    with pytest.raises(IsADirectoryError, match="directory"):
        bb.hash_files([good, tmp_path])
    digest = blake3.blake3(b"good").digest()
    assert bb.hash_files(paths, errors="none") == [digest, None, None, digest]
    wide = blake3.blake3(b"good").digest(length=48)
    assert bb.hash_files(paths, errors="none", length=48) == [wide, None, None, wide]
    with pytest.raises(FileNotFoundError, match="missing"):
        bb.hash_files(paths, length=48)
    with pytest.raises(ValueError, match="errors"):
        bb.hash_files(paths, errors="ignore")
    with pytest.raises(TypeError, match="list of paths"):
        bb.hash_files(str(good))
    with pytest.raises(TypeError, match="a path is int"):
        bb.hash_files([good, 3])
    with pytest.raises(TypeError, match="iterable"):
        bb.hash_files(3)
    with pytest.raises(ValueError, match="length"):
        bb.hash_files([good], length=0)


def test_the_gil_is_released_while_files_are_hashed(tmp_path):
    # 256 MiB, as for hash_file: long enough to tell on a fast machine.
    paths = write_files(tmp_path, [256 << 10] * 1024)
    engine = bb.Engine(backend="cpu", threads=1)
    assert_releases_the_gil(lambda: engine.hash_files(paths))


def test_paths_from_arrow_and_nulls_get_none(tmp_path):
    paths = [str(path) for path in write_files(tmp_path, [10, 2000, 0])]
    digests = [blake3.blake3(pathlib.Path(p).read_bytes()).digest() for p in paths]
    with_null = [paths[0], None, paths[1], paths[2]]
    expected = [digests[0], None, digests[1], digests[2]]
    assert bb.hash_files(with_null) == expected
    assert bb.hash_files(pa.array(with_null)) == expected
    assert bb.hash_files(pa.array(with_null, type=pa.large_string())) == expected
    assert bb.hash_files(pa.array(with_null, type=pa.string_view())) == expected
    chunked = pa.chunked_array([with_null[:1], with_null[1:]])
    assert bb.hash_files(chunked) == expected
    polars = pytest.importorskip("polars")
    assert bb.hash_files(polars.Series(with_null)) == expected
    with pytest.raises(TypeError, match="Arrow array of Int64.*binary file names"):
        bb.hash_files(pa.array([1, 2]))


class BytesPathLike:
    """An os.PathLike whose __fspath__ gives bytes, as os.DirEntry from
    os.scandir(bytes) does."""

    def __init__(self, path):
        self.path = os.fsencode(path)

    def __fspath__(self):
        return self.path


def test_bytes_paths_name_the_files_open_reads(tmp_path):
    names = ["plain", "caf\u00e9"]
    if sys.platform.startswith("linux"):
        # A name that is not UTF-8: os.listdir gives it as surrogates, or as
        # the bytes themselves from a bytes directory.
        names.append(os.fsdecode(b"raw-\xff\xfe"))
    paths = [tmp_path / name for name in names]
    for index, path in enumerate(paths):
        path.write_bytes(pattern(100 + index))
    expected = [blake3.blake3(path.read_bytes()).digest() for path in paths]
    encoded = [os.fsencode(path) for path in paths]
    assert [bb.hash_file(name) for name in encoded] == expected
    assert [bb.hash_file(BytesPathLike(path)) for path in paths] == expected
    assert bb.hash_files(encoded) == expected
    assert bb.hash_files([BytesPathLike(path) for path in paths] + [None]) == expected + [None]
    # What a walk of a bytes directory gives: names open() reads as they are.
    listed = [os.path.join(os.fsencode(tmp_path), name) for name in os.listdir(os.fsencode(tmp_path))]
    with_contents = [(name, open(name, "rb").read()) for name in listed]
    assert bb.hash_files([name for name, _ in with_contents]) == [blake3.blake3(c).digest() for _, c in with_contents]
    # Binary file names from Arrow, as a manifest of bytes paths holds them.
    for kind in [pa.binary(), pa.large_binary(), pa.binary_view()]:
        assert bb.hash_files(pa.array(encoded + [None], type=kind)) == expected + [None]
    with pytest.raises(TypeError, match="a path is int: give str, bytes or os.PathLike"):
        bb.hash_file(5)
    with pytest.raises(TypeError, match="a path is float"):
        bb.hash_files([encoded[0], 1.5])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's /proc")
def test_proc_files_are_hashed_as_far_as_their_reads_go(tmp_path):
    # /proc's files say they hold 0 bytes whatever they give.
    assert os.stat("/proc/version").st_size == 0
    with open("/proc/version", "rb") as file:
        content = file.read()
    expected = blake3.blake3(content).digest()
    assert content and bb.hash_file("/proc/version") == expected
    small = tmp_path / "small"
    small.write_bytes(b"small")
    digests = bb.hash_files([small, "/proc/version", small])
    assert digests == [blake3.blake3(b"small").digest(), expected, blake3.blake3(b"small").digest()]


# hash_reader: any binary file object, read in windows.


class Chunky(io.RawIOBase):
    """Gives `data` at most `step` bytes a read, then raises `failure` (if
    any) instead of ending."""

    def __init__(self, data, step, failure=None):
        self.data, self.step, self.failure = memoryview(data), step, failure

    def readable(self):
        return True

    def read(self, size=-1):
        if not self.data and self.failure is not None:
            raise self.failure
        take = min(self.step, len(self.data), size if size >= 0 else len(self.data))
        chunk, self.data = bytes(self.data[:take]), self.data[take:]
        return chunk


@pytest.mark.parametrize("engine", engines())
@pytest.mark.parametrize("size", [0, 1025, WINDOW + 1, 2 * WINDOW + 4097])
def test_readers_match_blake3_in_every_mode(engine, size, tmp_path):
    data = pattern(size)
    assert engine.hash_reader(io.BytesIO(data)) == blake3.blake3(data).digest()
    keyed = engine.hash_reader(io.BytesIO(data), key=KEY, length=8)
    assert keyed == blake3.blake3(data, key=KEY).digest()[:8]
    derived = engine.hash_reader(Chunky(data, 100_000), derive_key="files 2026", length=131)
    assert derived == blake3.blake3(data, derive_key_context="files 2026").digest(length=131)
    path = tmp_path / "file"
    path.write_bytes(data)
    with open(path, "rb") as file:
        assert engine.hash_reader(file, length=64) == blake3.blake3(data).digest(length=64)
    for seek, length in [(8, 8), (20, 20), (2**40 + 3, 50)]:
        got = engine.hash_reader(io.BytesIO(data), seek=seek, length=length, key=KEY)
        assert got == blake3.blake3(data, key=KEY).digest(length, seek=seek)
    got = engine.hash_reader(io.BytesIO(data), hex=True, length=40, seek=7)
    assert got == blake3.blake3(data).hexdigest(length=40, seek=7)


class Views(Chunky):
    """Gives its reads as views of its own buffer, as zero-copy readers do,
    or as another bytes-like type."""

    def __init__(self, data, step, kind):
        super().__init__(data, step)
        self.kind = kind

    def read(self, size=-1):
        return self.kind(super().read(size))


@pytest.mark.parametrize(
    "kind",
    [memoryview, bytearray, lambda chunk: np.frombuffer(chunk, np.uint8), lambda chunk: memoryview(chunk).cast("c")],
    ids=["memoryview", "bytearray", "numpy", "memoryview of chars"],
)
def test_readers_that_return_other_bytes_like_objects(kind):
    data = pattern(2 * WINDOW + 77)
    assert bb.hash_reader(Views(data, 1 << 20, kind)) == blake3.blake3(data).digest()
    assert bb.hash_reader(Views(data, 1000, kind), length=50) == blake3.blake3(data).digest(50)


def test_a_reader_that_fails_raises_its_exception_and_bad_readers_a_typeerror(tmp_path):
    data = pattern(3 * 1000)
    with pytest.raises(ConnectionResetError, match="peer"):
        bb.hash_reader(Chunky(data, 1000, ConnectionResetError("peer went away")))
    with pytest.raises(ConnectionResetError, match="peer"):
        bb.hash_reader(Chunky(pattern(WINDOW + 5), 1 << 20, ConnectionResetError("peer")), length=40)
    path = tmp_path / "text"
    path.write_text("words")
    with open(path) as text, pytest.raises(TypeError, match="binary mode"):
        bb.hash_reader(text)
    with pytest.raises(TypeError, match="read"):
        bb.hash_reader(b"bytes are not a reader")
    with pytest.raises(ValueError, match="length"):
        bb.hash_reader(io.BytesIO(data), length=0)
    greedy = Chunky(data, 10)
    greedy.read = lambda size=-1: bytes(size + 1)
    with pytest.raises(ValueError, match="more than it was asked for"):
        bb.hash_reader(greedy)
    greedy.read = lambda size=-1: memoryview(bytes(size + 1))
    with pytest.raises(ValueError, match="more than it was asked for"):
        bb.hash_reader(greedy)
    numbers = Chunky(data, 10)
    numbers.read = lambda size=-1: [1, 2, 3]
    with pytest.raises(TypeError, match="returned list, not a bytes-like object"):
        bb.hash_reader(numbers)


def test_the_gil_is_released_while_a_reader_is_hashed():
    # Windows of 16 MiB, each read with the GIL and hashed without it.
    data = pattern(256 << 20)
    engine = bb.Engine(backend="cpu", threads=1)
    assert_releases_the_gil(lambda: engine.hash_reader(io.BytesIO(data)))
