"""End-to-end speed and memory of ``kssim diff`` on the reference engine.

Writes the stream-table left join workload of ``bench_replay.py`` as a JSONL capture, replays it
once to make the captured output topic (kssim's prediction without its ``input`` field: a capture
that matches), and a second captured output where every 100th record has another value (1%
``value`` divergences). Runs ``python -m tools.cli diff`` on each as a subprocess and prints
records/s (input records, wall), the child's CPU seconds and its peak RSS, then the ratio of peak
RSS between the largest and smallest input (memory must not grow with the input). Files are
deleted afterwards.

    python benchmarks/bench_diff.py [--records 100000 1000000] [--order as_listed timestamp_sync]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_replay import GNU_TIME, ROOT, TOPOLOGY, write_capture  # noqa: E402


def captured_outputs(prediction, matching, differing) -> int:
    """The captured output topic from kssim's prediction: as is, and with every 100th value changed."""
    n = 0
    with open(prediction, encoding="utf-8") as source, open(matching, "w", encoding="utf-8") as same, \
            open(differing, "w", encoding="utf-8") as other:
        for n, line in enumerate(source):
            row = json.loads(line)
            del row["input"]
            same.write(json.dumps(row) + "\n")
            if n % 100 == 0:
                row["value"] = f"changed-{n}"
            other.write(json.dumps(row) + "\n")
    return n + 1


def run(command):
    """(wall s, CPU s, peak RSS MB, exit code) of one child, timed by GNU time."""
    usage = tempfile.mktemp(prefix="kssim-bench-diff-usage-")
    started = time.monotonic()
    child = subprocess.run([GNU_TIME, "-f", "%M %U %S", "-o", usage] + command, cwd=ROOT,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - started
    if child.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} failed ({child.returncode}): {child.stderr.strip()}")
    with open(usage) as handle:
        kb, user, system = handle.read().split()[-3:]
    os.remove(usage)
    return wall, float(user) + float(system), int(kb) / 1024, child.returncode


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--order", nargs="+", default=["as_listed", "timestamp_sync"],
                        choices=("timestamp_sync", "as_listed"))
    parser.add_argument("--dir", help="where to write the files (default: a temporary folder, removed after)")
    args = parser.parse_args(argv)
    if not os.path.exists(GNU_TIME):
        raise SystemExit(f"needs {GNU_TIME} (GNU time) to measure the child's peak RSS")

    folder = tempfile.mkdtemp(prefix="kssim-bench-diff-", dir=args.dir)
    try:
        topology = os.path.join(folder, "topology.yaml")
        with open(topology, "w") as handle:
            handle.write(TOPOLOGY)
        print(f"load average before: {os.getloadavg()[0]:.1f}")
        print("| input records | order | captured output | wall s | records/s (wall) | CPU s | peak RSS MB | exit |")
        print("|---|---|---|---|---|---|---|---|")
        rss = {}
        for order in args.order:
            for n in sorted(args.records):
                capture = os.path.join(folder, f"in-{n}.jsonl")
                if not os.path.exists(capture):
                    write_capture(capture, n)
                prediction = os.path.join(folder, "prediction.jsonl")
                subprocess.run([sys.executable, "-m", "kssim.tools.cli", "replay", topology, "-i", capture, "-o",
                                prediction, "--order", order, "--quiet"], cwd=ROOT, check=True,
                               stdout=subprocess.DEVNULL)
                same, other = os.path.join(folder, "same.jsonl"), os.path.join(folder, "other.jsonl")
                outputs = captured_outputs(prediction, same, other)
                for name, captured in (("matching", same), ("1% values differ", other)):
                    wall, cpu, peak, code = run([sys.executable, "-m", "kssim.tools.cli", "diff", topology, "-i", capture,
                                                 "-e", captured, "--order", order, "--quiet", "--no-explain"])
                    rss[(order, name, n)] = peak
                    print(f"| {n:,} | {order} | {name} ({outputs:,} records) | {wall:.1f} | {n / wall / 1000:,.0f}k | "
                          f"{cpu:.1f} | {peak:,.0f} | {code} |", flush=True)
        print(f"load average after: {os.getloadavg()[0]:.1f}")
        sizes = sorted(args.records)
        if len(sizes) > 1:
            for (order, name, n), peak in sorted(rss.items()):
                if n == sizes[-1]:
                    print(f"peak RSS {sizes[-1]:,} / {sizes[0]:,} records ({order}, {name}): "
                          f"{peak / rss[(order, name, sizes[0])]:.2f}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
