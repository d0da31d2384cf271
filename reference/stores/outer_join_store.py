"""The outer-join store of a KStream-KStream left/outer join with the spurious-result fix (3.1+).

Kafka keeps the records that found no partner yet in a key-value store with list values
(``ListValueStore`` over a RocksDB or in-memory bytes store, ``KStreamImplJoin`` /
``OuterStreamJoinStoreFactory``), keyed by ``TimestampedKeyAndJoinSide``. That key serializes as
8 bytes of big-endian timestamp, one side byte (left = 1, right = 0), then the serialized record
key (``TimestampedKeyAndJoinSideSerializer``); both bytes stores iterate in unsigned byte order. So:

- iteration order: by timestamp, then **right before left** for equal timestamps, then by the
  serialized key bytes; the values of one entry in insertion order (``ListValueStore`` appends and
  its iterator flattens the list);
- ``delete`` removes the whole list of one (ts, side, key) (``put(key, null)`` / ``putIfAbsent(key, null)``);
- there is no retention: entries leave only when emitted or deleted by a join.

Record keys are JSON values here; :func:`reference.model.keys.serialized_key` stands in for the key serde.
"""
from __future__ import annotations

from sortedcontainers import SortedDict

from reference.model.keys import serialized_key

LEFT_SIDE = 1  # TimestampedKeyAndJoinSideSerializer: (byte) (isLeftSide ? 1 : 0)
RIGHT_SIDE = 0



class OuterJoinStore:
    """Unjoined records of a left/outer stream-stream join, in Kafka's iteration order.

    Entries map ``(ts, side, key bytes)`` to a list of ``(key, value, input_index)``.
    """

    __slots__ = ("_entries",)

    def __init__(self):
        self._entries = SortedDict()

    def put(self, ts: int, side: int, key, key_bytes: bytes, value, input_index: int = -1) -> None:
        """Append a value to the list of (ts, side, key)."""
        store_key = (ts, side, key_bytes)
        values = self._entries.get(store_key)
        if values is None:
            self._entries[store_key] = [(key, value, input_index)]
        else:
            values.append((key, value, input_index))

    def delete(self, ts: int, side: int, key_bytes: bytes) -> bool:
        """Remove every value of (ts, side, key); True if there were any."""
        store_key = (ts, side, key_bytes)
        if store_key in self._entries:
            del self._entries[store_key]
            return True
        return False

    def delete_matched(self, side: int, key, matches) -> None:
        """A join found ``matches`` (window-store entries, ts first) of ``key`` on ``side``: none of
        them may be emitted with null any more (``putIfAbsent(key, null)`` per match)."""
        entries = self._entries
        if not entries:
            return
        key_bytes = serialized_key(key)
        for match in matches:
            store_key = (match[0], side, key_bytes)
            if store_key in entries:
                del entries[store_key]

    def delete_entries(self, store_keys) -> None:
        entries = self._entries
        for store_key in store_keys:
            del entries[store_key]

    def items(self):
        """``(store_key, values)`` in iteration order; ``store_key`` is ``(ts, side, key_bytes)``.

        Do not modify the store while iterating; collect the keys and :meth:`delete_entries` after."""
        entries = self._entries
        for store_key in entries.keys():
            yield store_key, entries[store_key]

    def flattened(self):
        """``(ts, side, key, value, input_index)`` one per stored value, in iteration order."""
        return [(sk[0], sk[1], k, v, i) for sk, values in self.items() for (k, v, i) in values]

    def __len__(self) -> int:
        return len(self._entries)

    def __bool__(self) -> bool:
        return bool(self._entries)
