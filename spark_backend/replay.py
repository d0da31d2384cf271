"""Replay record files through a scenario's topology on Spark; ``spark-submit``-able.

    python -m spark_backend.replay SCENARIO --input RECORDS... --output OUT [--format jsonl|parquet]
    spark-submit --master spark://host:7077 --py-files kssim.zip spark_backend/replay.py SCENARIO ...

On a cluster the executors import ``spark_backend`` and ``reference`` (Python UDFs): install the
package there or ship it with ``--py-files`` (a zip of both folders).

``SCENARIO`` supplies the topology, release (``semantics``) and run config (order, store,
partitions); its ``inputs`` are used only when no ``--input`` is given. ``RECORDS`` are JSONL or
Parquet record files (``topic, partition, offset, ts, key, value``; see ``inputs.py``). The output
records are written in output order (part files under ``OUT``), with the fields of
``kssim run --format jsonl``. Drops are counted per reason (``--drops`` writes them as JSONL), and
if real Kafka Streams would die, the failing input is reported and the output stops before it.
Exit codes: 0 success, 1 Kafka Streams would fail, 2 bad input.
"""
from __future__ import annotations

import argparse
import json
import sys

from reference.errors import KafkaWouldFail, KssimError, UnsupportedOperator
from reference.scenario import load_scenario

# absolute imports: spark-submit runs this file as a script
from spark_backend.inputs import IMPLEMENTED, Features, config_frame, config_row, read_record_files, scenarios_to_frames
from spark_backend.outputs import DROP, FAILURE, OUTPUT, output_frame, write_jsonl, write_parquet
from spark_backend.processing_order import ORDER_KEY
from spark_backend.runner import batch_events, event_order, first_failure
from spark_backend.session import get_spark


def replay_frames(spark, scenario, record_paths=None):
    """``(events, configs)`` for one scenario over record files (or its own inputs)."""
    if scenario.topology.operator not in IMPLEMENTED:
        raise UnsupportedOperator(f"the Spark backend does not implement operator {scenario.topology.operator!r} yet")
    if record_paths:
        configs_rows = [config_row(0, scenario)]
        records = read_record_files(spark, record_paths, partitions=scenario.config.partitions)
        configs, features = config_frame(spark, configs_rows), Features.of(configs_rows)
    else:
        records, configs, features = scenarios_to_frames(spark, [scenario], [0])
    return batch_events(records, configs, features), configs


def replay(scenario, record_paths, output, fmt="jsonl", drops_path=None, spark=None, single_file=False):
    """Run the replay; returns ``(drop counts by reason, failure or None)``."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    spark = spark or get_spark()
    events, configs = replay_frames(spark, scenario, record_paths)
    events = events.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        # one small job: drop counts, and each failure message's first failing input
        at = F.struct(*[F.col(c) for c in ORDER_KEY], F.col("idx"))
        summary = events.filter(F.col("etype") != OUTPUT).groupBy("etype", "text") \
            .agg(F.count("*").alias("n"), F.min(at).alias("at")).collect()
        failures = [dict(r["at"].asDict(), text=r["text"]) for r in summary if r["etype"] == FAILURE]
        failed = first_failure(failures)
        failure = None
        if failed is not None:  # Kafka Streams stops there: keep the events of earlier inputs only
            failure = KafkaWouldFail(failed["idx"], failed["text"])
            stop = F.struct(*[F.lit(v).cast("bigint") for v in event_order(failed)])
            events = events.filter(at < stop)
            summary = events.filter(F.col("etype") == DROP).groupBy("etype", "text").agg(F.count("*").alias("n")).collect()
        counts = {r["text"]: r["n"] for r in summary if r["etype"] == DROP}
        writer = write_parquet if fmt == "parquet" else write_jsonl
        writer(output_frame(events, configs), output, single_file=single_file)
        if drops_path:
            events.filter(F.col("etype") == DROP).orderBy("idx") \
                .select(F.col("idx").alias("input"), F.col("text").alias("reason")).write.mode("overwrite").json(drops_path)
        return counts, failure
    finally:
        events.unpersist()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_backend.replay", description=__doc__.split("\n\n")[0])
    parser.add_argument("scenario", help="scenario file: topology, semantics and config (its inputs unless --input)")
    parser.add_argument("--input", nargs="*", default=None, help="JSONL or Parquet record files")
    parser.add_argument("--output", required=True, help="output folder (Spark part files)")
    parser.add_argument("--format", choices=("jsonl", "parquet"), default="jsonl")
    parser.add_argument("--drops", default=None, help="write the drops (input, reason) as JSONL here")
    parser.add_argument("--single-file", action="store_true", help="one part file (small outputs)")
    parser.add_argument("--master", default=None, help="Spark master URL (default: SPARK_MASTER, spark-submit's, or local[*])")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark options")
    args = parser.parse_args(argv)
    try:
        scenario = load_scenario(args.scenario)
        conf = dict(item.split("=", 1) for item in args.conf)
        spark = get_spark(master=args.master, conf=conf)
        counts, failure = replay(scenario, args.input, args.output, args.format, args.drops, spark, args.single_file)
    except (KssimError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({"scenario": scenario.name, "drops": counts}), file=sys.stderr)
    if failure is not None:
        print(f"{scenario.name}: Kafka Streams would fail while processing input {failure.input_index}: "
              f"{failure.message}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
