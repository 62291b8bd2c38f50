#!/usr/bin/env python3
"""Times `b3batch records` on generated inputs, builds side by side.

    python3 benches/records.py [--threads 1,2] [--runs 12] BINARY [BINARY...]

Each build runs each case in turn, round after round (so that a noisy
machine treats them alike), with its output to /dev/null and to a file;
the table gives each build's median and best in milliseconds. The inputs
(written into a temporary directory first) are 2 million lines of 5 to 45
bytes (55 MB), 500 000 lines of 200 bytes (100 MB) and 20 million empty
lines, the cases where cutting, formatting and writing weigh most beside
hashing.
"""

import argparse
import os
import random
import statistics
import subprocess
import tempfile
import time


def inputs(directory):
    """The input files, written once into `directory`."""
    rng = random.Random(1)
    cases = {
        "short lines": lambda: b"".join(
            b"x" * rng.randint(5, 35) + str(i).encode() + b"\n" for i in range(2_000_000)
        ),
        "200-byte lines": lambda: b"".join(
            bytes(rng.choice(b"abcdefgh") for _ in range(8)) * 25 + b"\n"
            for _ in range(500_000)
        ),
        "empty lines": lambda: b"\n" * 20_000_000,
    }
    paths = {}
    for name, make in cases.items():
        path = os.path.join(directory, name.replace(" ", "-"))
        if not os.path.exists(path):
            with open(path, "wb") as file:
                file.write(make())
        paths[name] = path
    return paths


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("binaries", nargs="+", help="b3batch builds to compare")
    parser.add_argument("--threads", default="1,2", help="thread counts, comma-separated")
    parser.add_argument("--runs", type=int, default=12, help="rounds of every case")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        paths = inputs(directory)
        output = os.path.join(directory, "digests")
        cases = [
            (name, threads, sink)
            for name in paths
            for threads in args.threads.split(",")
            for sink in ["/dev/null", "a file"]
        ]
        times = {(case, binary): [] for case in cases for binary in args.binaries}
        for _ in range(args.runs):
            for case in cases:
                name, threads, sink = case
                for binary in args.binaries:
                    if os.path.exists(output):
                        os.remove(output)
                    target = "/dev/null" if sink == "/dev/null" else output
                    command = [binary, "--threads", threads, "records", "--lines", paths[name]]
                    with open(target, "wb") as out:
                        start = time.perf_counter()
                        subprocess.run(command, stdout=out, check=True)
                        times[(case, binary)].append(time.perf_counter() - start)
        header = " | ".join(f"{binary} median, best" for binary in args.binaries)
        print(f"| input | threads | output | {header} |")
        print("| --- | --- | --- |" + " --- |" * len(args.binaries))
        for case in cases:
            cells = []
            for binary in args.binaries:
                runs = times[(case, binary)]
                cells.append(f"{statistics.median(runs) * 1000:.0f}, {min(runs) * 1000:.0f}")
            name, threads, sink = case
            print(f"| {name} | {threads} | {sink} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
