"""Spark backend vs reference engine: records/s for each join and windowed aggregation on
generated captured topics.

For each workload (bench_reference.py's; the windowed ones a tumbling count over 60 s windows and
a session count with a 5 s gap, both with 1 s grace and every 16th record 2 s late) and size
(default 1M and 10M records over 10k keys) the script writes one Parquet record file (``topic,
partition, offset, ts, key, value``, keys and values as JSON text) with Spark, outside the
timings, then times:

- Spark: ``spark_backend.runtime.replay.replay`` end to end: read the Parquet file, run the join, write
  the outputs as Parquet (on ``local[2]`` unless ``--master`` says otherwise);
- reference: the same file read as a stream (``reference.model.record_files.iter_record_files``) through
  the reference engine, outputs counted (``--skip-reference-above N`` skips its long runs).

Both run ``as_listed`` (file order: the generators emit records in timestamp order, but for
the windowed workloads' late records).

    python benchmarks/bench_spark.py [--sizes 1000000 10000000] [--join stream_table ...]
    python benchmarks/bench_spark.py --sizes 10000000 --join window_aggregate --join session_aggregate
    python benchmarks/bench_spark.py --sizes 1000000 --join fk_join --skip-reference-above 0 --memory

``--memory`` adds the driver's peak memory after each Spark run: the Python driver's peak RSS
(``ru_maxrss``) and the JVM's (``VmHWM``; on ``local[...]`` the JVM is the driver and the
executors). Both are peaks over the process's life: for a figure per size, run one size (and no
reference, which runs in the same Python process) per invocation.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

from kssim.reference.runtime.engine import run_records
from kssim.reference.model.record_files import iter_record_files
from kssim.reference.model.scenario import scenario_from_dict
from kssim.reference.model.topology import OPERATOR_INPUT_TOPICS

from bench_graphs import WORKLOADS as GRAPH_WORKLOADS  # run as a script: this folder is on the path

KEYS = 10_000

TOPOLOGIES = {
    "stream_stream": {"operator": "stream_stream_join", "join": "inner", "window_api": "time_difference",
                      "window": {"before_ms": 20000, "after_ms": 20000, "grace_ms": 0}, "joiner": "concat"},
    "stream_table": {"operator": "stream_table_join", "join": "inner", "table": {"versioned": False}, "joiner": "concat"},
    "table_table": {"operator": "table_table_join", "join": "outer", "joiner": "concat"},
    "fk_join": {"operator": "fk_join", "join": "inner", "foreign_key": {"field": "fk"}, "joiner": "pair"},
    "window_aggregate": {"operator": "window_aggregate", "size_ms": 60_000, "grace_ms": 1_000, "aggregation": "count"},
    "session_aggregate": {"operator": "session_aggregate", "gap_ms": 5_000, "grace_ms": 1_000, "aggregation": "count"},
}
#: bench_reference.py's windowed workloads: every LATE_EVERY-th record LATE_MS late
LATE_EVERY, LATE_MS = 16, 2000
#: bench_graphs.py's topology graphs (the same graphs; the records the same shape, other draws)
GRAPHS = {"graph_windowed_count": "windowed_count", "graph_table_group_by_sum": "table_group_by_sum"}
REGIONS = 100


def generate(spark, join, n, keys, path):
    """The workloads of bench_reference.py, as Spark expressions over ``spark.range(n)``."""
    from pyspark.sql import functions as F

    i = F.col("id")
    if join in GRAPHS:
        return _write_one_file(_graph_frame(spark, GRAPHS[join], n, keys), path)
    if join == "fk_join":
        return _write_one_file(_fk_frame(spark, n, keys), path)
    if join in ("window_aggregate", "session_aggregate"):
        return _write_one_file(_windowed_frame(spark, n, keys, 31 if join == "window_aggregate" else 37), path)
    if join == "stream_stream":
        topic = F.when(i % 2 == 0, "left").otherwise("right")
        key_no = F.floor(i / 2) % keys
    elif join == "stream_table":
        topic = F.when(i % 4 == 0, "right").otherwise("left")
        key_no = F.pmod(F.xxhash64(i), F.lit(keys))
    else:
        topic = F.when(i % 2 == 0, "left").otherwise("right")
        key_no = F.pmod(F.xxhash64(i, F.lit(99)), F.lit(keys))
    value = F.concat(F.lit('"v'), (i % 1000).cast("string"), F.lit('"'))
    if join == "table_table":
        value = F.when(i % 10 == 9, F.lit(None)).otherwise(value)
    frame = spark.range(n).select(
        topic.alias("topic"), F.lit(0).alias("partition"), i.alias("offset"), i.alias("ts"),
        F.concat(F.lit('"k'), key_no.cast("string"), F.lit('"')).alias("key"), value.alias("value"))
    _write_one_file(frame, path)


def _fk_frame(spark, n, keys):
    """bench_reference.py's fk_join workload: ``keys`` left keys, ``keys // 10`` foreign keys; every
    10th record a right update, every 20th record a left delete, the others left updates with a
    pseudo-random FK (the same shape, not the same pseudo-random draws)."""
    from pyspark.sql import functions as F

    i = F.col("id")
    fks = max(1, keys // 10)
    r = F.pmod(F.xxhash64(i, F.lit(7)), F.lit(1 << 30))
    right = i % 10 == 0
    key = F.when(right, F.concat(F.lit('"f'), (r % fks).cast("string"), F.lit('"'))) \
        .otherwise(F.concat(F.lit('"k'), (r % keys).cast("string"), F.lit('"')))
    left_value = F.concat(F.lit('{"fk":"f'), (F.floor(r / 128) % fks).cast("string"), F.lit('","v":"v'),
                          (i % 1000).cast("string"), F.lit('"}'))
    value = F.when(right, F.concat(F.lit('"v'), (i % 1000).cast("string"), F.lit('"'))) \
        .when(i % 20 == 19, F.lit(None)).otherwise(left_value)
    return spark.range(n).select(F.when(right, "right").otherwise("left").alias("topic"), F.lit(0).alias("partition"),
                                 i.alias("offset"), i.alias("ts"), key.alias("key"), value.alias("value"))


def _windowed_frame(spark, n, keys, seed):
    """bench_reference.py's windowed workloads: one ``input`` topic, keys pseudo-random over
    ``keys``, ts = i with every 16th record 2 s late (the same shape, not the same draws)."""
    from pyspark.sql import functions as F

    i = F.col("id")
    late = (i % LATE_EVERY == LATE_EVERY - 1) & (i >= LATE_MS)
    key_no = F.pmod(F.xxhash64(i, F.lit(seed)), F.lit(keys))
    return spark.range(n).select(
        F.lit("input").alias("topic"), F.lit(0).alias("partition"), i.alias("offset"),
        F.when(late, i - LATE_MS).otherwise(i).alias("ts"),
        F.concat(F.lit('"k'), key_no.cast("string"), F.lit('"')).alias("key"),
        F.concat(F.lit('"v'), (i % 1000).cast("string"), F.lit('"')).alias("value"))


def _graph_frame(spark, workload, n, keys):
    """bench_graphs.py's workloads: ``windowed_count``: clicks keyed by click id with a pseudo-random
    ``user`` of ``keys``, ts = i, every 16th record 2 s late; ``table_group_by_sum``: updates of
    ``keys`` accounts, each to a pseudo-random region of 100 and ``n`` in 0..99, ts = i."""
    from pyspark.sql import functions as F

    i = F.col("id")
    r = F.pmod(F.xxhash64(i, F.lit(41)), F.lit(1 << 30))
    text = lambda prefix, number: F.concat(F.lit(prefix), number.cast("string"))  # noqa: E731
    if workload == "windowed_count":
        late = (i % LATE_EVERY == LATE_EVERY - 1) & (i >= LATE_MS)
        value = F.concat(text('{"user":"u', F.floor(r / 128) % keys), text('","page":"p', i % 100), F.lit('"}'))
        return spark.range(n).select(F.lit("clicks").alias("topic"), F.lit(0).alias("partition"), i.alias("offset"),
                                     F.when(late, i - LATE_MS).otherwise(i).alias("ts"),
                                     F.concat(text('"c', r % keys), F.lit('"')).alias("key"), value.alias("value"))
    value = F.concat(text('{"region":"r', F.floor(r / 128) % REGIONS), text('","n":', F.floor(r / 4096) % 100),
                     F.lit("}"))
    return spark.range(n).select(F.lit("accounts").alias("topic"), F.lit(0).alias("partition"), i.alias("offset"),
                                 i.alias("ts"), F.concat(text('"a', r % keys), F.lit('"')).alias("key"),
                                 value.alias("value"))


def _write_one_file(frame, path):
    tmp = path + ".dir"
    # one file in row groups of 16 MB (Spark's default of 128 MB would make the whole file one
    # split, read by one core)
    frame.coalesce(1).write.mode("overwrite").option("parquet.block.size", 16 << 20).parquet(tmp)
    part, = [p for p in os.listdir(tmp) if p.startswith("part-")]
    shutil.move(os.path.join(tmp, part), path)
    shutil.rmtree(tmp)


def scenario_for(join):
    topology = {"graph": GRAPH_WORKLOADS[GRAPHS[join]][0]} if join in GRAPHS else TOPOLOGIES[join]
    return scenario_from_dict({"format": "kssim-scenario/1", "name": f"bench-{join}", "semantics": "3.9",
                               "topology": topology}, inputs_required=False)


def time_spark(spark, scenario, path, out):
    """Format 1: ``runtime.replay.replay`` (part files); a graph: ``replay_to_file`` (a scan of
    the file, the events streamed to the driver in order into one JSONL file)."""
    from kssim.spark_backend.runtime.replay import replay, replay_to_file

    started = time.perf_counter()
    if scenario.topology.operator == "graph":
        replay_to_file(scenario, [path], out + ".jsonl", spark=spark)
    else:
        replay(scenario, [path], out, "parquet", spark=spark)
    return time.perf_counter() - started


def _topics(scenario):
    if scenario.topology.operator == "graph":
        return tuple(scenario.topology.source_topics)
    return OPERATOR_INPUT_TOPICS[scenario.topology.operator]


def time_reference(scenario, path):
    count = [0]

    def on_output(_rec):
        count[0] += 1

    started = time.perf_counter()
    records = iter_record_files([path], _topics(scenario), {})
    run_records(scenario.topology, scenario.profile, scenario.config, records, on_output=on_output, collect_drops=False)
    return time.perf_counter() - started, count[0]


def peak_memory(spark) -> str:
    """The peak RSS so far of the Python driver and of Spark's JVM (Linux ``/proc``)."""
    import resource

    python_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    with open(f"/proc/{pid}/status") as status:
        jvm_kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    return f"  peak RSS: Python driver {python_mb:,.0f} MB, JVM {jvm_kb / 1024:,.0f} MB"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--join", action="append", choices=sorted(TOPOLOGIES) + sorted(GRAPHS))
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--skip-reference-above", type=int, default=None, help="skip reference runs above N records")
    parser.add_argument("--memory", action="store_true", help="print the driver's peak RSS after each Spark run")
    args = parser.parse_args(argv)

    from kssim.spark_backend.session import get_spark

    spark = get_spark(args.master, workload="bulk")
    work = tempfile.mkdtemp(prefix="kssim-bench-")
    print(f"Spark {spark.version} on {spark.sparkContext.master} vs the reference engine, Kafka 3.9, {KEYS:,} keys "
          f"(fk_join: {KEYS:,} left keys, {KEYS // 10:,} FKs)")
    print(f"{'workload':<18}{'records':>12}{'spark s':>9}{'spark rec/s':>13}{'ref s':>9}{'ref rec/s':>12}{'spark/ref':>10}")
    try:
        for join in args.join or sorted(TOPOLOGIES) + sorted(GRAPHS):
            scenario = scenario_for(join)
            for n in args.sizes:
                path = os.path.join(work, f"{join}-{n}.parquet")
                generate(spark, join, n, KEYS, path)
                spark_s = time_spark(spark, scenario, path, os.path.join(work, "out"))
                if args.memory:
                    print(peak_memory(spark))
                if args.skip_reference_above is not None and n > args.skip_reference_above:
                    ref = "-"
                    print(f"{join:<18}{n:>12,}{spark_s:>9.1f}{n / spark_s:>13,.0f}{ref:>9}{ref:>12}{ref:>10}")
                else:
                    ref_s, _ = time_reference(scenario, path)
                    print(f"{join:<18}{n:>12,}{spark_s:>9.1f}{n / spark_s:>13,.0f}{ref_s:>9.1f}{n / ref_s:>12,.0f}"
                          f"{ref_s / spark_s:>10.2f}")
                sys.stdout.flush()
                os.remove(path)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
