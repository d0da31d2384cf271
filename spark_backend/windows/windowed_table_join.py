"""The windowed-table join (seed 003's "WTable"): two time-windowed aggregations joined on
(key, window) as KTables, with and without ``shift_ms``, set-based.

Topology (scenario-format.md; the conformance files' DSL): ``L = left.groupByKey().windowedBy(W)
.aggregate(...)``, ``R`` likewise over ``right``; without a shift ``L.join / leftJoin /
outerJoin(R)``; with one, ``R2 = R.toStream().map(window shifted by shift_ms).toTable()`` (a
key-value table, never expiring, fed through a repartition topic that TopologyTestDriver drains
after each input) and ``L`` joined with ``R2``. ``toTable`` is KIP-523's (2.5+,
``kstream_to_table``: the loader rejects a shift before).

- the two aggregations: ``time_window.py`` (each side its own processor, clock and window store);
  an update of window ``[s, s + size)`` is joined at ``s`` (a right update at ``s + shift`` with a
  shift). Every forwarded update reaches the join, a pre-2.1 update whose store forgot the window
  included.
- the other side's value, read when an update arrives (``KTableValueGetter``): a window store's
  ``fetch(key, start)`` (``KStreamWindowAggregateValueGetter``) shows the side's last stored
  aggregate of that window (a reduce's null deleted it) if the store still shows the window
  (``time_window.window_store_shows``: in memory and RocksDB since KAFKA-12960 ``start > clock -
  retention``; RocksDB before by its live segments); ``R2``'s key-value store its last stored value.
  Both are windows ``last`` per (scenario, task, key, joined start) over the earlier updates.
- ``R2``'s source (``KTableSource``): a put of the value the store holds (or a tombstone for an
  absent key) is ignored in 2.6.0, 2.6.1 and 2.7.0 (KIP-557, ``ktable_emit_on_change``:
  ``idempotent_update``).
- old values: ``leftJoin`` makes L send old values, ``outerJoin`` both, ``send_old_values`` both and
  the join too. An aggregation's old value is the stored aggregate or the initializer's (a fresh
  count window's old value is 0, not null); ``R2``'s is its previous value.
- the join processors: ``KTableKTableInnerJoin`` / ``LeftJoin`` / ``RightJoin`` / ``OuterJoin``, with
  the same per-release rules as ``spark_backend.joins.table_table`` (``kip77_join_semantics``,
  ``output_ts_max``: the result carries ``max(update ts, other's stored ts)`` since 2.3).

Several partitions: the repartition topic is keyed by the shifted windowed key (``TimeWindowed``
serde: the key's bytes, then the start as an 8-byte long) and partitioned by Kafka's default
partitioner (murmur2, ``reference.model.keys``), so a shifted right window updates ``R2`` in the
task that key hashes to, at the right input's place in the processing order, and joins the left
windows of that task. The windows here are therefore ordered by the scenario's global processing
order (``g1..g4``; within one task the same as ``seq``).

The shifted bounds are Java longs: a right window whose ``end + shift_ms`` passes
``Long.MAX_VALUE`` makes the mapper's ``new TimeWindow`` throw (``window_illegal_argument``, at the
first such window in forward order); that record's shifted windows never reach ``R2``.

Output order within one input: the order its aggregation forwarded the window updates.
"""
from __future__ import annotations

from pyspark.sql import Window
from pyspark.sql import functions as F

from kssim.reference.model.codes import DropReason, FailureCode

from kssim.spark_backend.joins.table_table import join_result
from kssim.spark_backend.runtime.outputs import DROP, FAILURE, OLD_NONE, OUTPUT, events
from kssim.spark_backend.windows.window_settings import Features
from kssim.spark_backend.windows.time_window import (LONG_MAX, aggregate_events, aggregated_windows, expired_events,
                                                     forward_order, record_events, update_ts, window_store_shows,
                                                     windowed_key)

LEFT, RIGHT = 0, 1
BEFORE = (Window.unboundedPreceding, -1)
#: the scenario's processing order across tasks (``processing_order``)
GLOBAL_ORDER = ("g1", "g2", "g3", "g4")


def _partitions(keys, starts, counts):
    """Arrow UDF body: Kafka's default partition of the windowed key (key bytes + 8-byte start)."""
    import json
    import struct

    import pyarrow as pa

    from kssim.reference.model.keys import murmur2, serialized_key

    out = []
    for key, start, count in zip(keys.to_pylist(), starts.to_pylist(), counts.to_pylist()):
        data = serialized_key(json.loads(key)) + struct.pack(">q", start)
        out.append((murmur2(data) & 0x7FFFFFFF) % count)
    return pa.array(out, pa.int32())


def _table_task(partitioned: bool):
    """The task whose ``R2`` a right window update goes to (its own when there is one partition)."""
    if not partitioned:
        return F.col("task")
    routed = F.arrow_udf(_partitions, "int")(F.col("key"), F.col("j_start"), F.col("tasks"))
    return F.when(F.col("to_table") & (F.col("tasks") > 1), routed).otherwise(F.col("task"))


def _shift_wraps(start):
    """Whether a right window starting at ``start`` has a shifted end ``start + size + shift`` past
    ``Long.MAX_VALUE`` (computed without the sum: the loader keeps ``size + shift`` within a long)."""
    shift = F.col("shift")
    return (F.col("side") == RIGHT) & (shift != 0) & (start > F.lit(LONG_MAX) - shift - F.col("size"))


def _shift_failures(agg):
    """The mapper's ``new TimeWindow(start + shift, end + shift)`` throws for a shifted bound past
    ``Long.MAX_VALUE`` (``window_illegal_argument``): one failure per such window, where its update
    would have been forwarded (the first, in forward order, is the one Kafka dies at; the expired
    windows' drops come before it)."""
    f1, f3 = forward_order(agg)
    return events(agg.filter(~F.col("fail") & _shift_wraps(F.col("w_start"))), etype=F.lit(FAILURE), f1=f1,
                  f2=F.lit(b""), f3=f3, n_null=F.lit(False), o_kind=F.lit(OLD_NONE),
                  text=F.lit(FailureCode.WINDOW_ILLEGAL_ARGUMENT.code))


def _updates(agg, partitioned: bool):
    """The window updates the aggregations forward, with the start they are joined at, the ts
    they carry, whether ``R2`` (the shifted right table) receives them, and the task that joins
    them (``task`` from here on; ``R2``'s may be another one). A right record whose last window's
    shift wraps (:func:`_shift_failures`) sends none: Kafka dies before reading back the shifted
    windows it sent first."""
    side, shift = F.col("side"), F.col("shift")
    to_table = (side == RIGHT) & (shift != 0)
    value = F.when(~F.col("new_null"), F.col("new_text"))
    # the record's last window (ts - ts % advance) ends last: it wraps iff any does
    record_fails = _shift_wraps(F.col("ts") - F.col("ts") % F.col("adv"))
    updates = agg.filter(~F.col("fail") & ~record_fails).select(
        "*", F.when(to_table, F.col("w_start") + shift).otherwise(F.col("w_start")).alias("j_start"),
        to_table.alias("to_table"), value.alias("v"), update_ts().alias("u_ts"))
    return updates.withColumn("task", _table_task(partitioned))


def _with_table_source(updates):
    """``R2``'s source: the previous value of its key (its old value) and KIP-557's skip."""
    per_key = Window.partitionBy("sid", "task", "key", "j_start").orderBy(*GLOBAL_ORDER).rowsBetween(*BEFORE)
    previous = F.last(F.when(F.col("to_table"), F.struct(F.col("v"), F.col("u_ts").alias("t"))),
                      ignorenulls=True).over(per_key)
    frame = updates.select("*", previous.alias("r2_prev"))
    prev_v, has_prev = F.col("r2_prev.v"), F.col("r2_prev").isNotNull()
    same = F.when(F.col("v").isNull(), ~has_prev | prev_v.isNull()) \
        .otherwise(has_prev & prev_v.eqNullSafe(F.col("v")) & (F.col("u_ts") >= F.col("r2_prev.t")))
    # [ktable_emit_on_change] KIP-557 (2.6.0, 2.6.1, 2.7.0): putIfDifferentValues
    skipped = F.col("to_table") & F.col("ktable_emit_on_change") & same
    return frame.select("*", skipped.alias("r2_skipped"))


def _other_state(frame):
    """The other side's value (``o_v``, ``o_t``) as its getter returns it for this update."""
    per_key = Window.partitionBy("sid", "task", "key", "j_start").orderBy(*GLOBAL_ORDER).rowsBetween(*BEFORE)
    state = F.struct(F.col("v"), F.col("u_ts").alias("t"))
    in_store = ~F.col("rejected")  # before 2.1 a forgotten window's update is not stored
    left_state = F.last(F.when((F.col("side") == LEFT) & in_store, state), ignorenulls=True).over(per_key)
    right_window = F.last(F.when((F.col("side") == RIGHT) & ~F.col("to_table") & in_store, state),
                          ignorenulls=True).over(per_key)
    right_table = F.last(F.when(F.col("to_table") & ~F.col("r2_skipped"), state), ignorenulls=True).over(per_key)
    # the left store's clock in the joining task when a right update arrives there: the clock
    # after that task's last left update so far (an R2 update may come from another task)
    in_task = Window.partitionBy("sid", "task").orderBy(*GLOBAL_ORDER).rowsBetween(*BEFORE)
    left_clock = F.last(F.when(F.col("side") == LEFT, F.col("st0")), ignorenulls=True).over(in_task)
    frame = frame.select("*", left_state.alias("st_l"), right_window.alias("st_rw"), right_table.alias("st_rt"),
                         left_clock.alias("l_clock"))
    left = F.col("side") == LEFT
    shifted = F.col("shift") != 0
    other = F.when(~left, F.col("st_l")).when(shifted, F.col("st_rt")).otherwise(F.col("st_rw"))
    # a window store may no longer show the window (R2's key-value store always shows its keys)
    clock = F.when(left, F.col("st1")).otherwise(F.col("l_clock"))
    task_clock = F.when(left, F.col("sg1")).otherwise(F.col("sg0"))
    # 0.10.2: the other store's reads skip the segments older than its first put's
    first_start = F.when(left, F.col("fs1")).otherwise(F.col("fs0")) if "fs0" in frame.columns else None
    shows = (left & shifted) | window_store_shows(F.col("j_start"), clock, task_clock, first_start)
    return frame.select("*", F.when(shows, other.getField("v")).alias("o_v"),
                        F.when(shows, other.getField("t")).alias("o_t"))


def _join_events(frame):
    """The join processors' results (see ``spark_backend.joins.table_table`` for the rules)."""
    side, join = F.col("side"), F.col("join")
    # which sources send old values (KTableImpl#doJoin, enableSendingOldValues)
    sends_old = (F.col("send_old") | ((side == LEFT) & join.isin("left", "outer"))
                 | ((side == RIGHT) & (join == "outer")))
    source_old = F.when(F.col("to_table"), F.col("r2_prev.v")) \
        .otherwise(F.when(~F.col("old_null"), F.col("old_text")))
    new = F.col("v")
    old = F.when(sends_old, source_old)
    emit, new_null, o_kind, out_ts, (n_l, n_r, o_l, o_r) = join_result(
        side, join, new, old, F.col("o_v"), F.col("o_t"), F.col("u_ts"))
    f1, f3 = forward_order(frame)
    skipped = F.col("r2_skipped")
    etype = F.when(skipped, F.lit(DROP)).when(emit, F.lit(OUTPUT))
    return events(frame, etype=etype, key=windowed_key(F.col("j_start"), F.col("size")), ts=out_ts,
                  f1=f1, f2=F.lit(b""), f3=f3, n_null=new_null, n_l=n_l, n_r=n_r, o_kind=o_kind, o_l=o_l, o_r=o_r,
                  text=F.when(skipped, F.lit(DropReason.IDEMPOTENT_UPDATE.code)))


def windowed_table_join(frame, features=None):
    """``frame``: records of windowed_table_join scenarios, clustered by (scenario, task), with
    configs (``window_settings`` columns) and processing order. Returns its events."""
    recs, rows, agg = aggregated_windows(frame, features)
    needs = getattr(features, "windows", None) or Features()
    joined = _other_state(_with_table_source(_updates(agg, needs.partitioned_shift)))
    parts = [record_events(recs), expired_events(rows), aggregate_events(agg), _shift_failures(agg),
             _join_events(joined)]
    result = parts[0]
    for part in parts[1:]:
        result = result.unionByName(part)
    return result
