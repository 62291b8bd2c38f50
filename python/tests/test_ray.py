"""Ray Data: the digest column on a local cluster, and the deduplication
example finding exactly the planted duplicates."""

import pathlib
import sys

import blake3
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import blake3_batch as bb
from conftest import framed

ray = pytest.importorskip("ray")
EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield ray
    ray.shutdown()


def test_hash_column_adds_the_digest_to_a_batch_in_process():
    table = pa.table({"text": ["a", None, "b"], "n": [1, 2, 3]})
    out = bb.ray.HashColumn("text", out="d", threads=1)(table)
    assert out.column_names == ["text", "n", "d"]
    assert out["d"].to_pylist() == [blake3.blake3(b"a").digest(), None, blake3.blake3(b"b").digest()]
    wide = bb.ray.HashColumn("text", out="d", length=64)(table)
    assert wide["d"].type == pa.binary(64)
    assert wide["d"].to_pylist() == [blake3.blake3(b"a").digest(64), None, blake3.blake3(b"b").digest(64)]
    far = bb.ray.HashColumn("text", out="d", length=16, seek=100)(table)
    assert far["d"].to_pylist() == [blake3.blake3(b"a").digest(16, seek=100), None, blake3.blake3(b"b").digest(16, seek=100)]
    hexes = bb.ray.HashColumn("text", out="d", hex=True)(table)
    assert hexes["d"].type == pa.string()
    assert hexes["d"].to_pylist() == [blake3.blake3(b"a").hexdigest(), None, blake3.blake3(b"b").hexdigest()]
    with pytest.raises(ValueError, match="as_u64"):
        bb.ray.HashColumn("text", as_u64=True, seek=8)
    with pytest.raises(ValueError, match="as_u64"):
        bb.ray.HashColumn("text", as_u64=True, hex=True)
    with pytest.raises(ValueError, match="seek="):
        bb.ray.HashColumn("text", seek=-1)
    keys = bb.ray.HashColumn("text", out="d", as_u64=True)(table.to_batches()[0])
    assert keys["d"].to_pylist()[0] == int.from_bytes(blake3.blake3(b"a").digest()[:8], "little")
    with pytest.raises(KeyError, match="no column 'body'"):
        bb.ray.HashColumn("body")(table)
    with pytest.raises(TypeError, match="pyarrow, pandas or numpy"):
        bb.ray.HashColumn("text")([{"text": "a"}])
    with pytest.raises(ValueError, match="32 bytes"):
        bb.ray.HashColumn("text", key=b"short")


def test_hash_column_over_a_list_of_columns_hashes_each_row_over_them():
    table = pa.table({"text": ["a", None, "b"], "n": pa.array([1, 2, None], pa.int64()), "flag": [True, False, True]})
    out = bb.ray.HashColumn(["n", "text"], out="d", threads=1)(table)
    expected = [
        blake3.blake3(framed([None if n is None else n.to_bytes(8, "little"), None if t is None else t.encode()])).digest()
        for n, t in zip([1, 2, None], ["a", None, "b"])
    ]
    assert out.column_names == ["text", "n", "flag", "d"]
    assert out["d"].to_pylist() == expected
    keys = bb.ray.HashColumn(("n", "text"), out="k", as_u64=True)(table)
    assert keys["k"].to_pylist() == [int.from_bytes(e[:8], "little") for e in expected]
    one = bb.ray.HashColumn(["text"], out="d")(table)
    assert one["d"].to_pylist()[0] == blake3.blake3(framed([b"a"])).digest()
    with pytest.raises(KeyError, match="no column 'body'"):
        bb.ray.HashColumn(["text", "body"])(table)
    flagged = bb.ray.HashColumn(["text", "flag"], out="d")(table)
    assert flagged["d"].to_pylist()[1] == blake3.blake3(framed([None, b"\0"])).digest()
    # A column of runs of structs of no fields, which have no bytes to hash.
    no_fields = pa.array([{}], pa.struct([]))
    runs = table.append_column("runs", pa.RunEndEncodedArray.from_arrays([len(table)], no_fields))
    with pytest.raises(TypeError, match=r"runs \(RunEndEncoded"):
        bb.ray.HashColumn(["text", "runs"])(runs)
    with pytest.raises(TypeError, match="non-empty list"):
        bb.ray.HashColumn([])


def test_numpy_batches_get_a_numpy_column_and_tensor_rows_hash_as_their_bytes():
    texts = np.array(["a", "", "b"])
    out = bb.ray.HashColumn("text", out="d", threads=1)({"text": texts, "n": np.arange(3)})
    assert list(out) == ["text", "n", "d"] and out["d"].dtype == object
    assert list(out["d"]) == [blake3.blake3(t.encode()).digest() for t in texts]
    blobs = np.array([b"x", None], dtype=object)
    assert list(bb.ray.HashColumn("b", out="d")({"b": blobs})["d"]) == [blake3.blake3(b"x").digest(), None]
    tensors = np.arange(2 * 3 * 4, dtype="<f8").reshape(2, 3, 4)
    for as_u64 in (False, True):
        got = bb.ray.HashColumn("t", out="d", as_u64=as_u64)({"t": tensors})["d"]
        want = [blake3.blake3(t.tobytes()).digest() for t in tensors]
        if as_u64:
            assert got.dtype == np.uint64
            want = [int.from_bytes(w[:8], "little") for w in want]
        assert list(got) == want
    # Not C-contiguous: the rows' values in row order all the same.
    transposed = np.arange(12, dtype="<i2").reshape(3, 4).T
    got = bb.ray.HashColumn("t", out="d")({"t": transposed})["d"]
    assert list(got) == [blake3.blake3(row.tobytes()).digest() for row in transposed]
    rows = bb.ray.HashColumn(["text", "n"], out="d")({"text": texts, "n": np.arange(3, dtype="<i8")})["d"]
    assert rows[1] == blake3.blake3(framed([b"", (1).to_bytes(8, "little")])).digest()
    # Tensors of varying shape (Ray's numpy batches of them): each its own
    # tobytes(), the shape not part of it; a missing one a null digest.
    ragged = np.empty(3, dtype=object)
    ragged[0], ragged[2] = np.zeros((2, 3), "<f4"), np.arange(3, dtype="<i2")
    got = bb.ray.HashColumn("t", out="d")({"t": ragged})["d"]
    assert list(got) == [blake3.blake3(ragged[0].tobytes()).digest(), None, blake3.blake3(ragged[2].tobytes()).digest()]
    with pytest.raises(KeyError, match="no column 'body'"):
        bb.ray.HashColumn("body")({"text": texts})


def test_pandas_batches_get_an_arrow_backed_column_without_their_index():
    pd = pytest.importorskip("pandas")
    batch = pd.DataFrame({"text": ["a", None, "a"], "n": [3, 2, 1]}).sort_values("n")
    out = bb.ray.HashColumn("text", out="d")(batch)
    assert list(out.columns) == ["text", "n", "d"] and list(out.index) == [2, 1, 0]
    assert pa.array(out["d"]).type == pa.binary(32)
    assert pa.array(out["d"]).to_pylist() == [blake3.blake3(b"a").digest(), None, blake3.blake3(b"a").digest()]
    assert list(batch.columns) == ["text", "n"]  # the caller's batch is left as it was
    rows = pa.array(bb.ray.HashColumn(["text", "n"], out="d", hex=True)(batch)["d"]).to_pylist()
    assert rows[2] == blake3.blake3(framed([b"a", (3).to_bytes(8, "little")])).hexdigest()
    with pytest.raises(KeyError, match="no column 'body'"):
        bb.ray.HashColumn("body")(batch)


def test_map_batches_in_every_batch_format_equals_blake3(local_ray):
    texts = [f"row {i}" * (i % 5) for i in range(600)]
    ds = ray.data.from_arrow(pa.table({"text": texts}))
    for batch_format in ("default", "numpy", "pandas", "pyarrow"):
        hashed = ds.map_batches(bb.ray.HashColumn("text", out="d"), batch_format=batch_format, batch_size=128)
        got = {row["text"]: row["d"] for row in hashed.take_all()}
        assert got == {t: blake3.blake3(t.encode()).digest() for t in texts}, batch_format
    tensors = ray.data.from_numpy(np.arange(40 * 2 * 3, dtype="<f4").reshape(40, 2, 3))
    digests = [
        sorted(row["d"] for row in tensors.map_batches(bb.ray.HashColumn("data", out="d"), batch_format=f).take_all())
        for f in ("numpy", "pyarrow", "pandas")
    ]
    assert digests[0] == digests[1] == digests[2]


def test_map_batches_with_hash_column_on_actors_equals_blake3(local_ray):
    texts = [f"row {i}" * (i % 7) for i in range(5000)]
    ds = ray.data.from_arrow(pa.table({"text": texts}))
    ds = ds.map_batches(bb.ray.HashColumn("text", out="blake3"), batch_format="pyarrow", batch_size=1000, concurrency=2)
    rows = ds.take_all()
    got = {row["text"]: row["blake3"] for row in rows}
    assert len(rows) == len(texts)
    assert all(got[t] == blake3.blake3(t.encode()).digest() for t in texts)


def test_an_engine_a_function_holds_goes_with_it_to_ray_tasks(local_ray):
    # Pickled as its arguments: each worker builds an engine of its own.
    engine = bb.Engine(backend="cpu", threads=1)
    texts = [f"row {i}" for i in range(300)]
    ds = ray.data.from_arrow(pa.table({"text": texts}))
    hashed = ds.map_batches(lambda b: b.append_column("d", engine.hash_arrow(b["text"])), batch_format="pyarrow")
    assert {row["text"]: row["d"] for row in hashed.take_all()} == {t: blake3.blake3(t.encode()).digest() for t in texts}
    task = ray.remote(lambda engine, blobs: (engine.info()["threads"], engine.hash_many(blobs)))
    assert ray.get(task.remote(engine, [b"x"])) == (1, [blake3.blake3(b"x").digest()])


def test_a_tensor_column_gets_each_tensors_digest(local_ray):
    tensors = np.arange(60 * 3 * 4, dtype="<f4").reshape(60, 3, 4)
    ds = ray.data.from_numpy(tensors)  # Ray's fixed-shape tensor column "data"
    ds = ds.map_batches(bb.ray.HashColumn("data", out="d"), batch_format="pyarrow", batch_size=16)
    rows = ds.take_all()
    assert sorted(row["d"] for row in rows) == sorted(blake3.blake3(t.tobytes()).digest() for t in tensors)
    assert all(row["d"] == blake3.blake3(np.asarray(row["data"], "<f4").tobytes()).digest() for row in rows)


def test_a_tensor_gets_one_digest_whether_its_block_holds_tensors_of_one_shape_or_not(local_ray):
    # Ray makes a block's tensor column fixed-shape where its tensors share
    # a shape and variable-shaped where they do not: tensor 0 and its copy,
    # tensor 2, sit in one of each, and must get one digest (their values'),
    # in every batch format, and through hash_arrow on the batch itself.
    square = np.arange(4, dtype="<f4").reshape(2, 2)
    tensors = [square, square + 1, square.copy(), np.arange(3, dtype="<f4").reshape(1, 3)]
    want = [blake3.blake3(t.tobytes()).digest() for t in tensors]
    ds = ray.data.from_items([{"id": i, "t": t} for i, t in enumerate(tensors)], override_num_blocks=2)
    blocks = list(ds.iter_batches(batch_size=2, batch_format="pyarrow"))
    storages = [pa.types.is_struct(block.schema.field("t").type.storage_type) for block in blocks]
    assert sorted(storages) == [False, True]  # one block of each kind
    for block in blocks:
        got = bb.hash_arrow(block["t"]).to_pylist()
        assert got == [want[i] for i in block["id"].to_pylist()]
        # And as one of several columns: its values framed as any column's.
        rows = bb.hash_arrow(block.select(["t", "id"]), rows=True).to_pylist()
        assert rows == [
            blake3.blake3(framed([tensors[i].tobytes(), np.int64(i).tobytes()])).digest() for i in block["id"].to_pylist()
        ]
    for batch_format in ("pyarrow", "pandas", "numpy"):
        out = ds.map_batches(bb.ray.HashColumn("t", out="d"), batch_format=batch_format, batch_size=2).take_all()
        assert sorted((row["id"], bytes(row["d"])) for row in out) == list(enumerate(want))


def test_a_string_tensor_gets_the_digest_of_its_strings_in_every_batch_format(local_ray):
    # Ray keeps a "<U" tensor's elements as fixed_size_binary UTF-32 of the
    # block's widest string, and a numpy batch gets them back at that
    # width: a tensor is the list of its strings, whatever met it in a
    # block, in blocks of one shape or not, and in every batch format.
    tensors = [np.array([["ab", "c"], ["d", "éfg"]]), np.array([["x", "yz"], ["", "w"]]), np.array([["q", "rst"]])]
    want = [blake3.blake3(framed([s.encode() for s in t.reshape(-1).tolist()])).digest() for t in tensors]
    ds = ray.data.from_items([{"id": i, "t": t} for i, t in enumerate(tensors)], override_num_blocks=2)
    for batch_format in ("pyarrow", "pandas", "numpy"):
        out = ds.map_batches(bb.ray.HashColumn("t", out="d"), batch_format=batch_format, batch_size=2).take_all()
        assert sorted((row["id"], bytes(row["d"])) for row in out) == list(enumerate(want)), batch_format
    # hash_arrow on a slice of a block, and a null row, through both storages.
    for shapes in ([0, 1], [0, 2]):
        items = [{"t": tensors[i]} for i in [*shapes, *shapes]]
        block = ray.data.from_items(items, override_num_blocks=1).take_batch(4, batch_format="pyarrow")
        column = block["t"].combine_chunks()
        if shapes[1] == 2:  # of two shapes: varying-shape storage (one shape: either, by Ray's version)
            assert pa.types.is_struct(column.type.storage_type)
        assert bb.hash_arrow(column.slice(1)).to_pylist() == [want[i] for i in [shapes[1], shapes[0], shapes[1]]]
        storage = column.storage
        null_rows = pc.if_else(pa.array([True, False, True, False]), pa.nulls(4, storage.type), storage)
        with_nulls = pa.ExtensionArray.from_storage(column.type, null_rows)
        assert bb.hash_arrow(with_nulls).to_pylist() == [None, want[shapes[1]], None, want[shapes[1]]]


def test_a_column_of_lists_of_strings_gets_one_digest_in_every_batch_format(local_ray):
    # A numpy batch holds each row as an object array of Python strings.
    tags = pa.array([["a", "b"], None, [], ["c\0", None], ["a", "b"]] * 40, pa.list_(pa.string()))
    ds = ray.data.from_arrow(pa.table({"id": range(len(tags)), "tags": tags}))
    want = bb.hash_arrow(tags).to_pylist()
    assert want[0] == blake3.blake3(framed([b"a", b"b"])).digest() and want[1] is None
    out = ds.map_batches(bb.ray.HashColumn("tags", out="d"), batch_format="numpy", batch_size=64).take_all()
    assert sorted((row["id"], row["d"]) for row in out) == list(enumerate(want))
    # Each format's batch as Ray hands it out (Ray before 2.5x cannot take
    # a pandas batch of this column back from map_batches, whatever it holds).
    for batch_format in ("pyarrow", "pandas", "numpy"):
        batch = ds.take_batch(len(tags), batch_format=batch_format)
        digests = bb.ray.HashColumn("tags", out="d")(batch)["d"]
        got = list(digests) if batch_format == "numpy" else pa.array(digests).to_pylist()
        assert got == want, batch_format


def test_a_column_of_pickled_objects_is_refused_with_what_to_do(local_ray):
    # Tensors of different numbers of dimensions: Ray pickles them in Arrow.
    items = [{"t": np.zeros((2, 2), "<f4")}, {"t": np.ones(3, "<f4")}]
    try:
        batch = ray.data.from_items(items, override_num_blocks=1).take_batch(2, batch_format="pyarrow")
    except Exception:  # Ray before 2.5x refuses them in one block
        pytest.skip("this Ray version does not pickle tensors of different dimensions")
    assert batch.schema.field("t").type.extension_name == "ray.data.arrow_pickled_object"
    with pytest.raises(TypeError, match=r"pickled Python objects.*batch_format=\"numpy\""):
        bb.ray.HashColumn("t")(batch)
    with pytest.raises(TypeError, match="column 't': Ray stored it as pickled"):
        bb.hash_arrow(batch, rows=True)
    # As numpy, the same rows are arrays, each hashed as its bytes.
    arrays = np.empty(3, dtype=object)
    arrays[0], arrays[1] = items[0]["t"], items[1]["t"]
    got = bb.ray.HashColumn("t", out="d")({"t": arrays})
    assert list(got["d"]) == [blake3.blake3(item["t"].tobytes()).digest() for item in items] + [None]


def test_the_dedup_example_finds_exactly_the_planted_duplicates(local_ray, tmp_path):
    sys.path.insert(0, str(EXAMPLES))
    try:
        import dedup_ray
    finally:
        sys.path.remove(str(EXAMPLES))
    source = tmp_path / "in" / "docs.parquet"
    expected_ids = dedup_ray.generate(str(source), 200_000, duplicate_share=0.1)
    assert 170_000 < len(expected_ids) < 195_000  # duplicates were planted

    rows_in, rows_out = dedup_ray.main(
        ["--input", str(source), "--output", str(tmp_path / "out"), "--id-column", "id", "--column", "text"]
    )
    kept = pq.read_table(tmp_path / "out")
    assert rows_in == 200_000 and rows_out == len(expected_ids)
    assert sorted(kept["id"].to_pylist()) == expected_ids
    assert kept.column_names == ["id", "text"]
    assert len(set(kept["text"].to_pylist())) == len(kept)


def test_hash_files_adds_each_files_digest_in_process(tmp_path):
    paths = []
    for index in range(5):
        path = tmp_path / f"f{index}"
        path.write_bytes(bytes([index]) * (index * 1000))
        paths.append(str(path))
    missing = str(tmp_path / "missing")
    table = pa.table({"path": paths[:2] + [None] + paths[2:], "n": range(6)})
    out = bb.ray.HashFiles(threads=1)(table)
    assert out.column_names == ["path", "n", "blake3"]
    expected = [blake3.blake3(pathlib.Path(p).read_bytes()).digest() for p in paths]
    assert out["blake3"].to_pylist() == expected[:2] + [None] + expected[2:]
    keyed = bb.ray.HashFiles("path", out="k", length=8, key=bytes(32))(table.to_batches()[0])
    assert keyed["k"].type == pa.binary(8)
    assert keyed["k"].to_pylist()[0] == blake3.blake3(b"", key=bytes(32)).digest()[:8]
    with_missing = pa.table({"path": [paths[1], missing]})
    with pytest.raises(FileNotFoundError, match="missing"):
        bb.ray.HashFiles()(with_missing)
    assert bb.ray.HashFiles(errors="none")(with_missing)["blake3"].to_pylist() == [expected[1], None]
    with pytest.raises(ValueError, match="errors"):
        bb.ray.HashFiles(errors="skip")
    wide = bb.ray.HashFiles("path", out="w", length=64)(table.to_batches()[0])
    assert wide["w"].type == pa.binary(64)
    assert wide["w"].to_pylist()[0] == blake3.blake3(b"").digest(length=64)
    far = bb.ray.HashFiles("path", out="w", length=40, seek=64)(table.to_batches()[0])
    assert far["w"].to_pylist()[0] == blake3.blake3(b"").digest(length=40, seek=64)
    hexes = bb.ray.HashFiles("path", out="h", hex=True)(table)
    assert hexes["h"].type == pa.string()
    assert hexes["h"].to_pylist() == [e.hex() for e in expected[:2]] + [None] + [e.hex() for e in expected[2:]]
    with pytest.raises(ValueError, match="length"):
        bb.ray.HashFiles(length=0)
    with pytest.raises(KeyError, match="no column 'path'"):
        bb.ray.HashFiles()(pa.table({"file": paths}))
    # NumPy and pandas batches: the same digests, in their own format.
    numpy_out = bb.ray.HashFiles()({"path": np.array(paths[:2] + [None] + paths[2:], dtype=object)})
    assert list(numpy_out["blake3"]) == expected[:2] + [None] + expected[2:]
    pytest.importorskip("pandas")
    pandas_out = bb.ray.HashFiles(hex=True)(table.to_pandas().sort_values("n", ascending=False))
    assert pa.array(pandas_out["blake3"]).to_pylist() == [e.hex() for e in expected[::-1][:3]] + [None] + [e.hex() for e in expected[::-1][3:]]


def test_map_batches_with_hash_files_on_actors_equals_blake3(local_ray, tmp_path):
    paths = []
    for index in range(300):
        path = tmp_path / f"f{index}"
        path.write_bytes(index.to_bytes(2, "little") * (index % 50))
        paths.append(str(path))
    ds = local_ray.data.from_items([{"path": p} for p in paths])
    hashed = ds.map_batches(bb.ray.HashFiles("path"), batch_format="pyarrow", batch_size=64, concurrency=2)
    rows = {row["path"]: row["blake3"] for row in hashed.take_all()}
    assert rows == {p: blake3.blake3(pathlib.Path(p).read_bytes()).digest() for p in paths}
