"""Reading speed of the capture readers (``reference.model.captures``): records/s per format.

Writes one capture per format (a stream-table join's inputs: every 4th record a table update,
keys over 10k, string values) to a temporary folder, reads it back through ``open_captures``
(every record checked, as a replay reads it) and prints records/s and the CPU seconds; the files
are deleted afterwards. Reading is only part of a replay: ``bench_replay.py`` measures the whole.

    python benchmarks/bench_captures.py [--records 1000000]
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

from kssim.reference.model.captures import CaptureOptions, open_captures


def record(i):
    topic = "right" if i % 4 == 0 else "left"
    return topic, f"k{(i * 7919) % 10000}", f"v{i}", i


def write_jsonl(path, n):
    with open(path, "w") as out:
        for i in range(n):
            topic, key, value, ts = record(i)
            out.write(json.dumps({"topic": topic, "partition": 0, "offset": i, "ts": ts, "key": key, "value": value},
                                 separators=(",", ":")) + "\n")


def write_kcat(path, n):
    with open(path, "w") as out:
        for i in range(n):
            topic, key, value, ts = record(i)
            out.write(json.dumps({"topic": topic, "partition": 0, "offset": i, "tstype": "create", "ts": ts,
                                  "broker": 1, "key": key, "payload": value}, separators=(",", ":")) + "\n")


def write_console(folder, n):
    paths = {t: os.path.join(folder, f"{t}.txt") for t in ("left", "right")}
    files = {t: open(p, "w") for t, p in paths.items()}
    offsets = {"left": 0, "right": 0}
    for i in range(n):
        topic, key, value, ts = record(i)
        files[topic].write(f"CreateTime:{ts}\tPartition:0\tOffset:{offsets[topic]}\t{key}\t{value}\n")
        offsets[topic] += 1
    for f in files.values():
        f.close()
    return list(paths.values())


def write_parquet(path, n):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [record(i) for i in range(n)]
    pq.write_table(pa.table({"topic": [r[0] for r in rows], "partition": [0] * n, "offset": list(range(n)),
                             "ts": [r[3] for r in rows], "key": [json.dumps(r[1]) for r in rows],
                             "value": [json.dumps(r[2]) for r in rows]}), path)


def measure(name, paths, n):
    started, cpu = time.perf_counter(), time.process_time()
    captures = open_captures(paths, CaptureOptions(), None, offsets_matter=True)
    count = sum(1 for _ in captures.records())
    assert count == n, (count, n)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    print(f"{name:<8} {n:>10,} records  {seconds:6.2f}s  {n / seconds:>10,.0f} records/s  (cpu {cpu:.2f}s)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    n = args.records
    with tempfile.TemporaryDirectory() as folder:
        jsonl = os.path.join(folder, "capture.jsonl")
        write_jsonl(jsonl, n)
        measure("jsonl", [jsonl], n)
        kcat = os.path.join(folder, "capture.kcat")
        write_kcat(kcat, n)
        measure("kcat", [kcat], n)
        measure("console", write_console(folder, n), n)
        parquet = os.path.join(folder, "capture.parquet")
        write_parquet(parquet, n)
        measure("parquet", [parquet], n)


if __name__ == "__main__":
    main()
