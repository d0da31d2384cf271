"""Semantics profiles: every observable rule that changed between Kafka Streams releases.

This module is the one place that says which release brought (or removed) which rule. Operators
read a :class:`Profile` by rule name (``profile.kip77_join_semantics``) and never compare version
numbers themselves.

Releases are written "MAJOR.MINOR" (``"2.4"``, ``"3.9"``: the line's .0 release), "0.10.MINOR"
for the 0.x lines (``"0.10.0"``), or with a patch level (``"3.1.1"``, ``"2.6.2"``). A patch release
has its line's rules plus every rule whose ``since`` is a patch release up to it (a rule since
3.1.1 holds in 3.1.1, 3.1.2 and 3.2+; a fix backported to an older line is listed in the rule's
``also``). Only the patch releases kssim knows (:data:`NEWEST_PATCH`) are accepted; an unknown,
future or malformed release is an error naming the known ones.
"""
from __future__ import annotations

from typing import Optional, Tuple

import attrs

from kssim.reference.model.errors import KssimError

Version = Tuple[int, int, int]

#: Release lines of Kafka Streams, oldest first. The newest is the default profile.
RELEASE_LINES = (
    "0.10.0", "0.10.1", "0.10.2", "0.11.0",
    "1.0", "1.1",
    "2.0", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6", "2.7", "2.8",
    "3.0", "3.1", "3.2", "3.3", "3.4", "3.5", "3.6", "3.7", "3.8", "3.9",
    "4.0", "4.1", "4.2", "4.3",
)
DEFAULT_RELEASE = RELEASE_LINES[-1]

#: The newest bug-fix release of each line kssim knows, from Kafka's release tags (``git tag``: 1.0.0
#: to 1.0.2, ..., 3.8.0 and 3.8.1; the history kssim reads ends at 3.9.0, and later lines are known
#: by their .0 release only). "3.1.1" is accepted, "3.1.9" is not: a patch release kssim has not
#: seen may carry fixes it does not model. The 0.x lines (0.10.2.1, ...) are modelled by line only.
NEWEST_PATCH = {
    "1.0": 2, "1.1": 1, "2.0": 1, "2.1": 1, "2.2": 2, "2.3": 1, "2.4": 1, "2.5": 1, "2.6": 3, "2.7": 2,
    "2.8": 2, "3.0": 2, "3.1": 2, "3.2": 3, "3.3": 2, "3.4": 1, "3.5": 2, "3.6": 2, "3.7": 1, "3.8": 1,
}


@attrs.frozen
class Rule:
    """A behaviour that holds in the releases ``since <= v < until`` (``until`` None: still holds).

    ``ref`` names the KIP, JIRA or Kafka class the rule comes from; ``doc`` says what it does.
    ``also`` lists further (since, until) intervals, for rules that came and went in patch releases.
    """

    name: str
    since: str
    ref: str
    doc: str
    until: Optional[str] = None
    also: tuple = ()
    #: what the rule is about: ``operators`` (the format-1 operators, and the graph nodes built on
    #: them) or ``graphs`` (what only a topology graph can show: repartition topics, table
    #: filters, groupBy, caches)
    scope: str = "operators"


RULES = (
    # --- null handling and table-table rules -----------------------------------------------
    Rule("kip77_join_semantics", "0.10.2", "KIP-77 (KAFKA-4001)",
         "stream-stream and stream-table joins drop null values as well as null keys; table-table joins "
         "get their inner/left/outer rules incl. the unnecessary-tombstone suppression"),
    Rule("ktable_emit_on_change", "2.6.0", "KIP-557 (removed by KAFKA-12508)",
         "KTableSource drops idempotent updates and tombstones for absent keys",
         until="2.6.2", also=(("2.7.0", "2.7.1"),)),
    # --- windows and timestamps ---------------------------------------------------------------
    Rule("join_window_grace", "2.1", "KIP-328",
         "JoinWindows#grace exists; JoinWindows.of defaults to grace = max(24h - window size, 0) "
         "(before: retention = max(1 day until(), window size))"),
    Rule("output_ts_max", "2.3", "KAFKA-6455",
         "join results carry max(this.ts, other.ts) instead of the triggering record's ts"),
    Rule("time_difference_windows", "3.1", "KIP-633, KAFKA-10847",
         "JoinWindows.ofTimeDifference* exist and turn on the spurious left/outer result fix"),
    Rule("outer_scan_early_exit_before_bound", "3.1.1", "KAFKA-13721", until="3.8",
         doc="the outer-join emission scan's early exit uses the processor's before bound"),
    Rule("window_fetch_hides_expired", "3.4", "KAFKA-12960",
         "window-store fetches hide records older than the store's retention (RocksDB too); a RocksDB fetch "
         "whose range ends before its (retention-raised) start returns nothing before looking at segments"),
    Rule("stream_time_tracker_per_task", "3.4.1", "KAFKA-14862",
         "the stream-stream join's shared clock is kept per task (before: one per instance)"),
    Rule("versioned_tables", "3.5", "KIP-889, KIP-914",
         "versioned KTables, as-of stream-table lookups, table-table joins drop !isLatest updates"),
    Rule("emit_throttle_from_now", "3.5", "KAFKA-13817",
         "the outer-join emit throttle is re-armed from the wall clock, not its previous value"),
    Rule("stream_table_grace", "3.6", "KIP-923",
         "stream-table joins may buffer stream records for a grace period (versioned tables)"),
    Rule("null_key_outer_emit", "3.7", "KIP-962, KAFKA-12317",
         "outer sides of stream-stream and stream-table left joins emit null-key records at once"),
    Rule("stream_time_advanced_by_dropped", "3.7", "KIP-962",
         "the stream-stream join clock is advanced by every record, dropped ones included"),
    Rule("outer_scan_per_side_lookback", "3.8", "KAFKA-15417",
         "per-side look-back in the emission scan, which continues past open entries"),
    # --- stream-stream join topology and window stores ----------------------------------------
    Rule("right_join_swaps_window_bounds", "0.10.1", "KAFKA-4153",
         "the right join processor looks up [t - after, t + before] (before: [t - before, t + after])"),
    Rule("stream_join_null_key_throws", "0.10.0", "KAFKA-3561", until="0.10.1",
         doc="KStreamKStreamJoin throws on a null key (reachable by the one-sided pre-KIP-77 leftJoin)"),
    Rule("stream_joined_store_suppliers", "2.4", "KIP-479 (KAFKA-8558)",
         "StreamJoined lets a stream-stream join use in-memory window stores"),
    Rule("rocksdb_segments_by_retention", "2.1", "KAFKA-7072",
         "window-store segments live while >= segmentId(clock - retention) (before: the 3 newest segments); "
         "the segments are a TreeMap whose subMap throws IllegalArgumentException for a fetch whose first "
         "segment is above its last (a stream-stream lookup whose ts + after wrapped past Long.MAX_VALUE, "
         "clamped to 0), until window_fetch_hides_expired returns nothing for such a range (before 2.1: an "
         "empty loop over segment ids)"),
    Rule("window_store_own_clock", "2.2", "KAFKA-7895",
         "a RocksDB window store expires by its own max put ts (2.1: by the task's stream time)"),
    Rule("rocksdb_null_window_put_skipped", "2.5.1", "KAFKA-9921",
         "a null-value put on a duplicate-retaining RocksDB window store is a no-op (before: it advanced the store clock)"),
    Rule("rocksdb_fetch_from_first_segment", "0.10.2", "Segments#minSegmentId (fixed by KAFKA-4851)", until="0.11.0",
         doc="window-store fetches skip segments older than the first segment ever created"),
    # --- foreign-key table joins (KIP-213) ------------------------------------------------------
    Rule("foreign_key_joins", "2.4", "KIP-213",
         "KTable#join/leftJoin with a foreign-key extractor: subscription/response pipeline, hash validation"),
    Rule("fk_result_old_values", "2.4.1", "KAFKA-9500",
         "an FK join's result that is not materialized may feed a downstream that needs old values "
         "(it materializes itself); 2.4.0 cannot build that topology (the result store is never added)"),
    Rule("fk_response_to_primary_partition", "3.3", "KAFKA-13769",
         "SubscriptionWrapper v1 carries the LHS record's partition; responses go back to it "
         "(before: the default partitioner over the serialized PK)"),
    Rule("fk_left_join_null_foreign_key", "3.7", "KIP-962 (KAFKA-14748)",
         "left FK join: a null FK subscribes (joiner(v, null)); an FK change or delete sends "
         "DELETE_KEY_AND_PROPAGATE to the old FK (the duplicate results of KAFKA-16394/16644)"),
    Rule("fk_extractor_with_key", "4.0", "KIP-1104",
         "the FK extractor may read the LHS key (BiFunction<K, V, KO>)"),
    Rule("fk_left_unsubscribe_no_propagate", "4.1", "KAFKA-18713",
         "left FK join: the old FK is unsubscribed with DELETE_KEY_NO_PROPAGATE (one result per FK "
         "change or delete, the delete tombstone at the LHS ts)"),
    Rule("fk_inner_null_fk_transitions", "4.1", "KAFKA-16407, KAFKA-16434",
         "inner FK join: an FK turning null retracts the old result, an FK turning non-null subscribes, "
         "a same-FK update with the RHS missing emits nothing"),
    # --- KStream-GlobalKTable joins (KIP-99) --------------------------------------------------
    Rule("global_table_joins", "0.10.2", "KIP-99",
         "KStream#join/leftJoin(GlobalKTable, keyMapper, joiner): one key-value store of the whole "
         "topic per instance (never versioned), looked up with keyMapper(key, value); output key and ts "
         "are the stream record's"),
    Rule("global_join_null_mapped_key_throws", "0.10.2", "KAFKA-6378", until="1.0.1",
         doc="a stream record whose key mapper returns null is looked up with get(null), and the global "
             "store throws NullPointerException: the application dies (inner and left)"),
    Rule("global_restore_skips_null_key", "0.11.0", "KAFKA-5047",
         "restoring a GlobalKTable at start-up skips null-key records (0.10.2: the restore throws "
         "NullPointerException and the application dies)"),
    Rule("global_join_null_stream_key", "2.7", "KAFKA-10277",
         "the key mapper runs before the null check: a stream record with a null key but a non-null "
         "mapped key is joined, output key null (before: dropped); a null mapped key is dropped and "
         "counted, inner and left (1.0.1-2.6: left emitted joiner(v, null), inner nothing)"),
    Rule("global_left_join_null_mapped_key", "4.1", "KAFKA-19208; 1.0.1-2.6: KAFKA-6378",
         also=(("1.0.1", "2.7"),),
         doc="left join: a record with a value whose key mapper returns null emits joiner(v, null) "
             "without a lookup (2.7-4.0: dropped by KAFKA-10277's null check; before 1.0.1: "
             "global_join_null_mapped_key_throws)"),
    # --- windowed aggregations: session windows (KIP-94) ----------------------------------------
    Rule("session_windows", "0.10.2", "KIP-94",
         "SessionWindows and session-windowed aggregations (merging sessions, the merger)"),
    Rule("session_fetch_end_bounded", "0.11.0", "KAFKA-7652 (RocksDBSessionStore#findSessions, "
         "SessionKeySchema#upperRange)", until="2.1.1",
         doc="the RocksDB session store looks a key's sessions up through the multi-key range, whose upper "
             "bound key + latestStart + latestStart hides sessions ending after ts + gap: a record reaching "
             "into such a session does not merge with it (0.10.2 and 2.1.1+: every session ending at or after "
             "ts - gap that starts by ts + gap)"),
    Rule("zero_cache_strips_caching_layer", "2.1", "KAFKA-6998 (InternalTopologyBuilder#rewriteTopology)",
         "with the record cache at 0 bytes (the scenario contract's caches off) stores are built without their "
         "caching layer, so a session aggregation forwards its results itself (before: the layer stays, and every "
         "write is evicted at once and forwarded by the cache's flush listener: at the session's end, only when "
         "the write or the stored session it replaces is non-null, the old value read from the store)"),
    Rule("session_cache_finds_previous", "0.11.0", "KAFKA-5172 (CachingSessionStore#fetchPrevious)",
         "the session caching layer finds the stored session a flushed write replaces (0.10.2: it looks the "
         "whole session key up as a record key and never finds one, so merged-away sessions forward no tombstone)"),
    Rule("session_own_stream_time", "2.2", "KAFKA-7895 (KStreamSessionWindowAggregate)",
         "a session aggregation's close time follows its own stream time, the largest ts of the non-null-key "
         "records it processed (2.1: the task's stream time, which every record of the task advances)"),
    Rule("session_late_before_close", "2.2.1", "KAFKA-8289 (KStreamSessionWindowAggregate)",
         "a record is late when its merged session ends before the close time (2.1-2.2.0: when it ends at or "
         "before it)"),
    Rule("session_output_ts_window_end", "2.3", "KAFKA-6455 (SessionTupleForwarder)",
         "session results and the tombstones of merged-away sessions carry the session's end as timestamp "
         "(2.1-2.2: the triggering record's ts; before 2.1 the zero-byte caching layer forwards at the session's "
         "end too, see zero_cache_strips_caching_layer)"),
    Rule("session_retention_gap_plus_grace", "3.0", "KAFKA-7106 (SessionWindowedKStreamImpl)",
         "a session store keeps gap + grace by default (before: SessionWindows#maintainMs = max(1 day, gap), "
         "and a gap + grace that does not fit it is rejected unless Materialized#withRetention)"),
    Rule("session_emit_final_iterator_leak", "3.3", "HOTFIX PR #14624 (KStreamSessionWindowAggregate#fetchAndEmit)",
         until="3.5.2", also=(("3.6.0", "3.6.1"),),
         doc="emit-on-window-close never closes its range iterator: an in-memory session store expires nothing "
             "at or after the position of the oldest such iterator (RocksDB stores are unaffected)"),
    Rule("session_close_includes_gap", "3.0", "KAFKA-12718",
         "a session is closed (late records against it dropped) at streamTime - grace - gap "
         "(before: streamTime - grace)"),
    # --- windowed aggregations: time and sliding windows, emit strategies ----------------------
    Rule("windowed_grace", "2.1", "KIP-328",
         "TimeWindows/SessionWindows#grace and Materialized#withRetention exist; a windowed aggregation "
         "drops records later than window end + grace (before: Windows#until, the store's retention)"),
    Rule("sliding_windows", "2.7", "KIP-450",
         "SlidingWindows and KStreamSlidingWindowAggregate"),
    Rule("emit_on_window_close", "3.3", "KIP-825",
         "EmitStrategy.onWindowClose: a windowed aggregation forwards each window once, when it closes"),
    Rule("legacy_window_builders_removed", "4.0", "KAFKA-16332",
         "TimeWindows.of, SessionWindows.with, their #grace and SlidingWindows.withTimeDifferenceAndGrace "
         "are gone, and with them the default grace of max(24h - size, 0)"),
    Rule("windowed_agg_own_stream_time", "2.2", "KAFKA-7895 (KStreamWindowAggregate)",
         "a time-windowed aggregation closes windows by its own stream time, the largest ts of the non-null-key "
         "records it aggregated (2.1: the task's stream time, which every record of the task advances)"),
    Rule("time_window_output_ts_max", "2.3", "KAFKA-6455 (KStreamWindowAggregate, timestamped window store)",
         "a time or sliding window's result carries the largest record ts in the window, kept in the store "
         "(before: the triggering record's ts)"),
    Rule("in_memory_window_stores", "2.3", "KAFKA-4730, KAFKA-8029 (InMemoryWindowStore, InMemorySessionStore)",
         "Stores.inMemoryWindowStore / inMemorySessionStore exist, so a windowed aggregation can keep its windows "
         "in memory"),
    Rule("ktable_filter_skips_null_changes", "0.10.1", "KAFKA-3902 (KTableFilter, in 0.10.0.1)",
         "a KTable#filter with old values forwards nothing when both the new and the old value are filtered "
         "out; 0.10.0.0 forwarded Change(null, null)", scope="graphs"),
    Rule("ktable_source_lazy_materialization", "2.2", "KAFKA-6036 (KTableSource)",
         "builder.table() gets a store only when a value getter or old values need one; before, every table "
         "source was materialized (and, with record caches, cached)", scope="graphs"),
    Rule("table_group_by_subtract_first", "0.10.1", "KAFKA-3817 (KTableRepartitionMap)",
         "KTable#groupBy sends the subtract record of the old value before the add record of the new one; "
         "0.10.0 sent the add first", scope="graphs"),
    Rule("stream_aggregate_skips_null_values", "1.1", "KAFKA-6451 (KStreamAggregate, KStreamReduce)",
         "a grouped stream's aggregation skips a record with a null value; before, it stored and forwarded "
         "the current aggregate again", scope="graphs"),
    Rule("stream_aggregate_null_key_skipped", "0.10.1", "KStreamAggregate (0.10.1)",
         "a grouped stream's aggregation skips a null-key record; 0.10.0 threw a StreamsException", scope="graphs"),
    Rule("record_cache_skips_null_changes", "2.2", "KAFKA-7652 (CachingKeyValueStore#putAndMaybeForward)",
         "a cache flush forwards nothing for a key whose new and old values are both null (a tombstone for a "
         "key the store never held); before, it forwarded Change(null, null)", scope="graphs"),
    Rule("ktable_filter_old_values_if_materialized", "2.7", "KAFKA-10077 (KTableFilter constructor)",
         "KTable#filter asks its parent for old values without forcing materialization: a filter on an "
         "aggregation or a materialized table sends old values and forwards no delete for a row that neither "
         "passed before nor passes now", scope="graphs"),
    Rule("table_group_by_single_record", "3.5", "KIP-904 (KTableRepartitionMap, KTableAggregate)",
         "KTable#groupBy sends one record (subtract and add together) when an update keeps its group key; "
         "before, a subtract record then an add record, two aggregation results", scope="graphs"),
    Rule("kstream_repartition", "2.6", "KIP-221 (KStreamImpl#repartition)",
         "KStream#repartition exists (a user-triggered repartition topic)", scope="graphs"),
    Rule("repartition_keeps_null_keys_for_relaxed_joins", "3.7", "KIP-962 (InternalStreamsBuilder#rewriteRepartitionNodes)",
         "the filter before a DSL repartition topic keeps null-key records when a stream-table left join or a "
         "stream-stream left/outer join lies downstream; before, and elsewhere, it drops them (key != null)", scope="graphs"),
    Rule("kstream_to_table", "2.5", "KIP-523",
         "KStream#toTable exists (a windowed_table_join with shift_ms needs it)"),
    Rule("time_window_retention_size_plus_grace", "3.0", "KAFKA-7106 (TimeWindowedKStreamImpl)",
         "a time-windowed aggregation's store keeps size + grace by default (before: Windows#maintainMs = "
         "max(1 day, size), and a grace that does not fit it is rejected unless Materialized#withRetention)"),
    Rule("sliding_late_check_by_window_end", "3.3", "KAFKA-13785 (KStreamSlidingWindowAggregate)",
         "a sliding-window record is dropped as late when ts + d < close time (before: ts + 1 + d <= close "
         "time); in Java longs the two differ where the sum wraps: a record at ts = Long.MAX_VALUE - d is "
         "dropped before 3.3, aggregated since"),
    Rule("sliding_window_close_inclusive", "3.3", "KAFKA-13739 (KStreamSlidingWindowAggregate)",
         "a sliding window whose end equals the close time is still updated (before: only end > close time, "
         "so SlidingWindows without grace skipped the record's own left window)"),
    Rule("time_windows_for_fixed", "0.10.1", "KAFKA-3784 (TimeWindows#windowsFor)",
         "a record belongs to the windows that contain it (0.10.0: the first window started at max(0, ts - "
         "ts % advance - (size - 1) / advance * advance), one window too early when the size is no multiple of "
         "the advance)"),
    Rule("window_bounds_checked", "0.10.2", "KAFKA-3452 (Window and TimeWindow constructors)",
         "a window's constructor throws IllegalArgumentException for a negative start or an end before the "
         "start: a time window whose end (start + size) wraps past Long.MAX_VALUE kills the application at "
         "the record (before: the end wraps to a negative number; once the next start of TimeWindows#windowsFor "
         "wraps, its loop never ends)"),
    Rule("time_windows_in_start_order", "2.0", "KAFKA-6560, KAFKA-6486 (KStreamWindowAggregate, TimeWindows)",
         "a record's time windows are updated and forwarded in ascending start order (before: the windows the "
         "store already had, by start, then the new ones in java.util.HashMap order of their starts)"),
    # --- suppress (KIP-328) --------------------------------------------------------------------
    Rule("suppress_operator", "2.1", "KIP-328",
         "KTable#suppress: untilWindowCloses and untilTimeLimit, with a bounded or unbounded buffer"),
    Rule("suppress_observed_stream_time", "2.2", "KAFKA-7895 (KTableSuppressProcessor)",
         "the suppress buffer's stream time is the largest timestamp of the records that reached the "
         "suppress processor (before: the task's stream time, which every input record advances, "
         "dropped ones included)"),
    Rule("suppress_session_close_includes_gap", "2.2.1", "KAFKA-8289 (GraphGraceSearchUtil)",
         "untilWindowCloses after a session-windowed aggregation waits gap + grace after the session's "
         "end (before: grace only)"),
    Rule("suppress_enables_old_values", "2.3", "KAFKA-8199 (KTableSuppressProcessorSupplier)",
         "suppress makes its parent table send old values and its buffer keeps each key's prior value "
         "(before: a suppressed table could not feed a downstream that needs old values; ClassCastException "
         "when the topology is built)"),
    Rule("suppress_buffer_compact_values", "2.4", "KAFKA-8452 (BufferValue)",
         "the buffer's size estimate counts the prior, old and new value bytes once each, a prior equal to "
         "the old value once (before: the serialized Change with two 4-byte length prefixes)"),
    # --- processing order (timestamp synchronisation across partitions) -----------------------
    Rule("partition_choice_max_head", "2.1", "KIP-353", until="2.4",
         doc="a task picks the partition with the smallest monotone max of head timestamps"),
    Rule("partition_choice_raw_head", "2.4", "PartitionGroup",
         "a task picks the partition with the smallest raw head-record timestamp"),
)
RULES_BY_NAME = {rule.name: rule for rule in RULES}


# --- release-dependent constants -----------------------------------------------------------
# Numbers the DSL derives from a release's defaults live here, next to the rules, so that every
# engine, the loader's checks and the API read one definition.

#: ``Windows.DEFAULT_MAINTAIN_DURATION`` (retention of a legacy ``JoinWindows`` before KIP-328) and,
#: from 2.1, the 24 hours ``JoinWindows.of`` subtracts the window size from for its default grace.
DEFAULT_WINDOW_RETENTION_MS = 24 * 60 * 60 * 1000


@attrs.frozen
class JoinWindowStores:
    """What a ``JoinWindows`` gives the stream-stream join's window stores in a release.

    ``grace_ms``: the grace period in force; ``retention_ms``: the stores' retention (window
    size + grace, or ``maintainMs`` before KIP-328); ``default_grace``: the grace is the
    release's default, not the user's."""

    grace_ms: int
    retention_ms: int
    default_grace: bool


def join_window_stores(profile: "Profile", before_ms: int, after_ms: int, grace_ms: Optional[int],
                       time_difference: bool) -> JoinWindowStores:
    """Grace and retention of a stream-stream join's stores [join_window_grace, KIP-328].

    ``ofTimeDifference*`` (3.1+) always has an explicit grace. Legacy ``JoinWindows.of``: before 2.1
    the stores keep ``maintainMs`` = 1 day (a window that does not fit is rejected by
    ``reference.model.topology.check_topology``), so the effective grace is 1 day minus the size;
    from 2.1 a missing grace defaults to ``max(1 day - size, 0)``."""
    size = before_ms + after_ms
    if time_difference or (grace_ms is not None and profile.join_window_grace):
        return JoinWindowStores(grace_ms, size + grace_ms, False)
    grace = DEFAULT_WINDOW_RETENTION_MS - size
    if profile.join_window_grace:
        grace = max(grace, 0)
    return JoinWindowStores(grace, size + grace, True)


def legacy_window_grace(size_ms: int) -> int:
    """The grace of a window built without one [windowed_grace, KIP-328]: ``TimeWindows.of`` /
    ``SessionWindows.with`` default to ``max(1 day, size) - size`` (2.1-2.8: ``maintainMs() -
    size()`` with the default 1-day ``maintainMs``; 3.0-3.9: ``max(24h - size, 0)``; 4.0: no such
    builder, ``legacy_window_builders_removed``)."""
    return max(DEFAULT_WINDOW_RETENTION_MS - size_ms, 0)


@attrs.frozen
class TimeWindowSettings:
    """What a ``TimeWindows`` gives a time-windowed aggregation in a release.

    ``grace_ms``: the grace in force, None before 2.1 (no grace: the processor never drops a late
    record, only the store's retention forgets windows); ``retention_ms``: the window store's
    retention; ``default_grace``: the grace is the legacy builder's default, not the user's;
    ``maintain_ms``: the retention came from ``Windows#maintainMs`` (before 3.0, no
    ``Materialized#withRetention``)."""

    grace_ms: Optional[int]
    retention_ms: int
    default_grace: bool
    maintain_ms: bool


def time_window_settings(profile: "Profile", size_ms: int, grace_ms: Optional[int],
                         retention_ms: Optional[int]) -> TimeWindowSettings:
    """Grace and store retention of a time-windowed aggregation [windowed_grace, KIP-328;
    time_window_retention_size_plus_grace, KAFKA-7106]. Before 2.1 there is no grace and the store
    keeps ``maintainMs = max(1 day, size)``; 2.1-2.8 a missing grace is ``maintainMs - size`` and the
    store keeps ``maintainMs`` unless ``Materialized#withRetention`` says otherwise (a grace that does
    not fit is rejected by ``reference.model.topology.check_topology``); since 3.0 the store keeps
    ``size + grace`` by default."""
    maintain = max(DEFAULT_WINDOW_RETENTION_MS, size_ms)
    if not profile.windowed_grace:
        return TimeWindowSettings(None, maintain, True, True)
    grace = legacy_window_grace(size_ms) if grace_ms is None else grace_ms
    if retention_ms is not None:
        return TimeWindowSettings(grace, retention_ms, grace_ms is None, False)
    if profile.time_window_retention_size_plus_grace:
        return TimeWindowSettings(grace, size_ms + grace, grace_ms is None, False)
    return TimeWindowSettings(grace, maintain, grace_ms is None, True)


def sliding_window_retention(time_difference_ms: int, grace_ms: int, retention_ms: Optional[int]) -> int:
    """A sliding-windowed aggregation's store retention [sliding_windows, KIP-450]:
    ``Materialized#withRetention`` or ``2 * time difference + grace`` (the oldest window a record can
    still need as its left window's seed starts at ``ts - 2 * time difference``)."""
    return retention_ms if retention_ms is not None else 2 * time_difference_ms + grace_ms


@attrs.frozen
class SessionWindowSettings:
    """What ``SessionWindows`` (and ``Materialized``) give a session aggregation in a release.

    ``grace_ms``: the grace in force, None before 2.1 (no grace: the processor drops no record as
    late, only the store's retention forgets sessions); ``close_offset_ms``: how far the close time
    trails the stream time (grace, plus the gap since 3.0), None before 2.1; ``retention_ms``: the
    session store's retention; ``default_grace``: the grace is the legacy ``with(gap)`` builder's;
    ``maintain_ms``: the retention is ``SessionWindows#maintainMs`` (before 3.0, no
    ``Materialized#withRetention``)."""

    gap_ms: int
    grace_ms: Optional[int]
    close_offset_ms: Optional[int]
    retention_ms: int
    default_grace: bool
    maintain_ms: bool

    @property
    def minimum_retention_ms(self) -> int:
        """``gap + grace``: the smallest retention the DSL accepts (``gap`` before 2.1, ``until()``'s bound)."""
        return self.gap_ms + (self.grace_ms or 0)


def session_window_settings(profile: "Profile", gap_ms: int, grace_ms: Optional[int],
                            retention_ms: Optional[int]) -> SessionWindowSettings:
    """Grace, close offset and store retention of a session aggregation [windowed_grace, KIP-328;
    session_close_includes_gap, KAFKA-12718; session_retention_gap_plus_grace, KAFKA-7106].

    Before 2.1: no grace, the store keeps ``maintainMs = max(1 day, gap)``. 2.1-2.8: a missing grace
    is ``maintainMs - gap``; the store keeps ``maintainMs`` unless ``Materialized#withRetention`` says
    otherwise (``SessionWindowedKStreamImpl#materialize`` rejects a gap + grace above it: see
    ``reference.model.topology.check_topology``). Since 3.0 the store keeps ``gap + grace`` by default.
    ``SessionWindows.with(gap)``'s grace is :func:`legacy_window_grace` in every release that has it."""
    maintain = max(DEFAULT_WINDOW_RETENTION_MS, gap_ms)
    if not profile.windowed_grace:
        return SessionWindowSettings(gap_ms, None, None, maintain, True, True)
    grace = legacy_window_grace(gap_ms) if grace_ms is None else grace_ms
    close_offset = grace + gap_ms if profile.session_close_includes_gap else grace
    if retention_ms is not None:
        return SessionWindowSettings(gap_ms, grace, close_offset, retention_ms, grace_ms is None, False)
    if profile.session_retention_gap_plus_grace:
        return SessionWindowSettings(gap_ms, grace, close_offset, gap_ms + grace, grace_ms is None, False)
    return SessionWindowSettings(gap_ms, grace, close_offset, maintain, grace_ms is None, True)


def parse_release(text) -> Version:
    """``"3.9"`` -> (3, 9, 0); ``"0.10.2"`` -> (0, 10, 2); ``"3.4.1"`` -> (3, 4, 1)."""
    if isinstance(text, float):
        # YAML and JSON read an unquoted 3.10 as the number 3.1
        raise KssimError(f"release must be a string like \"3.9\", got the number {text!r}: quote it "
                         f"(\"{text}\"; unquoted, 3.10 reads as 3.1)")
    if not isinstance(text, str):
        raise KssimError(f"release must be a string like \"3.9\", got {text!r}")
    parts = text.split(".")
    try:
        numbers = [int(p) for p in parts]
    except ValueError:
        raise KssimError(f"release {text!r} is not a version like \"3.9\" or \"0.10.2\"") from None
    if numbers and numbers[0] == 0:
        if len(numbers) == 4:
            raise KssimError(f"release {text!r}: kssim models the 0.x lines as a whole (their bug-fix releases "
                             f"are not modelled apart): write \"{'.'.join(parts[:3])}\"")
        if len(numbers) != 3:
            raise KssimError(f"release {text!r}: 0.x releases are written with three parts, e.g. \"0.10.2\"")
        return tuple(numbers)  # type: ignore[return-value]
    if len(numbers) not in (2, 3):
        raise KssimError(f"release {text!r} is not a version like \"3.9\" or \"3.4.1\"")
    return (numbers[0], numbers[1], numbers[2] if len(numbers) == 3 else 0)


def _line(version: Version) -> Version:
    return version if version[0] == 0 else (version[0], version[1], 0)


_LINES = tuple(parse_release(r) for r in RELEASE_LINES)


def _holds(rule: Rule, v: Version) -> bool:
    for since, until in ((rule.since, rule.until),) + tuple(rule.also):
        if parse_release(since) <= v and (until is None or v < parse_release(until)):
            return True
    return False


def _check_patch_release(release: str, version: Version) -> None:
    """A bug-fix release must be one kssim knows (:data:`NEWEST_PATCH`), else its fixes would be guessed."""
    if version[0] == 0 or version[2] == 0:
        return
    line = f"{version[0]}.{version[1]}"
    newest = NEWEST_PATCH.get(line, 0)
    if version[2] > newest:
        known = ", ".join(f"{line}.{patch}" for patch in range(newest + 1))
        raise KssimError(f"release {release!r} is not a Kafka Streams release kssim knows: of the {line} line it "
                         f"knows {known} (\"{line}\" is {line}.0)")


class Profile:
    """The rules in force for one Kafka Streams release; read them as attributes by rule name."""

    __slots__ = ("release", "version", "_rules")

    def __init__(self, release: str):
        version = parse_release(release)
        if version[0] == 0 and version[1] == 10 and version[2] > 2:
            raise KssimError(f"release {release!r} does not exist (the 0.10 line is 0.10.0 to 0.10.2)")
        if _line(version) not in _LINES:
            newest = RELEASE_LINES[-1]
            if version > _LINES[-1]:
                raise KssimError(f"release {release!r} is not modelled: the newest modelled release is {newest}")
            raise KssimError(f"release {release!r} is not a Kafka Streams release kssim knows "
                             f"({RELEASE_LINES[0]} to {newest})")
        _check_patch_release(release, version)
        object.__setattr__(self, "release", release)
        object.__setattr__(self, "version", version)
        object.__setattr__(self, "_rules", {r.name: _holds(r, version) for r in RULES})

    def __getattr__(self, name):
        try:
            return self._rules[name]
        except KeyError:
            raise AttributeError(f"no semantics rule named {name!r}") from None

    def __setattr__(self, name, value):
        raise AttributeError("profiles are immutable")

    def at_least(self, release: str) -> bool:
        """For documentation and validation only; operators use named rules."""
        return self.version >= parse_release(release)

    def active_rules(self):
        return [r for r in RULES if self._rules[r.name]]

    def with_rule(self, name: str, holds: bool) -> "Profile":
        """This release's rules with one of them set to ``holds``: a counterfactual (which rule
        makes two releases differ? ``kssim difftest`` flips each changed rule alone and sees
        which one accounts for the difference). No Kafka release; its ``release`` stays this one's."""
        if name not in self._rules:
            raise AttributeError(f"no semantics rule named {name!r}")
        other = object.__new__(Profile)
        object.__setattr__(other, "release", self.release)
        object.__setattr__(other, "version", self.version)
        object.__setattr__(other, "_rules", {**self._rules, name: holds})
        return other

    def __repr__(self):
        return f"Profile({self.release!r})"

    def __eq__(self, other):
        # two releases with the same rules in force model the same behaviour
        return isinstance(other, Profile) and other._rules == self._rules

    def __hash__(self):
        return hash(frozenset(name for name, on in self._rules.items() if on))


def profile_for(release: Optional[str]) -> Profile:
    """The profile of ``release`` (None: the default, the newest modelled release)."""
    return Profile(DEFAULT_RELEASE if release is None else release)


def rule_changes(a: Profile, b: Profile):
    """The rules whose value differs between two profiles: what an upgrade from a to b changes."""
    return [r for r in RULES if getattr(a, r.name) != getattr(b, r.name)]
