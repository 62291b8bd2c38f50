"""Any object that speaks the Arrow PyCapsule interface is read in place, not
just pyarrow's."""

import blake3
import pyarrow as pa
import pytest

import blake3_batch as bb

VALUES = [b"alpha", None, b"", b"x" * 2000]
EXPECTED = [None if v is None else blake3.blake3(v).digest() for v in VALUES]


class OnlyArray:
    """Exposes an array through __arrow_c_array__ alone (as nanoarrow and
    arro3 arrays do)."""

    def __init__(self, array):
        self._array = array

    def __arrow_c_array__(self, requested_schema=None):
        return self._array.__arrow_c_array__(requested_schema)


class OnlyStream:
    """Exposes chunks through __arrow_c_stream__ alone (as Polars Series and
    DuckDB results do)."""

    def __init__(self, chunked):
        self._chunked = chunked

    def __arrow_c_stream__(self, requested_schema=None):
        return self._chunked.__arrow_c_stream__(requested_schema)


def test_an_object_with_only_arrow_c_array_is_one_array():
    got = bb.hash_arrow(OnlyArray(pa.array(VALUES)))
    assert isinstance(got, pa.FixedSizeBinaryArray)
    assert got.to_pylist() == EXPECTED


def test_an_object_with_only_arrow_c_stream_keeps_its_chunks():
    chunked = pa.chunked_array([VALUES[:1], VALUES[1:3], [], VALUES[3:]], type=pa.large_binary())
    got = bb.hash_arrow(OnlyStream(chunked))
    assert isinstance(got, pa.ChunkedArray)
    assert [len(chunk) for chunk in got.chunks] == [1, 2, 0, 1]
    assert got.to_pylist() == EXPECTED


def test_an_empty_chunked_array_gives_an_empty_one():
    got = bb.hash_arrow(pa.chunked_array([], type=pa.string()))
    assert isinstance(got, pa.ChunkedArray) and len(got) == 0
    assert got.type == pa.binary(32)


def test_a_record_batch_column_and_a_table_column():
    table = pa.table({"text": pa.array(["a", "b", None])})
    assert bb.hash_arrow(table["text"]).to_pylist() == [blake3.blake3(b"a").digest(), blake3.blake3(b"b").digest(), None]
    batch = table.to_batches()[0]
    assert bb.hash_arrow(batch.column(0)).to_pylist() == [blake3.blake3(b"a").digest(), blake3.blake3(b"b").digest(), None]


def test_a_column_of_the_null_type_gets_null_digests():
    assert bb.hash_arrow(pa.array([None, None])).to_pylist() == [None, None]
    assert bb.hash_arrow(pa.chunked_array([[None], []], type=pa.null()), hex=True).to_pylist() == [None]
    assert bb.hash_arrow_u64(pa.nulls(3)).to_pylist() == [None] * 3


def test_polars_series_when_polars_is_installed():
    pl = pytest.importorskip("polars")
    series = pl.Series("text", ["alpha", None, "beta"])
    assert bb.hash_arrow(series).to_pylist() == [blake3.blake3(b"alpha").digest(), None, blake3.blake3(b"beta").digest()]
