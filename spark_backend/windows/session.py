"""Session-windowed aggregations (KIP-94, 0.10.2-4.3), emit on update and on window close.

Source: ``KStreamSessionWindowAggregate``, ``SessionWindows``, ``SessionWindowedKStreamImpl`` /
``SessionStoreMaterializer``, the session stores (``RocksDBSessionStore`` over
``RocksDBSegmentedBytesStore`` and ``SessionKeySchema``, the time-ordered
``RocksDBTimeOrderedSessionSegmentedBytesStore`` of emit-on-window-close, ``InMemorySessionStore``)
at the release tags; digest: kafka-semantics-fk-windows.md part B. Settings and the release rules,
read by name: ``session_settings``; which sessions a store still holds: ``store_models``.

What is set-based and what is not:

- per record, no window: a null key is dropped before anything else (``null_key``); a null value
  is aggregated (``count`` counts it).
- clocks, windows over each task in processing order (``prefix_scan``): the aggregation's stream
  time (the running max of ``ts`` over the task's non-null-key records; 2.1, before
  ``session_own_stream_time``, the task's stream time over every record), the close time (stream
  time minus grace, and minus the gap since 3.0: ``session_close_includes_gap``, folded into the
  close offset of ``session_window_settings``), and the store's clock before each record (the
  largest session end put so far: the stream time before the record, as every record that raises
  the stream time puts a session ending there and is never late).
- the sessions, sequential per key (``session_replay``): the merge depends on what the key's
  earlier records left in the store. One ``mapInArrow`` over the records clustered by (scenario, task,
  key), each key's in position order; 2.1 and leaky in-memory emit-final stores replay a whole
  task (see there). Only per-record columns travel (the settings ship with the function), and the
  replay drops the null keys itself, so without emit-on-window-close the aggregation is one pass.
- emit on window close (KIP-825, 3.3+), set-based from the replay's session versions: a session
  ending at E is forwarded by the first record of its task whose close time passes E (the record
  that first raises the stream time above E + close offset), if that version is still stored then
  (not merged away or overwritten before or by that record), unless the store forgot it first: the
  time-ordered RocksDB store drops whole segments at its puts (its ``fetchSessions`` has no
  retention filter), the in-memory store drops sessions ending before the clock minus the
  retention at every read (so with the default retention it emits nothing: digest B.4). A session
  forgotten before an emission range reached it is lost (``unemitted_window``, a drop of the record
  whose read forgot it). Both "first record whose clock passes E" are found by one window each
  over the task's records and the versions (a running "next" in descending order). Order within
  one record: by end, then start and key bytes (RocksDB) or key bytes (in memory).
- a put the store rejects (an in-memory put ending at or before the clock minus the retention, a
  RocksDB put into a dead segment) is an ``expired_window_put`` drop; the result was forwarded.

Output order within one input (``f1..f3``): tombstones in fetch order, then the update (``f1`` =
rank); final results after them, in fetch order.
"""
from __future__ import annotations

from pyspark.sql import Window
from pyspark.sql import functions as F

from kssim.reference.model.codes import DropReason

from kssim.spark_backend.runtime.outputs import DROP, EVENT_COLUMNS, OUTPUT, events
from kssim.spark_backend.runtime.prefix_scan import FIRST, MAX, Running, running
from kssim.spark_backend.windows.session_replay import EVENT, IN_COLUMNS, VERSION, output_ddl, replay_function
from kssim.spark_backend.windows.store_models import floor_column

#: processing order within a task (the order ``with_processing_order`` numbered ``seq`` by)
ORDER = ("g1", "g3", "g4")
FRONTIER, SESSION = 0, 1
#: what the emit-final results read of the records besides the replay's columns
_FINAL_COLUMNS = ("_st_b", "sw_final", "sw_per_task", "sw_in_memory", "sw_emit_model", "sw_retention", "sw_segment")


def _clocks(frame, features):
    """Adds the clocks (see the module docstring): ``fetch_clock`` (the store's clock before this
    record), ``put_clock`` (the clock the store and the close time see at this record), ``close``
    (null before 2.1: nothing is late) and ``scope`` (what one replay covers)."""
    ts, key_null = F.col("ts"), F.col("key").isNull()
    frame = running(frame, [
        Running("_st_b", MAX, F.when(~key_null, ts)),
        Running("_st", MAX, F.when(~key_null, ts), inclusive=True),
        Running("_tt", MAX, ts, inclusive=True),
        # the first session put (its end is the first record's ts: it merges with nothing)
        Running("first_put", FIRST, F.when(~key_null, ts)),
    ], ORDER, getattr(features, "task_scan_block", None))
    # [session_own_stream_time] KAFKA-7895 (2.2): the processor's own stream time; 2.1 the task's
    clock = F.when(F.col("sw_task_clock"), F.col("_tt")).otherwise(F.col("_st"))
    return frame.select(
        "*", F.col("_st_b").alias("fetch_clock"), clock.alias("put_clock"),
        (clock - F.col("sw_close_offset")).alias("close"),
        F.when(F.col("sw_per_task"), F.lit("")).otherwise(F.col("key")).alias("scope"),
    ).drop("_tt")


def _replayed(records, needs):
    """The per-key (or per-task) replay of the records (it drops the null keys itself): only the
    per-record columns travel, the settings go with the function (``session_replay``)."""
    rows = records.select(*IN_COLUMNS, "scope")
    # any order of the scopes will do, so a hash of the scope leads: Spark's sort compares a long
    # prefix of its first column before the rest, and (sid, task) is the same on most rows
    scope = ("sid", "task", "scope")
    return rows.repartition(*scope).sortWithinPartitions(F.xxhash64(*scope), *scope, "seq") \
        .select(*IN_COLUMNS).mapInArrow(replay_function(needs), output_ddl(needs))


def _narrow(records):
    """The columns the replay and the final results read (the configs of every other operator
    ride in ``frame``: not worth a shuffle or a checkpoint)."""
    # count never reads the value: the replay gets none to parse
    value = F.when(F.col("sw_agg") == "count", F.lit(None).cast("string")).otherwise(F.col("value"))
    return records.select(*[value.alias(c) if c == "value" else c for c in IN_COLUMNS], "scope", *_FINAL_COLUMNS)


def _final_results(records, versions):
    """Emit-on-window-close results of the per-key replays (see the module docstring): each
    session version is emitted by the first record of its task whose close time passes its end,
    unless the store forgot it first: then it is lost (``unemitted_window``) at the record whose
    read forgot it."""
    ts, st_b = F.col("ts"), F.col("_st_b")
    raises = st_b.isNull() | (ts > st_b)
    emits = raises & (F.col("close") >= 1)
    # the store forgets sessions ending below this floor while the record is processed: an
    # in-memory store at each read (the record's own fetch and put at the clock before it, its
    # emit-final fetch at the clock after it), a RocksDB store at each put (dropping segments)
    forget_clock = F.when(F.col("sw_in_memory") & ~emits, st_b).otherwise(ts)
    forgets = floor_column(F.col("sw_emit_model"), forget_clock, F.col("sw_retention"), F.col("sw_segment"))
    at = F.struct(F.col("seq").alias("seq"), F.col("idx").alias("idx"),
                  *[F.col(c).alias(c) for c in ("g1", "g2", "g3", "g4")])
    mine = records.filter(F.col("sw_final") & ~F.col("sw_per_task") & F.col("key").isNotNull())
    closers = mine.filter(raises).select("sid", "task", ts.alias("_close_sort"), F.lit(FRONTIER).alias("_kind"),
                                         F.col("seq").alias("_seq"), at.alias("_closer"))
    forgetters = mine.select("sid", "task", forgets.alias("_forget_sort"), F.lit(FRONTIER).alias("_kind"),
                             F.col("seq").alias("_seq"), at.alias("_forgetter"))
    struct_type = closers.schema["_closer"].dataType
    sessions = versions.select("*", F.col("v_after").alias("_close_sort"), F.col("v_end").alias("_forget_sort"),
                               F.lit(SESSION).alias("_kind"), F.lit(None).cast("bigint").alias("_seq"),
                               F.lit(None).cast(struct_type).alias("_closer"),
                               F.lit(None).cast(struct_type).alias("_forgetter"))
    both = closers.unionByName(forgetters, allowMissingColumns=True).unionByName(sessions, allowMissingColumns=True)

    def first_above(sort, value):
        # descending: the rows before a session are the records whose value passes its own; the
        # nearest is the first of them in processing order (ties: the smaller position last)
        nearest = Window.partitionBy("sid", "task").orderBy(F.col(sort).desc(), F.col("_kind").desc(),
                                                            F.col("_seq").desc()) \
            .rowsBetween(Window.unboundedPreceding, -1)
        return F.last(value, ignorenulls=True).over(nearest)

    both = both.select("*", first_above("_close_sort", "_closer").alias("_emit"))
    both = both.select("*", first_above("_forget_sort", "_forgetter").alias("_lost"))
    emit, lost = F.col("_emit"), F.col("_lost")
    # lost when the store forgets it at or before the record whose close time passes its end (the
    # emit-final fetch reads after that record's own reads)
    is_lost = lost.isNotNull() & (emit.isNull() | (lost.getField("seq") <= emit.getField("seq")))
    where = F.when(is_lost, lost).otherwise(emit)
    alive = (where.isNotNull() & (F.col("v_born") < where.getField("seq"))
             & (F.col("v_died").isNull() | (F.col("v_died") > where.getField("seq"))))
    reached = both.filter((F.col("_kind") == SESSION) & alive)
    return events(reached, etype=F.when(is_lost, F.lit(DROP)).otherwise(F.lit(OUTPUT)),
                  text=F.when(is_lost, F.lit(DropReason.UNEMITTED_WINDOW.code)), idx=where.getField("idx"),
                  g1=where.getField("g1"), g2=where.getField("g2"), g3=where.getField("g3"), g4=where.getField("g4"))


def session_aggregate(frame, features):
    """``frame``: records of session_aggregate scenarios, clustered by (scenario, task), with
    configs (``session_settings`` columns) and processing order. Returns its events."""
    records = _narrow(_clocks(frame, features))
    needs = features.session
    if not needs.final_per_key:  # one pass: the replay's events are all
        return _replayed(records, needs)
    # read by the replay and the final results: computed once (lazy local checkpoints, freed with their frames)
    records = records.localCheckpoint(eager=False)
    replayed = _replayed(records, needs).localCheckpoint(eager=False)
    return replayed.filter(F.col("kind") == EVENT).select(*EVENT_COLUMNS) \
        .unionByName(_final_results(records, replayed.filter(F.col("kind") == VERSION)))
