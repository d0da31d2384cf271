"""Throughput of the foreign-key join (KIP-213): the reference engine, and the Spark backend vs it.

Workload (deterministic, the generator style of ``bench_reference.py``): an inner FK join,
Kafka 3.9 (``--release``), synchronous delivery (TopologyTestDriver's order). Record i is a right
(foreign-table) update every 5th record, keyed ``f{r % fks}``, else a left (primary-table) update
keyed ``k{r % keys}`` whose value is ``{"fk": "f{r' % fks}", "v": "v{i % 1000}"}`` (r, r'
pseudo-random): left rows change FK often, every FK has about ``keys / fks`` subscribers, so a
right update fans out to them through the prefix scan.

- reference: inputs generated lazily, outputs counted, not kept (``--records``, default 1M over
  10k left keys and 1k FKs); prints records/s, outputs, peak RSS;
- ``--spark-sizes N ...``: the same workload written as one Parquet record file per size (outside
  the timings), then ``spark_backend.runtime.replay.replay`` end to end (read, join, write
  Parquet) and the reference replaying the same file (``--skip-reference-above`` skips long
  reference runs), with the ratio.

    python benchmarks/bench_fk.py [--records 1000000] [--spark-sizes 10000000 --skip-reference-above 1000000]
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time

from reference.model.profiles import profile_for
from reference.model.record_files import iter_record_files
from reference.model.records import InputRecord
from reference.model.scenario import RunConfig, scenario_from_dict
from reference.runtime.engine import run_records

TOPOLOGY = {"operator": "fk_join", "join": "inner", "foreign_key": {"field": "fk"}, "joiner": "pair"}
RIGHT_EVERY = 5


def _lcg(n, seed):
    x = seed
    for _ in range(n):
        x = (x * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
        yield x >> 33


def fk_inputs(n, keys, fks):
    """The workload as input records, generated lazily."""
    left_keys = [f"k{i}" for i in range(keys)]
    foreign = [f"f{i}" for i in range(fks)]
    values = [f"v{i}" for i in range(1000)]
    for i, r in enumerate(_lcg(n, seed=2024)):
        if i % RIGHT_EVERY == 0:
            yield InputRecord("right", foreign[r % fks], values[i % 1000], i, 0, i)
        else:
            yield InputRecord("left", left_keys[r % keys], {"fk": foreign[(r >> 12) % fks], "v": values[i % 1000]}, i, 0, i)


def scenario():
    return scenario_from_dict({"format": "kssim-scenario/1", "name": "bench-fk", "topology": TOPOLOGY},
                              inputs_required=False)


def run_reference(records, release):
    spec = scenario().topology
    count = [0]

    def on_output(_rec, count=count):
        count[0] += 1

    started, cpu_started = time.perf_counter(), time.process_time()
    result = run_records(spec, profile_for(release), RunConfig(), records, on_output=on_output, collect_drops=False)
    return result.processed, count[0], time.perf_counter() - started, time.process_time() - cpu_started


def generate_parquet(spark, n, keys, fks, path):
    """The same workload (not the same pseudo-random draws) as Spark expressions over ``spark.range(n)``."""
    from pyspark.sql import functions as F

    i = F.col("id")
    right = i % RIGHT_EVERY == 0
    r = F.pmod(F.xxhash64(i), F.lit(1 << 30))
    key = F.when(right, F.concat(F.lit('"f'), (r % fks).cast("string"), F.lit('"'))) \
        .otherwise(F.concat(F.lit('"k'), (r % keys).cast("string"), F.lit('"')))
    value = F.when(right, F.concat(F.lit('"v'), (i % 1000).cast("string"), F.lit('"'))) \
        .otherwise(F.concat(F.lit('{"fk":"f'), (F.floor(r / 4096) % fks).cast("string"), F.lit('","v":"v'),
                            (i % 1000).cast("string"), F.lit('"}')))
    frame = spark.range(n).select(F.when(right, "right").otherwise("left").alias("topic"), F.lit(0).alias("partition"),
                                  i.alias("offset"), i.alias("ts"), key.alias("key"), value.alias("value"))
    tmp = path + ".dir"
    frame.coalesce(1).write.mode("overwrite").option("parquet.block.size", 16 << 20).parquet(tmp)
    part, = [p for p in os.listdir(tmp) if p.startswith("part-")]
    shutil.move(os.path.join(tmp, part), path)
    shutil.rmtree(tmp)


def spark_vs_reference(sizes, keys, fks, master, skip_reference_above):
    from spark_backend.runtime.replay import replay
    from spark_backend.session import get_spark

    spark = get_spark(master, workload="bulk")
    work = tempfile.mkdtemp(prefix="kssim-bench-fk-")
    print(f"\nSpark {spark.version} on {spark.sparkContext.master} vs the reference, replaying a Parquet capture")
    print(f"{'records':>12}{'spark s':>9}{'spark rec/s':>13}{'ref s':>9}{'ref rec/s':>12}{'spark/ref':>10}")
    try:
        for n in sizes:
            path = os.path.join(work, f"fk-{n}.parquet")
            generate_parquet(spark, n, keys, fks, path)
            started = time.perf_counter()
            replay(scenario(), [path], os.path.join(work, "out"), "parquet", spark=spark)
            spark_s = time.perf_counter() - started
            if skip_reference_above is not None and n > skip_reference_above:
                print(f"{n:>12,}{spark_s:>9.1f}{n / spark_s:>13,.0f}{'-':>9}{'-':>12}{'-':>10}")
            else:
                records = iter_record_files([path], ("left", "right"), {}, offsets_matter=False)
                _, _, ref_s, _ = run_reference(records, "3.9")
                print(f"{n:>12,}{spark_s:>9.1f}{n / spark_s:>13,.0f}{ref_s:>9.1f}{n / ref_s:>12,.0f}{ref_s / spark_s:>10.2f}")
            sys.stdout.flush()
            os.remove(path)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=10_000, help="left (primary) keys")
    parser.add_argument("--fks", type=int, default=1_000, help="foreign keys")
    parser.add_argument("--release", default="3.9")
    parser.add_argument("--spark-sizes", type=int, nargs="*", default=[], help="also replay these sizes on Spark")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--skip-reference-above", type=int, default=None)
    args = parser.parse_args(argv)
    print(f"reference engine, FK inner join, Kafka {args.release}, {args.records:,} records over {args.keys:,} "
          f"left keys and {args.fks:,} FKs (every {RIGHT_EVERY}th record a right update), one core")
    print(f"{'records':>11}{'outputs':>11}{'seconds':>9}{'records/s':>12}{'rec/CPU-s':>12}{'peak RSS MB':>13}")
    processed, outputs, seconds, cpu = run_reference(fk_inputs(args.records, args.keys, args.fks), args.release)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{processed:>11,}{outputs:>11,}{seconds:>9.2f}{processed / seconds:>12,.0f}{processed / cpu:>12,.0f}{peak:>13.0f}")
    sys.stdout.flush()
    if args.spark_sizes:
        spark_vs_reference(args.spark_sizes, args.keys, args.fks, args.master, args.skip_reference_above)


if __name__ == "__main__":
    main()
