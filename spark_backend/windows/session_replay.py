"""The sequential part of a session aggregation: merging sessions, one key (or one task) at a time.

What a record does depends on the sessions its key has in the store, which earlier records of the
key made: ``KStreamSessionWindowAggregate#process`` fetches the key's sessions that end at or after
``ts - gap`` and start by ``ts + gap`` (ascending by end, then start; ``InMemorySessionStore``: by
end, then start descending), merges them with the merger in that order, drops the record if the
merged session ends before the close time (before its own close time in 2.1-2.2.0:
``session_late_before_close``), else removes the merged-away sessions (forwarding a tombstone for
each), aggregates the record and puts the merged session. So each key's records are replayed in
processing order by :class:`SessionReplay` (a ``mapInArrow`` body over rows clustered by scenario,
task and scope, each scope's in position order).

Everything a key's replay needs from other keys is a clock computed set-based before it
(``session.py``): the close time, and the store's clock (``observedStreamTime``, the largest session
end put so far), which equals the aggregation's stream time because every record that raises the
stream time ends a session at the stream time and is never late. Two releases couple the keys
more tightly and are replayed a task at a time instead (``sw_per_task``, the *scope* is the task):
2.1, whose RocksDB segments expire by the task's stream time at the store's last put (which
depends on which records of other keys were late), and 3.3-3.6.0 with an in-memory store under
emit-on-window-close, which stops expiring sessions at the positions of the iterators its
range fetch leaks (``session_emit_final_iterator_leak``), which depend on every key's sessions.

Per key the replay writes its events (tombstones, updates, late drops, failures) and, under
emit-on-window-close, the *versions* of its sessions (window, aggregate, the positions that put
and removed it), from which ``session.py`` computes the final results set-based; a per-task replay
emits them itself.
"""
from __future__ import annotations

import json
from bisect import bisect_left

from kssim.reference.model.aggregations import AggregatorNullValue, aggregation_of
from kssim.reference.model.codes import DropReason, FailureCode
from kssim.reference.model.keys import serialized_key

from kssim.spark_backend.runtime.outputs import DROP, EVENT_DDL, FAILURE, OLD_JOINED, OLD_NONE, OLD_NULL, OUTPUT
from kssim.spark_backend.windows.replay_rows import arrow_batch, json_value as _json, record_type, windowed_key_text
from kssim.spark_backend.windows.store_models import BY_CLOCK, floor, java_div

EVENT, VERSION = 0, 1
#: what the replay writes: events, and (``kind`` VERSION) session versions, whose window end, the
#: stream time past which it is closed (``v_after``: end + close offset), the position of the put
#: (``v_born``) and of the removal (``v_died``, null: never removed) ride in extra columns; a
#: version's ``key`` is its windowed key, ``n_l`` its aggregate and ``f1..f3`` its place in the
#: emit-final fetch's order
OUT_DDL = EVENT_DDL + ", kind INT, v_end BIGINT, v_after BIGINT, v_born BIGINT, v_died BIGINT"
OUT_COLUMNS = tuple(part.split()[0] for part in OUT_DDL.split(", "))


def output_ddl(needs) -> str:
    """The replay's output schema: without per-key emit-on-window-close (``needs``:
    ``session_settings.Features``) no replay writes versions, so the events' columns are all
    (the leading columns of its rows: ``arrow_batch`` leaves the rest out)."""
    return OUT_DDL if needs.final_per_key else EVENT_DDL

#: the input columns the replay reads (``session.py`` selects them): per record only; the
#: scenario's settings come from the driver (``session_settings.Features.settings``), once per scenario
IN_COLUMNS = ("sid", "task", "key", "idx", "g1", "g2", "g3", "g4", "seq", "ts", "value",
              "fetch_clock", "put_clock", "close", "first_put")
#: one input row as the replay reads it
_Record = record_type("SessionRecord", IN_COLUMNS)
_MIN = -(1 << 63)
_EXPIRED = DropReason.EXPIRED_WINDOW.code
_NULL_KEY = DropReason.NULL_KEY.code
_NULL_SUM = FailureCode.AGGREGATOR_NULL_VALUE.code
_WINDOW_BOUND = FailureCode.WINDOW_ILLEGAL_ARGUMENT.code
#: Java's ``Long.MAX_VALUE``, and the span a long sum wraps by
_LONG_MAX, _LONG_SPAN = (1 << 63) - 1, 1 << 64
_UNEMITTED = DropReason.UNEMITTED_WINDOW.code
_EXPIRED_PUT = DropReason.EXPIRED_WINDOW_PUT.code
#: ``f1`` of the results (and lost sessions) of an emit-final range fetch: after everything the
#: record itself did; ``f2`` orders them as the fetch returns them
FINAL_RANK = 1 << 62


class _Settings:
    """One scenario's settings, from its config row (``session_settings.Features.settings``)."""

    __slots__ = ("gap", "close_offset", "retention", "segment", "final", "in_memory", "agg", "fetch_model", "put_model",
                 "emit_model", "aggregate_first", "per_task", "late_before_close", "ts_window_end",
                 "end_bounded", "leak", "send_old", "cached", "finds_previous", "from_first_segment")

    def __init__(self, c, sid, aggregations):
        self.gap, self.retention, self.segment = c["sw_gap"], c["sw_retention"], c["sw_segment"]
        self.close_offset = c["sw_close_offset"]
        self.final, self.in_memory = c["sw_final"], c["sw_in_memory"]
        name, sep = c["sw_agg"], c["sw_merge_sep"]
        if name is None:  # a Python API aggregation, shipped with the function
            self.agg = aggregations[sid]
        else:
            if (name, sep) not in aggregations:
                aggregations[(name, sep)] = aggregation_of(name, sep)
            self.agg = aggregations[(name, sep)]
        self.fetch_model, self.put_model, self.emit_model = c["sw_fetch_model"], c["sw_put_model"], c["sw_emit_model"]
        self.aggregate_first, self.per_task = c["sw_aggregate_first"], c["sw_per_task"]
        self.late_before_close = c["session_late_before_close"]  # [session_late_before_close]
        self.ts_window_end = c["session_output_ts_window_end"]  # [session_output_ts_window_end]
        self.end_bounded = c["session_fetch_end_bounded"]  # [session_fetch_end_bounded]
        self.leak = c["session_emit_final_iterator_leak"] and self.in_memory and self.final
        self.send_old = bool(c["send_old"])
        # [zero_cache_strips_caching_layer] KAFKA-6998 (2.1): with a zero-byte cache the store has no
        # caching layer; before, every write goes through CachingSessionStore, is evicted at once and
        # forwarded by its flush listener
        self.cached = not c["zero_cache_strips_caching_layer"]
        self.finds_previous = c["session_cache_finds_previous"]  # [session_cache_finds_previous]
        # [rocksdb_fetch_from_first_segment] 0.10.2 (Segments#minSegmentId): lookups skip the segments
        # older than the first one the store created, although later puts may still go there
        self.from_first_segment = c["sw_from_first_segment"]
        # the flush listener forwards at the session's end (the cache entry's timestamp)
        self.ts_window_end = self.ts_window_end or self.cached


class _KeySessions:
    """One key's sessions in the store: ``windows`` (end, start) ascending, ``values`` the
    parallel ``[aggregate, position of the put]``. Cost: lookups O(log n) (``bisect``), inserts
    and removals O(n) list moves, n being the key's stored sessions (few: old ones are dropped
    as the store's floor passes them)."""

    __slots__ = ("key", "windows", "values")

    def __init__(self, key):
        self.key = key
        self.windows = []
        self.values = []

    def from_end(self, end: int) -> int:
        """Index of the first session ending at or after ``end``. Cost: O(log n)."""
        return bisect_left(self.windows, (end, _MIN))

    def find(self, end: int, start: int):
        """Index of session [start, end], or None. Cost: O(log n)."""
        i = bisect_left(self.windows, (end, start))
        return i if i < len(self.windows) and self.windows[i] == (end, start) else None


class SessionReplay:
    """Replays the records of one scope (a key, or a whole task) of one scenario and task."""

    def __init__(self, settings: _Settings, out):
        self.s = settings
        self.out = out  # a list of output tuples (OUT_COLUMNS order)
        self.keys = {}
        self.failed = False
        #: write session versions (emit-final computed set-based); a per-task replay emits itself
        self.versions = settings.final and not settings.per_task
        # per-task replays only: the store clock at its last put (2.1), the emit-final state
        self.last_put_clock = None
        self.last_emit_close = None
        self.leaked_min = None  # the smallest position of a leaked emit-final iterator
        self._f1 = 0  # the rank of the next event of the current record
        self._floor = None  # the current record's fetch floor

    # --- output rows -------------------------------------------------------------------------
    def _row(self, r, etype, f1, key=None, ts=None, n_null=False, n_l=None, o_kind=OLD_NONE, o_l=None, text=None,
             f2=b"", f3=0, kind=EVENT, v=(None, None, None, None)):
        self.out.append((etype, r.sid, r.task, r.idx, r.g1, r.g2, r.g3, r.g4, f1, f2, f3, key,
                         ts, n_null, n_l, None, o_kind, o_l, None, text, kind) + v)

    def _version(self, r, sessions, window, value, died):
        """A session version's row: ``value`` = [aggregate, position of its put], removed at
        position ``died`` (None: still stored when the replay ended, or forgotten by the store)."""
        end, start = window
        agg, born = value
        f2, f3 = self._fetch_order(sessions.key, start, end)
        # a session whose end + close offset passes a long never closes: no stream time passes MAX
        after = min(end + self.s.close_offset, _LONG_MAX)
        self._row(r, OUTPUT, FINAL_RANK, key=windowed_key_text(sessions.key, start, end), ts=end, n_l=_json(agg), f2=f2,
                  f3=f3, o_kind=OLD_NULL if self.s.send_old else OLD_NONE, kind=VERSION,
                  v=(end, after, born, died))

    def _fetch_order(self, key, start, end):
        """``(f2, f3)``: where a session stands in the emit-final range fetch: the time-ordered
        RocksDB store orders by (end, start, key bytes), the in-memory one by (end, key bytes,
        start descending); ends and starts are never negative, so big-endian bytes sort as numbers."""
        key_bytes = serialized_key(json.loads(key))
        if self.s.in_memory:
            return end.to_bytes(8, "big") + key_bytes, -start
        return end.to_bytes(8, "big") + start.to_bytes(8, "big") + key_bytes, 0

    def _remove(self, r, sessions, i, died):
        if self.versions:
            self._version(r, sessions, sessions.windows[i], sessions.values[i], died)
        del sessions.windows[i]
        del sessions.values[i]

    # --- the store -----------------------------------------------------------------------------
    def _fetch_floor(self, r):
        s = self.s
        if s.per_task and not s.in_memory:
            # 2.1: segments expire by the task's stream time at the store's last put
            return floor(s.fetch_model, self.last_put_clock, s.retention, s.segment)
        if s.leak:
            return self._leaky_removal(r, r.fetch_clock)
        lowest = floor(s.fetch_model, r.fetch_clock, s.retention, s.segment)
        if s.from_first_segment and r.first_put is not None:
            lowest = max(lowest, java_div(r.first_put, s.segment) * s.segment)
        return lowest

    def _leaky_removal(self, r, clock):
        """``InMemorySessionStore#removeExpiredSegments`` with leaked iterators: nothing at or after
        the oldest leaked iterator's position is removed; what is removed stays removed."""
        f = max(0, floor(BY_CLOCK, clock, self.s.retention, self.s.segment))
        if self.leaked_min is not None:
            f = min(f, self.leaked_min)
        for sessions in self.keys.values():
            self._forget_below(r, sessions, f)
        return f

    def _forget_below(self, r, sessions, end_floor):
        """The store no longer holds the sessions ending before ``end_floor``; a per-task replay
        under emit-on-window-close remembers those no emission range has reached yet (lost)."""
        windows = sessions.windows
        if not windows or windows[0][0] >= end_floor:
            return  # the usual case: nothing to forget (skips the search)
        for _ in range(sessions.from_end(end_floor)):
            if self.s.per_task and self.s.final:
                end, start = sessions.windows[0]
                if self.last_emit_close is None or end >= self.last_emit_close:
                    # no emission range reached it: never emitted, lost at this record
                    f2, f3 = self._fetch_order(sessions.key, start, end)
                    self._row(r, DROP, FINAL_RANK, f2=f2, f3=f3, text=_UNEMITTED)
            self._remove(r, sessions, 0, None)

    def candidates(self, sessions, ts, fetch_floor):
        """findSessions(key, ts - gap, ts + gap): indexes of the sessions merged, in fetch order.
        ``ts + gap`` is a Java long: past ``Long.MAX_VALUE`` it wraps to a negative latest start,
        which no session starts by (the in-memory store; the others fail first, see ``process``)."""
        s = self.s
        hi = ts + s.gap
        if hi > _LONG_MAX:
            hi -= _LONG_SPAN
        found = []
        windows = sessions.windows
        for i in range(sessions.from_end(max(ts - s.gap, fetch_floor)), len(windows)):
            end, start = windows[i]
            # [session_fetch_end_bounded] 0.11-2.1.0: the multi-key range ends at (ts + gap, ts + gap)
            if start <= hi and not (s.end_bounded and end > hi):
                found.append(i)
        if s.in_memory and len(found) > 1:  # InMemorySessionStoreIterator: starts of one end descending
            found.sort(key=lambda i: (windows[i][0], -windows[i][1]))
        return found

    # --- one record ----------------------------------------------------------------------------
    def process(self, r):
        if self.failed:
            return
        s = self.s
        key, ts = r.key, r.ts
        sessions = self.keys.get(key)
        if sessions is None:
            sessions = self.keys[key] = _KeySessions(key)
        if ts + s.gap > _LONG_MAX and not s.in_memory:
            # the RocksDB stores' range key new SessionWindow(ts + gap wrapped, Long.MAX_VALUE) throws
            # IllegalArgumentException [window_bounds_checked] (the in-memory store builds no window)
            self._row(r, FAILURE, 0, text=_WINDOW_BOUND)
            self.failed = True
            return
        self._floor = self._fetch_floor(r)
        found = self.candidates(sessions, ts, self._floor)
        agg_fn = s.agg
        agg = agg_fn.initial()
        start = end = ts
        for i in found:
            e, st = sessions.windows[i]
            agg = agg_fn.merge(None, agg, sessions.values[i][0])
            start, end = min(start, st), max(end, e)
        close = r.close
        # [session_late_before_close] KAFKA-8289 (2.2.1): late when the merged session ends before
        # the close time; 2.1-2.2.0 also when it ends at it. Before 2.1 nothing is late.
        if close is not None and (end < close if s.late_before_close else end <= close):
            self._row(r, DROP, 0, text=_EXPIRED)
        else:
            self._accept(r, sessions, found, agg, start, end)
        if s.per_task and s.final and not self.failed:
            self._emit_final(r)

    def _accept(self, r, sessions, found, agg, start, end):
        s = self.s
        ts, seq = r.ts, r.seq
        value = None if r.value is None else json.loads(r.value)  # null for a count (session.py)
        self._f1 = 0
        if s.aggregate_first:  # [windowed_grace] before 2.1 the aggregator ran first
            agg = self._aggregate(r, value, agg)
            if self.failed:
                return
        if (start, end) != (ts, ts):
            for window in [sessions.windows[i] for i in found]:
                e, st = window
                i = sessions.find(e, st)
                if s.cached:
                    # CachingSessionStore#remove is a put(null), flushed at once: it forwards a tombstone
                    # only if fetchPrevious finds a stored session over the window
                    self._forward(r, sessions.key, st, e, None, self._previous(sessions, st, e), cached=True)
                elif not s.final:
                    self._forward(r, sessions.key, st, e, None, sessions.values[i][0], old_known=True)
                self._remove(r, sessions, i, seq)
        if not s.aggregate_first:
            agg = self._aggregate(r, value, agg)
            if self.failed:
                return
        if s.cached:
            self._forward(r, sessions.key, start, end, agg,
                          self._previous(sessions, start, end) if agg is None or s.send_old else None, cached=True)
            self._put(r, sessions, start, end, agg)
        else:
            self._put(r, sessions, start, end, agg)
            if not s.final:
                self._forward(r, sessions.key, start, end, agg, None)

    def _forward(self, r, key, start, end, new, old, old_known=False, cached=False):
        """Forward ``Change(new, old)`` for session [start, end]: ``old`` is reported only with
        send_old_values (a tombstone's ``old_known``: the merged-away session's aggregate; a
        cached write's: what fetchPrevious found)."""
        s = self.s
        if cached and new is None and old is None:
            return  # the caching layer skips a write that replaces nothing with nothing
        if not s.send_old:
            o_kind, o_l = OLD_NONE, None
        elif old_known or cached:
            o_kind, o_l = (OLD_NULL, None) if old is None else (OLD_JOINED, _json(old))
        else:
            o_kind, o_l = OLD_NULL, None  # the update's old value is always null
        # [session_output_ts_window_end] KAFKA-6455 (2.3): the session's end, before the record's ts
        self._row(r, OUTPUT, self._f1, key=windowed_key_text(key, start, end), ts=end if s.ts_window_end else r.ts,
                  n_null=new is None, n_l=_json(new), o_kind=o_kind, o_l=o_l)
        self._f1 += 1

    def _previous(self, sessions, start, end):
        """``CachingSessionStore#fetchPrevious``: the first stored session the store's
        findSessions(key, start, end) returns (0.10.2: it looks the windowed key up as a plain key
        and finds nothing)."""
        s = self.s
        if not s.finds_previous:
            return None
        windows = sessions.windows
        for i in range(sessions.from_end(max(start, self._floor)), len(windows)):
            e, st = windows[i]
            if st <= end and not (s.end_bounded and e > end):  # [session_fetch_end_bounded]
                return sessions.values[i][0]
        return None

    def _aggregate(self, r, value, agg):
        try:
            return self.s.agg.add(None, value, agg)
        except AggregatorNullValue:
            self._row(r, FAILURE, self._f1, text=_NULL_SUM)
            self.failed = True
            return None

    def _put(self, r, sessions, start, end, agg):
        s = self.s
        seq, put_clock = r.seq, r.put_clock
        if s.per_task and not s.in_memory:
            self.last_put_clock = put_clock
        put_floor = floor(s.put_model, put_clock, s.retention, s.segment)
        window = (end, start)
        i = bisect_left(sessions.windows, window)  # where it is, or goes
        existing = i < len(sessions.windows) and sessions.windows[i] == window
        if end < put_floor:  # the store skips a put into an expired segment (in memory: at or before clock - retention)
            self._row(r, DROP, self._f1, text=_EXPIRED_PUT)
            self._f1 += 1
        elif agg is None:  # a null aggregate (a reduce of a null value): the put is a delete
            if existing:
                self._remove(r, sessions, i, seq)
        else:
            if existing:
                self._remove(r, sessions, i, seq)
            sessions.windows.insert(i, window)
            sessions.values.insert(i, [agg, seq])
        if not s.leak:
            self._forget_below(r, sessions, put_floor)

    # --- emit on window close, replayed per task (in-memory store with leaked iterators) --------
    def _emit_final(self, r):
        """``maybeForwardFinalResult`` of a per-task replay: every key's sessions ending in
        ``[max(0, lastEmitCloseTime), closeTime - 1]`` once the close time moved on."""
        s = self.s
        close = r.close
        if close is None or (self.last_emit_close is not None and self.last_emit_close >= close):
            return
        upper = close - 1
        if upper < 0:
            return
        lower = max(0, -1 if self.last_emit_close is None else self.last_emit_close)
        if upper < lower:
            return
        if s.leak:
            self._leaky_removal(r, r.put_clock)
            emit_floor = lower
        else:
            emit_floor = max(lower, floor(s.emit_model, r.put_clock, s.retention, s.segment))
        found = []
        for sessions in self.keys.values():
            for i in range(sessions.from_end(emit_floor), len(sessions.windows)):
                end, start = sessions.windows[i]
                if end > upper:
                    break
                f2, f3 = self._fetch_order(sessions.key, start, end)
                found.append((end, f2, f3, sessions.key, start, sessions.values[i][0]))
        found.sort(key=lambda x: (x[1], x[2]))
        for end, f2, f3, key, start, agg in found:
            self._row(r, OUTPUT, FINAL_RANK, f2=f2, f3=f3, key=windowed_key_text(key, start, end), ts=end,
                      n_null=agg is None, n_l=_json(agg), o_kind=OLD_NULL if s.send_old else OLD_NONE)
        if s.leak:
            # the iterator is never closed: it stays at the last end it reached (0 if it found none)
            position = found[-1][0] if found else 0
            self.leaked_min = position if self.leaked_min is None else min(self.leaked_min, position)
        self.last_emit_close = close

    def finish(self, r):
        """The versions still in the store when the scope's records end."""
        if self.versions:
            for sessions in self.keys.values():
                for w, v in zip(sessions.windows, sessions.values):
                    self._version(r, sessions, w, v, None)


def replay_function(needs):
    """The ``mapInArrow`` body of a batch whose session scenarios are ``needs``
    (``session_settings.Features``: their settings, and the Python API's aggregations)."""
    settings, callables, ddl = {sid: dict(row) for sid, row in needs.settings}, needs.callables, output_ddl(needs)

    def replay(batches):
        return replay_batches(batches, settings, dict(callables), ddl)

    return replay


def _null_key_drop(r):
    """A record with a null key is dropped before anything else (``null_key``): no store, no clock."""
    return (DROP, r.sid, r.task, r.idx, r.g1, r.g2, r.g3, r.g4, 0, b"", 0, None, r.ts, False, None, None, OLD_NONE,
            None, None, _NULL_KEY, EVENT, None, None, None, None)


def replay_batches(batches, settings, aggregations=None, ddl=OUT_DDL):
    """``mapInArrow`` body: rows clustered by (sid, task, scope), by ``seq`` within one -> ``ddl``
    rows (``output_ddl``); ``settings``: sid -> the scenario's config row (its ``session_settings``
    columns and ``send_old``); ``aggregations``: sid -> the Python API aggregation of that scenario."""
    aggregations = dict(aggregations or {})
    scenarios = {}  # sid -> _Settings, built once
    current, replay, last = None, None, None
    out = []
    for batch in batches:
        c = [batch.column(name).to_pylist() for name in IN_COLUMNS]
        for r in map(_Record._make, zip(*c)):
            if r.key is None:
                out.append(_null_key_drop(r))
                continue
            s = scenarios.get(r.sid)
            if s is None:
                s = scenarios[r.sid] = _Settings(settings[r.sid], r.sid, aggregations)
            # the scope of one replay: the key, or the whole task (``sw_per_task``)
            group = (r.sid, r.task, None if s.per_task else r.key)
            if group != current:
                if replay is not None:
                    replay.finish(last)
                current, replay = group, SessionReplay(s, out)
            replay.process(r)
            last = r
        if len(out) >= 4096:
            yield arrow_batch(out, ddl)
            out.clear()  # the replays hold this list: empty it in place
    if replay is not None:
        replay.finish(last)
    if out:
        yield arrow_batch(out, ddl)
