"""hash_arrow_batches: an Arrow stream or an iterable of batches hashed one
batch at a time, each read only when the last one's output is taken."""

import blake3
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import blake3_batch as bb

KEY = bytes(range(32))


def digests(values, **options):
    out = []
    for v in values:
        if v is None:
            out.append(None)
        else:
            data = v.encode() if isinstance(v, str) else v
            hasher = blake3.blake3(data, key=options["key"]) if "key" in options else blake3.blake3(data)
            out.append(hasher.digest(options.get("length", 32), seek=options.get("seek", 0)))
    return out


class CountingBatches:
    """Record batches of one column made on demand, counting how many were
    made: a stand-in for a scanner over data larger than memory."""

    def __init__(self, count, rows):
        self.made = 0
        self.count, self.rows = count, rows

    def values(self, index):
        return [None if (index + row) % 7 == 3 else f"batch {index} row {row}" * (row % 5) for row in range(self.rows)]

    def __iter__(self):
        for index in range(self.count):
            self.made += 1
            yield pa.record_batch({"text": self.values(index)})


@pytest.mark.parametrize("as_stream", [False, True], ids=["iterable", "RecordBatchReader"])
def test_batches_are_read_one_at_a_time_and_each_output_equals_blake3(as_stream):
    batches = CountingBatches(count=6, rows=500)
    source = iter(batches)
    if as_stream:
        source = pa.RecordBatchReader.from_batches(pa.schema({"text": pa.string()}), source)
    outputs = bb.hash_arrow_batches(source)
    assert batches.made == 0
    first = next(outputs)
    assert batches.made <= 2  # the batch hashed, and at most one read ahead
    assert first.to_pylist() == digests(batches.values(0))
    rest = list(outputs)
    assert batches.made == 6 and len(rest) == 5
    for index, output in enumerate(rest, start=1):
        assert output.to_pylist() == digests(batches.values(index))
    assert list(outputs) == []


def test_options_hex_and_u64_keys():
    chunked = pa.chunked_array([["a", None], [], ["b" * 2000]])
    values = ["a", None, "b" * 2000]
    got = list(bb.hash_arrow_batches(chunked, length=40, seek=9, key=KEY))
    assert [len(chunk) for chunk in got] == [2, 0, 1]
    assert sum((chunk.to_pylist() for chunk in got), []) == digests(values, length=40, seek=9, key=KEY)
    hexes = sum((chunk.to_pylist() for chunk in bb.hash_arrow_batches(chunked, hex=True)), [])
    assert hexes == [None if d is None else d.hex() for d in digests(values)]
    keys = sum((chunk.to_pylist() for chunk in bb.hash_arrow_batches(chunked, as_u64=True)), [])
    assert keys == [None if d is None else int.from_bytes(d[:8], "little") for d in digests(values)]
    engine = bb.Engine(backend="cpu", threads=1)
    assert next(engine.hash_arrow_batches(pa.array(["z"]))).to_pylist() == digests(["z"])


def test_a_parquet_file_batch_by_batch(tmp_path):
    values = [f"doc {i}" * (i % 11) for i in range(3000)]
    path = tmp_path / "docs.parquet"
    pq.write_table(pa.table({"id": range(3000), "text": values}), path, row_group_size=1000)
    batches = pq.ParquetFile(path).iter_batches(batch_size=700, columns=["text"])
    got = [chunk.to_pylist() for chunk in bb.hash_arrow_batches(batches)]
    assert len(got) > 1 and max(map(len, got)) <= 700
    assert sum(got, []) == digests(values)


def test_a_duckdb_query_batch_by_batch():
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    relation = con.sql("select 'row ' || i::varchar as text from range(5000) t(i) order by i")
    got = sum((chunk.to_pylist() for chunk in bb.hash_arrow_batches(relation)), [])
    assert got == digests([f"row {i}" for i in range(5000)])


def test_bad_options_fail_at_the_call_and_bad_batches_when_reached():
    with pytest.raises(ValueError, match="32 bytes"):
        bb.hash_arrow_batches(pa.array(["a"]), key=b"short")
    with pytest.raises(ValueError, match="as_u64"):
        bb.hash_arrow_batches(pa.array(["a"]), as_u64=True, length=8)
    with pytest.raises(TypeError, match="iterable of Arrow arrays"):
        bb.hash_arrow_batches(42)
    no_fields = pa.array([{}], pa.struct([]))
    outputs = bb.hash_arrow_batches([pa.array(["a"]), no_fields, pa.array(["c"])])
    assert next(outputs).to_pylist() == digests(["a"])
    with pytest.raises(TypeError, match=r"cannot hash a column of type struct<>"):
        next(outputs)
    assert next(outputs).to_pylist() == digests(["c"])
    engine = bb.Engine(backend="cpu", threads=1)
    outputs = engine.hash_arrow_batches([pa.array(["a"])])
    engine.close()
    with pytest.raises(ValueError, match="closed"):
        next(outputs)


def test_an_error_of_the_stream_itself_is_raised_and_ends_the_iteration():
    def failing():
        yield pa.record_batch({"text": ["ok"]})
        raise OSError("the disk went away")

    reader = pa.RecordBatchReader.from_batches(pa.schema({"text": pa.string()}), failing())
    outputs = bb.hash_arrow_batches(reader)
    assert next(outputs).to_pylist() == digests(["ok"])
    with pytest.raises(ValueError, match="the disk went away"):
        next(outputs)
    assert list(outputs) == []


def test_an_error_names_the_batch_and_the_row_counted_from_the_start_of_the_stream():
    lists = pa.array([[1], [2], [3, None], [4]], pa.list_(pa.int64()))
    reader = pa.RecordBatchReader.from_batches(
        pa.schema({"values": lists.type}), [pa.record_batch({"values": lists.slice(0, 2)}), pa.record_batch({"values": lists.slice(2)})]
    )
    outputs = bb.hash_arrow_batches(reader, as_u64=True)
    next(outputs)
    with pytest.raises(ValueError, match=r"^batch 1 of the stream: row 2 of the \S+ column holds a list of numbers or booleans with a null") as raised:
        next(outputs)
    # The engine's own error, unrenamed, is the cause.
    assert type(raised.value.__cause__) is ValueError
    assert str(raised.value.__cause__).startswith("row 2 of the ")


def test_rows_count_on_past_a_batch_that_failed_and_within_one_without_a_length():
    class NoLength:
        def __init__(self, array):
            self.array = array

        def __arrow_c_array__(self, requested_schema=None):
            return self.array.__arrow_c_array__(requested_schema)

    bad = pa.array([[7, None]], pa.list_(pa.int8()))
    outputs = bb.hash_arrow_batches([pa.array(["a", "b"]), bad, pa.array([[1], [None]], pa.list_(pa.int8())), NoLength(bad), NoLength(bad), pa.array(["c"])])
    assert next(outputs).to_pylist() == digests(["a", "b"])
    with pytest.raises(ValueError, match=r"^batch 1 of the stream: row 2 of"):
        next(outputs)
    with pytest.raises(ValueError, match=r"^batch 2 of the stream: row 4 of"):
        next(outputs)
    with pytest.raises(ValueError, match=r"^batch 3 of the stream: row 5 of"):
        next(outputs)
    # The failed batch before had no length: rows now count within the batch.
    with pytest.raises(ValueError, match=r"^batch 4 of the stream \(rows counted within the batch\): row 0 of"):
        next(outputs)
    assert next(outputs).to_pylist() == digests(["c"])


def test_a_next_while_a_batch_is_read_is_refused_as_a_generator_refuses_it():
    def batches():
        yield pa.array(["a"])
        yield next(outputs)  # the iterator, re-entered while it reads

    outputs = bb.hash_arrow_batches(batches())
    assert next(outputs).to_pylist() == digests(["a"])
    with pytest.raises(RuntimeError, match="borrowed"):
        next(outputs)
    assert list(outputs) == []
