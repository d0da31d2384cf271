"""End-to-end speed and memory of ``kssim replay`` on the reference engine, from captured files.

Writes JSONL captures (and a Parquet one) of a stream-table left join workload to a temporary
folder, runs ``python -m tools.cli replay`` on each as a subprocess, prints records/s (wall), the
child's CPU seconds and its peak RSS, and the ratio of peak RSS between the largest and smallest
capture (memory must not grow with the input). The captures are deleted afterwards.

    python benchmarks/bench_replay.py [--records 1000000 10000000] [--order timestamp_sync as_listed]
                                      [--parquet] [--keep-going]

Workload (deterministic, as ``bench_reference.py``'s stream-table): one partition, every 4th
record a table update (``right``), the others stream records (``left``), keys pseudo-random over
10k keys, ts = record number, string values; left join with the ``concat`` joiner (every stream
record gives one output, a null table value before the key's first update). Each file holds both
topics interleaved, as a capture of several topics by one consumer does.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOPOLOGY = """format: kssim-scenario/1
name: bench-replay
semantics: "3.9"
topology: {operator: stream_table_join, join: left, joiner: concat, joiner_separator: "-"}
"""
KEYS = 10_000


def write_capture(path, n: int) -> None:
    """``n`` records of the workload as kssim JSONL (topic, partition, offset, ts, key, value)."""
    x = 12345
    chunk = []
    with open(path, "w", encoding="utf-8") as out:
        for i in range(n):
            x = (x * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
            topic = "right" if i % 4 == 0 else "left"
            chunk.append(f'{{"topic":"{topic}","partition":0,"offset":{i},"ts":{i},'
                         f'"key":"k{(x >> 33) % KEYS}","value":"v{i % 1000}"}}\n')
            if len(chunk) == 65536:
                out.write("".join(chunk))
                chunk = []
        out.write("".join(chunk))


def write_parquet(jsonl_path, parquet_path) -> None:
    """The same records as a Parquet record file (key and value as JSON text)."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    with open(jsonl_path, encoding="utf-8") as handle:
        while True:
            lines = [line for _, line in zip(range(262144), handle)]
            if not lines:
                break
            rows = [json.loads(line) for line in lines]
            table = pa.table({"topic": [r["topic"] for r in rows], "partition": [r["partition"] for r in rows],
                              "offset": [r["offset"] for r in rows], "ts": [r["ts"] for r in rows],
                              "key": [json.dumps(r["key"]) for r in rows],
                              "value": [json.dumps(r["value"]) for r in rows]})
            if writer is None:
                writer = pq.ParquetWriter(parquet_path, table.schema)
            writer.write_table(table)
    writer.close()


#: GNU time measures the replay process alone (a forked child's ``ru_maxrss`` counts the
#: parent's memory copied before ``exec``, so ``wait4`` would report this script's peak)
GNU_TIME = "/usr/bin/time"


def measured_replay(topology, capture, output, order):
    """(wall s, CPU s, peak RSS MB) of one replay child."""
    command = [sys.executable, "-m", "kssim.tools.cli", "replay", topology, "-i", capture, "-o", output,
               "--order", order, "--quiet"]
    usage_file = output + ".usage"
    timed = os.path.exists(GNU_TIME)
    if timed:
        command = [GNU_TIME, "-f", "%M %U %S", "-o", usage_file] + command
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    child = subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - started
    if child.returncode != 0:
        raise SystemExit(f"replay of {capture} failed ({child.returncode}): {child.stderr.strip()}")
    if not timed:  # RUSAGE_CHILDREN: CPU by difference; peak RSS of all children so far (an upper bound)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        return wall, cpu, after.ru_maxrss / 1024
    with open(usage_file) as handle:
        kb, user, system = handle.read().split()[-3:]
    os.remove(usage_file)
    return wall, float(user) + float(system), int(kb) / 1024


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--order", nargs="+", default=["timestamp_sync", "as_listed"],
                        choices=("timestamp_sync", "as_listed"))
    parser.add_argument("--parquet", action="store_true", help="also a Parquet capture of the smallest size")
    parser.add_argument("--dir", help="where to write the captures (default: a temporary folder, removed after)")
    args = parser.parse_args(argv)

    folder = tempfile.mkdtemp(prefix="kssim-bench-replay-", dir=args.dir)
    try:
        topology = os.path.join(folder, "topology.yaml")
        with open(topology, "w") as handle:
            handle.write(TOPOLOGY)
        captures = []
        for n in sorted(args.records):
            path = os.path.join(folder, f"capture-{n}.jsonl")
            started = time.monotonic()
            write_capture(path, n)
            print(f"wrote {n:,} records ({os.path.getsize(path) / 1e6:,.0f} MB) in {time.monotonic() - started:.1f}s",
                  file=sys.stderr)
            captures.append((n, "jsonl", path))
        if args.parquet:
            n, _, path = captures[0]
            parquet = os.path.join(folder, f"capture-{n}.parquet")
            write_parquet(path, parquet)
            captures.append((n, "parquet", parquet))
        print(f"load average before: {os.getloadavg()[0]:.1f}")
        print("| capture | records | order | wall s | records/s (wall) | CPU s | records per CPU s | peak RSS MB |")
        print("|---|---|---|---|---|---|---|---|")
        rss = {}
        for order in args.order:
            for n, fmt, path in captures:
                output = os.path.join(folder, "out.jsonl")
                wall, cpu, peak = measured_replay(topology, path, output, order)
                os.remove(output)
                rss[(order, fmt, n)] = peak
                print(f"| {fmt} | {n:,} | {order} | {wall:.1f} | {n / wall / 1000:,.0f}k | {cpu:.1f} | "
                      f"{n / cpu / 1000:,.0f}k | {peak:,.0f} |", flush=True)
        print(f"load average after: {os.getloadavg()[0]:.1f}")
        sizes = sorted(args.records)
        if len(sizes) > 1:
            for order in args.order:
                small, large = rss[(order, "jsonl", sizes[0])], rss[(order, "jsonl", sizes[-1])]
                print(f"peak RSS {sizes[-1]:,} / {sizes[0]:,} records ({order}): {large / small:.2f}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
