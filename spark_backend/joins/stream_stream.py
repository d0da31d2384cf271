"""KStream-KStream joins (inner, left, outer) for Kafka 0.10.0-3.9: set-based, except the
outer-store replay of the 3.1+ spurious-result fix.

Source: ``KStreamKStreamJoin`` (+ ``LeftSide`` / ``RightSide``), ``KStreamJoinWindow``,
``KStreamImplJoin`` (``TimeTracker``), ``StreamStreamJoinUtil``, ``JoinWindows``, the window
stores (``RocksDBWindowStore``, ``RocksDBSegmentedBytesStore``, ``Segments`` /
``AbstractSegments``, ``InMemoryWindowStore``) at the release tags; digest:
kafka-semantics-joins.md sections 1.3, 2, 5, 6. Per-scenario settings (windows, retention,
release rules read by name): ``stream_stream_settings``.

Every record of a task goes to the processor of its side (left bounds ``[t - before, t +
after]``, right ``[t - after, t + before]``, swapped by KAFKA-4153 in 0.10.1,
``right_join_swaps_window_bounds``; both clamped at 0), which forwards its results before
``KStreamJoinWindow`` puts the record into its side's window store. How each rule is computed
("window" = a running aggregate per (scenario, task) in processing order: a window function, or
for a large ``as_listed`` replay ``prefix_scan``'s parallel blocks); the settings are columns
named as the rules (``stream_stream_settings``):

- nulls, per record, no window: a null key never reaches a processor before 3.7 (``null_key``);
  since KIP-77 (0.10.2, ``kip77_join_semantics``) a null value is dropped too (``null_value``),
  before it is joined (``joiner(null, ...)``) and never stored. Since KIP-962 (3.7,
  ``null_key_outer_emit``) an outer processor emits a null-key record with a value at once (null
  key, its ts). Before KIP-77 ``leftJoin`` had one processor: left records look up the right
  store and are not stored, right records are only stored; in 0.10.0
  (``stream_join_null_key_throws``) a null left key reaches that processor, which throws: failure
  ``stream_join_null_key``.
- window stores, windows: a store's clock before a record is the max ts of the earlier puts into
  it (a null-value put counts in memory, and in RocksDB before KAFKA-9921 / 2.5.1,
  ``rocksdb_null_window_put_skipped``); in 2.1 (before KAFKA-7895, ``window_store_own_clock``)
  RocksDB expired by the task's stream time at the store's last put, a second window. A stored
  record R is visible to the fetch at position q iff it was put before q and ``R.ts >=
  visibleFrom``, one threshold per lookup from the other store's clock C: in memory and in RocksDB
  since KAFKA-12960 (3.4, ``window_fetch_hides_expired``) ``C - retention + 1``; RocksDB 2.1-3.3
  (segments live while ``>= segmentId(C - retention)``, KAFKA-7072,
  ``rocksdb_segments_by_retention``) ``segmentId(C - retention) * interval``; before 2.1 (the
  three newest segments) ``(segmentId(C) - 2) * interval``, in 0.10.2 not below the first segment
  the store created (``Segments#minSegmentId``, ``rocksdb_fetch_from_first_segment``). Visibility
  is monotone in C, so one threshold is exact. A put the store rejects (in memory ``ts <= C -
  retention``; RocksDB a segment no longer live) is an ``expired_window_put`` drop; the record was
  joined before.
- matches, a range join: each lookup carries its time bucket ``ts div B`` (B is wider than any
  lookup range of the scenario) and its range ``[max(max(0, t - joinBefore), visibleFrom),
  max(0, t + joinAfter)]``; each stored record is exploded into the (at most two) buckets whose
  lookups can reach it. A left outer hash join on (scenario, task, key, bucket, store side) with
  ``R.position < q`` and the range gives every result (fetch order: ``R.ts``, then put order)
  and one row per lookup that found nothing. Results carry ``max(t, R.ts)`` since KAFKA-6455
  (2.3, ``output_ts_max``), the triggering ts before.
- the edge of the long range: the lookup bounds are Java longs; ``t + joinAfter`` past
  ``Long.MAX_VALUE`` wraps negative and ``Math.max`` makes it 0, so the range ``[max(0, t -
  joinBefore), 0]`` is reversed and finds nothing, or, when a negative ``joinBefore`` wrapped ``t -
  joinBefore`` too, is ``[0, 0]``: such lookups (and every stored record at ts 0) use their own
  bucket (``WRAPPED_BUCKET``). 2.1-3.3 RocksDB (``model`` BY_LIVE_SEGMENTS) fetches a reversed
  range through ``TreeMap#subMap(segmentId(from), segmentId(0))``, which throws when ``from`` is at
  least one segment interval: failure ``window_fetch_reversed_range`` (after the emission scan;
  the record is not stored). No sum here passes a long (Spark's ANSI arithmetic would throw).
- eager left/outer results (before 3.1, and ``JoinWindows.of`` since): an outer processor that
  found nothing emits ``X-null`` at its ts at once.
- the spurious-result fix (3.1+, ``time_difference_windows``: ``ofTimeDifference*``, left/outer
  joins): truly sequential per tracker (see ``stream_stream_outer``), so the shared stream time,
  outer store and emission scan are replayed by a ``mapInArrow`` over each tracker's rows in
  processing order (per task since KAFKA-14862 / 3.4.1, ``stream_time_tracker_per_task``, per
  instance before), fed only the rows that matter, selected set-based: clock rows (records at or
  above their task's running max of clock-advancing records, a window: every record since KIP-962
  / 3.7, ``stream_time_advanced_by_dropped``, non-dropped ones before), lookups of an outer
  processor that found nothing, and matches that delete outer entries.

Output order within one input (``f1``, ``f2``, ``f3``): scan flushes (0, -, walk rank), inner
results (1, ``R.ts`` as 8 big-endian bytes, R's position), the immediate ``X-null`` and a failure
(1, -, 0). The records frame and (with the
fix) the matches are read by several branches, so each is materialized once (local checkpoints,
freed with their frames).
"""
from __future__ import annotations

from pyspark.sql import functions as F

from kssim.reference.model.codes import DropReason, FailureCode

from kssim.spark_backend.runtime.outputs import DROP, EVENT_DDL, FAILURE, OLD_NONE, OUTPUT, events
from kssim.spark_backend.runtime.prefix_scan import FIRST, MAX, Running, running
from kssim.spark_backend.joins.stream_stream_outer import PASS_COLUMNS, replay_batches
from kssim.spark_backend.joins.stream_stream_settings import LEGACY_SEGMENTS, Features

#: processing order within a task (the order ``with_processing_order`` numbered ``seq`` by)
ORDER = ("g1", "g3", "g4")
LEFT, RIGHT = 0, 1
# how a store hides old records (see _visible_from)
BY_CLOCK, BY_LIVE_SEGMENTS, BY_NEWEST_SEGMENTS, BY_NEWEST_SEGMENTS_FROM_FIRST = 0, 1, 2, 3


def _div(numerator: str, denominator: str):
    """Java's long division (truncating towards zero, as Kafka's ``segmentId``) of two named
    columns: Spark's integral ``div`` does the same."""
    return F.expr(f"{numerator} div {denominator}")


def _bounds(proc_is_left):
    """(joinBefore, joinAfter) of a side's processor (KAFKA-4153 swapped the right one's)."""
    before, after = F.col("ss_before"), F.col("ss_after")
    plain = proc_is_left | ~F.col("right_join_swaps_window_bounds")  # [right_join_swaps_window_bounds]
    return F.when(plain, before).otherwise(after), F.when(plain, after).otherwise(before)


#: Java's ``Long.MAX_VALUE``
LONG_MAX = (1 << 63) - 1
#: the bucket of the lookups whose upper bound wrapped (``[max(0, t - joinBefore), 0]``: only a
#: stored record at ts 0 can be in it) and of every stored record at ts 0
WRAPPED_BUCKET = -1


def _lookup_range(ts, join_before, join_after):
    """``(timeFrom, timeTo, upper_wraps)`` of a lookup, as Kafka computes them in Java longs:
    ``Math.max(0L, t - joinBefore)`` and ``Math.max(0L, t + joinAfter)``, where a sum past
    ``Long.MAX_VALUE`` wraps to a negative number, which ``Math.max`` makes 0 (a negative
    ``joinBefore`` can wrap ``t - joinBefore``). Computed without passing a long (Spark's ANSI
    arithmetic would throw where Java wraps): the sums are compared against ``MAX - t`` first."""
    lower_wraps = ts - F.lit(LONG_MAX) > join_before  # t - joinBefore > MAX
    upper_wraps = join_after > F.lit(LONG_MAX) - ts  # t + joinAfter > MAX
    time_from = F.when(lower_wraps, F.lit(0)).otherwise(F.greatest(F.lit(0), ts - join_before))
    time_to = F.when(upper_wraps, F.lit(0)).otherwise(F.greatest(F.lit(0), ts + join_after))
    return time_from, time_to, upper_wraps


def _capped_sum(ts, bound):
    """``t + bound`` for a ``t`` in ``[0, MAX]``, at most ``Long.MAX_VALUE`` (no ``t`` lies beyond)."""
    return F.when(bound > F.lit(LONG_MAX) - ts, F.lit(LONG_MAX)).otherwise(ts + bound)


def _per_record(frame):
    """The rules that need no window, and each scenario's settings reduced to what later steps
    read (a narrow frame: every window and exchange after this pays per column)."""
    side, join, ts = F.col("side"), F.col("join"), F.col("ts")
    left = side == LEFT
    key_null, value_null = F.col("key").isNull(), F.col("value").isNull()
    one_sided = F.col("ss_one_sided_left")  # before KIP-77 [kip77_join_semantics]
    # StreamJoined's in-memory stores [stream_joined_store_suppliers] (the loader rejects them before 2.4)
    in_memory = F.col("ss_in_memory")
    proc_outer = (left & join.isin("left", "outer")) | (~left & (join == "outer"))
    # [stream_join_null_key_throws] 0.10.0: the one-sided leftJoin's processor throws on a null key
    null_key_fail = one_sided & F.col("stream_join_null_key_throws") & left & key_null
    # [null_key_outer_emit] KIP-962 (3.7): an outer processor forwards a null-key record with a value at once
    emit_now = F.col("null_key_outer_emit") & proc_outer & key_null & ~value_null
    # [kip77_join_semantics] before KIP-77 null values were joined, and leftJoin's right records
    # never looked up
    kip77 = F.col("kip77_join_semantics")
    looks_up = ~key_null & (~kip77 | ~value_null) & ~(one_sided & ~left)
    # [window_fetch_hides_expired] [rocksdb_segments_by_retention] [rocksdb_fetch_from_first_segment]
    model = (F.when(in_memory | F.col("window_fetch_hides_expired"), F.lit(BY_CLOCK))
             .when(F.col("rocksdb_segments_by_retention"), F.lit(BY_LIVE_SEGMENTS))
             .when(F.col("rocksdb_fetch_from_first_segment"), F.lit(BY_NEWEST_SEGMENTS_FROM_FIRST))
             .otherwise(F.lit(BY_NEWEST_SEGMENTS)))
    join_before, join_after = _bounds(left)
    time_from, time_to, upper_wraps = _lookup_range(ts, join_before, join_after)
    # 2.1-3.3 RocksDB: a reversed range whose first segment is past the first one reaches
    # TreeMap#subMap, which throws (the module docstring)
    reversed_fail = looks_up & upper_wraps & (model == BY_LIVE_SEGMENTS) & (time_from >= F.col("ss_segment"))
    fail = null_key_fail | reversed_fail
    fail_code = (F.when(null_key_fail, F.lit(FailureCode.STREAM_JOIN_NULL_KEY.code))
                 .when(reversed_fail, F.lit(FailureCode.WINDOW_FETCH_REVERSED_RANGE.code)))
    store_exists = ~(one_sided & left)
    drop = (F.when(fail | emit_now, F.lit(None))
            .when(key_null, F.lit(DropReason.NULL_KEY.code))
            .when(kip77 & value_null, F.lit(DropReason.NULL_VALUE.code))
            # the one-sided leftJoin only stores right records: a null one is a no-op delete
            .when(one_sided & ~left & value_null, F.lit(DropReason.NULL_VALUE.code)))
    # [rocksdb_null_window_put_skipped] KStreamJoinWindow puts every non-null key; a null value is
    # a no-op delete that still moves an in-memory store's clock, and a RocksDB one's before
    # KAFKA-9921 (2.5.1)
    null_put_counts = in_memory | ~F.col("rocksdb_null_window_put_skipped")
    clock_put = store_exists & ~key_null & (~value_null | null_put_counts)
    # the bounds of the processor that looks up this record's store: the other side's
    other_before, other_after = _bounds(~left)
    before, after = F.col("ss_before"), F.col("ss_after")
    fix = F.col("ss_fix")  # [time_difference_windows] the spurious-result fix
    replay_settings = F.when(fix, F.struct(
        F.col("stream_time_tracker_per_task"), before.alias("ss_before"), after.alias("ss_after"),
        F.col("ss_grace"), F.col("outer_scan_early_exit_before_bound"), F.col("outer_scan_per_side_lookback"),
        F.col("ss_emit_interval"), F.col("emit_throttle_from_now")))
    return frame.select(
        "sid", "task", "idx", "g1", "g2", "g3", "g4", "seq", "side", "key", "value", "ts",
        looks_up.alias("looks_up"), (store_exists & ~key_null & ~value_null & ~reversed_fail).alias("stored"),
        clock_put.alias("clock_put"), proc_outer.alias("proc_outer"), fail.alias("fail"), fail_code.alias("fail_code"),
        emit_now.alias("emit_now"), drop.alias("drop"),
        # [stream_time_advanced_by_dropped] the fix's shared stream time moves on every record
        # since KIP-962, before on joined ones
        (F.col("stream_time_advanced_by_dropped") | looks_up).alias("adv"),
        model.alias("model"),
        # [window_store_own_clock] 2.1: a RocksDB store expires by the task's stream time
        (~in_memory & F.col("rocksdb_segments_by_retention")
         & ~F.col("window_store_own_clock")).alias("task_time_clock"),
        in_memory.alias("in_memory"), F.col("ss_retention").alias("retention"),
        F.col("ss_segment").alias("segment"),
        time_from.alias("time_from"), time_to.alias("time_to"), upper_wraps.alias("upper_wraps"),
        # B: wider than any lookup range, so a stored record is wanted by at most two buckets (at
        # most Long.MAX_VALUE: before + after may be that)
        (F.least(F.greatest(before, after, before + after, F.lit(0)), F.lit(LONG_MAX - 1)) + 1).alias("width"),
        # the other processor's lookups with t in [reach_lo, reach_hi] can find this record
        # (max(0, t - joinBefore) <= ts <= max(0, t + joinAfter), ts >= 0, without a wrap: t <= MAX)
        F.when(ts > 0, F.greatest(F.lit(0), _capped_sum(ts, -other_after))).otherwise(F.lit(0)).alias("reach_lo"),
        _capped_sum(ts, other_before).alias("reach_hi"),
        F.col("output_ts_max"), fix.alias("fix"), (join == "outer").alias("outer_join"),
        replay_settings.alias("replay"),
    )


def _clocks(frame, needs: Features, block_size=None):
    """Running columns per (scenario, task) in processing order (``prefix_scan``: in parallel
    blocks of positions when ``block_size`` is given): each store's clock before this record (its
    max put ts), each store's first put, the task's stream time, and the running max of the fix's
    clock-advancing records."""
    side, ts, put = F.col("side"), F.col("ts"), F.col("clock_put")

    def of_store(side_id):
        return put & (side == side_id)

    frame = running(frame, [
        Running("c_left", MAX, F.when(of_store(LEFT), ts)),
        Running("c_right", MAX, F.when(of_store(RIGHT), ts)),
        Running("first_left", FIRST, F.when(of_store(LEFT), ts)),
        Running("first_right", FIRST, F.when(of_store(RIGHT), ts)),
        Running("task_time", MAX, ts, inclusive=True),
        Running("adv_max", MAX, F.when(F.col("adv"), ts)),
    ], ORDER, block_size)
    if not needs.task_time_clock:
        return frame.select("*", F.lit(None).cast("bigint").alias("t_left"), F.lit(None).cast("bigint").alias("t_right"))
    # 2.1 (before KAFKA-7895) a RocksDB store expired by the task's stream time at its last put
    return running(frame, [
        Running("t_left", MAX, F.when(of_store(LEFT), F.col("task_time"))),
        Running("t_right", MAX, F.when(of_store(RIGHT), F.col("task_time"))),
    ], ORDER, block_size)


def _visible_from():
    """The smallest ts of the other store's records this row's fetch can still see (see the
    module docstring), from that store's clock ``_clock``, its expiry point ``_live_from`` (clock
    minus retention; 2.1: the task's stream time at its last put) and its first put ``_first_put``."""
    retention, segment, model = F.col("retention"), F.col("segment"), F.col("model")
    segment_of = lambda name: _div(name, "segment")  # noqa: E731
    newest_segments = F.greatest(segment_of("_clock") - (LEGACY_SEGMENTS - 1), F.lit(0)) * segment
    return (F.when(model == BY_CLOCK, F.col("_clock") - retention + 1)
            .when(model == BY_LIVE_SEGMENTS, F.greatest(segment_of("_live_from"), F.lit(0)) * segment)
            .when(model == BY_NEWEST_SEGMENTS, newest_segments)
            .otherwise(F.greatest(newest_segments, segment_of("_first_put") * segment)))


def _records(frame, needs: Features, block_size=None):
    """One row per record: the rules above plus lookup range, bucket, expired put, clock row."""
    frame = _clocks(_per_record(frame), needs, block_size)
    left = F.col("side") == LEFT
    ts, retention = F.col("ts"), F.col("retention")
    other_clock = F.when(left, F.col("c_right")).otherwise(F.col("c_left"))
    other_task_time = F.when(left, F.col("t_right")).otherwise(F.col("t_left"))
    own_before = F.when(left, F.col("c_left")).otherwise(F.col("c_right"))
    own_after = F.greatest(own_before, ts)
    frame = frame.select(
        "*",
        other_clock.alias("_clock"),
        (F.when(F.col("task_time_clock"), other_task_time).otherwise(other_clock) - retention).alias("_live_from"),
        F.when(left, F.col("first_right")).otherwise(F.col("first_left")).alias("_first_put"),
        own_before.alias("_own_before"), own_after.alias("_own_after"),
        (F.when(F.col("task_time_clock"), F.col("task_time")).otherwise(own_after) - retention).alias("_own_live_from"),
    )
    segment_of = lambda name: _div(name, "segment")  # noqa: E731
    model = F.col("model")
    # a put the store rejects: in memory ts <= clock - retention; RocksDB: a segment no longer live
    expired = F.col("stored") & (
        F.when(F.col("in_memory"), ts <= F.col("_own_after") - retention)
        .when(model.isin(BY_CLOCK, BY_LIVE_SEGMENTS), segment_of("ts") < segment_of("_own_live_from"))
        .otherwise(F.col("_own_before").isNotNull()
                   & (segment_of("ts") <= segment_of("_own_before") - LEGACY_SEGMENTS)))
    reach = F.when(F.col("stored") & (F.col("reach_lo") <= F.col("reach_hi")),
                   F.sequence(_div("reach_lo", "width"), _div("reach_hi", "width")))
    # a lookup whose upper bound wrapped ([max(0, t - joinBefore), 0]) can only find ts 0
    wrapped = F.array(F.lit(WRAPPED_BUCKET).cast("bigint"))
    reach = F.when(F.col("stored") & (ts == 0), F.concat(F.coalesce(reach, F.array().cast("array<bigint>")), wrapped)) \
        .otherwise(reach)
    bucket = F.when(F.col("upper_wraps"), F.lit(WRAPPED_BUCKET).cast("bigint")).otherwise(_div("ts", "width"))
    # a clock row of the fix's replay: it may raise (or equal) the shared stream time
    clock_row = F.col("adv") & (F.col("adv_max").isNull() | (ts >= F.col("adv_max")))
    return frame.select(
        "sid", "task", "idx", "g1", "g2", "g3", "g4", "seq", "side", "key", "value", "ts",
        "looks_up", "proc_outer", "fail", "fail_code", "emit_now", "drop", expired.alias("expired"), "adv",
        clock_row.alias("cand"),
        F.greatest(F.col("time_from"), F.coalesce(_visible_from(), F.lit(0))).alias("lo"),
        F.col("time_to").alias("hi"), bucket.alias("bucket"), reach.alias("reach"),
        "output_ts_max", "fix", "outer_join", "replay",
    )


def _matches(records):
    """Every lookup with each record it finds, in fetch order (or one null row when none)."""
    lookups = records.filter(F.col("looks_up")).select(
        "sid", "task", "idx", "g1", "g2", "g3", "g4", "seq", "side", "key", "value", "ts", "lo", "hi",
        "bucket", (1 - F.col("side")).alias("jside"), (F.col("proc_outer") & ~F.col("fail")).alias("proc_outer"),
        "adv", "cand", "output_ts_max", "fix", "outer_join", "replay")
    stored = records.filter(F.col("reach").isNotNull()).select(
        F.col("sid").alias("s_sid"), F.col("task").alias("s_task"), F.col("key").alias("s_key"),
        F.explode("reach").alias("s_bucket"), F.col("side").alias("s_side"), F.col("ts").alias("s_ts"),
        F.col("seq").alias("s_seq"), F.col("value").alias("s_value"))
    on = ((F.col("sid") == F.col("s_sid")) & (F.col("task") == F.col("s_task")) & (F.col("key") == F.col("s_key"))
          & (F.col("bucket") == F.col("s_bucket")) & (F.col("jside") == F.col("s_side"))
          & (F.col("s_seq") < F.col("seq")) & F.col("s_ts").between(F.col("lo"), F.col("hi")))
    # a hash join per (key, bucket) group (no sort): groups are small by construction
    return lookups.join(stored.hint("shuffle_hash"), on, "left_outer") \
        .drop("s_sid", "s_task", "s_key", "s_bucket", "lo", "hi", "bucket")


def _joined(mine, other):
    """(n_l, n_r): this row's value and the other side's, as the joiner's (left, right)."""
    left = F.col("side") == LEFT
    return F.when(left, mine).otherwise(other), F.when(left, other).otherwise(mine)


def _record_events(records):
    """Failures, drops (with reason) and KIP-962's immediate null-key results."""
    n_l, n_r = _joined(F.col("value"), F.lit(None).cast("string"))
    etype = (F.when(F.col("fail"), F.lit(FAILURE))
             .when(F.col("emit_now"), F.lit(OUTPUT))
             .when(F.col("drop").isNotNull() | F.col("expired"), F.lit(DROP)))
    text = F.coalesce(F.col("fail_code"), F.col("drop"),
                      F.when(F.col("expired"), F.lit(DropReason.EXPIRED_WINDOW_PUT.code)))
    return events(records, etype=etype, f1=F.lit(1), f2=F.lit(b""), f3=F.lit(0), n_null=F.lit(False),
                  n_l=n_l, n_r=n_r, o_kind=F.lit(OLD_NONE), text=text)


def _match_events(matches):
    """Inner results, and the eager X-null of an outer processor that found nothing."""
    found = F.col("s_ts").isNotNull()
    eager = ~found & F.col("proc_outer") & ~F.col("fix")
    n_l, n_r = _joined(F.col("value"), F.when(found, F.col("s_value")))
    # [output_ts_max] KAFKA-6455 (2.3): max of both timestamps, before the triggering record's
    out_ts = F.when(found & F.col("output_ts_max"), F.greatest(F.col("ts"), F.col("s_ts"))).otherwise(F.col("ts"))
    # fetch order: R.ts (as 8 big-endian bytes, which sort as the non-negative longs do: R.ts + 1
    # could pass a long), then R's position
    fetch_ts = F.unhex(F.lpad(F.hex(F.col("s_ts")), 16, "0"))
    return events(matches, etype=F.when(found | eager, F.lit(OUTPUT)), ts=out_ts,
                  f1=F.lit(1), f2=F.when(found, fetch_ts).otherwise(F.lit(b"")),
                  f3=F.when(found, F.col("s_seq")).otherwise(F.lit(0)), n_null=F.lit(False), n_l=n_l, n_r=n_r,
                  o_kind=F.lit(OLD_NONE))


def _unjoined_flushes(matches, records):
    """The fix's outer store, replayed per tracker scope (``stream_stream_outer``) over the rows
    that matter: clock rows, unmatched outer lookups, matches that delete outer entries. A
    lookup with several matches comes as adjacent rows (one per match)."""
    found = F.col("s_ts").isNotNull()
    # a match deletes the outer entry of the record it found; entries exist on outer sides only
    deletes = found & (F.col("outer_join") | (F.col("jside") == LEFT))
    unmatched = F.col("proc_outer") & ~found
    passed = ("sid", "task", "idx", "g1", "g2", "g3", "g4", "side", "key", "value", "ts", "adv", "proc_outer",
              "replay")
    lookups = matches.filter(F.col("fix") & (F.col("cand") | unmatched | deletes)).select(
        *passed, F.lit(True).alias("scans"), found.alias("found"), F.when(deletes, F.col("s_ts")).alias("del_ts"))
    clock_only = records.filter(F.col("fix") & ~F.col("looks_up") & F.col("cand")).select(
        *passed, F.lit(False).alias("scans"), F.lit(False).alias("found"),
        F.lit(None).cast("bigint").alias("del_ts"))
    # [stream_time_tracker_per_task] KAFKA-14862 (3.4.1): one tracker per task, before per instance
    scope = F.when(F.col("replay.stream_time_tracker_per_task"), F.col("task")).otherwise(F.lit(-1))
    rows = lookups.unionByName(clock_only).select("*", scope.alias("scope"), "replay.*")
    rows = rows.repartition("sid", "scope").sortWithinPartitions("sid", "scope", "g1", "g2", "g3", "g4")
    return rows.select(*PASS_COLUMNS).mapInArrow(replay_batches, EVENT_DDL)


def stream_stream_join(frame, features=None):
    """``frame``: records of stream_stream_join scenarios, clustered by (scenario, task), with
    configs (``stream_stream_settings`` columns) and processing order. Returns its events.

    ``features.stream_stream`` (a ``stream_stream_settings.Features``), when the runner provides
    it, leaves out the parts no scenario of the batch needs."""
    needs = getattr(features, "stream_stream", None) or Features()
    # read by several branches: computed once, in the runner's job (lazy local checkpoints, whose
    # blocks are freed with their frames)
    records = _records(frame, needs, getattr(features, "task_scan_block", None)).localCheckpoint(eager=False)
    matches = _matches(records)
    if needs.spurious_result_fix:
        matches = matches.localCheckpoint(eager=False)
    parts = [_record_events(records), _match_events(matches)]
    if needs.spurious_result_fix:
        parts.append(_unjoined_flushes(matches, records))
    result = parts[0]
    for part in parts[1:]:
        result = result.unionByName(part)
    return result
