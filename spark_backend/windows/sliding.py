"""Sliding-window aggregations (KIP-450, 2.7-4.3), emit on update and on window close.

Source: ``KStreamSlidingWindowAggregate`` (+ ``AbstractKStreamTimeWindowAggregateProcessor`` for
emit-final), ``SlidingWindows``, ``SlidingWindowedKStreamImpl`` / ``SlidingWindowStoreMaterializer``,
the window stores (``RocksDBSegmentedBytesStore`` over ``WindowKeySchema``, the indexed time-ordered
``RocksDBTimeOrderedWindowSegmentedBytesStore``, ``InMemoryWindowStore``) at the release tags;
digest: kafka-semantics-fk-windows.md part C.2. Settings and rules, read by name:
``sliding_settings``; which windows a store still holds: ``store_models``.

Set-based: null keys and null values are dropped before anything else (``null_key``,
``null_value``: the only windowed aggregation that drops null values). The rest is one sequential
pass per (scenario, task) (``sliding_replay``, a ``mapInArrow`` over the records sorted by
scenario, task and position): which windows a record updates and creates depends on its key's
windows, and which of those the store still shows on the store's clock, the largest window start
any key put, which no set-based step can know before the windows are made (see there). Output
order within one input (``f1``): as forwarded.
"""
from __future__ import annotations

from pyspark.sql import functions as F

from reference.model.codes import DropReason

from spark_backend.runtime.outputs import DROP, EVENT_DDL, OLD_NONE, events
from spark_backend.windows.sliding_replay import IN_COLUMNS, replay_batches


def sliding_aggregate(frame, features=None):
    """``frame``: records of sliding_aggregate scenarios, clustered by (scenario, task), with
    configs (``sliding_settings`` columns) and processing order. Returns its events."""
    key_null, value_null = F.col("key").isNull(), F.col("value").isNull()
    skipped = frame.filter(key_null | value_null)
    dropped = events(skipped, etype=F.lit(DROP), f1=F.lit(0), f2=F.lit(b""), f3=F.lit(0), n_null=F.lit(False),
                     o_kind=F.lit(OLD_NONE),
                     text=F.when(key_null, F.lit(DropReason.NULL_KEY.code)).otherwise(F.lit(DropReason.NULL_VALUE.code)))
    rows = frame.filter(~key_null & ~value_null).select(*IN_COLUMNS)
    replayed = rows.repartition("sid", "task").sortWithinPartitions("sid", "task", "seq") \
        .mapInArrow(replay_batches, EVENT_DDL)
    return dropped.unionByName(replayed)
