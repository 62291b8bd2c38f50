"""Throughput of blake3_batch against hashing row by row in Python, on the same
generated column, in one run: GB/s of values and the speedup over a blake3-py
loop; then extended output (length=64) against blake3-py's digest(64); then
hex digests (hex=True) against hexdigest() and .hex() loops; then rows of
numbers (token-id lists, embeddings) and a dictionary (categorical)
column against the same bytes as a binary column and a blake3-py loop over
each row's bytes; then a table's rows over all their columns
(rows=True) against the same framed rows as one column; then the Polars namespace (pl.col(c).blake3.digest() and
.u64()) against hash_arrow on the Series, a blake3-py loop and Polars' own
non-cryptographic hash(); then the DuckDB SQL functions against a
blake3-py function and DuckDB's sha256, md5 and hash; then hash_many over
memoryviews of one buffer against the same values as bytes and a
blake3-py loop; then files of a directory, by hash_files against reading
and hashing each in a Python loop.
Usage: python bench.py [--megabytes 64] [--sizes 64,1024,mixed]
[--backend gpu] [--xof 64] [--no-hex] [--no-numbers] [--no-rows] [--no-polars] [--no-duckdb]
[--no-buffers] [--files 20000]"""

from __future__ import annotations

import argparse
import hashlib
import os
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import blake3_batch as bb


def column(total, size, rng):
    """About `total` bytes of random values: all `size` bytes, or lengths
    uniform in 1..=1024 for "mixed"."""
    if size == "mixed":
        lengths = rng.integers(1, 1025, total // 512)
    else:
        lengths = np.full(total // int(size), int(size))
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = rng.integers(0, 256, int(offsets[-1]), dtype=np.uint8)
    return pa.Array.from_buffers(pa.large_binary(), len(lengths), [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def in_pinned_memory(engine, values):
    """The same column with its values in a pinned buffer of `engine`, which
    its GPU copies from where they lie (ordinary memory without a GPU)."""
    _, offsets, data = values.buffers()
    buffer = engine.pinned_buffer(data.size)
    view = np.asarray(buffer)
    view[:] = np.frombuffer(data, np.uint8)
    return pa.Array.from_buffers(values.type, len(values), [None, offsets, pa.py_buffer(view)])


def best(run, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--megabytes", type=int, default=64)
    parser.add_argument("--sizes", default="64,1024,mixed")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--files", type=int, default=20000, help="files of 100..8000 bytes for the files table (0: none)")
    parser.add_argument("--xof", type=int, default=64, help="output length for the extended-output table (0: none)")
    parser.add_argument("--no-hex", dest="hex", action="store_false", help="leave out the hex-digest table")
    parser.add_argument("--no-numbers", dest="numbers", action="store_false", help="leave out the rows-of-numbers table")
    parser.add_argument("--no-rows", dest="rows", action="store_false", help="leave out the table-rows table")
    parser.add_argument("--no-polars", dest="polars", action="store_false", help="leave out the Polars table")
    parser.add_argument("--no-duckdb", dest="duckdb", action="store_false", help="leave out the DuckDB table")
    parser.add_argument("--no-buffers", dest="buffers", action="store_false", help="leave out the memoryview-items table")
    parser.add_argument("--backend", choices=["auto", "cpu", "gpu"], help="an engine of its own (default: the shared one)")
    args = parser.parse_args()
    try:
        import blake3
    except ImportError:
        blake3 = None
    rng = np.random.default_rng(1)
    engine = bb.Engine(backend=args.backend) if args.backend else bb.default_engine()
    one = bb.Engine(backend="cpu", threads=1)
    info = engine.info()
    gpu = f", GPU {info['gpu']}" if info["gpu"] else ""
    print(f"blake3_batch {bb.__version__}: {info['backend']}, {info['cpu_backend']} x {info['threads']} threads{gpu}; {os.cpu_count()} CPUs")
    print(f"{args.megabytes} MiB a case, best of {args.repeat}; GB/s (speedup over the blake3-py loop)")
    pinned_note = "pinned memory of the GPU" if engine.pinned_buffer(1).pinned else "ordinary memory: no GPU pins"
    print(f"hash_arrow pinned: the values in an engine.pinned_buffer ({pinned_note})")
    names = ["hash_arrow", "hash_arrow pinned", "hash_arrow 1 thread", "hash_many", "blake3-py loop", "hashlib.sha256 loop"]
    print("values".ljust(10) + "".join(name.rjust(22) for name in names))
    for size in args.sizes.split(","):
        values = column(args.megabytes << 20, size, rng)
        items = values.to_pylist()
        total = sum(len(item) for item in items)
        pinned = in_pinned_memory(engine, values)
        runs = {
            "hash_arrow": lambda: engine.hash_arrow(values),
            "hash_arrow pinned": lambda: engine.hash_arrow(pinned),
            "hash_arrow 1 thread": lambda: one.hash_arrow(values),
            "hash_many": lambda: engine.hash_many(items),
            "hashlib.sha256 loop": lambda: [hashlib.sha256(item).digest() for item in items],
        }
        if blake3 is not None:
            runs["blake3-py loop"] = lambda: [blake3.blake3(item).digest() for item in items]
        if blake3 is not None:
            expected = [blake3.blake3(item).digest() for item in items[:1000]]
            assert engine.hash_arrow(values.slice(0, 1000)).to_pylist() == expected
            assert engine.hash_arrow(pinned.slice(0, 1000)).to_pylist() == expected
        rates = {name: total / best(run, args.repeat) / 1e9 for name, run in runs.items()}
        reference = rates.get("blake3-py loop")
        cells = []
        for name in names:
            if name not in rates:
                cells.append("-".rjust(22))
            elif reference:
                cells.append(f"{rates[name]:.2f} ({rates[name] / reference:.1f}x)".rjust(22))
            else:
                cells.append(f"{rates[name]:.2f}".rjust(22))
        print(str(size).ljust(10) + "".join(cells))
    if blake3 is not None and args.xof:
        xof_table(engine, args, rng, blake3)
    if blake3 is not None and args.hex:
        hex_table(engine, args, rng, blake3)
    if blake3 is not None and args.numbers:
        numbers_table(engine, args, rng, blake3)
    if blake3 is not None and args.rows:
        rows_table(engine, args, rng, blake3)
    if blake3 is not None and args.polars:
        polars_table(engine, args, rng, blake3)
    if blake3 is not None and args.duckdb:
        duckdb_table(engine, args, rng, blake3)
    if blake3 is not None and args.buffers:
        buffers_table(engine, args, rng, blake3)
    if args.files:
        files_table(engine, args.files, args.repeat, args.xof, rng, blake3)


def xof_table(engine, args, rng, blake3):
    """Extended output: hash_arrow(length=N) against the blake3-py loop's
    digest(N), both over the same values."""
    length = args.xof
    print(f"\nextended output, length={length}: GB/s of input (speedup over the blake3-py loop)")
    print("values".ljust(10) + "hash_arrow".rjust(22) + "blake3-py loop".rjust(22))
    for size in args.sizes.split(","):
        values = column(args.megabytes << 20, size, rng)
        items = values.to_pylist()
        total = sum(len(item) for item in items)
        expected = [blake3.blake3(item).digest(length) for item in items[:1000]]
        assert engine.hash_arrow(values.slice(0, 1000), length=length).to_pylist() == expected
        ours = total / best(lambda: engine.hash_arrow(values, length=length), args.repeat) / 1e9
        loop = total / best(lambda: [blake3.blake3(item).digest(length) for item in items], args.repeat) / 1e9
        print(str(size).ljust(10) + f"{ours:.2f} ({ours / loop:.1f}x)".rjust(22) + f"{loop:.2f}".rjust(22))


def hex_table(engine, args, rng, blake3):
    """Hex digests: hash_arrow(hex=True), a string column, against the
    same digests as bytes (hash_arrow: what formatting them costs), the
    digests turned to hex in a Python loop and the blake3-py hexdigest()
    loop, all over the same values."""
    names = ["hash_arrow", "hash_arrow hex=True", "hash_arrow + .hex()", "blake3-py hexdigest"]
    print("\nhex digests: GB/s of input (speedup over the blake3-py loop)")
    print("values".ljust(10) + "".join(name.rjust(22) for name in names))
    for size in args.sizes.split(","):
        values = column(args.megabytes << 20, size, rng)
        items = values.to_pylist()
        total = sum(len(item) for item in items)
        expected = [blake3.blake3(item).hexdigest() for item in items[:1000]]
        assert engine.hash_arrow(values.slice(0, 1000), hex=True).to_pylist() == expected
        runs = {
            names[0]: lambda: engine.hash_arrow(values),
            names[1]: lambda: engine.hash_arrow(values, hex=True),
            names[2]: lambda: [digest.hex() for digest in engine.hash_arrow(values).to_pylist()],
            names[3]: lambda: [blake3.blake3(item).hexdigest() for item in items],
        }
        rates = {name: total / best(run, args.repeat) / 1e9 for name, run in runs.items()}
        loop = rates[names[3]]
        cells = [f"{rates[name]:.2f} ({rates[name] / loop:.1f}x)".rjust(22) for name in names]
        print(str(size).ljust(10) + "".join(cells))


def numbers_table(engine, args, rng, blake3):
    """Rows of numbers: list<int32> token ids (256 a row, or 16..=256) and
    fixed_size_list<float32, 384> embeddings by hash_arrow, and the
    embeddings as a NumPy (n, 384) float32 array by hash_records, against
    hash_arrow over the same bytes as a large_binary column and a blake3-py
    loop over each row's bytes (sliced from the values by the offsets).
    Then an int64 column (ids: each number's 8 bytes) the same way, and a
    dictionary column of 1000 64-byte values against decoding it (cast to
    large_binary) and hashing that, and a blake3-py loop."""
    names = ["hash_arrow", "as large_binary", "blake3-py loop"]
    print("\nrows of numbers and a dictionary: GB/s of values (speedup over the blake3-py loop)")
    print("values".ljust(24) + "".join(name.rjust(22) for name in names))
    total_values = (args.megabytes << 20) // 4
    counts = {
        "list<int32> 256": np.full(total_values // 256, 256),
        "list<int32> 16..=256": rng.integers(16, 257, total_values // 136),
        "fixed_size_list<f32,384>": np.full(total_values // 384, 384),
    }
    for name, row_counts in counts.items():
        offsets = np.zeros(len(row_counts) + 1, dtype=np.int64)
        np.cumsum(row_counts, out=offsets[1:])
        flat = rng.integers(0, 50_000, int(offsets[-1]), dtype=np.int32)
        if name.startswith("fixed"):
            flat = flat.view(np.float32)
            values = pa.FixedSizeListArray.from_arrays(pa.array(flat), 384)
        else:
            values = pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), pa.array(flat))
        byte_offsets = offsets * 4
        binary = pa.Array.from_buffers(
            pa.large_binary(), len(row_counts), [None, pa.py_buffer(byte_offsets), pa.py_buffer(flat)]
        )
        rows = list(zip(offsets[:-1].tolist(), offsets[1:].tolist()))
        runs = {
            names[0]: lambda: engine.hash_arrow(values),
            names[1]: lambda: engine.hash_arrow(binary),
            names[2]: lambda: [blake3.blake3(flat[a:b].tobytes()).digest() for a, b in rows],
        }
        expected = [blake3.blake3(flat[a:b].tobytes()).digest() for a, b in rows[:1000]]
        assert engine.hash_arrow(values.slice(0, 1000)).to_pylist() == expected
        rates = {key: flat.nbytes / best(run, args.repeat) / 1e9 for key, run in runs.items()}
        loop = rates[names[2]]
        print(name.ljust(24) + "".join(f"{rates[key]:.2f} ({rates[key] / loop:.1f}x)".rjust(22) for key in names))
        if name.startswith("fixed"):
            records = flat.reshape(-1, 384)
            assert [d.tobytes() for d in engine.hash_records(records[:1000])] == expected
            rate = flat.nbytes / best(lambda: engine.hash_records(records), args.repeat) / 1e9
            print("numpy (n, 384) float32".ljust(24) + f"{rate:.2f} ({rate / loop:.1f}x)".rjust(22) + " hash_records")
    # Numbers: each int64 its 8 little-endian bytes, against the same bytes
    # as a large_binary column of 8-byte rows and a loop over them.
    ids = rng.integers(-(2**63), 2**63 - 1, (args.megabytes << 20) // 8, dtype=np.int64)
    numbers = pa.array(ids)
    eights = pa.Array.from_buffers(
        pa.large_binary(), len(ids), [None, pa.py_buffer(np.arange(0, 8 * len(ids) + 1, 8)), pa.py_buffer(ids)]
    )
    items = eights.to_pylist()
    runs = {
        names[0]: lambda: engine.hash_arrow(numbers),
        names[1]: lambda: engine.hash_arrow(eights),
        names[2]: lambda: [blake3.blake3(item).digest() for item in items],
    }
    assert engine.hash_arrow(numbers.slice(0, 1000)).to_pylist() == [blake3.blake3(i).digest() for i in items[:1000]]
    rates = {key: ids.nbytes / best(run, args.repeat) / 1e9 for key, run in runs.items()}
    loop = rates[names[2]]
    print("int64 ids".ljust(24) + "".join(f"{rates[key]:.2f} ({rates[key] / loop:.1f}x)".rjust(22) for key in names))
    # A categorical: 64-byte values, 1000 of them, each row's decoded
    # (as large_binary: the same column decoded, then hashed).
    dictionary = pa.array([rng.integers(0, 256, 64, dtype=np.uint8).tobytes() for _ in range(1000)], pa.binary())
    keys = pa.array(rng.integers(0, 1000, (args.megabytes << 20) // 64), pa.int32())
    categorical = pa.DictionaryArray.from_arrays(keys, dictionary)
    decoded = categorical.cast(pa.large_binary())
    items = decoded.to_pylist()
    runs = {
        names[0]: lambda: engine.hash_arrow(categorical),
        names[1]: lambda: engine.hash_arrow(categorical.cast(pa.large_binary())),
        names[2]: lambda: [blake3.blake3(item).digest() for item in items],
    }
    assert engine.hash_arrow(categorical.slice(0, 1000)).to_pylist() == [blake3.blake3(i).digest() for i in items[:1000]]
    rates = {key: len(items) * 64 / best(run, args.repeat) / 1e9 for key, run in runs.items()}
    loop = rates[names[2]]
    label = "dictionary 1000 x 64 B"
    print(label.ljust(24) + "".join(f"{rates[key]:.2f} ({rates[key] / loop:.1f}x)".rjust(22) for key in names))


def framed_row(values):
    """A row's input as hash_arrow(rows=True) frames it (None: a null)."""
    return b"".join(b"\0" if v is None else b"\1" + len(v).to_bytes(8, "little") + v for v in values)


def rows_table(engine, args, rng, blake3):
    """Rows of a table over all its columns (hash_arrow(rows=True)): an
    int64 id and a binary text of about 40, 200 or 1000 bytes, or a list of
    up to 8 short binary tags (nested: each tag framed too), against
    hash_arrow over the same framed rows as one large_binary column (the
    bound: the rows' framing copy is all that differs) and a blake3-py loop
    over the framed rows. GB/s of framed bytes."""
    names = ["rows=True", "framed as one column", "blake3-py loop"]
    print("\nrows of a table (int64 id, binary text or tags): GB/s of framed rows (ratio to the framed column)")
    print("second column".ljust(24) + "".join(name.rjust(22) for name in names))
    for text_size in (40, 200, 1000, "tags"):
        size = 60 if text_size == "tags" else text_size
        count = (args.megabytes << 20) // (size + 35)
        ids = rng.integers(-(2**63), 2**63 - 1, count, dtype=np.int64)
        if text_size == "tags":
            pool = rng.integers(0, 256, 64, dtype=np.uint8).tobytes()
            tag_counts = rng.integers(0, 9, count).tolist()
            starts = rng.integers(0, 48, int(sum(tag_counts))).tolist()
            lengths = rng.integers(3, 11, len(starts)).tolist()
            tags = [pool[a : a + n] for a, n in zip(starts, lengths)]
            ends = np.cumsum(tag_counts).tolist()
            values = [tags[end - n : end] for n, end in zip(tag_counts, ends)]
            second = pa.array(values, pa.list_(pa.binary()))
            encoded = [framed_row(row) for row in values]
            label = "~8 tags (list<binary>)"
        else:
            lengths = rng.integers(text_size // 2, text_size * 3 // 2 + 1, count)
            pool = rng.integers(0, 256, 2 * text_size + 1, dtype=np.uint8).tobytes()
            starts = rng.integers(0, text_size // 2 + 1, count)
            encoded = [pool[a : a + n] for a, n in zip(starts.tolist(), lengths.tolist())]
            second = pa.array(encoded, pa.binary())
            label = f"~{text_size} B text"
        table = pa.table({"id": pa.array(ids), "second": second})
        rows = [framed_row([i.tobytes(), t]) for i, t in zip(ids, encoded)]
        framed = pa.array(rows, pa.large_binary())
        total = sum(len(row) for row in rows)
        runs = {
            names[0]: lambda: engine.hash_arrow(table, rows=True),
            names[1]: lambda: engine.hash_arrow(framed),
            names[2]: lambda: [blake3.blake3(row).digest() for row in rows],
        }
        expected = [blake3.blake3(row).digest() for row in rows[:1000]]
        assert engine.hash_arrow(table.slice(0, 1000), rows=True).to_pylist() == expected
        rates = {key: total / best(run, args.repeat) / 1e9 for key, run in runs.items()}
        bound = rates[names[1]]
        print(label.ljust(24) + "".join(f"{rates[key]:.2f} ({rates[key] / bound:.2f})".rjust(22) for key in names))


def polars_table(engine, args, rng, blake3):
    """The `.blake3` namespace in a Polars query (`df.select(...)`), on the
    engine given by --backend (else the shared one), against hash_arrow on
    the same Series, a blake3-py loop over its values and Polars' own
    `hash()` (64-bit, not cryptographic, not stable across versions)."""
    try:
        import polars as pl

        import blake3_batch.polars  # noqa: F401
    except ImportError:
        print("\nPolars: not installed")
        return
    names = [".blake3.digest()", ".blake3.u64()", "hash_arrow(series)", "blake3-py loop", "polars hash()"]
    print(f"\nPolars {pl.__version__}, df.select(pl.col(c)...): GB/s of values (speedup over the blake3-py loop)")
    print("values".ljust(10) + "".join(name.rjust(22) for name in names))
    for size in args.sizes.split(","):
        values = column(args.megabytes << 20, size, rng)
        df = pl.DataFrame({"v": pl.Series("v", values)})
        items = values.to_pylist()
        total = sum(len(item) for item in items)
        expected = [blake3.blake3(item).digest() for item in items[:1000]]
        got = df.head(1000).select(pl.col("v").blake3.digest(engine=engine))["v"].to_list()
        assert got == expected
        runs = {
            names[0]: lambda: df.select(pl.col("v").blake3.digest(engine=engine)),
            names[1]: lambda: df.select(pl.col("v").blake3.u64(engine=engine)),
            names[2]: lambda: engine.hash_arrow(df["v"]),
            names[3]: lambda: [blake3.blake3(item).digest() for item in items],
            names[4]: lambda: df.select(pl.col("v").hash()),
        }
        rates = {name: total / best(run, args.repeat) / 1e9 for name, run in runs.items()}
        loop = rates[names[3]]
        print(str(size).ljust(10) + "".join(f"{rates[name]:.2f} ({rates[name] / loop:.1f}x)".rjust(22) for name in names))


def duckdb_table(engine, args, rng, blake3):
    """SQL functions registered by `blake3_batch.duckdb.register` (BLOB in,
    a digest BLOB or a UBIGINT key out), against a blake3-py function
    called row by row and DuckDB's own `sha256`, `md5` and `hash` (64-bit,
    not cryptographic): each query writes its outputs into a table, on
    DuckDB's threads. Last, `hash_arrow` on the query `SELECT v FROM t`,
    which DuckDB exports as an Arrow stream."""
    try:
        import duckdb

        from blake3_batch import duckdb as b3
    except ImportError:
        print("\nDuckDB: not installed")
        return
    con = duckdb.connect()
    b3.register(con, "blake3", input="BLOB", engine=engine)
    b3.register(con, "blake3_u64", input="BLOB", as_u64=True, engine=engine)
    con.create_function("blake3_py", lambda v: blake3.blake3(v).digest(), ["BLOB"], "BLOB", side_effects=False)
    calls = {
        "blake3(v)": "blake3(v)",
        "blake3_u64(v)": "blake3_u64(v)",
        "blake3-py row by row": "blake3_py(v)",
        "duckdb sha256(v)": "sha256(v)",
        "duckdb md5(v)": "md5(v)",
        "duckdb hash(v)": "hash(v)",
    }
    (threads,) = con.execute("SELECT current_setting('threads')").fetchall()[0]
    print(f"\nDuckDB {duckdb.__version__} on {threads} threads, CREATE TABLE AS SELECT f(v) over a BLOB column:")
    print("GB/s of values (speedup over the blake3-py function)")
    print("values".ljust(10) + "".join(name.rjust(24) for name in [*calls, "hash_arrow(con.sql)"]))
    for size in args.sizes.split(","):
        values = column(args.megabytes << 20, size, rng)
        con.register("source", pa.table({"v": values.cast(pa.binary())}))
        con.execute("CREATE OR REPLACE TABLE t AS SELECT v FROM source")
        total = pc.sum(pc.binary_length(values)).as_py()
        checked = con.execute("SELECT blake3(v), blake3_py(v) FROM t LIMIT 1000").fetchall()
        assert all(ours == theirs for ours, theirs in checked)

        def run(call):
            return lambda: con.execute(f"CREATE OR REPLACE TEMP TABLE o AS SELECT {call} AS d FROM t")

        rates = {name: total / best(run(call), args.repeat) / 1e9 for name, call in calls.items()}
        query = best(lambda: engine.hash_arrow(con.sql("SELECT v FROM t")), args.repeat)
        rates["hash_arrow(con.sql)"] = total / query / 1e9
        loop = rates["blake3-py row by row"]
        print(str(size).ljust(10) + "".join(f"{rates[n]:.2f} ({rates[n] / loop:.1f}x)".rjust(24) for n in rates))


def read(path):
    with open(path, "rb") as file:
        return file.read()


def buffers_table(engine, args, rng, blake3):
    """hash_many over memoryviews of one buffer (slices of an mmap, of a
    NumPy array): copied below 4 KiB, read in place from there on, against
    the same values as bytes objects and a blake3-py loop over the views."""
    names = ["hash_many memoryviews", "hash_many bytes", "blake3-py loop"]
    print("\nhash_many over memoryviews of one buffer: GB/s (speedup over the blake3-py loop)")
    print("values".ljust(10) + "".join(name.rjust(24) for name in names))
    for size in [64, 4096, 65536, 1 << 20]:
        count = (args.megabytes << 20) // size
        data = rng.integers(0, 256, count * size, dtype=np.uint8)
        whole = memoryview(data)
        views = [whole[i * size : (i + 1) * size] for i in range(count)]
        items = [view.tobytes() for view in views]
        expected = [blake3.blake3(item).digest() for item in items[:100]]
        assert engine.hash_many(views[:100]) == expected
        runs = {
            names[0]: lambda: engine.hash_many(views),
            names[1]: lambda: engine.hash_many(items),
            names[2]: lambda: [blake3.blake3(view).digest() for view in views],
        }
        rates = {name: count * size / best(run, args.repeat) / 1e9 for name, run in runs.items()}
        loop = rates[names[2]]
        cells = [f"{rates[name]:.2f} ({rates[name] / loop:.1f}x)".rjust(24) for name in names]
        print(str(size).ljust(10) + "".join(cells))


def files_table(engine, count, repeat, xof, rng, blake3):
    """`count` files of 100..8000 random bytes in a temporary directory
    (in the page cache after the first pass): files/s and the speedup over
    reading and hashing each with blake3-py in a loop; with `xof`, also
    their extended output of that length against blake3-py's digest(xof)."""
    with tempfile.TemporaryDirectory() as directory:
        paths = []
        for index, size in enumerate(rng.integers(100, 8001, count)):
            path = os.path.join(directory, f"{index // 1000}", f"{index}")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as file:
                file.write(rng.integers(0, 256, int(size), dtype=np.uint8).tobytes())
            paths.append(path)
        total = sum(os.path.getsize(path) for path in paths)
        runs = {
            "hash_files": lambda: engine.hash_files(paths),
            "hash_file loop": lambda: [engine.hash_file(path) for path in paths],
            "read + hash_many": lambda: engine.hash_many([read(path) for path in paths]),
        }
        if blake3 is not None:
            runs["blake3-py loop"] = lambda: [blake3.blake3(read(path)).digest() for path in paths]
            expected = [blake3.blake3(read(path)).digest() for path in paths]
            assert engine.hash_files(paths) == expected
        if xof:
            runs[f"hash_files length={xof}"] = lambda: engine.hash_files(paths, length=xof)
        if blake3 is not None and xof:
            runs[f"blake3-py digest({xof})"] = lambda: [blake3.blake3(read(path)).digest(xof) for path in paths]
            expected = [blake3.blake3(read(path)).digest(xof) for path in paths]
            assert engine.hash_files(paths, length=xof) == expected
        times = {name: best(run, repeat) for name, run in runs.items()}
        reference = times.get("blake3-py loop")
        print(f"\n{count} files of 100..8000 bytes ({total / 1e6:.0f} MB), best of {repeat}: thousand files/s (speedup over the blake3-py loop)")
        print("".join(name.rjust(22) for name in times))
        cells = []
        for name, seconds in times.items():
            cell = f"{count / seconds / 1e3:.1f}"
            if reference:
                cell += f" ({reference / seconds:.1f}x)"
            cells.append(cell.rjust(22))
        print("".join(cells))


if __name__ == "__main__":
    main()
