"""The floor under any window-based Spark join on this machine: what the barest stream-table join costs.

The Spark backend computes per-key state (a table's value, a store's contents) with window
functions over each key's records in processing order, and writes outputs in input order. This
script times the least such a join can do, on the same generated 10M-record file as
``bench_spark.py`` (a quarter table updates, 10k keys, keys and values as JSON text), with none of
the backend's rules (no drop checks, no release rules, no numbering, the file's ``offset`` as the
input index):

1. ``scan``: read the six columns of the Parquet file (decoded, summed);
2. ``scan + key window``: plus the join's core, the last table value of the key before each stream
   record (one shuffle by key, a sort, one ``last`` window), results summed, not written;
3. ``scan + key window + ordered write``: plus the inner join's outputs (7.5M) written to Parquet
   in input order (a shuffle by ranges of input index, no sampling job, and a sort per range);
4. ``narrow key window``: step 2 over numbers only (key number, index), to show what the text
   columns cost in the window and its sort.

Each step runs twice in one session and the second (JIT-warm) time is printed: step 3 is a floor
for ``bench_spark.py``'s stream-table figure, whatever the backend's plan does on top.

    python benchmarks/bench_spark_floor.py [--records 10000000] [--master local[2]]
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_spark import KEYS, generate  # noqa: E402  (the same generated file as bench_spark.py)


def steps(spark, path, records, out):
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from kssim.spark_backend.runtime.replay import _partition_keys as partition_keys  # the replay's range partitioning

    def rows():
        return spark.read.parquet(path).select(
            F.col("offset").alias("idx"), (F.col("topic") == "right").alias("is_table"), "ts", "key", "value")

    def joined(frame):
        per_key = Window.partitionBy("key").orderBy("idx").rowsBetween(Window.unboundedPreceding, -1)
        table = F.last(F.when(F.col("is_table"), F.struct(F.col("value").alias("v"))), ignorenulls=True).over(per_key)
        frame = frame.select("*", table.alias("t"))
        return frame.filter(~F.col("is_table") & F.col("t.v").isNotNull()).select(
            "idx", "key", F.concat(F.col("value"), F.lit("+"), F.col("t.v")).alias("value"), "ts")

    def scan():
        rows().select(F.sum(F.length("key") + F.length("value") + F.col("ts") + F.col("idx"))).collect()

    def key_window():
        joined(rows()).select(F.sum(F.length("value") + F.col("idx"))).collect()

    def ordered_write():
        partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))
        keys = partition_keys(spark, partitions)
        bucket = F.least((F.col("idx") * partitions / F.lit(records)).cast("int"), F.lit(partitions - 1))
        key = F.element_at(F.array(*[F.lit(k).cast("bigint") for k in keys]), bucket + 1)
        joined(rows()).repartition(partitions, key).sortWithinPartitions("idx").drop("idx") \
            .write.mode("overwrite").parquet(out)

    def narrow_window():
        frame = spark.read.parquet(path).select(
            F.col("offset").alias("idx"), (F.col("topic") == "right").alias("is_table"),
            F.regexp_extract("key", "[0-9]+", 0).cast("int").alias("key_no"))
        per_key = Window.partitionBy("key_no").orderBy("idx").rowsBetween(Window.unboundedPreceding, -1)
        table = F.last(F.when(F.col("is_table"), F.col("idx")), ignorenulls=True).over(per_key)
        frame.select(table.alias("t")).select(F.sum("t")).collect()

    return [("scan", scan), ("scan + key window", key_window), ("scan + key window + ordered write", ordered_write),
            ("narrow key window", narrow_window)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=10_000_000)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args(argv)

    from kssim.spark_backend.session import get_spark

    spark = get_spark(args.master, workload="bulk")
    work = tempfile.mkdtemp(prefix="kssim-floor-")
    path = os.path.join(work, "stream_table.parquet")
    print(f"Spark {spark.version} on {spark.sparkContext.master}: the barest stream-table join, "
          f"{args.records:,} records, {KEYS:,} keys (second of two runs)")
    print(f"{'step':<38}{'s':>8}{'records/s':>12}")
    try:
        generate(spark, "stream_table", args.records, KEYS, path)
        for label, step in steps(spark, path, args.records, os.path.join(work, "out")):
            step()
            started = time.perf_counter()
            step()
            took = time.perf_counter() - started
            print(f"{label:<38}{took:>8.1f}{args.records / took:>12,.0f}")
            sys.stdout.flush()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
