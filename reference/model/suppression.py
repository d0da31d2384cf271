"""What ``KTable#suppress`` is set to do, and how its buffer measures a record: shared by every engine.

Kafka turns the user's ``Suppressed`` into a ``SuppressedInternal`` when the topology is built
(``KTableImpl#buildSuppress``); :func:`suppression_plan` does the same for a topology spec:

- ``until: time_limit`` (``Suppressed.untilTimeLimit(limit, buffer)``): a record's buffer time is
  its timestamp (``TimeDefinitions.RecordTimeDefinition``); the buffer waits ``time_limit_ms``;
  tombstones are emitted like any record (``safeToDropTombstones`` false).
- ``until: window_close`` (``untilWindowCloses``, ``FinalResultsSuppressionBuilder``): a record's
  buffer time is the end of its window, ``key["end"]`` of the windowed key
  (``WindowEndTimeDefinition``: ``Windowed#window().end()``, exclusive for time windows, inclusive
  for session and sliding windows); the buffer waits the window's close delay that
  ``GraphGraceSearchUtil`` finds upstream (:func:`window_close_delay_ms`); tombstones are dropped
  when evicted (``safeToDropTombstones`` true: no result was ever emitted for the window).
- The buffer config: ``max_records`` / ``max_bytes`` absent are ``Long.MAX_VALUE``
  (``BufferConfig.unbounded()``); ``when_full`` ``emit_early`` (``EagerBufferConfigImpl``,
  ``BufferFullStrategy.EMIT``) or ``shut_down`` (``StrictBufferConfigImpl``, ``SHUT_DOWN``).
  Kafka validates none of these numbers: a negative time limit evicts at once, a negative bound is
  always exceeded.

The buffer's size estimate (``InMemoryTimeOrderedKeyValueChangeBuffer#computeRecordSize``), per
release (:func:`buffered_record_size`), from the bytes kssim's serdes write:

- key bytes (:func:`buffer_key_bytes`): the result key's serde. A plain key: its serialized bytes
  (:func:`reference.model.keys.serialized_key`). A windowed key of a time or sliding window
  (``TimeWindowedSerializer``, ``WindowKeySchema#toBinary``): key bytes + the window start as
  8 bytes big-endian. Of a session window (``SessionWindowedSerializer``,
  ``SessionKeySchema#toBinary``): key bytes + end (8 bytes) + start (8 bytes). The buffer orders
  records of the same buffer time by these bytes (unsigned, lexicographic).
- value bytes: the value serde's bytes, chosen by JSON type as for keys (a count is a ``Long``,
  8 bytes; a string its UTF-8 bytes); a null value has none.
- record context: 8 (timestamp) + 8 (offset) + the topic name's length in chars + 4 (partition);
  kssim's records carry no headers. The topic is the one of the record being processed when the
  result reached suppress, as the scenario names it (``left``, ``right``, ``input``, or kssim's
  FK-join response topic); a deployment's topic names (and Kafka's internal repartition topic
  names) differ in length, so a byte bound means the same only up to that difference.
- 2.4+ [``suppress_buffer_compact_values``, KAFKA-8452]: ``8 + key + prior + old + new + context``,
  the old value not counted again when its bytes equal the prior value's.
- 2.3 [``suppress_enables_old_values``, KAFKA-8199]: ``8 + key + prior + (4 + old + 4 + new) +
  context``: the serialized ``Change`` with its two length prefixes, plus the prior value.
- 2.1-2.2: ``8 + key + (4 + old + 4 + new) + context``.

The prior value is the old value of the first update buffered for the key (kept while the key
stays buffered); the old value is that of the key's latest update.
"""
from __future__ import annotations

from typing import Optional

import attrs

from kssim.reference.model.keys import serialized_key
from kssim.reference.model.profiles import Profile, legacy_window_grace

#: ``Long.MAX_VALUE``: an unbounded buffer's limits, the largest Java long
JAVA_LONG_MAX = (1 << 63) - 1
#: ``ConsumerRecord.NO_TIMESTAMP``: the suppress processor's stream time before any record
NO_TIMESTAMP = -1

TIME_DEFINITIONS = ("record_time", "window_end")
#: how a result key is serialized for the buffer: a plain key, or Kafka's windowed serdes
KEY_KINDS = ("plain", "time_window", "session_window")


def java_long(value: int) -> int:
    """``value`` wrapped to a signed 64-bit Java ``long``, as Java's ``+`` and ``-`` overflow."""
    return ((value + (1 << 63)) & ((1 << 64) - 1)) - (1 << 63)


@attrs.frozen
class SuppressionPlan:
    """``SuppressedInternal`` as built for one topology (see the module docstring).

    ``duration_ms``: ``suppressDurationMillis`` (the time limit, or the window close delay);
    ``time_definition``: ``record_time`` or ``window_end``; ``key_kind``: how the buffer serializes
    result keys (:data:`KEY_KINDS`); ``observed_stream_time``: the buffer's stream time is the
    largest timestamp that reached suppress (2.2+), else the task's; ``upstream_sends_old_values``:
    suppress made its parent send old values (2.3+); ``compact_values`` / ``prior_value``: which
    size estimate applies (:func:`buffered_record_size`)."""

    until: str
    duration_ms: int
    time_definition: str
    safe_to_drop_tombstones: bool
    max_records: int
    max_bytes: int
    when_full: str
    key_kind: str
    observed_stream_time: bool
    upstream_sends_old_values: bool
    prior_value: bool
    compact_values: bool


def key_kind_of(spec) -> str:
    """How the result keys of ``spec``'s operator are serialized (:data:`KEY_KINDS`; the table of
    operators says, ``reference.model.topology.OPERATOR_KINDS``)."""
    from kssim.reference.model.topology import OPERATOR_KINDS

    return OPERATOR_KINDS[spec.operator].key_kind


def window_close_delay_ms(spec, profile: Profile) -> int:
    """How long after a window's end ``untilWindowCloses`` waits (``GraphGraceSearchUtil
    #findAndVerifyWindowGrace``): the grace of the windowed aggregation upstream; for session
    windows gap + grace [``suppress_session_close_includes_gap``, 2.2.1, KAFKA-8289] (before:
    the grace only). A windowed-table join inherits the largest grace of its two windowed
    aggregations, which share one window. A missing grace is the legacy builders' default
    (:func:`reference.model.profiles.legacy_window_grace`)."""
    if spec.operator == "session_aggregate":
        grace = legacy_window_grace(spec.gap_ms) if spec.grace_ms is None else spec.grace_ms
        return java_long(grace + spec.gap_ms) if profile.suppress_session_close_includes_gap else grace
    if spec.operator == "sliding_aggregate":
        return spec.grace_ms
    if spec.operator in ("window_aggregate", "windowed_table_join"):
        window = spec.window
        return legacy_window_grace(window.size_ms) if window.grace_ms is None else window.grace_ms
    raise ValueError(f"{spec.operator} has no window: untilWindowCloses needs a windowed computation")


def suppression_plan(spec, profile: Profile) -> SuppressionPlan:
    """The :class:`SuppressionPlan` of ``spec.suppress`` in ``profile``'s release."""
    suppress = spec.suppress
    final = suppress.until == "window_close"
    buffer = suppress.buffer
    return SuppressionPlan(
        until=suppress.until,
        duration_ms=window_close_delay_ms(spec, profile) if final else suppress.time_limit_ms,
        time_definition="window_end" if final else "record_time",
        safe_to_drop_tombstones=final,
        max_records=JAVA_LONG_MAX if buffer.max_records is None else buffer.max_records,
        max_bytes=JAVA_LONG_MAX if buffer.max_bytes is None else buffer.max_bytes,
        when_full=buffer.when_full,
        key_kind=key_kind_of(spec),
        observed_stream_time=profile.suppress_observed_stream_time,
        upstream_sends_old_values=profile.suppress_enables_old_values,
        prior_value=profile.suppress_enables_old_values,
        compact_values=profile.suppress_buffer_compact_values,
    )


def buffer_time(plan: SuppressionPlan, key, ts: int) -> int:
    """A record's buffer time: its timestamp (untilTimeLimit) or its window's end (untilWindowCloses)."""
    return key["end"] if plan.time_definition == "window_end" else ts


def _long_bytes(n: int) -> bytes:
    return java_long(n).to_bytes(8, "big", signed=True)


def buffer_key_bytes(key, key_kind: str) -> bytes:
    """The bytes the buffer keys (and, within one buffer time, orders) a result by (module docstring)."""
    if key_kind == "plain":
        return serialized_key(key)
    inner = serialized_key(key["key"])
    if key_kind == "time_window":
        return inner + _long_bytes(key["start"])
    return inner + _long_bytes(key["end"]) + _long_bytes(key["start"])


def value_bytes(value) -> Optional[bytes]:
    """The value serde's bytes of a value, None for a null value."""
    return None if value is None else serialized_key(value)


def _length(data: Optional[bytes]) -> int:
    return 0 if data is None else len(data)


def record_context_size(topic: str) -> int:
    """``ProcessorRecordContext#residentMemorySizeEstimate`` (no headers): timestamp, offset,
    topic chars, partition."""
    return 8 + 8 + len(topic.encode("utf-16-le")) // 2 + 4


def buffered_record_size(plan: SuppressionPlan, key: bytes, prior: Optional[bytes], old: Optional[bytes],
                         new: Optional[bytes], topic: str) -> int:
    """The buffer's size estimate of one buffered record, per release (module docstring)."""
    size = 8 + len(key) + record_context_size(topic)
    if plan.compact_values:
        # BufferValue: a prior value equal to the old one is the same array, counted once
        old_size = 0 if old is None or prior == old else len(old)
        return size + _length(prior) + old_size + _length(new)
    change = 4 + _length(old) + 4 + _length(new)
    return size + change + (_length(prior) if plan.prior_value else 0)
