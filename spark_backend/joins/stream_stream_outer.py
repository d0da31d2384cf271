"""The outer store and emission scan of the 3.1+ spurious-result fix (``time_difference_windows``):
the one sequential part of the Spark stream-stream join.

Source: ``KStreamKStreamJoin#process`` / ``#emitNonJoinedOuterRecords`` at 3.1.0, 3.1.1-3.7 and
3.8+, ``KStreamImplJoin.TimeTracker``, ``ListValueStore``, ``TimestampedKeyAndJoinSide``
(digest: kafka-semantics-joins.md sections 1.3, 2.5, 2.6).

Why sequential: whether a record's scan runs depends on the shared tracker's ``minTime`` and
emit throttle, which the previous scans set from the store they found (3.8+ even overwrites
``minTime`` with every entry the walk visits), and what a scan finds depends on what earlier
scans emitted. So each tracker is replayed (per task since KAFKA-14862 / 3.4.1,
``stream_time_tracker_per_task``; per instance before, interleaving its tasks in processing
order) over *only the rows that matter*, selected set-based beforehand, one row per record (or
one per match of a lookup, adjacent):

- ``adv``: the record moves the shared stream time (every record since KIP-962,
  ``stream_time_advanced_by_dropped``; non-dropped ones before); only records at or above their
  task's running max are sent as clock rows;
- ``scans``: the record reached the lookup; with ``ts == streamTime`` it runs the scan first;
- ``found`` is false for an outer processor's lookup: it is emitted at once when
  ``max(0, ts + joinAfter) < streamTime``, else appended to the outer store (and ``minTime``);
- ``del_ts``: a match of an outer side's record at that ts, which deletes the whole outer entry
  ``(ts, other side, key)`` (``putIfAbsent(key, null)`` on the ``ListValueStore``).

A scan of an empty store with ``minTime`` unset changes nothing (but the throttle) and is skipped.
The store is per task, keyed ``(ts, side byte (left 1, right 0), serialized key)`` with a list of
values per key, iterated in unsigned byte order: ``reference.model.keys.serialized_key``, the key
serde both engines share, of the key parsed from its ``key_text`` (then the key's JSON type and
text: keys with equal bytes but different types stay apart, ordered as in the reference). The wall clock stays at 0
(TopologyTestDriver), so with an emit interval > 0 only the first scan of a tracker passes the
throttle, which 3.5+ re-arms from the wall clock (KAFKA-13817, ``emit_throttle_from_now``).

Scan of the release (``walk``):

- 3.1.0: early exit iff ``minTime >= ST - joinAfter - grace``; 3.1.1-3.7 (KAFKA-13721,
  ``outer_scan_early_exit_before_bound``) use the processor's before bound there. The walk emits
  entries until the first with ``ts + joinAfter + grace >= ST`` (the processor's bound) and
  leaves ``minTime`` at the ts of the last entry it visited.
- 3.8+ (KAFKA-15417, ``outer_scan_per_side_lookback``): early exit iff ``minTime + joinAfter +
  grace >= ST`` in Java long arithmetic (``Long.MAX_VALUE`` plus a positive bound wraps, so an
  empty store is scanned); each entry is judged by its own side's look-back (left: after, right:
  before) and the walk continues past open entries until both sides have an open one. Every
  closed entry precedes the first open one of its side, so the walk emits exactly the closed
  entries; ``minTime`` ends at the ts of the entry after which both sides were open (or the last
  entry).
- Both: the close sums are Java longs. An entry whose ``ts + joinAfter (or look-back) + grace``
  passes ``Long.MAX_VALUE`` wraps to a negative number and counts as closed, so the closed entries
  are no longer a prefix of each side: where a store holds such an entry, the walk runs one entry
  at a time (``OuterStore.walk_in_order``), as Kafka's loop does.
"""
from __future__ import annotations

import json

from kssim.reference.model.keys import serialized_key
from sortedcontainers import SortedList

LONG_MAX = (1 << 63) - 1
NO_TIMESTAMP = -1
LEFT, RIGHT = 0, 1
#: ``TimestampedKeyAndJoinSide``'s side byte: right entries sort before left ones
_SIDE_BYTE = {LEFT: 1, RIGHT: 0}

PASS_COLUMNS = ("sid", "scope", "task", "idx", "g1", "g2", "g3", "g4", "side", "key", "value", "ts",
                "adv", "scans", "proc_outer", "found", "del_ts", "ss_before", "ss_after", "ss_grace",
                "outer_scan_early_exit_before_bound", "outer_scan_per_side_lookback", "ss_emit_interval",
                "emit_throttle_from_now")


def java_long(value: int) -> int:
    """``value`` wrapped to a signed 64-bit long, as Java's ``long`` addition does."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >> 63 else value


class _Tracker:
    """``KStreamImplJoin.TimeTracker``: the shared stream time, minTime and emit throttle."""

    __slots__ = ("stream_time", "min_time", "next_emit")

    def __init__(self):
        self.stream_time = NO_TIMESTAMP
        self.min_time = LONG_MAX
        self.next_emit = 0


class _Settings:
    """One scope's window, grace and emit interval, and the release rules its scans read."""

    __slots__ = ("before", "after", "grace", "outer_scan_early_exit_before_bound", "outer_scan_per_side_lookback",
                 "interval", "emit_throttle_from_now")

    def __init__(self, before, after, grace, outer_scan_early_exit_before_bound, outer_scan_per_side_lookback,
                 interval, emit_throttle_from_now):
        self.before, self.after, self.grace = before, after, grace
        self.outer_scan_early_exit_before_bound = outer_scan_early_exit_before_bound
        self.outer_scan_per_side_lookback = outer_scan_per_side_lookback
        self.interval, self.emit_throttle_from_now = interval, emit_throttle_from_now

    def join_after(self, side):
        # KStreamKStreamJoinLeftSide/RightSide: the right processor's bounds are swapped
        return self.after if side == LEFT else self.before

    def join_before(self, side):
        return self.before if side == LEFT else self.after


class OuterStore:
    """One task's outer store: entry key -> values in insertion order, and each side's entry
    keys in store order (the global order is the merge of the two sides)."""

    __slots__ = ("entries", "sides")

    def __init__(self):
        self.entries = {}
        self.sides = (SortedList(), SortedList())

    def put(self, entry, side, value):
        values = self.entries.get(entry)
        if values is None:
            self.entries[entry] = [value]
            self.sides[side].add(entry)
        else:
            values.append(value)

    def delete(self, entry, side):
        if self.entries.pop(entry, None) is not None:
            self.sides[side].remove(entry)

    def _take(self, left_count, right_count):
        """Remove and return the first entries of each side, merged in store order."""
        lefts, rights = self.sides
        closed = sorted(list(lefts.islice(0, left_count)) + list(rights.islice(0, right_count)))
        del lefts[:left_count]
        del rights[:right_count]
        entries = self.entries
        return [(entry, entries.pop(entry)) for entry in closed]

    def _wraps(self, side, reach) -> bool:
        """Whether an entry of ``side`` has a close sum ``ts + reach`` past ``Long.MAX_VALUE``
        (its newest entry does, then)."""
        keys = self.sides[side]
        return bool(keys) and keys[-1][0] > LONG_MAX - reach

    def walk_in_order(self, open_at, per_side):
        """The walk one entry at a time in store order, as Kafka's loop runs it: ``open_at(entry)``
        says whether an entry is still open; 3.1-3.7 stop at the first open entry, 3.8+
        (``per_side``) skip open entries until both sides have one (see the module docstring).
        Used where a close sum wraps, which breaks the bisections' assumption that the closed
        entries of a side come first. Returns (closed entries, minTime)."""
        lefts, rights = self.sides
        left_byte = _SIDE_BYTE[LEFT]
        done, min_time = [], LONG_MAX
        left_open = right_open = False
        for entry in sorted(list(lefts) + list(rights)):
            min_time = entry[0]
            if per_side and left_open and right_open:
                break
            if open_at(entry):
                if not per_side:
                    break
                left_open, right_open = left_open or entry[1] == left_byte, right_open or entry[1] != left_byte
                # ListValueStore yields each value on its own: the entry's second value is visited next
                if left_open and right_open and len(self.entries[entry]) > 1:
                    break
                continue
            done.append(entry)
        entries = self.entries
        for entry in done:
            self.sides[LEFT if entry[1] == left_byte else RIGHT].remove(entry)
        return [(entry, entries.pop(entry)) for entry in done], min_time

    def walk_to_first_open(self, threshold):
        """3.1-3.7: emit entries while ``ts < threshold``; returns (closed entries, minTime)."""
        lefts, rights = self.sides
        bound = (threshold,)
        n_left, n_right = lefts.bisect_left(bound), rights.bisect_left(bound)
        if n_left < len(lefts) or n_right < len(rights):
            # the walk stops at the first open entry
            first_open = min(lefts[n_left] if n_left < len(lefts) else rights[n_right],
                             rights[n_right] if n_right < len(rights) else lefts[n_left])
            min_time = first_open[0]
        elif n_left or n_right:
            min_time = max(lefts[-1] if n_left else rights[-1], rights[-1] if n_right else lefts[-1])[0]
        else:
            min_time = LONG_MAX
        return self._take(n_left, n_right), min_time

    def walk_per_side(self, left_threshold, right_threshold):
        """3.8+: emit every closed entry; minTime where the walk stops (see module docstring)."""
        lefts, rights = self.sides
        if not self.entries:
            return [], LONG_MAX
        n_left, n_right = lefts.bisect_left((left_threshold,)), rights.bisect_left((right_threshold,))
        if n_left < len(lefts) and n_right < len(rights):
            both_open_at = max(lefts[n_left], rights[n_right])
            min_time = both_open_at[0]
            if len(self.entries[both_open_at]) == 1:
                following = [keys[i] for keys in self.sides for i in (keys.bisect_right(both_open_at),) if i < len(keys)]
                if following:
                    min_time = min(following)[0]
        else:
            min_time = max(keys[-1] for keys in self.sides if keys)[0]
        return self._take(n_left, n_right), min_time


def _scan(tracker, store, proc_side, s: _Settings):
    """``emitNonJoinedOuterRecords``: the entries this scan emits, in walk order."""
    st = tracker.stream_time
    join_after = s.join_after(proc_side)
    if s.outer_scan_per_side_lookback:  # [outer_scan_per_side_lookback] KAFKA-15417 (3.8)
        if java_long(tracker.min_time + join_after + s.grace) >= st:
            return ()
    else:
        # [outer_scan_early_exit_before_bound] KAFKA-13721 (3.1.1-3.7)
        bound = s.join_before(proc_side) if s.outer_scan_early_exit_before_bound else join_after
        if tracker.min_time >= st - bound - s.grace:
            return ()
    # the throttle, against a wall clock frozen at 0
    now = 0
    if now < tracker.next_emit:
        return ()
    if s.emit_throttle_from_now:  # [emit_throttle_from_now] KAFKA-13817 (3.5)
        tracker.next_emit = now + s.interval
    else:
        if tracker.next_emit == 0:
            tracker.next_emit = now
        tracker.next_emit += s.interval
    if s.outer_scan_per_side_lookback:
        # an entry is open iff ts + look-back + grace >= stream time, in Java longs: a sum that
        # wraps is negative, closed (its side's look-back: left after, right before)
        reach = {LEFT: s.after + s.grace, RIGHT: s.before + s.grace}
        if store._wraps(LEFT, reach[LEFT]) or store._wraps(RIGHT, reach[RIGHT]):
            left_byte = _SIDE_BYTE[LEFT]
            found, tracker.min_time = store.walk_in_order(
                lambda e: java_long(e[0] + reach[LEFT if e[1] == left_byte else RIGHT]) >= st, per_side=True)
        else:
            found, tracker.min_time = store.walk_per_side(st - reach[LEFT], st - reach[RIGHT])
    else:
        reach = join_after + s.grace
        if store._wraps(LEFT, reach) or store._wraps(RIGHT, reach):
            found, tracker.min_time = store.walk_in_order(lambda e: java_long(e[0] + reach) >= st, per_side=False)
        else:
            found, tracker.min_time = store.walk_to_first_open(st - reach)
    return found


class _KeyBytes(dict):
    """Per key text (``key_text``): the key's serialized bytes (``reference.model.keys``), then its
    JSON type, which orders keys of different types with equal bytes (``"\\x01"`` and ``true``, never
    in one Kafka topic) as the reference's store does."""

    def __missing__(self, text):
        key = json.loads(text)
        value = self[text] = (serialized_key(key), type(key).__name__)
        return value


class ScopeReplay:
    """Replays one tracker scope, one record at a time in processing order.
    ``emit(row, key, ts, n_l, n_r, f1, f3)`` is called for every output, in output order."""

    __slots__ = ("tracker", "stores", "settings", "key_bytes", "emit")

    def __init__(self, settings, key_bytes, emit):
        self.tracker = _Tracker()
        self.stores = {}
        self.settings = settings
        self.key_bytes = key_bytes
        self.emit = emit

    def process(self, row, task, side, key, value, ts, adv, scans, unmatched, deleted):
        tracker = self.tracker
        if adv and ts > tracker.stream_time:
            tracker.stream_time = ts
        if not scans:
            return
        store = self.stores.get(task)
        if store is None:
            store = self.stores[task] = OuterStore()
        emit = self.emit
        # a scan of an empty store with minTime unset changes nothing but the throttle: skipped
        if ts == tracker.stream_time and (store.entries or tracker.min_time != LONG_MAX or self.settings.interval):
            rank = 0
            for entry, values in _scan(tracker, store, side, self.settings):
                is_left = entry[1] == _SIDE_BYTE[LEFT]
                for stored in values:
                    emit(row, entry[3], entry[0], stored if is_left else None, None if is_left else stored, 0, rank)
                    rank += 1
        if deleted:
            other = 1 - side
            kb = self.key_bytes[key]
            for other_ts in deleted:
                store.delete((other_ts, _SIDE_BYTE[other], kb, key), other)
        if unmatched:
            # timeTo = Math.max(0L, ts + joinAfter) in Java longs: a sum that wraps makes it 0
            if max(0, java_long(ts + self.settings.join_after(side))) < tracker.stream_time:
                emit(row, key, ts, value if side == LEFT else None, None if side == LEFT else value, 1, 0)
            else:
                if ts < tracker.min_time:
                    tracker.min_time = ts
                store.put((ts, _SIDE_BYTE[side], self.key_bytes[key], key), side, value)


def replay_batches(batches):
    """``mapInArrow`` body: rows sorted by (sid, scope, processing order), one or more adjacent
    rows per record (one per match) -> output events."""
    import pyarrow as pa

    from kssim.spark_backend.runtime.outputs import EVENT_COLUMNS, EVENT_DDL, OLD_NONE, OUTPUT

    schema = _arrow_schema(EVENT_DDL)
    out = {name: [] for name in EVENT_COLUMNS}
    key_bytes = _KeyBytes()

    def emit(row, key, ts, left, right, f1, f3):
        sid, task, idx, g1, g2, g3, g4 = row
        for name, value in (("etype", OUTPUT), ("sid", sid), ("task", task), ("idx", idx), ("g1", g1), ("g2", g2),
                            ("g3", g3), ("g4", g4), ("f1", f1), ("f2", b""), ("f3", f3), ("key", key), ("ts", ts),
                            ("n_null", False), ("n_l", left), ("n_r", right), ("o_kind", OLD_NONE), ("o_l", None),
                            ("o_r", None), ("text", None)):
            out[name].append(value)

    scope, replay = None, None
    # the record whose rows are being read: its fields, then found (any match) and the deleted ts
    pending = None

    def flush(p):
        row, task, side, key, value, ts, adv, scans, proc_outer, found, deleted = p
        replay.process(row, task, side, key, value, ts, adv, scans, proc_outer and not found, deleted)

    for batch in batches:
        c = {name: batch.column(name).to_pylist() for name in PASS_COLUMNS}
        for i in range(batch.num_rows):
            this_scope = (c["sid"][i], c["scope"][i])
            idx = c["idx"][i]
            if pending is not None and pending[0][2] == idx and this_scope == scope:
                # another match of the same lookup
                if c["found"][i]:
                    pending[9] = True
                if c["del_ts"][i] is not None:
                    pending[10].append(c["del_ts"][i])
                continue
            if pending is not None:
                flush(pending)
            if this_scope != scope:
                settings = _Settings(c["ss_before"][i], c["ss_after"][i], c["ss_grace"][i],
                                     c["outer_scan_early_exit_before_bound"][i], c["outer_scan_per_side_lookback"][i],
                                     c["ss_emit_interval"][i], c["emit_throttle_from_now"][i])
                scope, replay = this_scope, ScopeReplay(settings, key_bytes, emit)
            task = c["task"][i]
            del_ts = c["del_ts"][i]
            pending = [(this_scope[0], task, idx, c["g1"][i], c["g2"][i], c["g3"][i], c["g4"][i]), task, c["side"][i],
                       c["key"][i], c["value"][i], c["ts"][i], c["adv"][i], c["scans"][i], c["proc_outer"][i],
                       bool(c["found"][i]), [] if del_ts is None else [del_ts]]
        if len(out["etype"]) >= 4096:
            yield pa.RecordBatch.from_pydict(out, schema=schema)
            out = {name: [] for name in EVENT_COLUMNS}
    if pending is not None:
        flush(pending)
    if out["etype"]:
        yield pa.RecordBatch.from_pydict(out, schema=schema)


_ARROW_TYPES = {"INT": "int32", "BIGINT": "int64", "STRING": "string", "BOOLEAN": "bool_", "BINARY": "binary"}


def _arrow_schema(ddl):
    import pyarrow as pa

    fields = []
    for part in ddl.split(", "):
        name, kind = part.split()
        fields.append(pa.field(name, getattr(pa, _ARROW_TYPES[kind])()))
    return pa.schema(fields)
