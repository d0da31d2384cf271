"""The versioned key-value store of KIP-889 (``RocksDBVersionedStore``), Kafka 3.5+.

Rules, read in ``RocksDBVersionedStore`` and its segment format (3.5 to 3.9):
- The store keeps its own observed stream time: the largest timestamp of any put it accepted
  (starts at -1, ``ConsumerRecord.NO_TIMESTAMP``). Reads never advance it.
- ``put(key, value, ts)`` is rejected (NOT_PUT, "Skipping record for expired put") when
  ``ts < observed - history_retention`` (strict; the history retention doubles as the store's
  grace period). Otherwise the observed time advances to ``max(observed, ts)``.
- Per key Kafka keeps a *latest value* (never a tombstone) and *history records*
  ``(value or null, validFrom, validTo)``. A history record covers ``[validFrom, validTo)``; a
  time covered by nothing is a tombstone, and so is the end of the history when there is no
  latest value.
- A put at or after the latest value's ts replaces the latest value (a later put first moves the
  old latest value into the history, valid until the new ts) and is the latest (IS_LATEST). A
  tombstone deletes the latest value; at the *same* ts as the latest value it erases that value
  without a trace, so a later put older than the tombstone can again be the latest (Kafka quirk).
- Otherwise the put lands in the history: inside the record that covers its ts (splitting it, or
  replacing it when it starts at the same ts), or in a gap, valid until the next newer record;
  NOT_LATEST. When nothing newer exists (no latest value, history ends at or before ts) a value
  becomes the latest value and a tombstone ends the history at ts; both are IS_LATEST.
- ``get(key)``: the latest value, or None.
- ``get_as_of(key, t)``: the latest value if its ts <= t; else the history record covering t
  (None if a tombstone or a gap). When ``t < observed - history_retention`` the history is gone:
  only the latest value is returned, and only if its ts <= t.

History that can no longer answer a lookup (``validTo <= observed - history_retention``) is
pruned, so memory is bounded by the history retention. Rows are ``(value, ts, input_index)``
tuples, as :mod:`reference.stores.kv_store` returns them (``ts`` = validFrom for history records).
Keys are key identities (:func:`reference.model.keys.key_identity`), converted by the callers.
"""
from __future__ import annotations

from bisect import bisect_right
from collections import deque

from kssim.reference.stores.kv_store import PUT_IS_LATEST, PUT_NOT_LATEST, PUT_NOT_PUT

NO_TIMESTAMP = -1  # ConsumerRecord.NO_TIMESTAMP, the observed time of an empty store


class _Versions:
    """One key: its latest value row (or None) and its history as parallel Python lists sorted by
    validFrom (``froms``, ``tos``, ``rows``; h records)."""

    __slots__ = ("latest", "froms", "tos", "rows")

    def __init__(self):
        self.latest = None
        self.froms: list = []
        self.tos: list = []
        self.rows: list = []  # (value or None, validFrom, input_index)

    def add_history(self, at, row, valid_to):
        """Insert a history record at position ``at``. Cost: O(h) (three list inserts)."""
        self.froms.insert(at, row[1])
        self.tos.insert(at, valid_to)
        self.rows.insert(at, row)

    def prune(self, horizon):
        """Drop the records with ``validTo <= horizon``. Cost: O(log h + h) (bisect, slice delete)."""
        cut = bisect_right(self.tos, horizon)
        if cut:
            del self.froms[:cut], self.tos[:cut], self.rows[:cut]


class VersionedKeyValueStore:
    """Per key, the latest value and the history of the last ``history_retention_ms``.

    Backed by a ``dict`` from key identity to :class:`_Versions` (the latest row, and the history
    as three parallel Python lists sorted by validFrom, searched with ``bisect``), and a ``deque``
    of tombstone puts in arrival order, for forgetting keys whose history has expired. Below,
    ``h`` is the number of retained history records of the key."""

    versioned = True
    __slots__ = ("history_retention_ms", "observed_stream_time", "_keys", "_tombstones")

    def __init__(self, history_retention_ms: int):
        self.history_retention_ms = history_retention_ms
        self.observed_stream_time = NO_TIMESTAMP
        self._keys: dict = {}
        # (ts, key) of tombstone puts, oldest first: a key with no latest value whose history ends
        # before the horizon answers every lookup like an absent key, so it can be forgotten
        self._tombstones: deque = deque()

    def put(self, key, value, ts, input_index=-1) -> str:
        """Store a version (``value`` None: a tombstone); PUT_IS_LATEST, PUT_NOT_LATEST or PUT_NOT_PUT.

        Cost: O(1) amortised at or after the key's latest ts (appends, pruning), else O(h) (insert)."""
        horizon = self.observed_stream_time - self.history_retention_ms
        if ts < horizon:
            return PUT_NOT_PUT
        if ts > self.observed_stream_time:
            self.observed_stream_time = ts
            horizon = ts - self.history_retention_ms
        if self._tombstones and self._tombstones[0][0] < horizon:
            self._forget_expired_tombstones(horizon)
        versions = self._keys.get(key)
        if versions is None:
            self._keys[key] = versions = _Versions()
        row = (value, ts, input_index)
        if value is None:
            self._tombstones.append((ts, key))
        latest = versions.latest
        if latest is not None and ts >= latest[1]:
            if ts > latest[1]:
                versions.froms.append(latest[1])
                versions.tos.append(ts)
                versions.rows.append(latest)
                if versions.tos[0] <= horizon:
                    versions.prune(horizon)
            # a tombstone at the latest value's own ts leaves no trace (nothing moves to history)
            versions.latest = row if value is not None else None
            return PUT_IS_LATEST
        return self._put_into_history(versions, row, ts, latest)

    def _put_into_history(self, versions, row, ts, latest) -> str:
        froms, tos = versions.froms, versions.tos
        at = bisect_right(froms, ts) - 1  # the newest record starting at or before ts
        if at >= 0 and tos[at] > ts:
            if froms[at] == ts:
                versions.rows[at] = row  # replaces the record, keeps its validTo
            else:
                valid_to = tos[at]
                tos[at] = ts
                versions.add_history(at + 1, row, valid_to)
            return PUT_NOT_LATEST
        # ts falls in a gap (or before all history): valid until the next newer record
        if at + 1 < len(froms):
            versions.add_history(at + 1, row, froms[at + 1])
            return PUT_NOT_LATEST
        if latest is not None:
            versions.add_history(at + 1, row, latest[1])
            return PUT_NOT_LATEST
        # nothing newer exists: a value becomes the latest value, a tombstone ends the history
        if row[0] is not None:
            versions.latest = row
        elif not tos or tos[-1] != ts:
            versions.add_history(len(froms), row, ts)
        return PUT_IS_LATEST

    def _forget_expired_tombstones(self, horizon):
        tombstones, keys = self._tombstones, self._keys
        while tombstones and tombstones[0][0] < horizon:
            key = tombstones.popleft()[1]
            versions = keys.get(key)
            if versions is not None and versions.latest is None:
                versions.prune(horizon)
                if not versions.froms:
                    del keys[key]

    def get(self, key):
        """The latest value row ``(value, ts, input_index)`` of ``key``, or None.

        Cost: O(1) expected (one dict lookup)."""
        versions = self._keys.get(key)
        return None if versions is None else versions.latest

    def get_as_of(self, key, as_of_ts):
        """The row of ``key`` valid at ``as_of_ts``, or None (see the module docstring).

        Cost: O(1) when the latest value answers, else O(log h) (one bisect)."""
        versions = self._keys.get(key)
        if versions is None:
            return None
        latest = versions.latest
        if latest is not None and latest[1] <= as_of_ts:
            return latest
        if as_of_ts < self.observed_stream_time - self.history_retention_ms:
            return None  # history retention exceeded: only the latest value is ever returned
        at = bisect_right(versions.froms, as_of_ts) - 1
        if at < 0 or versions.tos[at] <= as_of_ts:
            return None
        found = versions.rows[at]
        return None if found[0] is None else found

    def newest_ts(self, key):
        """Timestamp of the newest version of ``key`` (the latest value, else the end of its
        history, which a tombstone marks), or None.

        Cost: O(1) expected."""
        versions = self._keys.get(key)
        if versions is None:
            return None
        if versions.latest is not None:
            return versions.latest[1]
        return versions.tos[-1] if versions.tos else None

    def history(self, key):
        """``(value, valid_from, valid_to)`` of the retained history of ``key``, oldest first.

        Cost: O(h) (a new list)."""
        versions = self._keys.get(key)
        if versions is None:
            return []
        return [(row[0], row[1], to) for row, to in zip(versions.rows, versions.tos)]

    def __len__(self):
        """Number of keys with a latest value or retained history. Cost: O(1)."""
        return len(self._keys)
