"""Time-windowed aggregations (tumbling and hopping ``TimeWindows``), set-based, Kafka 0.10.0-4.3.

Source: ``KStreamWindowAggregate`` (+ ``AbstractKStreamTimeWindowAggregateProcessor``),
``TimeWindows#windowsFor``, the window stores (``RocksDBWindowStore`` over
``RocksDBSegmentedBytesStore`` and ``Segments``, ``InMemoryWindowStore``, and for emit-on-window-close
``RocksDBTimeOrderedWindowStore`` over ``AbstractDualSchemaRocksDBSegmentedBytesStore``, whose
``getActualFrom`` clips fetches) at the release tags; digest: kafka-semantics-fk-windows.md C.1.
Settings (window, grace, retention, rules read by name): ``window_settings`` (columns ``tw_*``).
The same steps aggregate both sides of the windowed-table join (``windowed_table_join.py``): every
side is a processor of its own (``side``).

How each rule is computed ("running" = a window per (scenario, task) in processing order, or
``prefix_scan``'s parallel blocks for a large ``as_listed`` replay):

- null key: dropped before anything else (``null_key``); it moves no clock of the processor (it
  does move the task's stream time, which 2.1 closed windows by). A null value is aggregated.
- the processor's stream time: since KAFKA-7895 (2.2, ``windowed_agg_own_stream_time``) the running
  max of ``ts`` over its own non-null-key records, this one included; in 2.1 the task's stream
  time (every record of the task, null keys and the other topic included). Before KIP-328 (2.1,
  ``windowed_grace``) there is no close time at all.
- windows: ``windowsFor(ts)``: starts from ``max(0, ts - size + adv) div adv * adv`` to ``ts div
  adv * adv`` every ``adv`` (0.10.0, before KAFKA-3784 / ``time_windows_for_fixed``: from ``max(0,
  ts - ts % adv - (size - 1) div adv * adv)``, one window too many when the size is no multiple of
  the advance); a negative ``ts`` has none (``no_window``). Exploded, one row per (record, window).
  Integer arithmetic only (``x - x % adv``: a double division loses the low digits of a large
  timestamp), and no sum that can pass a long (Spark's ANSI arithmetic would throw where Java wraps).
- the edge of the long range (``window_bounds_checked``, KAFKA-3452, 0.10.2): a record whose last
  window's end ``last + size`` passes ``Long.MAX_VALUE`` fails (``window_illegal_argument``: the
  ``Window`` constructor throws inside ``windowsFor``, before any window is touched); before
  0.10.2 such an end wraps to a negative number (written so in the key), and a record whose next
  start ``last + adv`` would pass it fails instead (``windows_for_out_of_memory``: the loop never
  ends). A failing record has no window rows; its failure comes first among its events.
- late: a window is skipped (``expired_window``, one drop per window) unless ``end > streamTime -
  grace``; its other windows are still updated. Before 2.1 nothing is skipped: the store forgets a
  window whose segment is no longer one of the three newest (``segmentId(start) <=
  segmentId(storeClock) - 3``), so its records start over from the initializer, forwarded but not
  stored (``expired_window_put``).
- aggregates: a running fold per (scenario, task, side, key, window) in processing order over its
  updates; count and sum as Spark windows, the other named functions (and Python API callables)
  by a Python fold in ``mapInArrow`` (``reference.model.aggregations``). The old value is the
  stored aggregate or the initializer's; a reduce whose aggregate turns null deletes the window
  (the next value starts it over). ``sum`` of a null value: ``aggregator_null_value`` failure.
- output timestamp (KAFKA-6455, 2.3, ``time_window_output_ts_max``): the window's stored ts, the max
  ts of its records since it was (re)created; before, the record's own ts.
- forward order within one record: ascending window start (since 2.0, KAFKA-6560 / KAFKA-6486,
  ``time_windows_in_start_order``); before, the windows the store already had first (by start),
  then the new ones in ``HashMap`` iteration order (bucket ``spread(Long.hashCode(start)) & (cap -
  1)``, ``cap`` the table size after inserting all of the record's windows, then insertion order).
- plan: a batch of count / sum aggregations emitting on update, 2.2+ (a replay of one such
  scenario), is one pass (``single_pass``): scan, running clocks, window rows, running
  aggregates, one event per row; the other batches materialise the records, the window rows and
  the aggregates (lazy local checkpoints: several steps read each).
- store clocks: a window store's observed time is the largest window start put so far (a null
  put counts): per record the largest start it put, a running max per side.
- emit on window close (KIP-825, 3.3+; wall-clock throttle at 0): the ranges the processor fetches
  are contiguous (``[lastEmit - size + 1, closeTime - size]`` on the window start), so a window
  ``W`` is fetched by the first record of its processor whose stream time reaches ``W.start + size
  + grace`` (an as-of match over the records that raise the stream time), after W's last update.
  It is emitted (final aggregate, stored ts, old value null) iff the store still shows it then:
  RocksDB 3.4+ (``window_fetch_hides_expired``) ``start >= storeClock - retention`` (the
  time-ordered schema's ``getActualFrom``), 3.3 ``segmentId(start) >= segmentId(storeClock -
  retention)``; in memory ``start > storeClock - retention``. A lost window is an
  ``unemitted_window`` drop of that record. Emission order: window start, then the key's serialized
  bytes (RocksDB: followed by the 4-byte sequence number 0).
"""
from __future__ import annotations

from pyspark.sql import Window
from pyspark.sql import functions as F

from kssim.reference.model.codes import DropReason, FailureCode

from kssim.spark_backend.joins.stream_table import key_bytes
from kssim.spark_backend.runtime import long_sums
from kssim.spark_backend.runtime.outputs import DROP, FAILURE, OLD_JOINED, OLD_NONE, OLD_NULL, OUTPUT, events
from kssim.spark_backend.runtime.prefix_scan import MAX, Running, running
from kssim.spark_backend.windows.window_fold import folded
from kssim.spark_backend.windows.window_settings import NATIVE_AGGREGATIONS, Features

#: processing order within a task (the order ``with_processing_order`` numbered ``seq`` by)
ORDER = ("g1", "g3", "g4")
#: ``Segments#numSegments`` before KAFKA-7072 (2.1): the three newest segments live
LEGACY_SEGMENTS = 3
#: (scenario, task, side, key, window start): one window of one processor
WINDOW = ("sid", "task", "side", "key", "w_start")
_RECORD_COLUMNS = ("sid", "task", "idx", "g1", "g2", "g3", "g4", "seq", "side", "key", "value", "ts")


def rule(name: str):
    """The column of release rule ``name`` (``window_settings``: ``tw_`` + the rule's name)."""
    return F.col("tw_" + name)


def _per_record(frame, needs):
    """One row per record with the settings later steps read (a narrow frame; in a one-scenario
    batch the settings are literals, which Spark folds, so no shuffle carries them)."""
    side = F.col("side")
    # one processor (no windowed-table join): the left aggregation, a literal in a replay
    agg = F.when(side == 0, F.col("tw_lagg")).otherwise(F.col("tw_ragg")) if needs.two_sided else F.col("tw_lagg")
    return frame.select(
        *_RECORD_COLUMNS, F.col("key").isNull().alias("key_null"),
        F.col("tw_size").alias("size"), F.col("tw_adv").alias("adv"), F.col("tw_grace").alias("grace"),
        F.col("tw_retention").alias("retention"), F.col("tw_segment").alias("segment"),
        F.col("tw_final").alias("final"), F.col("tw_in_memory").alias("in_memory"),
        agg.alias("agg"),
        F.col("tw_shift").alias("shift"), F.col("tw_tasks").alias("tasks"), F.col("send_old"), F.col("join"),
        F.col("kip77_join_semantics"), F.col("output_ts_max"), F.col("ktable_emit_on_change"),
        rule("windowed_agg_own_stream_time").alias("own_clock"),
        rule("window_store_own_clock").alias("store_own_clock"),
        rule("time_window_output_ts_max").alias("ts_max"),
        rule("window_fetch_hides_expired").alias("hides_expired"),
        rule("rocksdb_segments_by_retention").alias("by_retention"),
        rule("time_windows_in_start_order").alias("start_order"),
        rule("time_windows_for_fixed").alias("windows_fixed"),
        (rule("rocksdb_fetch_from_first_segment") & ~F.col("tw_in_memory")).alias("from_first"),
        rule("window_bounds_checked").alias("bounds_checked"),
    )


#: Java's ``Long.MAX_VALUE``
LONG_MAX = (1 << 63) - 1


def _window_bounds(frame):
    """``first``/``last``: the record's first and last window start (``windowsFor``; null for a
    negative ``ts``), and ``fails``: the failure code of a record ``windowsFor`` fails on at the
    edge of the long range (see the module docstring), else null."""
    ts, size, adv = F.col("ts"), F.col("size"), F.col("adv")
    last = ts - ts % adv
    lowest = F.greatest(F.lit(0), ts - size + adv)  # ts >= 0 and adv <= size: no overflow
    fixed = lowest - lowest % adv
    # [time_windows_for_fixed] 0.10.0 (before KAFKA-3784): max(0, ts - ts % adv - enclosed * adv)
    enclosed = (size - 1) - (size - 1) % adv  # (size - 1) div adv * adv
    legacy = F.greatest(F.lit(0), last - enclosed)
    first = F.when(F.col("windows_fixed"), fixed).otherwise(legacy)
    has_windows = F.col("key").isNotNull() & (ts >= 0)
    # [window_bounds_checked] KAFKA-3452 (0.10.2): new TimeWindow(last, last + size) throws; before,
    # windowsFor's loop never ends once last + adv wraps
    fails = (F.when(~has_windows, F.lit(None))
             .when(F.col("bounds_checked"),
                   F.when(last > F.lit(LONG_MAX) - size, F.lit(FailureCode.WINDOW_ILLEGAL_ARGUMENT.code)))
             .when(last > F.lit(LONG_MAX) - adv, F.lit(FailureCode.WINDOWS_FOR_OUT_OF_MEMORY.code)))
    return frame.select("*", F.when(ts >= 0, first).alias("first"), F.when(ts >= 0, last).alias("last"),
                        fails.alias("fails"))


def records(frame, features):
    """Every record of the batch's windowed scenarios with its processor's clocks (see the module
    docstring): ``clock`` (stream time, this record included), ``close`` (null: no grace),
    ``put_max`` (the largest window start it puts), ``st0``/``st1`` (each side's store clock, this
    record included) and ``sg0``/``sg1`` (the task's stream time at that store's last put, 2.1).

    Since 2.2 (own clocks, a grace) the record that raises a processor's stream time puts its
    last window, which is the largest start put so far, so a store's clock is its processor's
    stream time rounded down to the advance; 2.1 and older need a second running pass."""
    needs = getattr(features, "windows", None) or Features()
    block = getattr(features, "task_scan_block", None)
    frame = _per_record(frame, needs)
    side, ts, live_key = F.col("side"), F.col("ts"), ~F.col("key_null")
    clocks = [Running("c0", MAX, F.when((side == 0) & live_key, ts), inclusive=True)]
    if needs.two_sided:
        clocks.append(Running("c1", MAX, F.when((side == 1) & live_key, ts), inclusive=True))
    if needs.legacy_clocks:
        clocks.append(Running("ct", MAX, ts, inclusive=True))
    # the window bounds after the scan's shuffle: computed from ts, they need not travel in it
    frame = _window_bounds(running(frame, clocks, ORDER, block))
    c0 = F.col("c0")
    c1 = F.col("c1") if needs.two_sided else F.lit(None).cast("bigint")
    ct = F.col("ct") if needs.legacy_clocks else F.lit(None).cast("bigint")
    # [windowed_agg_own_stream_time] KAFKA-7895 (2.2): the processor's own clock; 2.1 the task's
    own = F.when(side == 0, c0).otherwise(c1)
    clock = F.when(F.col("own_clock"), own).otherwise(ct)
    frame = frame.select("*", clock.alias("clock"), (clock - F.col("grace")).alias("close"), ct.alias("ct_"))
    # the last window (the largest start) is live iff any is: it ends last (last + size > close,
    # without the sum, which may pass a long)
    puts = live_key & (ts >= 0) & F.col("fails").isNull() \
        & (F.col("close").isNull() | (F.col("last") > F.col("close") - F.col("size")))
    frame = frame.select("*", F.when(puts, F.col("last")).alias("put_max"))
    if not needs.legacy_clocks:
        adv = F.col("adv")
        return frame.select(
            "*", (c0 - c0 % adv).alias("st0"), (c1 - c1 % adv).alias("st1"),
            F.lit(None).cast("bigint").alias("sg0"), F.lit(None).cast("bigint").alias("sg1")
        ).drop("c0", "c1", "ct_")
    put = F.col("put_max")
    return running(frame, [
        Running("st0", MAX, F.when(side == 0, put), inclusive=True),
        Running("st1", MAX, F.when(side == 1, put), inclusive=True),
        Running("sg0", MAX, F.when((side == 0) & put.isNotNull(), F.col("ct_")), inclusive=True),
        Running("sg1", MAX, F.when((side == 1) & put.isNotNull(), F.col("ct_")), inclusive=True),
    ], ORDER, block).drop("c0", "c1", "ct", "ct_")


def store_clock(side_id):
    """Columns (store clock, 2.1 expiry clock) of side ``side_id``'s window store."""
    return (F.when(side_id == 0, F.col("st0")).otherwise(F.col("st1")),
            F.when(side_id == 0, F.col("sg0")).otherwise(F.col("sg1")))


def _segment(column):
    """``Segments#segmentId``: Java's long division (towards zero) by the segment interval."""
    return java_div(column, F.col("segment"))


_EXACT = "decimal(38,0)"  # a long quotient without rounding (a double rounds a large timestamp)


def java_div(numerator, denominator):
    """Java's long division, truncating towards zero (``%`` keeps the dividend's sign, as Java's);
    exact: the multiple is divided as a decimal (a double would round a large timestamp)."""
    return ((numerator - numerator % denominator).cast(_EXACT) / denominator.cast(_EXACT)).cast("bigint")


def window_store_shows(start, clock, task_clock, first_start=None):
    """Does a window store (eager emit: ``RocksDBWindowStore`` or ``InMemoryWindowStore``) whose
    observed time is ``clock`` still show a window starting at ``start``? ``task_clock``: the
    task's stream time at the store's last put (2.1's RocksDB expiry clock). ``first_start``: the
    start of the store's first put (0.10.2's reads skip older segments; null: not read)."""
    keeps = window_store_keeps(start, clock, task_clock)
    if first_start is None:
        return keeps
    # [rocksdb_fetch_from_first_segment] 0.10.2 (Segments#minSegmentId): reads start at the first
    # segment the store created, although puts still go to the older live ones
    return keeps & (~F.col("from_first") | first_start.isNull() | (_segment(start) >= _segment(first_start)))


def window_store_keeps(start, clock, task_clock):
    """Does a window store whose observed time is ``clock`` still keep (accept a put into, and,
    but for 0.10.2's first-segment reads, show) a window starting at ``start``?"""
    retention = F.col("retention")
    # [window_store_own_clock] KAFKA-7895 (2.2): before, RocksDB expired by the task's stream time
    expiry = F.when(F.col("store_own_clock"), clock).otherwise(task_clock)
    shows = (F.when(F.col("in_memory") | F.col("hides_expired"), start > clock - retention)
             # [rocksdb_segments_by_retention] KAFKA-7072 (2.1): segments live while >= segmentId(clock - retention)
             .when(F.col("by_retention"), _segment(start) >= _segment(expiry - retention))
             # before: the three newest segments
             .otherwise(_segment(start) > _segment(clock) - LEGACY_SEGMENTS))
    return clock.isNull() | shows


def window_rows(recs, features=None):
    """One row per (record, window) of the non-null-key records: ``w_start``, ``live`` (passes the
    close check; always before 2.1), ``dead`` (before 2.1: the store does not show the window, the
    record starts it over), ``rejected`` (the store rejects the put too: it has forgotten the
    window's segment), ``w_count`` (how many windows the record has) and, in 0.10.2,
    ``first_start`` (the start of its store's first put: ``first_put_starts``)."""
    needs = getattr(features, "windows", None) or Features()
    exploded = _exploded(recs.filter(_has_windows()), needs)
    first_start = None
    if needs.first_segment:
        exploded = first_put_starts(exploded)
        first_start = F.col("first_start")
    return _with_window_flags(exploded, first_start)


def _has_windows():
    """Does a record have window rows (a non-null key, ``ts >= 0``, and ``windowsFor`` does not fail)?"""
    return ~F.col("key_null") & (F.col("ts") >= 0) & F.col("fails").isNull()


def _exploded(recs, needs, outer=False):
    """``recs`` exploded into their windows (``outer``: a record without windows keeps one row,
    its ``w_start`` null), ``w_pos`` the window's place among the record's, ascending (its
    insertion order into windowsFor's map), ``w_count`` how many the record has. Tumbling
    windows (no scenario hops): ``windowsFor`` gives the one window starting at ``last``."""
    if not needs.hopping:
        # size = advance: first = last (``_window_bounds``, either windowsFor), no array to explode
        one = F.when(_has_windows(), F.lit(1))
        return recs.select("*", one.alias("w_count"), (one - 1).alias("w_pos"),
                           F.when(_has_windows(), F.col("last")).alias("w_start"))
    starts = F.when(_has_windows(), F.sequence(F.col("first"), F.col("last"), F.col("adv")))
    explode = F.posexplode_outer if outer else F.posexplode
    return recs.select("*", starts.alias("_starts")) \
        .select("*", F.size("_starts").alias("w_count"), explode("_starts").alias("w_pos", "w_start")).drop("_starts")


def _with_window_flags(exploded, first_start=None, keep=()):
    """Window rows with ``live``, ``dead`` and ``rejected`` (see :func:`window_rows`); the record
    steps' columns are dropped but for ``keep``."""
    start, size = F.col("w_start"), F.col("size")
    live = F.col("close").isNull() | (start > F.col("close") - size)  # end > close, without the sum
    clock, task_clock = store_clock(F.col("side"))
    # [windowed_grace] before KIP-328 no close time: the store's segments decide
    no_grace = F.col("grace").isNull()
    rejected = no_grace & ~window_store_keeps(start, clock, task_clock)
    dead = rejected | (no_grace & ~window_store_shows(start, clock, task_clock, first_start))
    # what the record steps left behind is not carried further (every later step shuffles these rows)
    spent = ("first", "last", "clock", "close", "put_max", "key_null", "windows_fixed", "fails")
    return exploded.select("*", live.alias("live"), dead.alias("dead"), rejected.alias("rejected")) \
        .drop(*[c for c in spent if c not in keep])


def first_put_starts(rows):
    """``fs0``/``fs1``: the window start of the first put into side 0's / side 1's store of the
    row's task, and ``first_start``: its own side's (0.10.2's ``minSegmentId`` is that put's
    segment). A store's first put comes from its processor's first record with a window, whose
    windows are all new: the first of them in forward order."""
    side = F.col("side")
    first_record = F.col("seq") == F.min("seq").over(Window.partitionBy("sid", "task", "side"))
    _, rank = forward_order_of_new_windows()
    put_order = F.when(first_record, F.struct(rank.alias("r"), F.col("w_start").alias("s")))
    task = Window.partitionBy("sid", "task")
    fs0 = F.min(F.when(side == 0, put_order)).over(task).getField("s")
    fs1 = F.min(F.when(side == 1, put_order)).over(task).getField("s")
    rows = rows.select("*", fs0.alias("fs0"), fs1.alias("fs1"))
    return rows.select("*", F.when(side == 0, F.col("fs0")).otherwise(F.col("fs1")).alias("first_start"))


def _native_aggregates(rows):
    """count / sum as running Spark windows over each window's updates (see ``window_fold`` for
    the columns)."""
    in_window = Window.partitionBy(*WINDOW).orderBy("seq")
    upto = in_window.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    dead, agg = F.col("dead"), F.col("agg")
    n = F.row_number().over(in_window)
    value = F.when(agg == "sum", F.col("value")).cast("bigint")  # count's values may be anything
    # the running sum wrapped as Java long arithmetic wraps (Kafka's Long aggregate)
    own = long_sums.parts(value)
    total = long_sums.summed(own, upto)
    new = F.when(agg == "count", F.when(dead, F.lit(1)).otherwise(n)) \
        .otherwise(F.when(dead, value).otherwise(long_sums.as_long(total)))
    old = F.when(dead, F.lit(0)).otherwise(F.when(agg == "count", n - 1)
                                           .otherwise(long_sums.as_long(long_sums.minus_own(total, own))))
    return rows.select(
        "*", new.cast("string").alias("new_text"), F.lit(False).alias("new_null"),
        old.cast("string").alias("old_text"), F.lit(False).alias("old_null"),
        F.when(dead, F.col("ts")).otherwise(F.max("ts").over(upto)).alias("new_ts"),
        (~dead & (n > 1)).alias("prior"),
        ((agg == "sum") & F.col("value").isNull()).alias("fail"))


def aggregates(rows, features):
    """``rows`` (live window rows) with their aggregates: ``new_text``/``new_null`` (JSON text of
    the new aggregate; null: a deleted window), ``old_text``/``old_null`` (the stored aggregate or
    the initializer's), ``new_ts`` (the stored ts after the update), ``prior`` (the store had the
    window) and ``fail`` (the aggregator threw)."""
    needs = getattr(features, "windows", None) or Features()
    native = F.col("agg").isin(*NATIVE_AGGREGATIONS)
    if not needs.python_fold:
        return _native_aggregates(rows)
    python = folded(rows.filter(~native | F.col("agg").isNull()), needs.callables)
    return _native_aggregates(rows.filter(native)).unionByName(python)


def hashmap_rank():
    """The iteration position of ``w_start`` in the ``java.util.HashMap<Long, TimeWindow>`` of a
    record's ``w_count`` windows (inserted in start order, ``w_pos``): bucket
    ``spread(Long.hashCode(start)) & (capacity - 1)``, then insertion order (a resize keeps it). Not
    modelled: a bin of 8+ colliding windows in a table of 64+ becomes a tree, which iterates its
    root first."""
    h = F.expr("(w_start ^ shiftright(w_start, 32)) & 4294967295")  # Long#hashCode, as 32 bits
    spread = h.bitwiseXOR(F.shiftright(h, 16))  # HashMap#hash
    # the table size once all windows are in: 16, doubled while size > 0.75 * capacity
    capacity = F.greatest(F.lit(16), F.expr("shiftleft(1, cast(ceil(log2(ceil(w_count * 4.0 / 3))) as int))"))
    bucket = spread.bitwiseAND(capacity - 1)
    return bucket * F.lit(1 << 32) + F.col("w_pos")


def forward_order_of_new_windows():
    """(f1, f3) of a record's windows that the store did not have (see :func:`forward_order`)."""
    in_order = F.col("start_order")
    return F.lit(0), F.when(in_order, F.col("w_start")).otherwise(hashmap_rank())


def forward_order(frame):
    """(f1, f3): the order a record's window updates are forwarded in (see the module docstring)."""
    start = F.col("w_start")
    in_order = F.col("start_order")
    # [time_windows_in_start_order] KAFKA-6560 / KAFKA-6486 (2.0)
    f1 = F.when(in_order | F.col("prior"), F.lit(0)).otherwise(F.lit(1))
    f3 = F.when(in_order | F.col("prior"), start).otherwise(hashmap_rank())
    return f1, f3


def window_end(start_col, size_col):
    """``start + size`` as a Java long: past ``Long.MAX_VALUE`` wrapped to a negative number (only
    0.10.0-0.10.1 forward such a window), computed without passing a long."""
    # start + size - 2^64 = (start - 2^63) + (size - 2^63): two non-positive terms, no overflow
    wrapped = (start_col - F.lit(LONG_MAX) - 1) + (size_col - F.lit(LONG_MAX) - 1)
    return F.when(start_col > F.lit(LONG_MAX) - size_col, wrapped).otherwise(start_col + size_col)


def windowed_key(start_col, size_col):
    """``reference.model.records.windowed_key`` as JSON text (the key is ``key_text`` already)."""
    return F.concat(F.lit('{"key":'), F.col("key"), F.lit(',"start":'), start_col.cast("string"),
                    F.lit(',"end":'), window_end(start_col, size_col).cast("string"), F.lit("}"))


def update_ts():
    """The timestamp a window update is forwarded with [time_window_output_ts_max]."""
    return F.when(F.col("ts_max"), F.col("new_ts")).otherwise(F.col("ts"))


def _record_event_columns():
    """Null keys and negative timestamps (no window); the records ``windowsFor`` fails on, first
    among their events (``f1`` -1: the emit-final results of a record come after its work)."""
    fails = F.col("fails").isNotNull()
    text = (F.when(F.col("key_null"), F.lit(DropReason.NULL_KEY.code))
            .when(F.col("ts") < 0, F.lit(DropReason.NO_WINDOW.code))
            .when(fails, F.col("fails")))
    etype = F.when(fails, F.lit(FAILURE)).when(text.isNotNull(), F.lit(DROP))
    return dict(etype=etype, f1=F.when(fails, F.lit(-1)).otherwise(F.lit(0)), f2=F.lit(b""), f3=F.lit(0),
                n_null=F.lit(False), o_kind=F.lit(OLD_NONE), text=text)


def record_events(recs):
    """The events of records without windows (:func:`_record_event_columns`)."""
    return events(recs, **_record_event_columns())


def _expired_event_columns():
    """A window the record is too late for (``expired_window``), one drop per window."""
    # ordered as the window's update would be (the late windows come first: they start earliest)
    return dict(etype=F.lit(DROP), f1=F.lit(0), f2=F.lit(b""), f3=F.col("w_start"), n_null=F.lit(False),
                o_kind=F.lit(OLD_NONE), text=F.lit(DropReason.EXPIRED_WINDOW.code))


def expired_events(rows):
    """Windows a record is too late for (:func:`_expired_event_columns`)."""
    return events(rows.filter(~F.col("live")), **_expired_event_columns())


def _aggregate_event_columns(agg):
    """An aggregator failure, or before 2.1 a put the store rejected (``expired_window_put``)."""
    text = (F.when(F.col("fail"), F.lit(FailureCode.AGGREGATOR_NULL_VALUE.code))
            .when(F.col("rejected"), F.lit(DropReason.EXPIRED_WINDOW_PUT.code)))
    etype = F.when(F.col("fail"), F.lit(FAILURE)).when(F.col("rejected"), F.lit(DROP))
    # a failure sits where its window's update would have been forwarded: the record's earlier
    # windows were forwarded before the aggregator threw
    f1, f3 = forward_order(agg)
    return dict(etype=etype, f1=f1, f2=F.lit(b""), f3=f3, n_null=F.lit(False), o_kind=F.lit(OLD_NONE), text=text)


def aggregate_events(agg):
    """Aggregator failures, and before 2.1 the puts the store rejected (:func:`_aggregate_event_columns`)."""
    return events(agg.filter(F.col("fail") | F.col("rejected")), **_aggregate_event_columns(agg))


def _update_event_columns(agg):
    """Emit on update: every window update is forwarded (``etype`` null: emit on window close)."""
    f1, f3 = forward_order(agg)
    send_old = F.col("send_old")
    o_kind = F.when(~send_old, F.lit(OLD_NONE)).when(F.col("old_null"), F.lit(OLD_NULL)).otherwise(F.lit(OLD_JOINED))
    return dict(etype=F.when(~F.col("final"), F.lit(OUTPUT)), key=windowed_key(F.col("w_start"), F.col("size")),
                ts=update_ts(), f1=f1, f2=F.lit(b""), f3=f3, n_null=F.col("new_null"), n_l=F.col("new_text"),
                o_kind=o_kind, o_l=F.col("old_text"))


def _update_events(agg):
    """Emit on update: every window update is forwarded."""
    return events(agg.filter(~F.col("final") & ~F.col("fail")), **_update_event_columns(agg))


def _emission_points(recs, finals):
    """Each final window with the record that fetches it: the first record of its processor whose
    stream time reaches ``start + size + grace`` (an as-of match: the records that raise the
    stream time, by clock value)."""
    before = Window.partitionBy("sid", "task", "side").orderBy("seq").rowsBetween(Window.unboundedPreceding, -1)
    raises = recs.filter(F.col("final") & ~F.col("key_null")).select(
        "*", F.max("ts").over(before).alias("prev_clock"))
    raises = raises.filter(F.col("prev_clock").isNull() | (F.col("ts") > F.col("prev_clock")))
    at = F.struct("idx", "g1", "g2", "g3", "g4", "task", F.col("ts").alias("clock"),
                  F.when(F.col("side") == 0, F.col("st0")).otherwise(F.col("st1")).alias("store"))
    points = raises.select("sid", "task", "side", F.col("ts").alias("val"), F.lit(0).alias("kind"), at.alias("at"))
    # a window whose end + grace passes a long never closes (no stream time passes Long.MAX_VALUE)
    finals = finals.filter(F.col("w_start") <= F.lit(LONG_MAX) - F.col("size") - F.col("grace"))
    wanted = finals.select("sid", "task", "side", (F.col("w_start") + F.col("size") + F.col("grace")).alias("val"),
                           F.lit(1).alias("kind"), F.lit(None).cast(points.schema["at"].dataType).alias("at"),
                           F.struct(*finals.columns).alias("w"))
    both = points.select("*", F.lit(None).cast(wanted.schema["w"].dataType).alias("w")).unionByName(wanted)
    # descending by value, raises before windows at equal values: the last raise so far is the
    # smallest clock >= the window's threshold
    order = Window.partitionBy("sid", "task", "side").orderBy(F.col("val").desc(), F.col("kind")) \
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    matched = both.select("w", F.last("at", ignorenulls=True).over(order).alias("at"), "kind")
    return matched.filter((F.col("kind") == 1) & F.col("at").isNotNull()).select("w.*", "at")


def _final_events(recs, agg):
    """Emit on window close: each window once, when its processor's stream time closes it, if the
    time-ordered store still shows it (see the module docstring)."""
    last = Window.partitionBy(*WINDOW).orderBy(F.col("seq").desc())
    finals = agg.filter(F.col("final")).select("*", F.row_number().over(last).alias("_n")) \
        .filter((F.col("_n") == 1) & ~F.col("new_null")).select(
            "sid", "task", "side", "key", "w_start", "size", "grace", "retention", "segment", "in_memory",
            "hides_expired", "send_old", "new_text", "new_ts")
    fetched = _emission_points(recs, finals)
    start, store, retention = F.col("w_start"), F.col("at.store"), F.col("retention")
    # [window_fetch_hides_expired] 3.4+: getActualFrom clips the fetch at storeClock - retention
    # (the time-first schema keeps that bound itself); 3.3: the segments still live; in memory
    # the fetch starts above storeClock - retention
    shown = (F.when(F.col("in_memory"), start > store - retention)
             .when(F.col("hides_expired"), start >= store - retention)
             .otherwise(_segment(start) >= _segment(store - retention)))
    fetched = fetched.select("*", shown.alias("shown"))
    order_bytes = F.when(F.col("in_memory"), key_bytes(F.col("key"))) \
        .otherwise(F.concat(key_bytes(F.col("key")), F.unhex(F.lit("00000000"))))
    send_old = F.col("send_old")
    return events(fetched, etype=F.when(F.col("shown"), F.lit(OUTPUT)).otherwise(F.lit(DROP)),
                  task=F.col("at.task"), idx=F.col("at.idx"), g1=F.col("at.g1"), g2=F.col("at.g2"),
                  g3=F.col("at.g3"), g4=F.col("at.g4"), key=windowed_key(start, F.col("size")), ts=F.col("new_ts"),
                  f1=start, f2=order_bytes, f3=F.lit(0), n_null=F.lit(False), n_l=F.col("new_text"),
                  o_kind=F.when(send_old, F.lit(OLD_NULL)).otherwise(F.lit(OLD_NONE)),
                  text=F.when(~F.col("shown"), F.lit(DropReason.UNEMITTED_WINDOW.code)))


def aggregated_windows(frame, features):
    """(records, window rows, aggregated live rows) of a batch's windowed scenarios; each is read by
    several branches, so computed once (lazy local checkpoints)."""
    recs = records(frame, features).localCheckpoint(eager=False)
    rows = window_rows(recs, features).localCheckpoint(eager=False)
    agg = aggregates(rows.filter(F.col("live")), features).localCheckpoint(eager=False)
    return recs, rows, agg


def single_pass(needs) -> bool:
    """Can a batch's events come from one pass over its window rows (:func:`_single_pass_events`)?
    Each row then has one event at most and the clocks take one scan: so 2.2+ (before 2.1 a
    rejected put is a drop and an update; 2.1's clocks need a pass of their own), and no step
    reads the rows twice: no emit on window close (it reads the records and the aggregates), no
    Python fold (a second branch of the rows), no 0.10.2 first-segment reads (a pass over the
    stores' first puts)."""
    return not (needs.emit_final or needs.python_fold or needs.first_segment or needs.legacy_clocks)


def _first_of(frame, cases):
    """The event columns of ``frame``'s rows, each from the first of ``cases`` ((condition, columns
    as for ``events``)) whose condition holds; a column a case does not give is the row's own
    column of that name, or null (as ``events`` picks it)."""
    present = set(frame.columns)

    def pick(columns, name):
        column = columns.get(name, name if name in present else None)
        return F.lit(None) if column is None else (F.col(column) if isinstance(column, str) else column)

    merged = {}
    for name in sorted(set().union(*(columns for _, columns in cases))):
        (condition, columns), rest = cases[0], cases[1:]
        column = F.when(condition, pick(columns, name))
        for condition, columns in rest:
            column = column.when(condition, pick(columns, name))
        merged[name] = column
    return events(frame, **merged)


def _single_pass_events(frame, features):
    """The events of :func:`time_window_aggregate` in one pass (see :func:`single_pass`): every
    record exploded into its windows (one row with a null ``w_start`` if it has none), the
    count / sum windows over each window's rows, and one event per row: the record's own, an
    expired window's drop, the aggregator's failure, or the update. No frame is read twice, so
    nothing is materialised (no local checkpoint) and each row is shuffled once by window."""
    needs = getattr(features, "windows", None) or Features()
    recs = records(frame, features)
    rows = _with_window_flags(_exploded(recs, needs, outer=True), keep=("key_null", "fails"))
    windowed = F.col("w_start").isNotNull()
    # a window's late rows need not be kept out of its running count: the close time only grows
    # (2.2+: the processor's own stream time less a grace), so once a row is too late for a
    # window every later one is too, and the late rows come after all of its updates
    agg = _native_aggregates(rows)
    return _first_of(agg, [(~windowed, _record_event_columns()), (~F.col("live"), _expired_event_columns()),
                           (F.col("fail"), _aggregate_event_columns(agg)), (F.lit(True), _update_event_columns(agg))])


def time_window_aggregate(frame, features=None):
    """``frame``: records of window_aggregate scenarios, clustered by (scenario, task), with
    configs (``window_settings`` columns) and processing order. Returns its events."""
    needs = getattr(features, "windows", None) or Features()
    if single_pass(needs):
        return _single_pass_events(frame, features)
    recs, rows, agg = aggregated_windows(frame, features)
    parts = [record_events(recs), expired_events(rows), aggregate_events(agg), _update_events(agg)]
    if needs.emit_final:
        parts.append(_final_events(recs, agg))
    result = parts[0]
    for part in parts[1:]:
        result = result.unionByName(part)
    return result
