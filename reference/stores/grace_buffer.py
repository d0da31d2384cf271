"""The stream-side grace buffer of a stream-table join (KIP-923, Kafka 3.6+).

Models ``RocksDBTimeOrderedKeyValueBuffer`` over ``RocksDBTimeOrderedKeyValueBytesStore`` as
``KStreamKTableJoinProcessor`` uses it:
- The buffer keeps its own observed stream time: the largest timestamp of the records it has
  buffered (starts at -1). Late records and records dropped before the buffer do not advance it.
- ``put``: a record is late when ``observed - grace > ts`` (strict, observed before this record);
  a late record is not buffered (the join then joins it at once). Otherwise it is buffered and
  the observed time becomes ``max(observed, ts)``.
- ``evict``: after a put, every buffered record with ``ts <= observed - grace`` leaves the buffer
  in store order: the store key is ``[ts: 8 bytes big-endian][serialized key][seqnum: 4 bytes]``
  compared as unsigned bytes, so ties on ts go by the serialized key bytes (not by arrival),
  then by the sequence number the buffer gives each put (``(seqnum + 1) & 0x7FFFFFFF``).
- The store has infinite retention: nothing expires, and nothing is flushed at end of input.
- A null key cannot be buffered: Kafka's put throws ``NullPointerException("key cannot be
  null")`` (3.7+ left joins reach it, see :mod:`reference.joins.stream_table`).

Key serialization (for tie order): :func:`reference.model.keys.serialized_key`. The buffer needs no
key identity: every entry is unique by its sequence number, and it keeps the record's own key,
which the join converts when it looks the table up. ``N`` below is the number of buffered records.
"""
from __future__ import annotations

from sortedcontainers import SortedList

from kssim.reference.model.keys import serialized_key

NO_TIMESTAMP = -1
SEQNUM_MASK = 0x7FFFFFFF


class StreamTableGraceBuffer:
    """Time-ordered buffer of stream records, released once ``grace_ms`` of stream time passed.

    Backed by a sortedcontainers ``SortedList`` of ``(ts, key bytes + seqnum, key, value,
    input_index)`` tuples (the store key's order)."""

    __slots__ = ("grace_ms", "observed_stream_time", "_seqnum", "_records")

    def __init__(self, grace_ms: int):
        self.grace_ms = grace_ms
        self.observed_stream_time = NO_TIMESTAMP
        self._seqnum = 0
        # (ts, serialized key + seqnum, key, value, input_index): tuples compare on the first two
        # fields only, since the second is unique per buffered record
        self._records = SortedList()

    def is_late(self, ts) -> bool:
        """Whether a record at ``ts`` would be late (not buffered). Cost: O(1)."""
        return self.observed_stream_time - self.grace_ms > ts

    def put(self, key, value, ts, input_index=-1) -> bool:
        """Buffer a record; False (and nothing buffered) when it is late.
        Cost: O(log N) (plus serializing the key)."""
        if self.observed_stream_time - self.grace_ms > ts:
            return False
        self._seqnum = seqnum = (self._seqnum + 1) & SEQNUM_MASK
        self._records.add((ts, serialized_key(key) + seqnum.to_bytes(4, "big"), key, value, input_index))
        if ts > self.observed_stream_time:
            self.observed_stream_time = ts
        return True

    def evict(self):
        """Remove and return, in store order, the records with ``ts <= observed - grace``:
        a list of ``(key, value, ts, input_index)``. Cost: O(log N) per record released."""
        records = self._records
        if not records:
            return ()
        horizon = self.observed_stream_time - self.grace_ms
        out = []
        while records and records[0][0] <= horizon:
            ts, _, key, value, input_index = records.pop(0)
            out.append((key, value, ts, input_index))
        return out

    def held(self):
        """``(key, value, ts, input_index)`` of every buffered record, in release order (what
        ``kssim run --pending`` lists). Cost: O(N) (a new list; end of a run only)."""
        return [(key, value, ts, input_index) for ts, _, key, value, input_index in self._records]

    def __len__(self):
        """Number of buffered records. Cost: O(1)."""
        return len(self._records)
