"""``kssim replay --engine spark`` of a topology graph, two ways, as format 1's replay
(``runtime.replay.replay_to_file``):

- **driver read** (small captures, and captures Spark cannot scan: kcat, console, topic mapping):
  the captures read on the driver by the shared reader (every record checked as the reference
  checks it), the graph run as one batch (:func:`spark_backend.graph.runner.run_graphs`);
- **scanned** (large JSONL/Parquet record files, ``runtime.replay.scans_with_spark``): Spark reads,
  numbers and checks the files itself (``runtime.record_files.read_record_files``: a bad record is
  named by the shared reader, as for format 1), the records enter the graph's source nodes as
  arrivals (:func:`runner.arrivals_of_records`), and the events come back to the driver sorted by
  order key, one range partition at a time (``toLocalIterator``): the driver holds one partition,
  never the whole output, and writes each record as it comes.

Both write with the reference's writer (``record_files.open_output``: the same bytes, the file
written atomically). Kafka Streams dying at an input keeps what came before it, as a run does.
"""
from __future__ import annotations

import os
import shutil
import tempfile

import attrs

from kssim.reference.model.codes import DropReason, FailureCode
from kssim.reference.model.errors import KafkaWouldFail, UnsupportedOperator
from kssim.reference.model.graph.plan import compile_graph
from kssim.reference.model.record_files import ReplaySummary, atomic_path, open_output, output_format
from kssim.reference.model.render import sends_old_values

from kssim.spark_backend.graph import columns, runner
from kssim.spark_backend.graph.batch import GraphBatch
from kssim.spark_backend.runtime.replay import join_parts


def replay_graph(spark, scenario, captures, output, scan: bool = False) -> ReplaySummary:
    """Replay the opened ``captures`` (``reference.model.captures``) through ``scenario``'s graph;
    ``scan``: Spark reads the record files itself (the caller decided it can)."""
    if scan:
        return _scanned(spark, scenario, captures, output)
    inputs = tuple(captures.records())
    result = runner.run_graphs([attrs.evolve(scenario, inputs=inputs)], [0], spark)[0]
    if isinstance(result, UnsupportedOperator):
        raise result
    counts: dict = {}
    for drop in result.drops:
        counts[drop.reason.code] = counts.get(drop.reason.code, 0) + 1
    with open_output(output, sends_old_values(scenario)) as writer:
        writer.write_many(result.outputs)
    return ReplaySummary(writer.count, dict(sorted(counts.items())), result.failure,
                         dict(sorted(captures.ignored.items())))


def _scanned(spark, scenario, captures, output) -> ReplaySummary:
    from kssim.spark_backend.runtime.record_files import read_record_files

    plan = compile_graph(scenario.topology, scenario.profile, scenario.config.store)
    refusal = runner.unsupported(plan, scenario.config)
    if refusal is not None:
        raise refusal
    # KIP-557's idempotence check compares value bytes [ktable_emit_on_change]: values canonical
    records, stats = read_record_files(spark, [source.path for source in captures.sources],
                                   partitions=scenario.config.partitions, fmt=captures.sources[0].format.value,
                                   with_offsets=False, canonical_values=True,
                                   topics=tuple(runner.source_readers(plan)), keep_topic=True)
    # with no float anywhere in the captures, the graph's native columns are exact on every row
    numbers = columns.PLAIN if stats.float_like == 0 else columns.INEXACT
    batch = GraphBatch(spark, [attrs.evolve(scenario, inputs=())], [0], [plan], scanned_numbers={0: numbers})
    events = runner.run_levels(batch, runner.arrivals_of_records(batch, 0, records))
    return _write_in_order(events, batch, scenario, output)


def _write_in_order(events, batch, scenario, output) -> ReplaySummary:
    """Write the outputs in processing order into the output file, by Spark: the first failure
    (Kafka Streams dies there) found first, so that only what came before it is kept; drops
    counted by code; output records as lines (or Parquet rows) built in the JVM, range-partitioned
    by order key into part files named in order, joined into the file (written atomically)."""
    from pyspark.sql import functions as F

    failed = events.filter(F.col("etype") == runner.FAILURE).select("ok", "idx", "code").collect()
    failure = min(failed, key=lambda r: list(r["ok"])) if failed else None
    kept = events if failure is None else events.filter(F.col("ok") < F.lit(list(failure["ok"])).cast("array<bigint>"))
    counts = {DropReason.from_code(r["code"]).code: r["count"]
              for r in kept.filter(F.col("etype") == runner.DROP).groupBy("code").count().collect()}
    fmt = output_format(output)  # not standard output: the command line keeps that to the reference
    with_old = sends_old_values(scenario)
    rows = output_rows(kept.filter(F.col("etype") == runner.OUTPUT), with_old)
    partitions = int(batch.spark.conf.get("spark.sql.shuffle.partitions"))
    ordered = rows.repartitionByRange(partitions, *_IN_ORDER).sortWithinPartitions(*_IN_ORDER).drop("ok")
    folder = tempfile.mkdtemp(prefix=f".{os.path.basename(output)}.", suffix=".kssim-parts",
                              dir=os.path.dirname(os.path.abspath(output)))
    try:
        parts = os.path.join(folder, "out")
        if fmt == "jsonl":
            _jsonl_lines(ordered, with_old).write.text(parts)
        else:
            ordered.write.parquet(parts)
        with atomic_path(output) as temp:
            written = join_parts(parts, temp, fmt, with_old_value=with_old)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return ReplaySummary(written, dict(sorted(counts.items())),
                         None if failure is None else KafkaWouldFail(failure["idx"], FailureCode.from_code(failure["code"])))


#: an output row's order (``flow.IN_ORDER``: its input, ``ok[0]``, compared first)
_IN_ORDER = ("input", "ok")


def output_rows(outputs, with_old: bool):
    """Output rows of a level (``runner.LEVEL_DDL``) as the columns of an output record file
    (``reference.model.record_files.output_parquet_schema``: key, value and old value as JSON
    text; a windowed key as ``{"key","start","end"}``, ``records.windowed_key``), with ``ok``."""
    from pyspark.sql import functions as F

    windowed = F.concat(F.lit('{"key":'), F.coalesce(F.col("key"), F.lit("null")), F.lit(',"start":'),
                        F.col("wstart").cast("string"), F.lit(',"end":'), F.col("wend").cast("string"), F.lit("}"))
    key = F.when(F.col("wstart").isNotNull(), windowed).otherwise(F.col("key"))
    # every column nullable, as output_parquet_schema's (a literal 0 would be "not null")
    partition = F.when(F.col("idx").isNotNull(), F.lit(0)).cast("int")
    columns = [F.col("topic"), partition.alias("partition"), key.alias("key"), F.col("value"), F.col("ts"),
               F.col("idx").alias("input")]
    if with_old:  # a graph's output record has no old value: null
        columns.append(F.lit(None).cast("string").alias("old_value"))
    return outputs.select("ok", *columns)


def _jsonl_lines(rows, with_old: bool):
    """Output rows (:func:`output_rows`) as the reference writes them (``render.json_line`` of
    ``render.output_as_json``), by format 1's line builder with each row's topic as a JSON string."""
    from pyspark.sql import functions as F

    from kssim.spark_backend.runtime.outputs import jsonl_line

    listed = F.to_json(F.array(F.col("topic")))  # ["the topic"], escaped as JSON
    topic = listed.substr(F.lit(2), F.length(listed) - 2)
    old = [] if with_old else [F.lit(None).cast("string").alias("old_value")]
    return rows.select("*", F.lit(with_old).alias("has_old_value"), *old).select(jsonl_line(topic).alias("value"))
