"""Kafka's duplicate-retaining window store, the way a KStream-KStream join uses it.

Each side of a stream-stream join keeps its records in a window store built with
``retainDuplicates = true`` (``KStreamImpl#joinWindowStoreBuilder``, ``StreamJoinedStoreFactory``):
retention = before + after + grace, window size = before + after. Both flavours are modelled:

Common to both
- A fetch of one key returns ascending timestamps, and for equal timestamps insertion order: every
  put appends a 4-byte sequence number to the stored key (``RocksDBWindowStore#maybeUpdateSeqnumForDups``,
  ``InMemoryWindowStore#wrapForDups``).
- A put the store considers expired is not stored (the record was still joined: the join looks up
  the *other* store before this put).

:class:`RocksDBWindowStore` (``RocksDBWindowStore`` over the segmented bytes store, the DSL default)
- Segments of ``max(retention / 2, 60 000)`` ms (``Stores#persistentWindowStore``; before 2.1 the
  legacy ``numSegments = 3`` gives the same interval: ``retention / (3 - 1)``).
- Which segments live: before 2.1 the three newest ones (``Segments``, numSegments 3); since 2.1
  (KAFKA-7072) segment ids ``>= segmentId(clock - retention)`` (Java division, truncating). The clock
  is the task's stream time in 2.1 and the store's own observed time (the largest ts put) since 2.2
  (KAFKA-7895). Dead segments are deleted at put time; a put into a dead segment is dropped.
- Visibility: before 3.4 whatever sits in a live segment is found (segment-granular expiry); since
  3.4 (KAFKA-12960) a fetch only returns ``ts >= observed - retention + 1``.
- A null-value put is a no-op that leaves the clock alone since 2.5.1 (KAFKA-9921); before, it went
  down to the segments like any put (advancing the clock, deleting dead segments) and deleted nothing.
- 0.10.2 only: ``Segments#segments`` starts at ``minSegmentId``, the first segment ever created, so
  a segment created later for an older timestamp is never searched (fixed by KAFKA-4851 in 0.11).

:class:`InMemoryWindowStore` (``InMemoryWindowStore``, usable by joins since 2.4 through ``StreamJoined``)
- Strict retention: a put is dropped iff ``ts <= observed - retention``, a fetch returns only
  ``ts >= observed - retention + 1``.
- A null-value put advances the observed time (it is dropped after the clock update).

Entries are ``(ts, seq, value, input_index)`` tuples; ``seq`` is unique, so tuple order is
(ts, insertion order). Lookups go through a per-key list; a ``SortedDict`` of time buckets (the
RocksDB segments) says which keys to trim when time moves on, so memory stays bounded by retention.
Keys are key identities (:func:`reference.model.keys.key_identity`), converted by the join: two
keys are one key exactly when their serialized bytes are equal, as in Kafka. In the costs below,
``n`` is the number of stored entries of the key, ``K`` the number of keys, ``B`` of buckets.
"""
from __future__ import annotations

from bisect import bisect_left, insort

from sortedcontainers import SortedDict

from kssim.reference.stores.segments import SegmentClock

NO_TIMESTAMP = -1  # ConsumerRecord.NO_TIMESTAMP: a store's clock before its first put
MIN_SEGMENT_INTERVAL_MS = 60_000  # Stores#persistentWindowStore / Segments.MIN_SEGMENT_INTERVAL
LEGACY_NUM_SEGMENTS = 3  # Windows.DEFAULT_NUM_SEGMENTS, the join stores' segment count before 2.1
_EMPTY = ()


def segment_interval(retention_ms: int) -> int:
    """``max(retention / 2, 60 000)``: Kafka's default segment interval for window stores."""
    return max(retention_ms // 2, MIN_SEGMENT_INTERVAL_MS)


class _DuplicateWindowStore:
    """Storage shared by both flavours: per-key time-ordered entries plus time buckets for expiry.

    Backed by a ``dict`` from key identity to a Python list of entries sorted by (ts, seq), and a
    sortedcontainers ``SortedDict`` from bucket id (``ts // bucket_ms``) to the key identities
    that put an entry into that bucket (one list item per put)."""

    __slots__ = ("retention_ms", "window_size_ms", "observed_ms", "bucket_ms", "_by_key", "_buckets",
                 "_seq", "_fetch_floor", "_trimmed_below", "_newest_bucket", "_newest_bucket_keys")

    def __init__(self, retention_ms: int, window_size_ms: int, bucket_ms: int):
        self.retention_ms = retention_ms
        self.window_size_ms = window_size_ms
        self.observed_ms = NO_TIMESTAMP
        self.bucket_ms = bucket_ms
        self._by_key = {}  # key id -> [(ts, seq, value, input_index), ...] in (ts, seq) order
        self._buckets = SortedDict()  # bucket id -> key ids that put a record into that bucket
        self._seq = 0
        self._fetch_floor = NO_TIMESTAMP  # smallest ts a fetch may return
        self._trimmed_below = 0  # buckets below this id have been deleted
        self._newest_bucket = None  # the bucket most puts go to, and its key list
        self._newest_bucket_keys = None

    # -- reading -------------------------------------------------------------------------------
    def fetch(self, key_id, time_from: int, time_to: int):
        """Entries of ``key_id`` with ``time_from <= ts <= time_to`` that the store shows, in order.

        The result may be the store's own list: iterate it before the next put into this store.
        Cost: O(1) when the range covers every entry of the key, else O(log n + m) for m returned."""
        entries = self._by_key.get(key_id)
        if not entries:
            return _EMPTY
        if time_from < self._fetch_floor:
            time_from = self._fetch_floor
        if time_to < time_from:
            return _EMPTY
        if entries[0][0] >= time_from and entries[-1][0] <= time_to:
            return entries
        return entries[bisect_left(entries, (time_from,)):bisect_left(entries, (time_to + 1,))]

    def __len__(self) -> int:
        """Number of stored entries, visible or not. Cost: O(K)."""
        return sum(len(v) for v in self._by_key.values())

    def keys(self):
        """The key identities with stored entries. Cost: O(K) (a new list)."""
        return list(self._by_key)

    def entries(self, key_id):
        """Every stored entry of ``key_id``, visible or not (for tests and explanations).
        Cost: O(n) (a new list)."""
        return list(self._by_key.get(key_id, ()))

    # -- writing -------------------------------------------------------------------------------
    def _insert(self, key_id, value, ts: int, input_index: int) -> None:
        self._seq += 1
        entry = (ts, self._seq, value, input_index)
        entries = self._by_key.get(key_id)
        if entries is None:
            self._by_key[key_id] = [entry]
        elif entries[-1][0] <= ts:
            entries.append(entry)
        else:
            insort(entries, entry)  # seq is unique: tuples never compare past it
        bucket_id = ts // self.bucket_ms
        if bucket_id == self._newest_bucket:
            self._newest_bucket_keys.append(key_id)
            return
        keys = self._buckets.get(bucket_id)
        if keys is None:
            keys = self._buckets[bucket_id] = [key_id]
        else:
            keys.append(key_id)
        if self._newest_bucket is None or bucket_id > self._newest_bucket:
            self._newest_bucket, self._newest_bucket_keys = bucket_id, keys

    def _delete_buckets_below(self, bucket_id: int) -> None:
        """Forget every entry in buckets with a smaller id (a deleted RocksDB segment)."""
        self._trimmed_below = bucket_id
        buckets = self._buckets
        if not buckets or buckets.peekitem(0)[0] >= bucket_id:
            return
        doomed = set()
        for dead in list(buckets.irange(maximum=bucket_id, inclusive=(True, False))):
            doomed.update(buckets.pop(dead))
        if self._newest_bucket is not None and self._newest_bucket < bucket_id:
            self._newest_bucket = self._newest_bucket_keys = None
        cut = (bucket_id * self.bucket_ms,)
        by_key = self._by_key
        for key_id in doomed:
            entries = by_key.get(key_id)
            if entries is None:
                continue
            del entries[:bisect_left(entries, cut)]
            if not entries:
                del by_key[key_id]


class RocksDBWindowStore(SegmentClock, _DuplicateWindowStore):
    """The RocksDB window store of a join side (``RocksDBWindowStore`` + ``KeyValueSegments``).

    ``live_segments``: 3 before 2.1 (the newest three segments live), None since (retention rule).
    ``task_clock``: 2.1, the segments' clock is the task's stream time (the caller feeds it through
    :meth:`observe`). ``strict_fetch``: 3.4+. ``null_put_noop``: 2.5.1+.
    ``fetch_from_first_segment``: the 0.10.2 ``minSegmentId`` quirk.

    Backed by per-key Python lists sorted by (ts, seq) and a ``SortedDict`` of buckets, one per
    segment (see :class:`_DuplicateWindowStore`); a deleted segment is a deleted bucket.
    """

    __slots__ = ("live_segments", "task_clock", "strict_fetch", "null_put_noop", "fetch_from_first_segment",
                 "max_segment", "first_segment", "_clock_at_last_put")

    def __init__(self, retention_ms: int, window_size_ms: int, *, live_segments=None, task_clock=False,
                 strict_fetch=True, null_put_noop=True, fetch_from_first_segment=False):
        super().__init__(retention_ms, window_size_ms, segment_interval(retention_ms))
        self.live_segments = live_segments
        self.task_clock = task_clock
        self.strict_fetch = strict_fetch
        self.null_put_noop = null_put_noop
        self.fetch_from_first_segment = fetch_from_first_segment
        self.max_segment = -1
        self.first_segment = None
        self._clock_at_last_put = NO_TIMESTAMP

    def put(self, key_id, value, ts: int, input_index: int = -1) -> bool:
        """Store a record; False when the store dropped the put as expired.

        Cost: O(1) amortised in ts order, O(n) out of order (insort); expiry O(log n) amortised per entry."""
        if value is None and self.null_put_noop:
            return True  # KAFKA-9921: a null put on a duplicate-retaining store is skipped
        if ts > self.observed_ms:
            self.observed_ms = ts
            if self.strict_fetch:
                self._fetch_floor = ts - self.retention_ms + 1
        segment = ts // self.bucket_ms
        if segment > self.max_segment:
            self.max_segment = segment
            if self.first_segment is None:
                self.first_segment = segment
                if self.fetch_from_first_segment:
                    self._fetch_floor = segment * self.bucket_ms
        if self.observed_ms != self._clock_at_last_put or self.live_segments is not None:
            # segments are deleted (and puts judged) against the clock as of this put
            self._clock_at_last_put = self.observed_ms
            min_live = self.min_live_segment()
            if min_live > self._trimmed_below:
                self._delete_buckets_below(min_live)
        if segment < self._trimmed_below:
            return False
        if value is not None:
            self._insert(key_id, value, ts, input_index)
        return True

    def explain_expired(self, ts: int) -> str:
        """Why a put at ``ts`` was dropped, with the numbers (for explanations). Cost: O(1)."""
        seg = self.segment_id(ts)
        if self.live_segments is not None:
            return (f"expired put: ts {ts} falls in segment {seg} ({self.bucket_ms} ms segments), older than the "
                    f"{self.live_segments} newest segments {self.max_segment - self.live_segments + 1}..{self.max_segment}")
        clock = "task stream time" if self.task_clock else "observed"
        return (f"expired put: ts {ts} falls in segment {seg} ({self.bucket_ms} ms segments), below the oldest live "
                f"segment {self.min_live_segment()} = segment of {clock} {self.observed_ms} - retention {self.retention_ms}")


class InMemoryWindowStore(_DuplicateWindowStore):
    """``InMemoryWindowStore`` of a join side: strict retention, and a null put advances the clock.

    Same structure as :class:`RocksDBWindowStore` (per-key sorted lists, a ``SortedDict`` of
    buckets); here the buckets only bound memory, visibility is decided per record."""

    __slots__ = ()

    def __init__(self, retention_ms: int, window_size_ms: int):
        # buckets only bound memory here; visibility is decided per record by the fetch floor
        super().__init__(retention_ms, window_size_ms, segment_interval(retention_ms))

    def observe(self, ts: int) -> None:
        """Ignored: the in-memory store always keeps its own clock. Cost: O(1)."""
        return None

    def put(self, key_id, value, ts: int, input_index: int = -1) -> bool:
        """Store a record; False when the store dropped the put as expired.

        Cost: O(1) amortised in ts order, O(n) out of order (insort); expiry O(log n) amortised per entry."""
        if ts > self.observed_ms:
            self.observed_ms = ts
            floor = ts - self.retention_ms + 1
            self._fetch_floor = floor
            if floor > 0 and floor // self.bucket_ms > self._trimmed_below:
                self._delete_buckets_below(floor // self.bucket_ms)
        if ts <= self.observed_ms - self.retention_ms:
            return False
        if value is not None:
            self._insert(key_id, value, ts, input_index)
        return True

    def explain_expired(self, ts: int) -> str:
        """Why a put at ``ts`` was dropped, with the numbers (for explanations). Cost: O(1)."""
        return (f"expired put: ts {ts} <= observed {self.observed_ms} - retention {self.retention_ms} = "
                f"{self.observed_ms - self.retention_ms}")
