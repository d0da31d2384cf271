"""Closed sets of outcomes every engine reports: why an input was dropped, why Kafka would fail.

Each member carries a stable ``code`` (what ``--drops``, replay drop files and scenario files
say), ``mirrors`` (the Kafka log line, metric or behaviour it stands for, so a user can match it
with what production shows) and ``message`` (one sentence for people). Both engines emit these
members and nothing else, so a scenario's ``expected_failure.message_contains`` means the same on
each, and ``kssim difftest`` compares codes, not free text. The per-record explanation with its
numbers is the reference's :class:`reference.runtime.explain.Why`, separate from the code.
"""
from __future__ import annotations

import enum


class _CodedEnum(enum.Enum):
    """A closed set whose members carry ``(code, mirrors, message)``; ``str()`` is the code."""

    def __init__(self, code: str, mirrors: str, message: str):
        self.code = code
        self.mirrors = mirrors
        self.message = message

    def __str__(self) -> str:
        return self.code

    @classmethod
    def from_code(cls, code: str):
        """The member whose ``code`` is ``code`` (ValueError for an unknown code). Cost: O(members)."""
        for member in cls:
            if member.code == code:
                return member
        raise ValueError(f"unknown {cls.__name__} code {code!r} (known: {', '.join(m.code for m in cls)})")


class DropReason(_CodedEnum):
    """Why an input record was dropped or ignored (entirely, or by one processor)."""

    #: A null key reaches a processor that skips it (KStreamJoinWindow, KTableSource since 0.10.2,
    #: the stream side of a stream-table join, a table-table join).
    NULL_KEY = ("null_key", "log 'Skipping record due to null key' + dropped-records metric",
                "null key: skipped, not joined and not stored")
    #: A null value where a join drops it (KIP-77, 0.10.2+: stream-stream and stream-table joins).
    NULL_VALUE = ("null_value", "log 'Skipping record due to null key or value' + dropped-records metric",
                  "null value: dropped (by a join, or a sliding-window aggregation), not stored")
    #: A window-store put for a segment that has already expired (the record was still joined).
    EXPIRED_WINDOW_PUT = ("expired_window_put", "log 'Skipping record for expired segment.' + dropped-records metric",
                          "window store put into an expired segment: joined, but not stored")
    #: A versioned-store put older than history retention (KIP-889): not stored, not forwarded.
    EXPIRED_VERSIONED_PUT = ("expired_versioned_put", "log 'Skipping record for expired put.' + dropped-records metric",
                             "versioned store put older than the history retention: not stored")
    #: A table join (table-table, or an FK join's subscription or foreign-table side) drops an update
    #: that is not the latest version of its key (KIP-914).
    OUT_OF_ORDER_VERSIONED_UPDATE = (
        "out_of_order_versioned_update",
        "log 'Skipping out-of-order record from versioned table while performing table-table join.' "
        "+ dropped-records metric",
        "out-of-order update of a versioned table: not the latest version, ignored by the join")
    #: The key mapper of a KStream-GlobalKTable join returned null (KStreamKTableJoinProcessor).
    NULL_JOIN_KEY = ("null_join_key", "log 'Skipping record due to null join key or value' + dropped-records metric",
                     "the key mapper returned null: no key to look up, dropped by the join")
    #: An FK join's LHS update whose (old or new) FK is null where the release drops it
    #: (SubscriptionSendProcessorSupplier).
    NULL_FOREIGN_KEY = ("null_foreign_key", "log 'Skipping record due to null foreign key' + dropped-records metric",
                        "null foreign key: the subscription update is dropped")
    #: An FK join response whose value hash no longer matches the current LHS value
    #: (ResponseJoinProcessorSupplier): computed for an older LHS value, it is dropped.
    STALE_FK_RESPONSE = ("stale_fk_response", "ResponseJoinProcessorSupplier: hash mismatch, dropped-records metric",
                         "FK join response for an older LHS value (hash mismatch): dropped")
    #: A windowed aggregation skips a window the record is too late for (time windows: that window
    #: only; a hopping record may update its other windows), or drops the record (session windows,
    #: against the merged session; sliding windows), KStream*WindowAggregate.
    EXPIRED_WINDOW = ("expired_window", "log 'Skipping record for expired window.' + dropped-records metric",
                      "too late for its window (window end + grace passed by stream time): not aggregated")
    #: A negative timestamp belongs to no time window (TimeWindows#windowsFor): the record vanishes,
    #: without log or metric.
    NO_WINDOW = ("no_window", "TimeWindows#windowsFor returns no window: no log, no metric",
                 "negative timestamp: it belongs to no time window, nothing is aggregated")
    #: Emit on window close (KIP-825): the close check of this record fetched a window the store
    #: already hides (its start fell below the store's observed time - retention), so that window's
    #: final result is never emitted. One per lost window, on the record whose close check lost it.
    UNEMITTED_WINDOW = ("unemitted_window",
                        "no log, no metric: the emit-final range fetch skips windows the window store has expired",
                        "an emit-on-window-close window expired from its store before its close was checked: "
                        "its final result is never emitted")
    #: An inner stream-table or stream-GlobalKTable join found no table row for the stream record
    #: (or, for a global table before 2.7, its key mapper returned null): nothing is emitted and
    #: nothing is logged or counted. Reported only when a run asks for it (``kssim run --explain``
    #: or ``--drops``; ``TaskContext.misses``), so replays and engine comparisons keep their codes.
    NO_MATCH = ("no_match", "no log, no metric: KStreamKTableJoinProcessor forwards nothing for an inner join "
                "without a table value", "inner join: no table row for the key, nothing emitted")
    #: KIP-557 (2.6.0, 2.6.1, 2.7.0): KTableSource ignores an update equal to the stored value.
    IDEMPOTENT_UPDATE = ("idempotent_update", "KTableSource emit-on-change (KIP-557): no log, no forward",
                         "idempotent update: equal to the stored value, not forwarded")
    #: A graph's filter (or a flat_map_values to null) stops the record: processed, nothing forwarded.
    FILTERED = ("filtered", "KStreamFilter / KTableFilter predicate false, KStreamFlatMapValues empty: no log, "
                "no metric", "stopped by a filter (or mapped to no record): nothing forwarded from that node")
    #: A KTable#groupBy mapped pair with a null key or value (KTableRepartitionMap) is not sent.
    NULL_GROUP_KEY = ("null_group_key", "KTableRepartitionMap / KTableAggregate: 'Skipping record due to null "
                      "key' + dropped-records metric", "the group-by mapper gave a null key or value: not aggregated")


class FailureCode(_CodedEnum):
    """Why real Kafka Streams would die while processing an input (an exception escapes a processor)."""

    #: 0.10.0's one-sided left join reaches KStreamKStreamJoin with a null key, which throws.
    STREAM_JOIN_NULL_KEY = (
        "stream_join_null_key", "StreamsException thrown by KStreamKStreamJoin",
        "StreamsException: Record key for KStream-KStream join operator with other window state store "
        "should not be null")
    #: Before 0.10.2 a null-key table record has no null check in KTableSource: the application dies.
    TABLE_SOURCE_NULL_KEY = (
        "table_source_null_key", "StreamsException thrown by the KTable source or its store",
        "StreamsException: Record key for the source KTable should not be null (a null-key table record kills "
        "the application before 0.10.2; 0.10.0: the table store fails on flush)")
    #: 3.7+ stream-table left join with a grace period: a null-key record reaches the grace buffer.
    GRACE_BUFFER_NULL_KEY = (
        "grace_buffer_null_key", "NullPointerException thrown by RocksDBTimeOrderedKeyValueBuffer.put",
        "NullPointerException: key cannot be null (RocksDBTimeOrderedKeyValueBuffer.put): a stream-table "
        "left join with a grace period puts the null-key record into its buffer")
    #: Before 1.0.1 (KAFKA-6378) a KStream-GlobalKTable join looks a null mapped key up in the global store.
    GLOBAL_LOOKUP_NULL_KEY = (
        "global_lookup_null_key", "NullPointerException thrown by the GlobalKTable's store get(null)",
        "NullPointerException: the key mapper of a KStream-GlobalKTable join returned null and the global "
        "store was asked for get(null) (before 1.0.1, KAFKA-6378)")
    #: 0.10.2: restoring a GlobalKTable at start-up puts a null-key record into its store (KAFKA-5047).
    GLOBAL_RESTORE_NULL_KEY = (
        "global_restore_null_key", "NullPointerException thrown by GlobalStateManagerImpl.restoreState",
        "NullPointerException: restoring the GlobalKTable at start-up hit a null-key record of its topic "
        "(0.10.2, KAFKA-5047)")
    #: The ``sum`` aggregation was given a null value: unboxing it throws.
    #: 0.10.0's KStreamAggregate / KStreamReduce throw on a null key.
    AGGREGATION_NULL_KEY = (
        "aggregation_null_key", "StreamsException thrown by KStreamAggregate/KStreamReduce (0.10.0)",
        "StreamsException: a grouped stream's aggregation got a record with a null key (Kafka 0.10.0)")
    AGGREGATOR_NULL_VALUE = (
        "aggregator_null_value", "NullPointerException thrown by the aggregator",
        "NullPointerException: the sum aggregator was given a null value (Long unboxing)")
    #: 0.10.2+: a window bound computed in Java longs wrapped past ``Long.MAX_VALUE``: a time
    #: window whose end ``start + size`` overflows (``TimeWindows#windowsFor``), or a session
    #: lookup whose latest start ``ts + gap`` overflows (the RocksDB session store's range key).
    WINDOW_ILLEGAL_ARGUMENT = (
        "window_illegal_argument", "IllegalArgumentException thrown by the Window constructor",
        "IllegalArgumentException: a window bound wrapped past Long.MAX_VALUE ('Window endMs time cannot be "
        "smaller than window startMs time.' for a time window whose end start + size overflows; 'Window startMs "
        "time cannot be negative.' for a session store lookup up to ts + gap)")
    #: 0.10.0-0.10.1: the next window start of ``TimeWindows#windowsFor`` wraps below the record's
    #: timestamp, so its loop never ends (windows pile up in its HashMap).
    WINDOWS_FOR_OUT_OF_MEMORY = (
        "windows_for_out_of_memory", "OutOfMemoryError (or a hang) in TimeWindows#windowsFor",
        "OutOfMemoryError: TimeWindows#windowsFor never returns: its next window start (last start + advance) "
        "wraps past Long.MAX_VALUE to a negative number, still below the record's timestamp, and the loop goes on "
        "making windows (Kafka 0.10.0-0.10.1, whose Window constructor checks nothing)")
    #: 2.1-3.3, RocksDB join stores: a stream-stream join's lookup whose upper bound ``ts + after``
    #: wrapped past ``Long.MAX_VALUE`` (``Math.max(0L, ...)`` makes it 0) asks ``Segments#segments``
    #: for a segment range that starts above where it ends: ``TreeMap#subMap`` throws.
    WINDOW_FETCH_REVERSED_RANGE = (
        "window_fetch_reversed_range", "IllegalArgumentException thrown by TreeMap#subMap (Segments#segments)",
        "IllegalArgumentException: fromKey > toKey (the RocksDB window store's Segments#segments, Kafka 2.1-3.3): "
        "a stream-stream join lookup's upper bound ts + after wrapped past Long.MAX_VALUE and was clamped to 0, "
        "below the segment of its lower bound")
    #: 2.7+: a sliding window of time difference 0 makes the record's left window ``new
    #: TimeWindow(ts, ts)``, which the TimeWindow constructor rejects.
    TIME_WINDOW_EMPTY = (
        "time_window_empty", "IllegalArgumentException thrown by the TimeWindow constructor",
        "IllegalArgumentException: Window endMs must be greater than window startMs. (a sliding window of time "
        "difference 0: KStreamSlidingWindowAggregate creates the record's left window as new TimeWindow(ts, ts))")
    #: A suppress buffer with ``shutDownWhenFull`` (or ``untilWindowCloses`` with a bounded strict
    #: buffer) is over its limit after this record: Kafka stops the application.
    SUPPRESS_BUFFER_FULL = (
        "suppress_buffer_full", "StreamsException thrown by KTableSuppressProcessor (BufferFullStrategy.SHUT_DOWN)",
        "StreamsException: the suppress buffer exceeded its max capacity (records or bytes) and its strategy is "
        "shutDownWhenFull: Kafka would shut down here ('... buffer exceeded its max capacity')")
