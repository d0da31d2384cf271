"""Replay record files through a scenario's topology on Spark; ``spark-submit``-able.

    python -m spark_backend.runtime.replay SCENARIO --input RECORDS... --output OUT [--format jsonl|parquet]
    spark-submit --master spark://host:7077 --py-files kssim.zip spark_backend/runtime/replay.py SCENARIO ...

On a cluster the executors import ``spark_backend`` and ``reference`` (Python UDFs): install the
package there or ship it with ``--py-files`` (a zip of both folders).

``SCENARIO`` supplies the topology, release (``semantics``) and run config (order, store,
partitions); its ``inputs`` are used only when no ``--input`` is given. ``RECORDS`` are JSONL or
Parquet record files (``topic, partition, offset, ts, key, value``; see ``record_files.py``). The output
records are written in output order (part files under ``OUT``), with the fields of
``kssim run --format jsonl``. Drops are counted per reason (a ``reference.model.codes.DropReason``
code; ``--drops`` writes them as JSONL), and if real Kafka Streams would die, the failing input is
reported with its ``FailureCode``'s message and the output stops before it.
Exit codes: 0 success, 1 Kafka Streams would fail, 2 bad input (an output folder that is, holds or
lies in an input is refused before any work: Spark's overwrite would delete the capture).

``replay_to_file`` is ``kssim replay --engine spark``: the same replay into one ``.jsonl`` or
``.parquet`` file (the part files joined in order), checked and written as the reference's replay
writes its file (``reference.model.record_files.check_output_path`` and ``atomic_path``).
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import sys
import tempfile

import attrs

from reference.model.codes import FailureCode
from reference.model.errors import KafkaWouldFail, KssimError, UnsupportedOperator
from reference.model.record_files import (OutputPathError, ReplaySummary, atomic_path, check_output_path,
                                          clashing_input)
from reference.model.render import sends_old_values
from reference.model.scenario import load_scenario
from reference.model.topology import OPERATOR_INPUT_TOPICS, key_extractor_of

# absolute imports: spark-submit runs this file as a script
from spark_backend.runtime.inputs import IMPLEMENTED, Features, config_frame, config_row, json_text, scenarios_to_frames
from spark_backend.runtime.outputs import (DROP, FAILURE, OUTPUT, OUTPUT_ORDER, SIMPLE_JSON, joined_values, jsonl_line,
                                   output_columns, output_frame, with_joiners, write_jsonl, write_parquet)
from spark_backend.runtime.processing_order import ORDER_KEY
from spark_backend.runtime.record_files import RecordStats, read_record_files
from spark_backend.runtime.runner import batch_events, unsupported_delivery
from spark_backend.session import get_spark


def replay_frames(spark, scenario, record_paths=None):
    """``(events, configs, features, stats)`` for one scenario over record files (or its own
    inputs); ``stats`` is a ``record_files.RecordStats``."""
    if scenario.topology.operator not in IMPLEMENTED:
        raise UnsupportedOperator(f"the Spark backend does not implement operator {scenario.topology.operator!r} yet")
    if unsupported_delivery(scenario) is not None:
        raise unsupported_delivery(scenario)
    if record_paths:
        configs_rows = [config_row(0, scenario)]
        as_listed = scenario.config.order != "timestamp_sync"
        # KIP-557's idempotence check compares value bytes [ktable_emit_on_change], and so does
        # an FK join's hash check (spark_backend.foreign_key.response_join)
        records, stats = read_record_files(spark, record_paths, partitions=scenario.config.partitions,
                                           with_offsets=not as_listed,
                                           canonical_values=bool(configs_rows[0]["ktable_emit_on_change"])
                                           or scenario.topology.operator == "fk_join",
                                           extractor=key_extractor_of(scenario.topology),
                                           topics=OPERATOR_INPUT_TOPICS[scenario.topology.operator])
        configs, features = config_frame(spark, configs_rows), Features.of(configs_rows)
        if as_listed:
            features = attrs.evolve(features, scan_block=_scan_block(spark, stats.records))
    else:
        records, configs, features = scenarios_to_frames(spark, [scenario], [0])
        values = [rec.value for rec in scenario.inputs if rec.value is not None]
        stats = RecordStats(len(scenario.inputs), sum(1 for v in values if not _simple(v)))
    return batch_events(records, configs, features), configs, features, stats


#: the smallest block of a parallel task scan (``prefix_scan``): below this a window per task is cheaper
MIN_SCAN_BLOCK = 100_000


def _scan_block(spark, records):
    """Positions per block of the parallel task scans: about four blocks per shuffle partition
    (so both cores stay busy), or None when the input is too small to split."""
    partitions = max(1, int(spark.conf.get("spark.sql.shuffle.partitions")))
    size = max(MIN_SCAN_BLOCK, -(-records // (4 * partitions)))
    return size if records > size else None


def _simple(value) -> bool:
    return re.fullmatch(SIMPLE_JSON, json_text(value)) is not None


# --- one pass: outputs, drops and failures written side by side ---------------------------------

KINDS = {OUTPUT: "output", DROP: "drop", FAILURE: "failure"}


def _staged_rows(events, configs, features, stats, fmt):
    """Every event as a row of the output file format plus ``kind``: outputs as output records,
    drops and failures as JSON text (``input`` and ``reason``, a drop code; ``order``, ``input``
    and ``code``, a failure code) in the ``value`` column."""
    from pyspark.sql import functions as F

    frame = with_joiners(events, configs, features)
    value, old_value = joined_values(python_values=stats.complex_values > 0)
    is_output = F.col("etype") == OUTPUT
    notice = F.when(F.col("etype") == DROP, F.to_json(F.struct(F.col("idx").alias("input"), F.col("text").alias("reason")))) \
        .otherwise(F.to_json(F.struct(F.array(*[F.col(c) for c in ORDER_KEY], F.col("idx")).alias("order"),
                                      F.col("idx").alias("input"), F.col("text").alias("code"))))
    kind = F.element_at(F.create_map(*[F.lit(x) for k, name in KINDS.items() for x in (k, name)]), F.col("etype"))
    order = [F.col(c) for c in OUTPUT_ORDER]
    rows = frame.select(kind.alias("kind"), *order, *output_columns(F.when(is_output, value).otherwise(notice), old_value))
    if fmt == "jsonl":
        return rows.select("kind", *OUTPUT_ORDER, F.when(F.col("kind") == "output", jsonl_line())
                           .otherwise(F.col("value")).alias("value"))
    # the columns of the reference's Parquet output (reference.model.record_files.output_parquet_schema)
    return rows.drop("has_old_value", *(() if _sends_old(features) else ("old_value",)))


def _sends_old(features) -> bool:
    return bool(dict(features.constants).get("send_old", True))


def _write(fmt, features, frame, path, single_file):
    """Output records (``outputs.output_frame``) in the output format (JSONL lines carry the old
    value where the scenario sends one; Parquet has the column only then)."""
    if fmt == "parquet":
        write_parquet(frame, path, single_file=single_file, with_old_value=_sends_old(features))
    else:
        write_jsonl(frame, path, single_file=single_file)


def _partition_keys(spark, partitions):
    """For each output partition p a long ``k`` that Spark's hash partitioning sends to p, so
    ``repartition(n, key)`` puts the rows of range p into partition p: in order, without the
    sampling job of a range sort (which would compute the whole join twice)."""
    from pyspark.sql import functions as F

    found = {}
    for row in spark.range(0, 64 * partitions).select("id", F.pmod(F.hash("id"), F.lit(partitions)).alias("p")).collect():
        found.setdefault(row["p"], row["id"])
    return [found[p] for p in range(partitions)] if len(found) == partitions else None


def _in_output_order(spark, rows, features, stats, partitions):
    """``rows`` in output order across ``partitions`` partitions (part files in name order), each
    sorted by ``kind`` first, as a partitioned write needs. ``as_listed`` outputs are ordered
    by the index of the input that emitted them, so partition p takes a range of input indexes;
    ``timestamp_sync`` needs a range sort."""
    from pyspark.sql import functions as F

    keys = _partition_keys(spark, partitions) if not features.ts_sync and partitions > 1 else None
    if keys is not None:
        bucket = F.least((F.col("g1") * partitions / F.lit(max(stats.records, 1))).cast("bigint"), F.lit(partitions - 1))
        key = F.element_at(F.array(*[F.lit(k).cast("bigint") for k in keys]), (bucket + 1).cast("int"))
        rows = rows.repartition(partitions, key)
    elif partitions > 1:
        rows = rows.repartitionByRange(partitions, *OUTPUT_ORDER)
    else:
        rows = rows.repartition(1)
    return rows.sortWithinPartitions("kind", *OUTPUT_ORDER).drop(*OUTPUT_ORDER)


def _read_notices(spark, folder, fmt, schema):
    from pyspark.sql import functions as F

    frame = spark.read.text(folder) if fmt == "jsonl" else spark.read.parquet(folder).select("value")
    return frame.select(F.from_json("value", schema).alias("n")).select("n.*")


def _hadoop(spark, path):
    jvm = spark._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    return hadoop_path.getFileSystem(spark._jsc.hadoopConfiguration()), hadoop_path


def _single_pass(spark, events, configs, features, stats, output, fmt, drops_path, single_file):
    """Write the outputs and read back drop counts in one computation of the join; returns
    ``(counts, failed)`` where ``failed`` is the first failing input's notice (nothing was
    published then: Kafka Streams would have stopped there, ``_until_failure`` cuts the output)."""
    staging = output.rstrip("/") + ".kssim-staging"
    fs, staging_path = _hadoop(spark, staging)
    partitions = 1 if single_file else max(1, int(spark.conf.get("spark.sql.shuffle.partitions")))
    try:
        rows = _in_output_order(spark, _staged_rows(events, configs, features, stats, fmt), features, stats, partitions)
        writer = rows.write.mode("overwrite").partitionBy("kind")
        (writer.text(staging) if fmt == "jsonl" else writer.parquet(staging))
        kinds = {name: staging + f"/kind={name}" for name in KINDS.values()
                 if fs.exists(_hadoop(spark, staging + f"/kind={name}")[1])}
        if "failure" in kinds:
            notices = _read_notices(spark, kinds["failure"], fmt, "order ARRAY<BIGINT>, input BIGINT, code STRING")
            failed = min(notices.collect(), key=lambda r: tuple(r["order"]))
            return None, failed
        counts = {}
        if "drop" in kinds:
            drops = _read_notices(spark, kinds["drop"], fmt, "input BIGINT, reason STRING")
            counts = {r["reason"]: r["count"] for r in drops.groupBy("reason").count().collect()}
            if drops_path:
                drops.orderBy("input").write.mode("overwrite").json(drops_path)
        out_fs, out_path = _hadoop(spark, output)
        out_fs.delete(out_path, True)
        if "output" in kinds:
            out_fs.mkdirs(out_path.getParent())
            if not fs.rename(_hadoop(spark, kinds["output"])[1], out_path):
                raise KssimError(f"could not move the outputs from {kinds['output']} to {output}")
        else:
            empty = output_frame(events.limit(0), configs, features, python_values=False)
            _write(fmt, features, empty, output, single_file=True)
        return counts, None
    finally:
        fs.delete(staging_path, True)


def _until_failure(events, configs, features, stats, failed, output, fmt, drops_path, single_file):
    """Kafka Streams would die at input ``failed``: write what the tasks emitted before it."""
    from pyspark.sql import functions as F

    at = F.struct(*[F.col(c) for c in ORDER_KEY], F.col("idx"))
    stop = F.struct(*[F.lit(v).cast("bigint") for v in failed["order"]])
    events = events.filter(at < stop)
    counts = {r["text"]: r["count"] for r in events.filter(F.col("etype") == DROP).groupBy("text").count().collect()}
    _write(fmt, features, output_frame(events, configs, features, python_values=stats.complex_values > 0), output,
           single_file=single_file)
    if drops_path:
        events.filter(F.col("etype") == DROP).orderBy("idx") \
            .select(F.col("idx").alias("input"), F.col("text").alias("reason")).write.mode("overwrite").json(drops_path)
    return counts, KafkaWouldFail(failed["input"], FailureCode.from_code(failed["code"]))


def replay(scenario, record_paths, output, fmt="jsonl", drops_path=None, spark=None, single_file=False):
    """Run the replay; returns ``(drop counts by reason, failure or None)``.

    One computation of the join writes the outputs, drops and failures side by side (in output
    order, partitioned by kind), and the drop counts are read back from the small drop part. If
    Kafka Streams would fail (rare: a release that dies on some input), the events before the
    failing input are written by a second pass."""
    clash = clashing_input(output, record_paths or (), either_way=True)
    if clash is not None:  # Spark's overwrite would delete the input
        raise OutputPathError(f"output {output} overlaps the input {clash}: refusing to overwrite a capture")
    spark = spark or get_spark()
    events, configs, features, stats = replay_frames(spark, scenario, record_paths)
    counts, failed = _single_pass(spark, events, configs, features, stats, output, fmt, drops_path, single_file)
    if failed is None:
        return counts, None
    return _until_failure(events, configs, features, stats, failed, output, fmt, drops_path, single_file)


def replay_to_file(scenario, record_paths, output, spark=None, master=None) -> ReplaySummary:
    """``kssim replay --engine spark``: replay into one output file (``.jsonl`` or ``.parquet``).
    The path is checked before any work (not an input, folder exists, known extension); Spark
    writes its part files into a work folder beside it, which are joined in order into a
    temporary file that replaces ``output`` only when complete (on an error or Ctrl-C nothing
    partial is left). ``spark``: a session (default: ``get_spark(master, workload="bulk")``)."""
    fmt = check_output_path(output, record_paths)
    spark = spark or get_spark(master, workload="bulk")
    folder = tempfile.mkdtemp(prefix=f".{os.path.basename(output)}.", suffix=".kssim-parts",
                              dir=os.path.dirname(os.path.abspath(output)))
    try:
        parts = os.path.join(folder, "out")
        with atomic_path(output) as temp:
            counts, failure = replay(scenario, record_paths, parts, fmt, spark=spark)
            written = join_parts(parts, temp, fmt, with_old_value=sends_old_values(scenario))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return ReplaySummary(written, counts, failure)


def join_parts(folder, output, fmt, with_old_value=False) -> int:
    """Concatenate Spark's part files under ``folder`` (named in output order) into the file
    ``output``; returns the number of records."""
    parts = sorted(p for p in glob.glob(os.path.join(folder, "part-*")) if not p.endswith(".crc"))
    if fmt == "jsonl":
        lines = 0
        with open(output, "wb") as sink:
            for part in parts:
                with open(part, "rb") as source:
                    for chunk in iter(lambda: source.read(1 << 20), b""):
                        lines += chunk.count(b"\n")
                        sink.write(chunk)
        return lines
    import pyarrow.parquet as pq

    from reference.model.record_files import output_parquet_schema

    writer, rows = None, 0
    try:
        for part in parts:
            source = pq.ParquetFile(part)
            writer = writer or pq.ParquetWriter(output, source.schema_arrow)
            for batch in source.iter_batches():
                writer.write_batch(batch)
                rows += batch.num_rows
        if writer is None:  # no part file: an empty file with the output columns
            writer = pq.ParquetWriter(output, output_parquet_schema(with_old_value))
    finally:
        if writer is not None:
            writer.close()
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_backend.runtime.replay", description=__doc__.split("\n\n")[0])
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
        spark = get_spark(master=args.master, conf=conf, workload="bulk")
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
