"""Throughput of the reference engine: input records/s for each classic join and windowed aggregation.

Prints, per join: records, outputs, seconds, records/s and the process's peak memory. Inputs are
generated lazily and outputs are counted, not kept, so memory reflects live state only.

    python benchmarks/bench_reference.py [--records 1000000] [--keys 10000] [--join stream_stream ...]

Workloads (deterministic):
- stream_stream: inner join, ofTimeDifferenceAndGrace(20000, 0); left and right alternate, key
  ``(i // 2) % keys``, ts = i, so each record finds about one partner (the other side's record of
  the same key one round earlier or just before).
- stream_table: inner join on an unversioned table; every 4th record is a table update, keys
  pseudo-random over ``keys``.
- table_table: outer join; updates alternate sides, keys pseudo-random, every 10th a tombstone.
- fk_join: inner FK join, ``keys`` left keys and ``keys // 10`` foreign keys; every 10th record
  a right update, the others left updates to a pseudo-random key with a pseudo-random FK (so most
  change their FK: an unsubscribe and a subscribe), every 20th left update a delete.
- window_aggregate: a tumbling count, ``TimeWindows.ofSizeAndGrace(60 s, 1 s)``, emit on update;
  keys pseudo-random over ``keys``, ts = i (one record per ms, so a window holds 60k records,
  about 6 per key), every 16th record 2 s late: dropped when its window ended more than the 1 s
  grace ago (one late record in 60: those in the last second of their window).
- session_aggregate: a session count, ``SessionWindows.ofInactivityGapAndGrace(5 s, 1 s)``, emit
  on update; keys pseudo-random over ``keys`` (a key comes back every ``keys`` ms on average, so
  with 10k keys about 40% of records fall within the gap of their key's last session and merge
  into it: a tombstone and the merged session), ts = i, every 16th record 2 s late (out of
  order, never beyond the close time of stream time - 1 s - 5 s).
"""
from __future__ import annotations

import argparse
import resource
import sys
import time

from kssim.reference.runtime.engine import run_records
from kssim.reference.model.profiles import profile_for
from kssim.reference.model.records import InputRecord
from kssim.reference.model.scenario import RunConfig
from kssim.reference.model.topology import (ForeignKeyJoinSpec, JoinWindowSpec, KeyExtractorSpec, SessionAggregateSpec,
                                     StreamStreamJoinSpec, StreamTableJoinSpec, TableSpec, TableTableJoinSpec,
                                     TimeWindowSpec, WindowAggregateSpec)


def _lcg(n, seed=12345):
    x = seed
    for _ in range(n):
        x = (x * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
        yield x >> 33


def _names(prefix, n):
    return [f"{prefix}{i}" for i in range(n)]


VALUES = _names("v", 1000)  # a pool, so the generator's own cost stays small


def stream_stream_inputs(n, keys):
    names = _names("k", keys)
    for i in range(n):
        yield InputRecord("left" if i % 2 == 0 else "right", names[(i // 2) % keys], VALUES[i % 1000], i, 0, i)


def stream_table_inputs(n, keys):
    names = _names("k", keys)
    for i, r in enumerate(_lcg(n)):
        yield InputRecord("right" if i % 4 == 0 else "left", names[r % keys], VALUES[i % 1000], i, 0, i)


def table_table_inputs(n, keys):
    names = _names("k", keys)
    for i, r in enumerate(_lcg(n, seed=99)):
        value = None if i % 10 == 9 else VALUES[i % 1000]
        yield InputRecord("left" if i % 2 == 0 else "right", names[r % keys], value, i, 0, i)


def fk_join_inputs(n, keys):
    names = _names("k", keys)
    fks = _names("f", max(1, keys // 10))
    pool = [{"fk": fks[i % len(fks)], "v": VALUES[i % 1000]} for i in range(10_000)]  # left values
    for i, r in enumerate(_lcg(n, seed=7)):
        if i % 10 == 0:
            yield InputRecord("right", fks[r % len(fks)], VALUES[i % 1000], i, 0, i)
        else:
            yield InputRecord("left", names[r % keys], None if i % 20 == 19 else pool[(r >> 7) % 10_000], i, 0, i)


#: every LATE_EVERY-th record of the windowed workloads comes LATE_MS late
LATE_EVERY, LATE_MS = 16, 2000


def windowed_inputs(seed):
    """Records of one ``input`` topic, keys pseudo-random, ts = i with every 16th 2 s late."""
    def inputs(n, keys):
        names = _names("k", keys)
        for i, r in enumerate(_lcg(n, seed=seed)):
            ts = i - LATE_MS if i % LATE_EVERY == LATE_EVERY - 1 and i >= LATE_MS else i
            yield InputRecord("input", names[r % keys], VALUES[i % 1000], ts, 0, i)
    return inputs


WORKLOADS = {
    "stream_stream": (StreamStreamJoinSpec(join="inner", window=JoinWindowSpec(20000, 20000, 0),
                                           window_api="time_difference", joiner="concat"), stream_stream_inputs),
    "stream_table": (StreamTableJoinSpec(join="inner", table=TableSpec(), joiner="concat"), stream_table_inputs),
    "table_table": (TableTableJoinSpec(join="outer", joiner="concat"), table_table_inputs),
    "fk_join": (ForeignKeyJoinSpec(join="inner", foreign_key=KeyExtractorSpec(field="fk")), fk_join_inputs),
    "window_aggregate": (WindowAggregateSpec(window=TimeWindowSpec(60_000, 60_000, 1_000)), windowed_inputs(31)),
    "session_aggregate": (SessionAggregateSpec(gap_ms=5_000, grace_ms=1_000), windowed_inputs(37)),
}


def run(name, n, keys, release):
    spec, inputs = WORKLOADS[name]
    count = [0]

    def on_output(_rec, count=count):
        count[0] += 1

    started, cpu_started = time.perf_counter(), time.process_time()
    result = run_records(spec, profile_for(release), RunConfig(), inputs(n, keys), on_output=on_output, collect_drops=False)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result.processed, count[0], seconds, cpu, peak_mb


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--release", default="3.9")
    parser.add_argument("--join", action="append", choices=sorted(WORKLOADS))
    args = parser.parse_args(argv)
    print(f"reference engine, Kafka {args.release}, {args.records:,} records over {args.keys:,} keys, one core")
    print("(records/s by wall clock; per CPU second in the next column, which other load on the machine does not skew)")
    print(f"{'workload':<18}{'records':>11}{'outputs':>11}{'seconds':>9}{'records/s':>12}{'rec/CPU-s':>12}{'peak RSS MB':>13}")
    for name in args.join or sorted(WORKLOADS):
        processed, outputs, seconds, cpu, peak = run(name, args.records, args.keys, args.release)
        print(f"{name:<18}{processed:>11,}{outputs:>11,}{seconds:>9.2f}{processed / seconds:>12,.0f}"
              f"{processed / cpu:>12,.0f}{peak:>13.0f}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
