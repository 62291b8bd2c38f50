"""rows=True: each row of a table (or struct column) hashed over all its
columns, each value framed (0x00 for a null; 0x01, its length as 8
little-endian bytes, its bytes). The expected digests are blake3-py's over
that framing, built here from the rows' Python values."""

import numpy as np
import pyarrow as pa
import pytest
from conftest import engines, framed, kwargs_of, reference

import blake3_batch as bb


def mixed_table(rows, seed=3):
    """A table of a string, an int64, a binary, a list<int32>, a dictionary
    column and an all-null one, with nulls, and each row's values as bytes."""
    rng = np.random.default_rng(seed)
    text = [None if i % 5 == 2 else "é" * int(rng.integers(0, 30)) + str(i) for i in range(rows)]
    ids = [None if i % 4 == 1 else int(rng.integers(-(2**63), 2**63 - 1)) for i in range(rows)]
    blobs = [None if i % 7 == 3 else rng.bytes(int(rng.integers(0, 3000))) for i in range(rows)]
    tokens = [None if i % 6 == 0 else [int(v) for v in rng.integers(-100, 100, int(rng.integers(0, 9)))] for i in range(rows)]
    moods = [None if i % 9 == 4 else ["happy", "sad", ""][i % 3] for i in range(rows)]
    table = pa.table(
        {
            "text": pa.array(text, pa.string()),
            "id": pa.array(ids, pa.int64()),
            "blob": pa.array(blobs, pa.binary()),
            "tokens": pa.array(tokens, pa.list_(pa.int32())),
            "mood": pa.array(moods).dictionary_encode(),
            "nothing": pa.nulls(rows),
        }
    )
    values = [
        [
            None if t is None else t.encode(),
            None if i is None else i.to_bytes(8, "little", signed=True),
            b,
            None if k is None else np.array(k, "<i4").tobytes(),
            None if m is None else m.encode(),
            None,
        ]
        for t, i, b, k, m in zip(text, ids, blobs, tokens, moods)
    ]
    return table, values


@pytest.mark.parametrize("engine", engines())
@pytest.mark.parametrize("mode", ["hash", "keyed_hash", "derive_key"])
def test_rows_of_a_table_hash_their_framed_values(engine, mode):
    table, values = mixed_table(300)
    expected = [reference(framed(row), mode) for row in values]
    kwargs = kwargs_of(mode)
    chunked = engine.hash_arrow(table, rows=True, **kwargs)
    assert isinstance(chunked, pa.ChunkedArray)
    assert chunked.to_pylist() == expected
    batch = table.to_batches()[0]
    assert engine.hash_arrow(batch, rows=True, **kwargs).to_pylist() == expected
    assert engine.hash_arrow(batch.slice(40, 100), rows=True, **kwargs).to_pylist() == expected[40:140]
    far = engine.hash_arrow(table, rows=True, length=70, seek=500, **kwargs).to_pylist()
    assert far == [reference(framed(row), mode, 70, 500) for row in values]


def test_several_chunks_give_one_output_chunk_each_and_u64_hex_and_batches():
    table, values = mixed_table(250, seed=8)
    table = pa.concat_tables([table.slice(0, 100), table.slice(100)])
    expected = [reference(framed(row)) for row in values]
    digests = bb.hash_arrow(table, rows=True)
    assert [len(chunk) for chunk in digests.chunks] == [100, 150]
    assert digests.to_pylist() == expected
    assert bb.hash_arrow(table, rows=True, hex=True).to_pylist() == [d.hex() for d in expected]
    keys = bb.hash_arrow_u64(table, rows=True).to_pylist()
    assert keys == [int.from_bytes(d[:8], "little") for d in expected]
    batches = list(bb.hash_arrow_batches(table.to_reader(), rows=True))
    assert [b.to_pylist() for b in batches] == [expected[:100], expected[100:]]
    as_u64 = list(bb.hash_arrow_batches(iter(table.to_batches()), rows=True, as_u64=True))
    assert [k for b in as_u64 for k in b.to_pylist()] == keys


def test_a_struct_column_keeps_its_null_rows_and_framing_keeps_rows_apart():
    a = pa.array(["ab", "a", None, "", "x"])
    b = pa.array(["c", "bc", "", None, "y"])
    struct = pa.StructArray.from_arrays([a, b], names=["a", "b"], mask=pa.array([False] * 4 + [True]))
    digests = bb.hash_arrow(struct, rows=True).to_pylist()
    rows = [["ab", "c"], ["a", "bc"], [None, ""], ["", None]]
    expected = [reference(framed([None if v is None else v.encode() for v in row])) for row in rows]
    assert digests == expected + [None]
    assert len(set(expected)) == 4
    # A one-column table's rows are framed too; without rows= it is the column.
    one = pa.table({"a": a})
    assert bb.hash_arrow(one, rows=True).to_pylist()[0] == reference(framed([b"ab"]))
    assert bb.hash_arrow(one).to_pylist()[0] == reference(b"ab")


def test_data_frames_of_polars_and_pandas():
    table, values = mixed_table(50, seed=5)
    table = table.drop_columns(["nothing", "mood"])
    expected = [reference(framed(row[:4])) for row in values]
    polars = pytest.importorskip("polars")
    frame = polars.from_arrow(table)
    assert bb.hash_arrow(frame, rows=True).to_pylist() == expected
    pandas = pytest.importorskip("pandas")
    frame = table.select(["text", "blob"]).to_pandas()
    if not hasattr(frame, "__arrow_c_stream__"):
        pytest.skip(f"pandas {pandas.__version__} does not export Arrow streams")
    got = bb.hash_arrow(frame, rows=True).to_pylist()
    assert got == [reference(framed(row[0:1] + row[2:3])) for row in values]


def test_tables_whose_rows_cannot_be_hashed_raise_what_to_fix():
    column = pa.array(["a", "b"])
    with pytest.raises(TypeError, match="rows=True hashes each row of a table"):
        bb.hash_arrow(column, rows=True)
    no_fields = pa.array([{}, {}], pa.struct([]))
    runs = pa.RunEndEncodedArray.from_arrays([2], no_fields.slice(0, 1))
    odd = pa.table({"text": column, "runs": runs, "flag": [True, False], "empty": no_fields})
    with pytest.raises(TypeError, match=r"columns runs \(RunEndEncoded.*\), empty \(Struct\(\)\)"):
        bb.hash_arrow(odd, rows=True)
    with pytest.raises(TypeError, match="pass rows=True"):
        bb.hash_arrow(pa.table({"a": column, "b": column}))
    holes = pa.table({"text": column, "tokens": pa.array([[1], [2, None]], pa.list_(pa.int32()))})
    with pytest.raises(ValueError, match="row 1 of the table holds a list of numbers or booleans with a null value"):
        bb.hash_arrow(holes, rows=True)
    with pytest.raises(TypeError, match="no columns"):
        bb.hash_arrow(pa.table({"a": column}).drop_columns(["a"]), rows=True)
