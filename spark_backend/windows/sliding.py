"""Sliding-window aggregations (KIP-450, 2.7-4.3), emit on update and on window close.

Source: ``KStreamSlidingWindowAggregate`` (+ ``AbstractKStreamTimeWindowAggregateProcessor`` for
emit-final), ``SlidingWindows``, ``SlidingWindowedKStreamImpl`` / ``SlidingWindowStoreMaterializer``,
the window stores (``RocksDBSegmentedBytesStore`` over ``WindowKeySchema``, the indexed time-ordered
``RocksDBTimeOrderedWindowSegmentedBytesStore``, ``InMemoryWindowStore``) at the release tags;
digest: kafka-semantics-fk-windows.md part C.2. Settings and rules, read by name:
``sliding_settings``; which windows a store still holds: ``store_models``.

Set-based: null keys and null values are dropped before anything else (``null_key``,
``null_value``: the only windowed aggregation that drops null values), and the stream time (the
running max of ``ts`` over the task's other records, a window in processing order). The rest is a
sequential pass (``sliding_replay``, a ``mapInArrow`` over the records sorted by scenario, task,
scope and position): which windows a record updates and creates depends on its key's windows.
Which of those the store still shows depends on the store's clock, the largest window start any
key put, which no set-based step knows before the windows are made (see there); but that clock
never passes the stream time, so when no record of a task reaches (with its fetch, from ``ts -
2d``, or its puts) below the stream time minus the retention, no store floor can matter, and the
task is replayed per key (the *scope* is the key: in parallel). Otherwise, and under
emit-on-window-close (whose range fetch reads every key), the task is replayed in one pass.
Output order within one input (``f1``): as forwarded.
"""
from __future__ import annotations

from pyspark.sql import Window
from pyspark.sql import functions as F

from kssim.reference.model.codes import DropReason

from kssim.spark_backend.runtime.outputs import DROP, EVENT_DDL, OLD_NONE, events
from kssim.spark_backend.runtime.prefix_scan import MAX, Running, running
from kssim.spark_backend.windows.sliding_replay import IN_COLUMNS, replay_function

#: processing order within a task (the order ``with_processing_order`` numbered ``seq`` by)
ORDER = ("g1", "g3", "g4")


def _scoped(rows, features):
    """Adds ``stream_time`` (after the record) and ``scope``: the key where the task can be
    replayed per key (see the module docstring), else one scope for the whole task."""
    ts, d = F.col("ts"), F.col("sl_diff")
    rows = running(rows, [Running("stream_time", MAX, ts, inclusive=True)], ORDER,
                   getattr(features, "task_scan_block", None))
    # (ts + d >= close, without the sum: ts + d may pass a long, which Kafka wraps and drops as late;
    # counting such a record as accepted only makes its task replay in one scope)
    accepted = ts >= F.col("stream_time") - F.col("sl_grace") - d
    # every store floor (store_models) at a clock c is at most c - retention + 1, and c never passes
    # the stream time; the lowest start a record fetches or puts is max(0, ts - 2d)
    # (lo < stream time - retention + 1 as lo <= stream time - retention: at a stream time of
    # Long.MAX_VALUE and a retention of 0 the + 1 would pass a long)
    touches_floor = accepted & (F.greatest(F.lit(0), ts - 2 * d) <= F.col("stream_time") - F.col("sl_retention"))
    coupled = F.max(touches_floor.cast("int")).over(Window.partitionBy("sid", "task")) == 1
    scope = F.when(F.col("sl_final") | coupled, F.lit("")).otherwise(F.col("key"))
    return rows.select("*", scope.alias("scope"))


def sliding_aggregate(frame, features=None):
    """``frame``: records of sliding_aggregate scenarios, clustered by (scenario, task), with
    configs (``sliding_settings`` columns) and processing order. Returns its events."""
    key_null, value_null = F.col("key").isNull(), F.col("value").isNull()
    skipped = frame.filter(key_null | value_null)
    reason = F.when(key_null, F.lit(DropReason.NULL_KEY.code)).otherwise(F.lit(DropReason.NULL_VALUE.code))
    dropped = events(skipped, etype=F.lit(DROP), f1=F.lit(0), f2=F.lit(b""), f3=F.lit(0), n_null=F.lit(False),
                     o_kind=F.lit(OLD_NONE), text=reason)
    rows = _scoped(frame.filter(~key_null & ~value_null), features).select(*IN_COLUMNS)
    replayed = rows.repartition("sid", "task", "scope").sortWithinPartitions("sid", "task", "scope", "seq") \
        .mapInArrow(replay_function(getattr(getattr(features, "sliding", None), "callables", ())), EVENT_DDL)
    return dropped.unionByName(replayed)
