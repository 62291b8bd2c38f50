"""hash_file: a file's digest, read in windows with the GIL released,
against blake3-py in every mode on every engine; paths that name no file
raise the OSError that fits."""

import blake3
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
        bb.hash_file(path, length=33)
    with pytest.raises(ValueError, match="32 bytes"):
        bb.hash_file(path, key=b"short")
    with pytest.raises(TypeError):
        bb.hash_file(3.5)


def test_the_gil_is_released_while_a_file_is_hashed(tmp_path):
    path = tmp_path / "file"
    path.write_bytes(pattern(256 << 20))
    engine = bb.Engine(backend="cpu", threads=1)
    assert_releases_the_gil(lambda: engine.hash_file(path))
