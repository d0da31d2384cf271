"""Kafka's session stores, the way a session-windowed aggregation uses them.

A session store holds, per key, sessions ``[start, end]`` (both inclusive) with their aggregate.
The aggregation asks three things of it (``SessionStore``): the key's sessions that end at or after
``earliest_end`` and start at or before ``latest_start`` (``findSessions(key, ...)``, the merge
candidates), put and remove one session, and, for emit-on-window-close (3.3+), every key's
sessions that end in ``[lo, hi]`` (``findSessions(earliestEnd, latestEnd)``).

Common to every flavour
- Store order of one key: ascending end, then ascending start (``SessionKeySchema``: key bytes +
  end + start; the in-memory store's end-time map). Sessions of one key never share an end while
  they are visible, so the in-memory store's descending start order within an end never shows.
- The store's clock (``observedStreamTime``) is the largest session **end** ever put (the task's
  stream time in 2.1, see ``task_clock``); retention counts back from it, not from the records' ts.
- A put of a null aggregate deletes the session (a reduce whose first value is null), after the
  clock update and the expiry check, like any put.

:class:`RocksDBSessionStore` (``RocksDBSessionStore`` / ``RocksDBTimeOrderedSessionStore`` over
segmented RocksDB stores; the DSL default)
- Segments of ``max(retention / 2, 60 000)`` ms by session end; which live and when dead ones are
  deleted are the window store's rules, the same ``Segments`` classes
  (:mod:`reference.stores.window_store`): the three newest segments before 2.1
  [``rocksdb_segments_by_retention``, KAFKA-7072], then ``>= segmentId(clock - retention)`` by the
  task's stream time (2.1) or the store's own clock (2.2+) [``window_store_own_clock``, KAFKA-7895].
  A put into a dead segment is dropped (silently before 2.1; "Skipping record for expired
  segment" since). The 0.10.2 line's ``minSegmentId`` quirk [``rocksdb_fetch_from_first_segment``].
- Key lookups hide sessions ending before ``clock - retention + 1`` since 3.4
  [``window_fetch_hides_expired``, KAFKA-12960, ``AbstractRocksDBSegmentedBytesStore#getActualFrom``];
  before, everything in a live segment is found.
- 0.11.0-2.1.0 [``session_fetch_end_bounded``, KAFKA-7652]: the key lookup scans the multi-key range
  whose upper bound ``key + latestStart + latestStart`` leaves out sessions ending after
  ``latest_start``.
- The emit-on-window-close range fetch (``RocksDBTimeOrderedSessionSegmentedBytesStore
  #fetchSessions``) applies no retention filter: every session in a live segment whose end is in
  range, in (end, start, key bytes) order (``TimeFirstSessionKeySchema``: end + start + key).

:class:`InMemorySessionStore` (``InMemorySessionStore``, 2.3+)
- Every read and put first forgets sessions ending before ``max(0, clock - retention + 1)``
  (``removeExpiredSegments``; a put does so with the clock before its own end counts). A put whose
  end is at or below ``clock - retention`` is dropped ("Skipping record for expired segment").
- The forgetting stops at the position of any iterator left open: emit-on-window-close leaks one per
  emission in 3.3-3.5.1 and 3.6.0 [``session_emit_final_iterator_leak``]; its position is the last
  end it visited, or 0 when its range was empty (``InMemorySessionStoreIterator#minTime``).
- The range fetch reads (end, key bytes, start descending) order (end-time map, key map, start map
  read backwards).

For emit-on-window-close a time-ordered store also notes the sessions that expiry takes out of the
range fetch's sight (a deleted RocksDB segment; a forgotten in-memory session), so the aggregation
can report those it never emitted (:meth:`_SessionStore.take_expired`).

Storage: a ``dict`` from key identity (:func:`reference.model.keys.key_identity`) to a Python list
of ``(end, start, aggregate)`` tuples in (end, start) order; a sortedcontainers ``SortedDict`` of
time buckets (bucket = segment interval, by end) to the key identities that put into them, so
memory stays bounded by retention; and, for emit-on-window-close only, a ``SortedDict`` time index
``(end, start, key bytes, key type) -> (key id, key)`` for the cross-key range fetch. In the costs
below ``n`` is the number of stored sessions of the key, ``m`` the number returned, ``N`` the
sessions of all keys, ``K`` the number of keys.
"""
from __future__ import annotations

from bisect import bisect_left
from typing import Optional

from sortedcontainers import SortedDict

from kssim.reference.stores.segments import SegmentClock

from kssim.reference.model.keys import serialized_key
from kssim.reference.stores.window_store import LEGACY_NUM_SEGMENTS, NO_TIMESTAMP, segment_interval

_EMPTY = ()


class _SessionStore:
    """Storage shared by both flavours (see the module docstring); subclasses decide visibility."""

    __slots__ = ("retention_ms", "bucket_ms", "observed_ms", "_by_key", "_buckets", "_fetch_floor",
                 "_trimmed_below", "_newest_bucket", "_newest_bucket_keys", "_index", "_expired")

    def __init__(self, retention_ms: int, time_ordered: bool):
        self.retention_ms = retention_ms
        self.bucket_ms = segment_interval(retention_ms)
        self.observed_ms = NO_TIMESTAMP
        self._by_key = {}  # key id -> [(end, start, agg), ...] in (end, start) order
        self._buckets = SortedDict()  # bucket id (end // bucket_ms) -> key ids that put into it
        self._fetch_floor = NO_TIMESTAMP  # key lookups see only sessions ending at or after this
        self._trimmed_below = 0  # buckets below this id are deleted
        self._newest_bucket = None  # the bucket most puts go to, and its key list
        self._newest_bucket_keys = None
        # (end, start, key bytes, key type) -> (key id, key): the cross-key index emit-final reads
        self._index: Optional[SortedDict] = SortedDict() if time_ordered else None
        # sessions the range fetch can no longer see since the last take_expired (time-ordered only)
        self._expired: Optional[list] = [] if time_ordered else None

    # -- reading -------------------------------------------------------------------------------
    def find(self, key_id, earliest_end: int, latest_start: int):
        """The key's visible sessions with ``end >= earliest_end`` and ``start <= latest_start``, in
        store order, as ``(end, start, aggregate)`` tuples.

        Cost: O(log n + s) for the s sessions ending at or after ``earliest_end`` (O(1) + s when
        none ends before it)."""
        entries = self._by_key.get(key_id)
        if not entries:
            return _EMPTY
        floor = self._fetch_floor
        lo = earliest_end if earliest_end > floor else floor
        last = entries[-1]
        if last[0] < lo:
            return _EMPTY  # every session of the key ends too early (the common case of a new session)
        if len(entries) == 1 or entries[-2][0] < lo:  # only the newest one can qualify (in-order streams)
            return [last] if last[1] <= latest_start else _EMPTY
        first = 0 if entries[0][0] >= lo else bisect_left(entries, (lo,))
        return [e for e in entries[first:] if e[1] <= latest_start]

    def sessions(self, key_id):
        """Every stored session of the key, visible or not (for tests and explanations).
        Cost: O(n) (a new list)."""
        return list(self._by_key.get(key_id, ()))

    def keys(self):
        """The key identities with stored sessions. Cost: O(K) (a new list)."""
        return [k for k, v in self._by_key.items() if v]

    def __len__(self) -> int:
        """Number of stored sessions, visible or not. Cost: O(K)."""
        return sum(len(v) for v in self._by_key.values())

    def _range(self, lo: int, hi: int):
        """``(end, start, key, aggregate)`` of every stored session with ``lo <= end <= hi``, in
        (end, start, key bytes) order. Cost: O(log N + m) plus O(log n) per session returned."""
        out = []
        if self._index is None or hi < lo:
            return out
        for end, start, _kb, _kt in self._index.irange((lo,), (hi + 1,), inclusive=(True, False)):
            key_id, key = self._index[(end, start, _kb, _kt)]
            out.append((end, start, key, self._get(key_id, start, end)))
        return out

    def sessions_ending_from(self, lo: int):
        """``(end, start, key, aggregate)`` of every indexed session ending at ``lo`` or later, in
        the emit-final fetch's order (time-ordered stores only; else empty): what ``kssim run
        --pending`` lists. Cost: O(log N + m log n)."""
        if self._index is None or not self._index:
            return []
        return self._range(lo, self._index.keys()[-1][0])

    def take_expired(self):
        """``(end, start, key, aggregate)`` of the sessions that expiry took out of the range fetch's
        sight since the last call (oldest first), and forget them; always empty unless the store is
        time-ordered. Cost: O(1) plus the sessions returned."""
        expired = self._expired
        if not expired:
            return _EMPTY
        self._expired = []
        return expired

    def _collect_expired(self, lo: int, hi: int) -> None:
        """Note every indexed session with ``lo <= end < hi`` as expired (before it is deleted).
        Cost: O(log N + m log n)."""
        if self._expired is not None and hi > lo:
            self._expired.extend(self._range(lo, hi - 1))

    def _get(self, key_id, start: int, end: int):
        entries = self._by_key[key_id]
        return entries[bisect_left(entries, (end, start))][2]

    # -- writing -------------------------------------------------------------------------------
    def _store(self, key_id, key, start: int, end: int, agg) -> None:
        """Insert or overwrite ``[start, end]`` of the key. Cost: O(1) amortised for a session
        ending after the key's others, else O(log n + n) (list insert); O(log N) with the index."""
        entries = self._by_key.get(key_id)
        entry = (end, start, agg)
        if entries is None:
            self._by_key[key_id] = [entry]
        elif not entries or entries[-1][0] < end or (entries[-1][0] == end and entries[-1][1] < start):
            entries.append(entry)
        else:
            i = bisect_left(entries, (end, start))
            if i < len(entries) and entries[i][0] == end and entries[i][1] == start:
                entries[i] = entry
                return  # already indexed and bucketed
            entries.insert(i, entry)
        if self._index is not None:
            self._index[(end, start) + _key_order(key)] = (key_id, key)
        bucket_id = end // self.bucket_ms
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

    def _delete(self, key_id, key, start: int, end: int) -> bool:
        """Remove ``[start, end]`` of the key if stored. Cost: O(1) for the key's last session,
        else O(log n + n); O(log N) with the index."""
        entries = self._by_key.get(key_id)
        if not entries:
            return False
        last = entries[-1]
        if last[0] == end and last[1] == start:
            entries.pop()
        else:
            i = bisect_left(entries, (end, start))
            if i == len(entries) or entries[i][0] != end or entries[i][1] != start:
                return False
            del entries[i]
        if self._index is not None:
            self._index.pop((end, start) + _key_order(key), None)
        return True

    def _delete_buckets_below(self, bucket_id: int, report: bool = True) -> None:
        """Forget every session in buckets with a smaller id (a deleted RocksDB segment, or memory
        the in-memory store no longer shows); ``report``: note them for :meth:`take_expired`.
        Cost: O(log B + d) for d keys in the dropped buckets, each trimmed in O(log n + t) for t
        sessions dropped."""
        if bucket_id <= self._trimmed_below:
            return
        if report:
            self._collect_expired(self._trimmed_below * self.bucket_ms, bucket_id * self.bucket_ms)
        self._trimmed_below = bucket_id
        buckets = self._buckets
        if not buckets or buckets.peekitem(0)[0] >= bucket_id:
            return
        doomed = set()
        for dead in list(buckets.irange(maximum=bucket_id, inclusive=(True, False))):
            doomed.update(buckets.pop(dead))
        if self._newest_bucket is not None and self._newest_bucket < bucket_id:
            self._newest_bucket = self._newest_bucket_keys = None
        cut = bucket_id * self.bucket_ms
        by_key = self._by_key
        for key_id in doomed:
            entries = by_key.get(key_id)
            if entries is None:
                continue
            del entries[:bisect_left(entries, (cut,))]
            if not entries:
                del by_key[key_id]
        if self._index is not None:
            for k in list(self._index.irange(maximum=(cut,), inclusive=(True, False))):
                del self._index[k]


def _key_order(key) -> tuple:
    """How a range fetch orders keys with equal end and start: by serialized bytes (unsigned), the
    JSON type only telling apart keys whose bytes coincide (which a real topic's one serde never
    writes)."""
    return serialized_key(key), type(key).__name__


class RocksDBSessionStore(SegmentClock, _SessionStore):
    """The RocksDB session store (see the module docstring).

    ``live_segments``: 3 before 2.1 (the newest three segments live), None since (retention rule);
    ``task_clock``: 2.1, segments expire by the task's stream time (fed through :meth:`observe`);
    ``strict_fetch``: 3.4+, key lookups hide sessions older than the retention;
    ``end_bounded_fetch``: 0.11.0-2.1.0, key lookups miss sessions ending after ``latest_start``;
    ``fetch_from_first_segment``: 0.10.2's ``minSegmentId`` quirk; ``time_ordered``: the
    emit-on-window-close store (``RocksDBTimeOrderedSessionStore``), which also answers
    :meth:`find_by_end`.
    """

    __slots__ = ("live_segments", "task_clock", "strict_fetch", "end_bounded_fetch", "fetch_from_first_segment",
                 "max_segment", "first_segment", "_clock_at_last_put")

    def __init__(self, retention_ms: int, *, live_segments: Optional[int] = None, task_clock: bool = False,
                 strict_fetch: bool = True, end_bounded_fetch: bool = False, fetch_from_first_segment: bool = False,
                 time_ordered: bool = False):
        super().__init__(retention_ms, time_ordered)
        self.live_segments = live_segments
        self.task_clock = task_clock
        self.strict_fetch = strict_fetch
        self.end_bounded_fetch = end_bounded_fetch
        self.fetch_from_first_segment = fetch_from_first_segment
        self.max_segment = -1
        self.first_segment = None
        self._clock_at_last_put = NO_TIMESTAMP

    def find(self, key_id, earliest_end: int, latest_start: int):
        """See :meth:`_SessionStore.find`; 0.11.0-2.1.0 also leave out sessions ending after
        ``latest_start`` [session_fetch_end_bounded]. Cost: O(log n + s)."""
        found = _SessionStore.find(self, key_id, earliest_end, latest_start)
        if found and self.end_bounded_fetch:
            return [e for e in found if e[0] <= latest_start]
        return found

    def find_by_end(self, lo: int, hi: int):
        """Emit-on-window-close's range fetch: ``(end, start, key, aggregate)`` of every key's
        sessions in a live segment with ``lo <= end <= hi``, in (end, start, key bytes) order; no
        retention filter. Cost: O(log N + m log n)."""
        return self._range(lo, hi)

    def put(self, key_id, key, start: int, end: int, agg) -> bool:
        """Store (or, for a null ``agg``, delete) the session; False when the store dropped the put
        because its segment is dead. Cost: O(1) amortised for the key's newest session, O(log n + n)
        otherwise; expiry O(log n) amortised per session."""
        if end > self.observed_ms and not self.task_clock:
            self.observed_ms = end
            if self.strict_fetch:
                floor = end - self.retention_ms + 1
                if floor > self._fetch_floor:
                    self._fetch_floor = floor
        segment = end // self.bucket_ms
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
        if agg is None:
            self._delete(key_id, key, start, end)
        else:
            self._store(key_id, key, start, end, agg)
        return True

    def remove(self, key_id, key, start: int, end: int) -> None:
        """Delete the session (no-op if its segment is gone). Cost: as :meth:`put`."""
        self._delete(key_id, key, start, end)

    def missed(self, key_id, earliest_end: int, latest_start: int):
        """Stored sessions a lookup reaches but does not return, each with why (for explanations):
        ``"retention"`` (ending before the fetch floor, 3.4+), ``"first_segment"`` (in a segment
        older than the first one created, the 0.10.2 quirk) or ``"end_bound"`` (ending after
        ``latest_start``, 0.11.0-2.1.0). Cost: O(n)."""
        floor = self._fetch_floor
        out = []
        for e in self._by_key.get(key_id, ()):
            if e[0] < earliest_end or e[1] > latest_start:
                continue
            if e[0] < floor:
                out.append((e, "retention" if self.strict_fetch else "first_segment"))
            elif self.end_bounded_fetch and e[0] > latest_start:
                out.append((e, "end_bound"))
        return out

    def explain_floor(self) -> str:
        """The lookup floor with its numbers (for explanations). Cost: O(1)."""
        if self.strict_fetch:
            return (f"end < store clock {self.observed_ms} - retention {self.retention_ms} + 1 = "
                    f"{self.observed_ms - self.retention_ms + 1}")
        return f"end < {self._fetch_floor}, below the first segment the store created (0.10.2 minSegmentId)"

    def explain_expired(self, end: int) -> str:
        """Why a put of a session ending at ``end`` was dropped, with the numbers. Cost: O(1)."""
        seg = self.segment_id(end)
        if self.live_segments is not None:
            return (f"session end {end} falls in segment {seg} ({self.bucket_ms} ms segments), older than the "
                    f"{self.live_segments} newest segments {self.max_segment - self.live_segments + 1}.."
                    f"{self.max_segment} (before rocksdb_segments_by_retention): the put is skipped silently")
        return (f"session end {end} falls in segment {seg} ({self.bucket_ms} ms segments), below the oldest live "
                f"segment {self.min_live_segment()} = segment of {self.explain_clock()} - retention "
                f"{self.retention_ms}: 'Skipping record for expired segment'")

    def explain_clock(self) -> str:
        """The clock segments expire by, with its rule (for explanations). Cost: O(1)."""
        if self.task_clock:
            return f"the task's stream time {self.observed_ms} (2.1, before window_store_own_clock)"
        return f"store clock {self.observed_ms} [window_store_own_clock]"


class InMemorySessionStore(_SessionStore):
    """``InMemorySessionStore`` (see the module docstring). ``leaky_emit``: emit-on-window-close's
    range iterators stay open and pin the expiry [session_emit_final_iterator_leak]."""

    __slots__ = ("leaky_emit", "pin")

    def __init__(self, retention_ms: int, *, time_ordered: bool = False, leaky_emit: bool = False):
        super().__init__(retention_ms, time_ordered)
        self.leaky_emit = leaky_emit
        self.pin: Optional[int] = None  # the smallest position of a leaked iterator

    def observe(self, ts: int) -> None:
        """Ignored: the in-memory store always keeps its own clock. Cost: O(1)."""
        return None

    def _remove_expired(self) -> None:
        """``removeExpiredSegments``: forget sessions ending before ``max(0, clock - retention + 1)``,
        or before a leaked iterator's position if lower. What is forgotten stays forgotten, and no
        later put can store below it, so the floor only rises. Cost: O(1), plus the buckets freed."""
        floor = self.observed_ms - self.retention_ms + 1
        if floor < 0:
            floor = 0
        if self.pin is not None and self.pin < floor:
            floor = self.pin
        if floor > self._fetch_floor:
            self._collect_expired(self._fetch_floor, floor)
            self._fetch_floor = floor
            self._delete_buckets_below(floor // self.bucket_ms, report=False)

    def find(self, key_id, earliest_end: int, latest_start: int):
        """See :meth:`_SessionStore.find`, after forgetting expired sessions. Cost: O(log n + s)."""
        if self.observed_ms - self.retention_ms + 1 > self._fetch_floor:
            self._remove_expired()
        return _SessionStore.find(self, key_id, earliest_end, latest_start)

    def find_by_end(self, lo: int, hi: int):
        """Emit-on-window-close's range fetch, after forgetting expired sessions: ``(end, start,
        key, aggregate)`` in (end, key bytes, start descending) order. A leaky release keeps the
        iterator open: its position (the last end it visited, 0 if none) pins the expiry.
        Cost: O(log N + m log m)."""
        self._remove_expired()
        lo = max(lo, self._fetch_floor)
        found = self._range(lo, hi)
        found.sort(key=lambda s: (s[0], _key_order(s[2]), -s[1]))
        if self.leaky_emit:
            position = found[-1][0] if found else 0
            if self.pin is None or position < self.pin:
                self.pin = position
        return found

    def put(self, key_id, key, start: int, end: int, agg) -> bool:
        """Store (or, for a null ``agg``, delete) the session; False when it ends at or below
        ``clock - retention`` (counting its own end). Cost: O(1) amortised for the key's newest
        session, O(log n + n) otherwise."""
        if self.observed_ms - self.retention_ms + 1 > self._fetch_floor:
            self._remove_expired()
        if end > self.observed_ms:
            self.observed_ms = end
        if end <= self.observed_ms - self.retention_ms:
            return False
        if agg is None:
            self._delete(key_id, key, start, end)
        else:
            self._store(key_id, key, start, end, agg)
        return True

    def remove(self, key_id, key, start: int, end: int) -> None:
        """Delete the session if stored. Cost: O(1) for the key's newest session, else O(log n + n)."""
        self._delete(key_id, key, start, end)

    def missed(self, key_id, earliest_end: int, latest_start: int):
        """Always empty: what the in-memory store hides it has forgotten. Cost: O(1)."""
        return []

    def explain_floor(self) -> str:
        return f"end < {self._fetch_floor} (store clock {self.observed_ms} - retention {self.retention_ms} + 1)"

    def explain_expired(self, end: int) -> str:
        """Why a put of a session ending at ``end`` was dropped, with the numbers. Cost: O(1)."""
        return (f"session end {end} <= store clock {self.observed_ms} - retention {self.retention_ms} = "
                f"{self.observed_ms - self.retention_ms}: 'Skipping record for expired segment'")


def make_session_store(profile, store: str, retention_ms: int, emit_final: bool):
    """The session store a release builds for ``config.store`` ("rocksdb" or "in_memory"):
    ``RocksDbSessionBytesStoreSupplier`` (``RocksDbTimeOrderedSessionBytesStoreSupplier`` with an
    index under emit-on-window-close) or ``InMemorySessionBytesStoreSupplier``."""
    if store == "in_memory":
        return InMemorySessionStore(retention_ms, time_ordered=emit_final,
                                    leaky_emit=emit_final and profile.session_emit_final_iterator_leak)
    return RocksDBSessionStore(
        retention_ms,
        live_segments=None if profile.rocksdb_segments_by_retention else LEGACY_NUM_SEGMENTS,
        task_clock=profile.rocksdb_segments_by_retention and not profile.window_store_own_clock,
        strict_fetch=profile.window_fetch_hides_expired,
        end_bounded_fetch=profile.session_fetch_end_bounded,
        fetch_from_first_segment=profile.rocksdb_fetch_from_first_segment,
        time_ordered=emit_final,
    )
