"""Throughput of the reference engine on topology graphs: input records/s for two graph workloads.

Prints, per workload: records, outputs, seconds, records/s (wall clock and per CPU second) and the
process's peak memory. Inputs are generated lazily and outputs are counted in batches, not kept, so
memory reflects live state only (as ``bench_reference.py`` does).

    python benchmarks/bench_graphs.py [--records 1000000] [--keys 10000] [--workload windowed_count ...]
                                      [--profile]

Workloads (deterministic):
- windowed_count: ``stream("clicks") -> select_key(field user) -> group_by_key ->
  windowed_by(TimeWindows.ofSizeAndGrace(60 s, 1 s)) -> count -> to_stream -> to("out")``. Input keys
  pseudo-random over ``keys`` click ids, values ``{"user": u, "page": p}`` with ``keys`` distinct users
  (pseudo-random), ts = i (one record per ms) with every 16th record 2 s late (dropped by the window
  when its window ended more than the 1 s grace ago: about one late record in 60). The select_key
  re-keys the stream, so every record also goes through the repartition topic.
- table_group_by_sum: ``table("accounts") -> group_by(key field region, value field n) ->
  aggregate("sum") -> to_stream -> to("out")``. ``keys`` account keys, 100 regions; every update is
  to a pseudo-random account with a pseudo-random region (so 99% move the account to another region:
  a subtract record for the old region and an add record for the new one) and n in 0..99; ts = i.

``--profile`` runs each workload under cProfile and prints the top 15 functions by cumulative time.
"""
from __future__ import annotations

import argparse
import resource
import sys
import time

from kssim.reference.model.records import InputRecord
from kssim.reference.model.scenario import scenario_from_dict
from kssim.reference.runtime.engine import run_records

from bench_reference import _lcg, _names  # the same generator and pools (run as a script: this folder is on the path)


#: every LATE_EVERY-th record of the windowed workload comes LATE_MS late
LATE_EVERY, LATE_MS = 16, 2000
REGIONS = 100
POOL = 10_000  # value pools, so the generator's own cost stays small


def clicks_inputs(n, keys):
    names = _names("c", keys)
    users = _names("u", keys)
    pool = [{"user": users[i % keys], "page": f"p{i % 100}"} for i in range(max(POOL, keys))]
    size = len(pool)
    for i, r in enumerate(_lcg(n, seed=41)):
        ts = i - LATE_MS if i % LATE_EVERY == LATE_EVERY - 1 and i >= LATE_MS else i
        yield InputRecord("clicks", names[r % keys], pool[(r >> 7) % size], ts, 0, i)


def accounts_inputs(n, keys):
    names = _names("a", keys)
    regions = _names("r", REGIONS)
    pool = [{"region": regions[i % REGIONS], "n": (i // REGIONS) % 100} for i in range(POOL)]
    for i, r in enumerate(_lcg(n, seed=43)):
        yield InputRecord("accounts", names[r % keys], pool[(r >> 7) % POOL], i, 0, i)


WORKLOADS = {
    "windowed_count": ([
        {"stream": "clicks"},
        {"select_key": {"field": "user"}},
        {"group_by_key": {}},
        {"windowed_by": {"time": {"size_ms": 60_000, "grace_ms": 1_000}}},
        {"count": {}},
        {"to_stream": {}},
        {"to": "out"},
    ], clicks_inputs),
    "table_group_by_sum": ([
        {"table": "accounts"},
        {"group_by": {"key": {"field": "region"}, "value": {"field": "n"}}},
        {"aggregate": "sum"},
        {"to_stream": {}},
        {"to": "out"},
    ], accounts_inputs),
}


def build(name, release):
    graph, inputs = WORKLOADS[name]
    scenario = scenario_from_dict({"format": "kssim-scenario/1", "name": f"bench-{name}", "semantics": release,
                                   "topology": {"graph": graph}}, inputs_required=False)
    return scenario, inputs


def run(name, n, keys, release):
    scenario, inputs = build(name, release)
    count = [0]

    def on_outputs(batch, count=count):
        count[0] += len(batch)

    started, cpu_started = time.perf_counter(), time.process_time()
    result = run_records(scenario.topology, scenario.profile, scenario.config, inputs(n, keys),
                         on_outputs=on_outputs, collect_drops=False)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    if result.failure is not None:
        raise SystemExit(f"{name}: the run failed: {result.failure}")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result.processed, count[0], seconds, cpu, peak_mb


def profile(name, n, keys, release, top=15):
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    run(name, n, keys, release)
    profiler.disable()
    print(f"\n--- cProfile, {name}, {n:,} records: top {top} by cumulative time ---")
    pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(top)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--release", default="3.9")
    parser.add_argument("--workload", action="append", choices=list(WORKLOADS))
    parser.add_argument("--profile", action="store_true", help="also run each workload under cProfile")
    args = parser.parse_args(argv)
    print(f"reference engine, topology graphs, Kafka {args.release}, {args.records:,} records over "
          f"{args.keys:,} keys, one core")
    print("(records/s by wall clock; per CPU second in the next column, which other load on the machine does not skew)")
    print(f"{'workload':<20}{'records':>11}{'outputs':>11}{'seconds':>9}{'records/s':>12}{'rec/CPU-s':>12}"
          f"{'peak RSS MB':>13}")
    names = args.workload or list(WORKLOADS)
    for name in names:
        processed, outputs, seconds, cpu, peak = run(name, args.records, args.keys, args.release)
        print(f"{name:<20}{processed:>11,}{outputs:>11,}{seconds:>9.2f}{processed / seconds:>12,.0f}"
              f"{processed / cpu:>12,.0f}{peak:>13.0f}")
        sys.stdout.flush()
    if args.profile:
        for name in names:
            profile(name, args.records, args.keys, args.release)


if __name__ == "__main__":
    main()
