"""The window store of a time- or sliding-windowed aggregation: one aggregate per (key, window start).

Kafka keys these stores by (key, window start) and never retains duplicates, so a put overwrites
and a put of a null aggregate deletes the window. Every put, a delete included, moves the store's
*observed time* to the largest window start ever put; what the store still shows is measured from
it. Three flavours (:data:`ROCKSDB`, :data:`TIME_ORDERED`, :data:`IN_MEMORY`):

- :data:`ROCKSDB`: ``RocksDBTimestampedWindowStore`` over ``KeyValueSegments``, the DSL's default for
  emit-on-update. Segments of ``max(retention / 2, 60 000)`` ms (before 2.1 ``numSegments`` 3 gives
  ``retention / (3 - 1)``, the same). Live segments: before 2.1 the three newest
  [``rocksdb_segments_by_retention``]; since 2.1 those with id ``>= segmentId(observed - retention)``
  (Java division, truncating). A put into a dead segment is dropped ("Skipping record for expired
  segment."). Reads: before 3.4 whatever a live segment holds; since 3.4 [``window_fetch_hides_expired``,
  KAFKA-12960] only starts ``>= observed - retention + 1``. 0.10.2 only
  [``rocksdb_fetch_from_first_segment``]: reads start at the first segment ever created, so windows
  of an older segment created later are never found.
- :data:`TIME_ORDERED`: ``RocksDBTimeOrderedWindowStore`` (the emit-on-window-close store of the
  RocksDB DSL suppliers, 3.3+): the same segments, but since 3.4 its reads hide starts
  ``< observed - retention`` (``getActualFrom`` of the time-first key schema has no ``+ 1``). The
  emit-final range fetch goes through this filter: a window whose start falls below it before the
  processor's close check reaches it is never emitted.
- :data:`IN_MEMORY`: ``InMemoryWindowStore`` (2.3+): reads hide starts ``<= observed - retention``,
  and a put of such a start is dropped (after the observed time moved).

In 2.1 a RocksDB window store's segments followed the task's stream time instead of the observed
time [``window_store_own_clock``]; for a windowed aggregation the two never disagree about a window
the processor touches (the processor only touches windows ending after stream time - grace, and
retention >= size + grace), so the store keeps its own clock in every release.

Hidden windows are forgotten (their memory freed) as soon as the observed time hides them: no read
can see them again. A store built with ``track_unemitted`` (emit-final) first keeps the hidden
windows the processor has not emitted yet, so the next range fetch can report them as lost
(:class:`LostWindow`).

Layout: a sortedcontainers ``SortedDict`` from window start to a ``dict`` (key identity -> entry),
and, with ``key_index`` (sliding windows, which range-scan one key), a sorted Python list of window
starts per key. An entry is the tuple ``(aggregate, max record ts, key, input_index)``: the key as
the records spell it (for output keys), and the input that last wrote the window (for explanations).
Keys are key identities (:func:`reference.model.keys.key_identity`). In the costs below, ``W`` is the
number of window starts held, ``n`` the number of windows of one key, ``m`` the number returned.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from typing import List, NamedTuple, Optional

from sortedcontainers import SortedDict

from kssim.reference.model.keys import serialized_key

ROCKSDB = "rocksdb"
TIME_ORDERED = "time_ordered"
IN_MEMORY = "in_memory"

NO_TIMESTAMP = -1  # ConsumerRecord.NO_TIMESTAMP: the observed time before the first put
MIN_SEGMENT_INTERVAL_MS = 60_000  # the window store suppliers' minimum segment interval
LEGACY_NUM_SEGMENTS = 3  # Windows#segments before 2.1: the three newest segments live

_STORE_NAMES = {ROCKSDB: "RocksDB window store", TIME_ORDERED: "RocksDB time-ordered (emit-final) window store",
                IN_MEMORY: "in-memory window store"}


class LostWindow(NamedTuple):
    """A window the store hid before the processor emitted it: its start, key identity and entry,
    and what hid it: the store's observed time then, the lowest start still shown, and the input
    whose put moved the observed time there."""

    start: int
    key_id: object
    entry: tuple
    observed_ms: int
    visible_from: int
    hidden_by_input: int


class TimeWindowStore:
    """One task's window store of a windowed aggregation (see the module docstring)."""

    __slots__ = ("flavour", "retention_ms", "segment_ms", "strict_reads", "newest_segments", "first_segment_reads",
                 "first_segment", "observed_ms", "observed_by_input", "visible_from", "put_floor", "max_segment",
                 "_by_start", "_key_starts", "track_unemitted", "emitted_upto", "_unemitted")

    def __init__(self, flavour: str, retention_ms: int, *, strict_reads: bool = True,
                 newest_segments: Optional[int] = None, key_index: bool = False, track_unemitted: bool = False,
                 first_segment_reads: bool = False):
        """``strict_reads``: reads filter by retention (3.4+; the in-memory store always does);
        ``newest_segments``: before 2.1, how many of the newest segments live (else None);
        ``first_segment_reads``: 0.10.2, reads skip segments older than the first one created;
        ``key_index``: keep a per-key index for :meth:`fetch_key`; ``track_unemitted``: keep hidden,
        not yet emitted windows for :meth:`fetch_all` to report."""
        if flavour not in _STORE_NAMES:
            raise ValueError(f"unknown window store flavour {flavour!r}")
        self.flavour = flavour
        self.retention_ms = retention_ms
        self.segment_ms = max(retention_ms // 2, MIN_SEGMENT_INTERVAL_MS)
        self.strict_reads = strict_reads or flavour == IN_MEMORY
        self.newest_segments = newest_segments if flavour != IN_MEMORY else None
        self.first_segment_reads = first_segment_reads and flavour != IN_MEMORY
        self.first_segment = None
        self.observed_ms = NO_TIMESTAMP
        self.observed_by_input = -1
        self.visible_from = 0  # the lowest window start reads still show
        self.put_floor = 0  # the lowest window start a put still stores
        self.max_segment = -1
        self._by_start = SortedDict()
        self._key_starts = {} if key_index else None
        self.track_unemitted = track_unemitted
        self.emitted_upto = -1  # emit-final: every window start <= this was fetched by a close check
        self._unemitted: List[LostWindow] = []

    @property
    def name(self) -> str:
        """What Kafka calls this store, for explanations. Cost: O(1)."""
        return _STORE_NAMES[self.flavour]

    # -- reading -------------------------------------------------------------------------------
    def get(self, key_id, start: int):
        """The entry of window ``start`` of ``key_id`` if the store shows it, else None.

        Cost: O(1) expected (two dict lookups)."""
        if start < self.visible_from:
            return None
        windows = self._by_start.get(start)
        return None if windows is None else windows.get(key_id)

    def fetch_key(self, key_id, time_from: int, time_to: int, backward: bool = False):
        """``[(start, entry)]`` of ``key_id``'s shown windows with ``time_from <= start <= time_to``,
        ascending start (descending with ``backward``). Needs ``key_index``.

        Cost: O(log n + m)."""
        starts = self._key_starts.get(key_id)
        if not starts:
            return []
        low = time_from if time_from > self.visible_from else self.visible_from
        found = starts[bisect_left(starts, low):bisect_right(starts, time_to)]
        if backward:
            found.reverse()
        by_start = self._by_start
        return [(s, by_start[s][key_id]) for s in found]

    def fetch_all(self, time_from: int, time_to: int):
        """The emit-final range fetch over every key: ``(shown, lost)``. ``shown``: ``[(start,
        entry)]`` with ``time_from <= start <= time_to`` that the store shows, ordered by start and
        then serialized key bytes (the time-first RocksDB key, the in-memory store's ``Bytes``
        order); ``lost``: with ``track_unemitted``, the :class:`LostWindow` s of that range the store
        hid before any fetch reached them. Marks the range as fetched.

        Cost: O(log W + m log m)."""
        lost = []
        if self._unemitted:
            keep = []
            for w in self._unemitted:
                if w.start > time_to:
                    keep.append(w)
                elif w.start >= time_from:
                    lost.append(w)
            self._unemitted = keep
        shown = []
        low = time_from if time_from > self.visible_from else self.visible_from
        if low <= time_to:
            for start in self._by_start.irange(low, time_to):
                windows = self._by_start[start]
                entries = windows.values() if len(windows) == 1 else \
                    sorted(windows.values(), key=lambda e: serialized_key(e[2]))
                shown.extend((start, e) for e in entries)
        if self.track_unemitted and time_to > self.emitted_upto:
            self.emitted_upto = time_to
        return shown, lost

    def unfetched(self):
        """``[(start, entry)]`` of the shown windows no emit-final close check has fetched yet
        (start above :attr:`emitted_upto`), by start then key bytes: what ``kssim run --pending``
        lists. Cost: O(W log W) (end of a run only)."""
        low = max(self.visible_from, self.emitted_upto + 1)
        held = []
        for start in self._by_start.irange(low, None):
            entries = sorted(self._by_start[start].values(), key=lambda e: serialized_key(e[2]))
            held.extend((start, e) for e in entries)
        return held

    def hidden_unfetched(self) -> List[LostWindow]:
        """The windows hidden before any close check fetched them (kept with ``track_unemitted``):
        their final result will never be emitted. Cost: O(1) (the list itself)."""
        return list(self._unemitted)

    def __len__(self) -> int:
        """Number of windows held (shown or not yet forgotten). Cost: O(W)."""
        return sum(len(w) for w in self._by_start.values())

    # -- writing -------------------------------------------------------------------------------
    def put(self, key_id, start: int, entry, input_index: int = -1) -> bool:
        """Write window ``start`` of ``key_id`` (``entry`` None deletes it); False when the store
        drops the put as expired (a dead segment; in memory: ``start <= observed - retention``).

        Cost: O(1) expected for an existing window start; O(log W) for a new one (plus O(log n +
        n) with ``key_index``); forgetting hidden windows O(log W) per start forgotten."""
        if start > self.observed_ms:
            self.observed_ms = start
            self.observed_by_input = input_index
            self._advance()
        if self.newest_segments is not None:
            segment = start // self.segment_ms
            if self.first_segment is None and self.first_segment_reads:
                self.first_segment = segment
                self._advance()
            if segment > self.max_segment:
                self.max_segment = segment
                self._advance()
        if start < self.put_floor:
            return False
        if start < self.visible_from:
            return True  # stored in a live segment, but no read will ever show it again
        windows = self._by_start.get(start)
        if entry is None:
            if windows is not None and windows.pop(key_id, None) is not None:
                self._unindex(key_id, start)
                if not windows:
                    del self._by_start[start]
            return True
        if windows is None:
            self._by_start[start] = {key_id: entry}
            self._index(key_id, start)
        else:
            if key_id not in windows:
                self._index(key_id, start)
            windows[key_id] = entry
        return True

    def _advance(self) -> None:
        """The observed time (or, before 2.1, the newest segment) moved: recompute what puts and
        reads still reach, and forget what no read can show any more."""
        low = self.observed_ms - self.retention_ms
        if self.flavour == IN_MEMORY:
            self.put_floor = self.visible_from = low + 1 if low + 1 > 0 else 0
        else:
            if self.newest_segments is not None:
                segment_floor = max(self.max_segment - self.newest_segments + 1, 0) * self.segment_ms
            else:
                segment_floor = (low // self.segment_ms) * self.segment_ms if low > 0 else 0
            self.put_floor = segment_floor
            visible = segment_floor
            if self.strict_reads:
                strict = low if self.flavour == TIME_ORDERED else low + 1
                if strict > visible:
                    visible = strict
            if self.first_segment is not None and self.first_segment * self.segment_ms > visible:
                visible = self.first_segment * self.segment_ms  # 0.10.2: Segments#minSegmentId
            self.visible_from = visible
        self._forget_below(self.visible_from)

    def _forget_below(self, floor: int) -> None:
        by_start = self._by_start
        while by_start:
            start, windows = by_start.peekitem(0)
            if start >= floor:
                return
            del by_start[start]
            for key_id, entry in windows.items():
                self._unindex(key_id, start)
                if self.track_unemitted and start > self.emitted_upto:
                    self._unemitted.append(LostWindow(start, key_id, entry, self.observed_ms, self.visible_from,
                                                      self.observed_by_input))

    def _index(self, key_id, start: int) -> None:
        if self._key_starts is None:
            return
        starts = self._key_starts.get(key_id)
        if starts is None:
            self._key_starts[key_id] = [start]
        elif starts[-1] < start:
            starts.append(start)
        else:
            insort(starts, start)

    def _unindex(self, key_id, start: int) -> None:
        if self._key_starts is None:
            return
        starts = self._key_starts[key_id]
        i = bisect_left(starts, start)
        del starts[i]
        if not starts:
            del self._key_starts[key_id]

    # -- explanations --------------------------------------------------------------------------
    def explain_hidden(self, lost: LostWindow) -> str:
        """Why ``lost`` was hidden, with the numbers. Cost: O(1)."""
        by = f" (moved there by input {lost.hidden_by_input})" if lost.hidden_by_input >= 0 else ""
        if self.flavour == IN_MEMORY:
            rule = f"start {lost.start} <= observed {lost.observed_ms} - retention {self.retention_ms}"
        elif self.strict_reads:
            plus = "" if self.flavour == TIME_ORDERED else " + 1"
            rule = (f"start {lost.start} < observed {lost.observed_ms} - retention {self.retention_ms}{plus} = "
                    f"{lost.visible_from} [window_fetch_hides_expired, KAFKA-12960]")
        else:
            rule = (f"start {lost.start} lies in a deleted segment ({self.segment_ms} ms segments; the oldest live "
                    f"one starts at {lost.visible_from})")
        return f"the {self.name} had hidden it: {rule}; observed time = newest window start written{by}"

    def explain_put_dropped(self, start: int) -> str:
        """Why a put of window ``start`` was dropped, with the numbers. Cost: O(1)."""
        if self.flavour == IN_MEMORY:
            return (f"expired put: window start {start} <= observed {self.observed_ms} - retention "
                    f"{self.retention_ms} = {self.observed_ms - self.retention_ms}")
        if self.newest_segments is not None:
            return (f"expired put: window start {start} falls in segment {start // self.segment_ms} ({self.segment_ms} "
                    f"ms segments), older than the {self.newest_segments} newest segments "
                    f"{self.max_segment - self.newest_segments + 1}..{self.max_segment}")
        return (f"expired put: window start {start} falls in segment {start // self.segment_ms} ({self.segment_ms} ms "
                f"segments), below the oldest live segment = segment of observed {self.observed_ms} - retention "
                f"{self.retention_ms}")
