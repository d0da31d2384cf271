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

import attrs

from kssim.reference.model.codes import DropReason, FailureCode
from kssim.reference.model.errors import KafkaWouldFail, UnsupportedOperator
from kssim.reference.model.graph.plan import compile_graph
from kssim.reference.model.record_files import ReplaySummary, open_output
from kssim.reference.model.render import sends_old_values

from kssim.spark_backend.graph import runner
from kssim.spark_backend.graph.batch import GraphBatch


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
    records, _ = read_record_files(spark, [source.path for source in captures.sources],
                                   partitions=scenario.config.partitions, fmt=captures.sources[0].format.value,
                                   with_offsets=False, canonical_values=True,
                                   topics=tuple(runner.source_readers(plan)), keep_topic=True)
    batch = GraphBatch(spark, [attrs.evolve(scenario, inputs=())], [0], [plan])
    events = runner.run_levels(batch, runner.arrivals_of_records(batch, 0, records))
    return _write_in_order(events, batch, scenario, output)


def _write_in_order(events, batch, scenario, output) -> ReplaySummary:
    """Stream the events in processing order into the output file: outputs written, drops
    counted, and at the first failure (Kafka Streams dies there) the rest discarded."""
    from pyspark.sql import functions as F

    order = (F.col("ok"), F.col("etype"))
    partitions = int(batch.spark.conf.get("spark.sql.shuffle.partitions"))
    rows = events.repartitionByRange(partitions, *order).sortWithinPartitions(*order) \
        .toLocalIterator(prefetchPartitions=False)
    counts: dict = {}
    failure = None
    with open_output(output, sends_old_values(scenario)) as writer:
        for row in rows:
            etype = row["etype"]
            if etype == runner.OUTPUT:
                writer.write(runner.output_record(row))
            elif etype == runner.DROP:
                code = DropReason.from_code(row["code"]).code
                counts[code] = counts.get(code, 0) + 1
            elif etype == runner.FAILURE:
                failure = KafkaWouldFail(row["idx"], FailureCode.from_code(row["code"]))
                break
    return ReplaySummary(writer.count, dict(sorted(counts.items())), failure)

