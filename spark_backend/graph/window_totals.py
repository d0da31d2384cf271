"""Native time-windowed ``count`` and ``sum`` (``KStreamWindowAggregate`` emitting on update):
window functions in the JVM, no Python, no virtual scenario.

The windowed aggregation stage (:mod:`spark_backend.graph.window_stages`) runs format 1's operator
on each instance as a virtual scenario: every arrival of an instance goes through one task and a
Python pass. The commonest windowed aggregation needs neither. For a time-windowed ``count`` or
``sum`` emitting on update, in a release where the processor keeps its own stream time
[``windowed_agg_own_stream_time``, 2.2, KAFKA-7895] (so with grace [``windowed_grace``], windows
in start order [``time_windows_in_start_order``], ``windowsFor`` fixed [``time_windows_for_fixed``]
and bounds checked [``window_bounds_checked``]) and a store that keeps at least ``size + grace``:

- **stream time** of an arrival is the running max of the timestamps of the instance's arrivals
  with a key, up to and including it, in order-key order (a null key is dropped, ``null_key``,
  before stream time moves). Computed in parallel by format 1's prefix scan: a running max within
  blocks of input indexes, raised by the max of the blocks before it (a small frame, broadcast);
- a negative timestamp has no window (``no_window``); a record whose last window would end past
  ``Long.MAX_VALUE`` fails (``window_illegal_argument``) before any window is updated;
- each window of ``TimeWindows#windowsFor`` (ascending starts: the position extends the order key)
  is live iff ``start + size > stream time - grace``, else dropped (``expired_window``, one drop
  per window);
- a live window's aggregate is the running total of its records' contributions (``count``: 1,
  ``sum``: ``INT(v)``, null counted as 0 by the graph's named ``sum``), wrapped as a Java long
  (:mod:`spark_backend.graph.running_totals`); the old value the total before (the initializer's
  0 first) when the node sends old values; the timestamp the window's max record ts
  [``time_window_output_ts_max``, 2.3; before, the record's].

Why the store never shows here: a live window starts after ``stream time - grace - size``, which
is no earlier than ``stream time - retention``, while the store's observed time (the newest window
start put) is at most the stream time; so neither a segment drop
[``rocksdb_segments_by_retention``] nor the fetch's retention filter
[``window_fetch_hides_expired``] can hide a window a record is still live for.

Cost: two shuffles (by instance and bucket for stream time, by key and window for the totals)
and sorts; O(size / advance) rows per record.
"""
from __future__ import annotations

from typing import List, Optional

from kssim.reference.model.codes import DropReason, FailureCode
from kssim.reference.model.profiles import time_window_settings
from kssim.reference.model.topology import WindowAggregateSpec

from kssim.spark_backend.graph import flow, running_totals
from kssim.spark_backend.graph.batch import Instance
from kssim.spark_backend.runtime import long_sums

#: input indexes per block of the stream-time prefix scan
BUCKET_BITS = 16
JAVA_LONG_MAX = (1 << 63) - 1
SETTINGS_DDL = "sid INT, node INT, function STRING, size BIGINT, advance BIGINT, grace BIGINT, " \
               "send_old BOOLEAN, ts_max BOOLEAN"


def settings(inst: Instance) -> Optional[tuple]:
    """The instance's row of :data:`SETTINGS_DDL` when it runs natively here, else None."""
    spec, profile = inst.node_plan.spec, inst.profile
    if not isinstance(spec, WindowAggregateSpec) or spec.emit != "on_update":
        return None
    function = running_totals.native_function(inst.node.op)
    rules = (profile.windowed_grace, profile.windowed_agg_own_stream_time, profile.time_windows_in_start_order,
             profile.time_windows_for_fixed, profile.window_bounds_checked)
    if function is None or not all(rules):
        return None
    window = spec.window
    kept = time_window_settings(profile, window.size_ms, window.grace_ms, spec.retention_ms)
    if kept.retention_ms < window.size_ms + kept.grace_ms:
        return None  # a store that forgets live windows: the operator's store model decides
    return (inst.sid, inst.index, function, window.size_ms, window.advance_ms, kept.grace_ms,
            inst.node_plan.send_old_values, bool(profile.time_window_output_ts_max))


def _stream_time(rows):
    """``rows`` with ``stream_time``: the running max of ``ts`` over the instance's rows up to
    each, in order-key order: format 1's parallel prefix scan (:mod:`spark_backend.runtime.prefix_scan`)
    with the node as its task and the input index as its position (the order key starts with it)."""
    from pyspark.sql import functions as F

    from kssim.spark_backend.runtime.prefix_scan import MAX, Running, running

    scanned = running(rows.withColumn("task", F.col("node")).withColumn("g1", F.col("idx")),
                      [Running("stream_time", MAX, F.col("ts"), inclusive=True)], flow.IN_ORDER, 1 << BUCKET_BITS)
    return scanned.drop("task", "g1")


def _windows(rows):
    """One row per (record, window of ``TimeWindows#windowsFor``): ``position`` (ascending start)
    and ``start``."""
    from pyspark.sql import functions as F

    ts, size, advance = F.col("ts"), F.col("size"), F.col("advance")
    first = ts - size + advance
    first = F.when(first > 0, F.floor(first / advance).cast("bigint") * advance).otherwise(F.lit(0).cast("bigint"))
    return rows.select("*", F.posexplode(F.sequence(first, ts, advance)).alias("position", "start"))


def _totals(live):
    """The live windows' table changes: running totals per (instance, key, window)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    window = Window.partitionBy("sid", "node", "key", "start").orderBy(*flow.IN_ORDER)
    upto = window.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    contribution = long_sums.chosen(F.col("function") == "count", long_sums.parts(F.lit(1)),
                                    running_totals.integer_of(F.col("value")))
    total, before = running_totals.running_sums(contribution, upto)
    return flow.records(
        live, ok=flow.extend(F.col("ok"), F.col("position")), value=total.cast("string"),
        old=F.when(F.col("send_old"), before.cast("string")),
        ts=F.when(F.col("ts_max"), F.max("ts").over(upto)).otherwise(F.col("ts")),
        wstart="start", wend=F.col("start") + F.col("size"), latest=F.lit(True))


def windowed_totals(arrivals, rows: List[tuple], batch) -> flow.StageResult:
    """The stage's result for the instances of ``rows`` (:func:`settings`)."""
    from pyspark.sql import functions as F

    settled = batch.settled(arrivals, rows, SETTINGS_DDL)
    null_key = F.col("key").isNull()
    # read by the windows, the drops and the failures: the prefix scan's two passes made once;
    # the settings joined after (literal columns stay literals, foldable, when not checkpointed)
    timed = _stream_time(settled.filter(~null_key).select(*arrivals.columns)).localCheckpoint(eager=False)
    timed = batch.settled(timed, rows, SETTINGS_DDL)
    ts = F.col("ts")
    no_window = ts < 0
    past_the_edge = ~no_window & (ts - F.pmod(ts, F.col("advance")) > F.lit(JAVA_LONG_MAX) - F.col("size"))
    windows = _windows(timed.filter(~no_window & ~past_the_edge))
    live = F.col("start") + F.col("size") > F.col("stream_time") - F.col("grace")
    return flow.StageResult(
        emitted=_totals(windows.filter(live)),
        drops=flow.union_all([
            flow.drops(settled.filter(null_key), DropReason.NULL_KEY.code),
            flow.drops(timed.filter(no_window), DropReason.NO_WINDOW.code),
            flow.drops(windows.filter(~live), DropReason.EXPIRED_WINDOW.code,
                       ok=flow.extend(F.col("ok"), F.col("position")))]),
        failures=flow.failures(timed.filter(past_the_edge), FailureCode.WINDOW_ILLEGAL_ARGUMENT.code))
