"""Which windows (or sessions) a windowed aggregation's store still holds, as one number per read.

Kafka's window and session stores forget old entries by their *store time* (a session's end, a
window's start) against the store's clock (``observedStreamTime``: the largest store time put so
far). How depends on the store and the release, and is a *model*, a plain int column chosen on the
driver from the release rules (``session_settings``, ``sliding_settings``):

- ``BY_CLOCK``: an entry is seen while ``time >= clock - retention + 1``: ``InMemoryWindowStore`` and
  ``InMemorySessionStore`` (``removeExpiredSegments`` before every read; a put at or before ``clock -
  retention`` is skipped), and RocksDB fetches since KAFKA-12960 (3.4, ``window_fetch_hides_expired``:
  ``getActualFrom``).
- ``BY_CLOCK_INCLUSIVE``: ``time >= clock - retention``: the time-ordered window store of
  emit-on-window-close (``AbstractDualSchemaRocksDBSegmentedBytesStore#getActualFrom`` for a
  time-first window schema, 3.4+).
- ``BY_LIVE_SEGMENTS``: RocksDB segments live while ``segmentId(time) >= segmentId(clock - retention)``
  (``AbstractSegments#getOrCreateSegmentIfLive`` drops the others at every put, KAFKA-7072, 2.1+,
  ``rocksdb_segments_by_retention``); a put into a dead segment is skipped. RocksDB fetches before
  3.4 see exactly the live segments, and so does the session store's emit-final range fetch
  (``fetchSessions``) in every release.
- ``BY_NEWEST_SEGMENTS``: before 2.1 a RocksDB store keeps its three newest segments.
- ``NONE``: the read does not happen.

Each model is one *floor*: the smallest store time still seen at a given clock (every rule above is
monotone in the time), so a read is a comparison. ``segmentId`` is Java's truncating division.
"""
from __future__ import annotations

NONE, BY_CLOCK, BY_CLOCK_INCLUSIVE, BY_LIVE_SEGMENTS, BY_NEWEST_SEGMENTS = -1, 0, 1, 2, 3
#: ``Segments#numSegments`` before 2.1
LEGACY_SEGMENTS = 3
MIN_SEGMENT_INTERVAL_MS = 60_000
#: the clock of a store nothing was put into (``ConsumerRecord.NO_TIMESTAMP``)
NO_TIMESTAMP = -1


def segment_interval(retention_ms: int) -> int:
    """The default segment interval of a RocksDB window or session store: ``max(retention / 2,
    60 000)`` (before 2.1 the same value, ``retention / (numSegments - 1)`` with three segments)."""
    return max(retention_ms // 2, MIN_SEGMENT_INTERVAL_MS)


def java_div(a: int, b: int) -> int:
    """Java's long division (truncates towards zero), as ``segmentId`` computes it."""
    if a >= 0 and b > 0:  # the usual case, where Python's floor division truncates as well
        return a // b
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def floor(model: int, clock, retention: int, interval: int) -> int:
    """The smallest store time the store still holds (or a read still sees) at ``clock`` (None:
    nothing was put yet) under ``model``."""
    c = NO_TIMESTAMP if clock is None else clock
    if model == BY_CLOCK:
        return c - retention + 1
    if model == BY_CLOCK_INCLUSIVE:
        return c - retention
    if model == BY_LIVE_SEGMENTS:
        return java_div(c - retention, interval) * interval
    if model == BY_NEWEST_SEGMENTS:
        return (java_div(c, interval) - (LEGACY_SEGMENTS - 1)) * interval
    raise ValueError(f"no store model {model!r}")


def floor_column(model, clock, retention, interval):
    """:func:`floor` as a Spark column over columns ``model``, ``clock`` (null: nothing put yet),
    ``retention`` and ``interval``."""
    from pyspark.sql import functions as F

    c = F.coalesce(clock, F.lit(NO_TIMESTAMP).cast("bigint"))

    def segment_start(t):  # java_div(t, interval) * interval: Spark's % keeps the dividend's sign, as Java's
        return t - t % interval

    return (F.when(model == BY_CLOCK, c - retention + 1)
            .when(model == BY_CLOCK_INCLUSIVE, c - retention)
            .when(model == BY_LIVE_SEGMENTS, segment_start(c - retention))
            .when(model == BY_NEWEST_SEGMENTS, segment_start(c) - (LEGACY_SEGMENTS - 1) * interval))
