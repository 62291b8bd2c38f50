"""Exact deduplication of a text column with Ray Data and blake3-batch.

Reads Parquet, adds the BLAKE3 digest of the text column to every batch (one
engine per actor), keeps the first row per digest (the smallest id) and writes
Parquet. Prints rows in and out and the throughput.

    python dedup_ray.py --input docs/ --output deduped/ --column text --id-column id

On one host it starts a local Ray instance. On a cluster, start Ray on every
host (`ray start --head` on one, `ray start --address=HEAD:6379` on the
others), then run this script on any of them with `RAY_ADDRESS=auto` (or
`--address HEAD:6379`): the same script, unchanged; input and output must
then be paths every host can read (a shared file system or object store).

Without `--id-column` it keeps one row per digest, whichever comes first in
its group. `--generate N` writes N rows of synthetic text with planted
duplicates to `--input` first, for a try-out.

Tested with Ray 2.46 and 2.60.
"""

from __future__ import annotations

import argparse
import os
import time

import pyarrow as pa
import pyarrow.parquet as pq

import blake3_batch as bb

DIGEST = "_blake3"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", required=True, help="Parquet file or directory")
    parser.add_argument("--output", required=True, help="directory for the deduplicated Parquet")
    parser.add_argument("--column", default="text", help="the column to deduplicate on")
    parser.add_argument("--id-column", default=None, help="keep the row with the smallest value here")
    parser.add_argument("--batch-size", type=int, default=65536)
    parser.add_argument("--concurrency", type=int, default=None, help="hashing actors (default: CPUs / threads)")
    parser.add_argument("--threads", type=int, default=1, help="engine threads per actor")
    parser.add_argument("--backend", default="auto", choices=["auto", "cpu", "gpu"])
    parser.add_argument("--num-gpus", type=float, default=0, help="GPUs per hashing actor")
    parser.add_argument("--partitions", type=int, default=None, help="shuffle partitions (default: 2 per CPU)")
    parser.add_argument("--address", default=None, help="Ray cluster address (default: RAY_ADDRESS or local)")
    parser.add_argument("--num-cpus", type=int, default=None, help="CPUs of a local Ray instance")
    parser.add_argument("--generate", type=int, default=0, help="first write this many synthetic rows to --input")
    return parser.parse_args(argv)


def generate(path, rows, duplicate_share=0.1, seed=1):
    """Synthetic documents with `id` and `text`; about `duplicate_share` of
    the rows repeat the text of an earlier row. Returns the expected ids."""
    import numpy as np

    rng = np.random.default_rng(seed)
    texts = [f"document {i}: " + "lorem ipsum " * int(rng.integers(0, 40)) for i in range(rows)]
    for row in rng.choice(rows, int(rows * duplicate_share), replace=False):
        if row > 0:
            texts[row] = texts[int(rng.integers(0, row))]
    table = pa.table({"id": pa.array(range(rows), pa.int64()), "text": texts})
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    pq.write_table(table, path, row_group_size=max(1, rows // 8))
    first = {}
    for row, text in enumerate(texts):
        first.setdefault(text, row)
    return sorted(first.values())


def deduplicate(ds, args):
    """The dataset with one row per digest of `args.column`."""
    import ray

    hashed = ds.map_batches(
        bb.ray.HashColumn(args.column, out=DIGEST, backend=args.backend, threads=args.threads),
        batch_format="pyarrow",
        batch_size=args.batch_size,
        concurrency=args.concurrency,
        num_cpus=args.threads,
        num_gpus=args.num_gpus,
    )

    def digests_as_binary(batch):
        # `binary`, not `fixed_size_binary[32]`: Ray 2.46 to 2.55 give a
        # groupby's keys back as `binary`, and a join matches keys of one
        # type only. (Nested, so Ray ships it by value to every worker.)
        index = batch.schema.get_field_index(DIGEST)
        return batch.set_column(index, DIGEST, batch.column(index).cast(pa.binary()))

    partitions = args.partitions or max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
    if args.id_column:
        # The smallest id per digest, joined back: both sides are
        # hash-shuffled by digest, so it scales with the cluster.
        hashed = hashed.map_batches(digests_as_binary, batch_format="pyarrow")
        firsts = hashed.groupby(DIGEST).min(args.id_column)
        first_id = f"min({args.id_column})"
        kept = hashed.join(
            firsts,
            join_type="inner",
            num_partitions=partitions,
            on=(DIGEST, args.id_column),
            right_on=(DIGEST, first_id),
        )
        kept = kept.drop_columns([c for c in [first_id] if c in kept.columns()])
    else:
        kept = hashed.groupby(DIGEST).map_groups(lambda group: group.slice(0, 1), batch_format="pyarrow")
    return kept.drop_columns([DIGEST])


def main(argv=None):
    args = parse_args(argv)
    import ray

    if args.generate:
        generate(args.input, args.generate)
    address = args.address or os.environ.get("RAY_ADDRESS")
    if ray.is_initialized():
        pass  # embedded in a program that started Ray itself
    elif address:
        ray.init(address=address, log_to_driver=False)
    else:
        ray.init(num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False

    start = time.perf_counter()
    ds = ray.data.read_parquet(args.input)
    rows_in = ds.count()
    kept = deduplicate(ds, args)
    kept.write_parquet(args.output)
    took = time.perf_counter() - start
    rows_out = ray.data.read_parquet(args.output).count()
    print(f"rows in {rows_in}, rows out {rows_out}, duplicates removed {rows_in - rows_out}")
    print(f"{took:.1f} s, {rows_in / took:,.0f} rows/s (read, hash, shuffle, write)")
    return rows_in, rows_out


if __name__ == "__main__":
    main()
