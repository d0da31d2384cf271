"""Run scenarios on Spark: many scenarios per job, one result per scenario.

``run_scenarios(scenarios)`` turns a batch into one records DataFrame (a scenario id column),
computes the processing order and every operator's results, drops and failures set-based, and
collects them in one action; the driver sorts them on a total order (input order key, forward
order), so the output is byte-identical whatever the shuffle partitioning. (A Spark ``orderBy``
here would cost a sampling job and a range shuffle for a few thousand rows.)

Drops and failures: the operators write only codes (a ``reference.model.codes.DropReason`` or
``FailureCode`` code in the event's ``text``); they become those members here, when the results
are collected. Real Kafka Streams dies on the first failing input in processing order; the records
emitted and the drops recorded before it are kept, nothing after it is (as the reference engine's
run stops there). Scenarios whose operator this backend does not implement get an
:class:`~reference.model.errors.UnsupportedOperator` instance in their slot instead of a result,
and so do FK joins with ``config.delivery: interleaved`` (:func:`unsupported_delivery`).
"""
from __future__ import annotations

from typing import List, Optional, Sequence

import attrs

from kssim.reference.model.codes import DropReason, FailureCode
from kssim.reference.model.errors import KafkaWouldFail, UnsupportedOperator
from kssim.reference.model.records import Drop, RunResult

from kssim.spark_backend.runtime.inputs import IMPLEMENTED, scenarios_to_frames, with_configs
from kssim.spark_backend.runtime.outputs import DROP, FAILURE, OUTPUT, OUTPUT_ORDER, to_output_records
from kssim.spark_backend.runtime.processing_order import ORDER_KEY, by_task, with_processing_order
from kssim.spark_backend.session import get_spark
from kssim.spark_backend.graph.runner import run_graphs
from kssim.spark_backend.joins.stream_stream import stream_stream_join
from kssim.spark_backend.joins.global_table import global_table_join
from kssim.spark_backend.joins.stream_table import stream_table_join
from kssim.spark_backend.joins.table_table import table_table_join
from kssim.spark_backend.foreign_key.join import foreign_key_join
from kssim.spark_backend.windows.time_window import time_window_aggregate
from kssim.spark_backend.windows.windowed_table_join import windowed_table_join
from kssim.spark_backend.windows.session import session_aggregate
from kssim.spark_backend.windows.sliding import sliding_aggregate
from kssim.spark_backend.suppress import stage as suppress_stage

OPERATORS = {"stream_table_join": stream_table_join, "table_table_join": table_table_join,
             "stream_stream_join": stream_stream_join}
OPERATORS["fk_join"] = foreign_key_join
OPERATORS["global_table_join"] = global_table_join
OPERATORS["window_aggregate"] = time_window_aggregate
OPERATORS["windowed_table_join"] = windowed_table_join
OPERATORS["session_aggregate"] = session_aggregate
OPERATORS["sliding_aggregate"] = sliding_aggregate


def batch_events(records, configs, features):
    """Every event (output, drop, failure) of a batch, in no particular order: callers sort on
    :func:`event_order` / ``OUTPUT_ORDER`` and cut at the first failure (:func:`first_failure`)."""
    from pyspark.sql import functions as F

    rows = with_processing_order(with_configs(by_task(records, features), configs, features), features)
    if features.suppress.active:  # suppress asks its operator for old values (2.3+)
        rows, features = suppress_stage.upstream(rows, features)
    # only the operators the batch has: every branch is planned and run even when it is empty
    parts = [run(rows.filter(F.col("op") == op), features) for op, run in OPERATORS.items()
             if op in features.operators]
    events = parts[0]
    for part in parts[1:]:
        events = events.unionByName(part)
    if features.suppress.active:  # KTable#suppress: a function of the operator's events per task
        events = suppress_stage.suppressed(events, rows, configs, features)
    return events


def event_order(row) -> tuple:
    """Where an event's input stands in its scenario's processing order."""
    return tuple(row[c] for c in ORDER_KEY) + (row["idx"],)


def output_order(row) -> tuple:
    """The total output order: input order, then the order forwarded within one input."""
    return tuple(row[c] for c in OUTPUT_ORDER[1:]) + (row["idx"],)


def first_failure(failure_rows):
    """Kafka Streams dies at the first failing input in processing order: that FAILURE event."""
    return min(failure_rows, key=event_order, default=None)


def drop_order(row) -> tuple:
    """Drops of one input (a windowed aggregation drops once per window) in the order dropped."""
    return row["idx"], row["f1"] or 0, bytes(row["f2"] or b""), row["f3"] or 0


def before_failure(row, failed) -> bool:
    """Did the event ``row`` happen before Kafka Streams died at ``failed``? Everything of earlier
    inputs did; of the failing input, the outputs forwarded before the exception (a session merge
    forwards the tombstones of the merged sessions before the aggregator throws), which
    ``TopologyTestDriver`` has already written to the output topic, and the drops recorded before
    it (a hopping record skips its expired windows before the aggregator throws on a live one)."""
    stop = event_order(failed)
    here = event_order(row)
    return here < stop or (here == stop and row["etype"] in (OUTPUT, DROP)
                           and output_order(row) < output_order(failed))


def unsupported_delivery(scenario) -> Optional[UnsupportedOperator]:
    """``config.delivery: interleaved`` (seeded interleavings of an FK join's internal topics) is the
    reference engine's alone: the Spark backend computes TopologyTestDriver's synchronous order."""
    if scenario.config.delivery == "interleaved" and scenario.topology.operator == "fk_join":
        return UnsupportedOperator("interleaved delivery is not supported by engine spark")
    return None


def run_scenarios(scenarios: Sequence, spark=None, scan_block: Optional[int] = None) -> List:
    """Run a batch of scenarios in one Spark job; one result (or UnsupportedOperator) per scenario.
    ``scan_block``: compute the task scans in blocks of that many positions (``prefix_scan``; a
    replay's plan for large inputs, which tests run on small ones)."""
    slots: List = [None] * len(scenarios)
    runnable, graphs = [], []
    for i, scenario in enumerate(scenarios):
        op = scenario.topology.operator
        if op == "graph":
            graphs.append(i)
        elif op not in IMPLEMENTED:
            slots[i] = UnsupportedOperator(f"the Spark backend does not implement operator {op!r} yet")
        elif unsupported_delivery(scenario) is not None:
            slots[i] = unsupported_delivery(scenario)
        else:
            runnable.append(i)
    if graphs:
        spark = spark or get_spark()
        for sid, result in run_graphs([scenarios[i] for i in graphs], graphs, spark).items():
            slots[sid] = result
    if not runnable:
        return slots
    spark = spark or get_spark()
    records, configs, features = scenarios_to_frames(spark, [scenarios[i] for i in runnable], runnable)
    features = attrs.evolve(features, scan_block=scan_block)
    by_sid = {i: [] for i in runnable}
    for row in batch_events(records, configs, features).collect():
        by_sid[row["sid"]].append(row)

    def joiner_of(sid):
        spec = scenarios[sid].topology  # aggregations have none: (None, None), the value as it is
        return getattr(spec, "joiner", None), getattr(spec, "joiner_separator", None)

    for sid, rows in by_sid.items():
        failed = first_failure([r for r in rows if r["etype"] == FAILURE])
        if failed is not None:  # what the tasks did before it is kept, nothing after
            rows = [r for r in rows if before_failure(r, failed)]
        outputs = sorted((r for r in rows if r["etype"] == OUTPUT), key=output_order)
        # one input may drop several times (a window each): in the order its operator dropped
        drops = sorted((r for r in rows if r["etype"] == DROP), key=drop_order)
        slots[sid] = RunResult(
            outputs=tuple(to_output_records(outputs, joiner_of)),
            drops=tuple(Drop(r["idx"], DropReason.from_code(r["text"])) for r in drops),
            failure=None if failed is None else KafkaWouldFail(failed["idx"], FailureCode.from_code(failed["text"])))
    return slots


def run_scenario(scenario, spark=None) -> RunResult:
    """One scenario (raises UnsupportedOperator for an operator this backend does not implement)."""
    result = run_scenarios([scenario], spark)[0]
    if isinstance(result, Exception):
        raise result
    return result
