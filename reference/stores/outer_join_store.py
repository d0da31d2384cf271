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

Record keys are JSON values here; the store takes their identity
(:func:`reference.model.keys.key_identity`) and orders by its serialized bytes
(:func:`reference.model.keys.serialized_key`, the key serde's bytes). Keys of different JSON types
with equal bytes (``"\\x01"`` and ``true``), which never share a topic in Kafka, stay different
entries: the store key ends with the key's type, after the bytes, so Kafka's order is unchanged.
"""
from __future__ import annotations

from sortedcontainers import SortedDict

LEFT_SIDE = 1  # TimestampedKeyAndJoinSideSerializer: (byte) (isLeftSide ? 1 : 0)
RIGHT_SIDE = 0


def key_bytes_and_type(key_id):
    """``(serialized key bytes, JSON type name)`` of a key identity: the tail of a store key."""
    if key_id.__class__ is str:
        return key_id.encode("utf-8"), "str"  # an identity string has no lone surrogates
    return key_id[1], key_id[0]


class OuterJoinStore:
    """Unjoined records of a left/outer stream-stream join, in Kafka's iteration order.

    Backed by a sortedcontainers ``SortedDict`` mapping ``(ts, side, key bytes, key type)`` to a
    Python list of ``(key, value, input_index)`` in insertion order. Below, ``N`` is the number of
    entries (distinct store keys).
    """

    __slots__ = ("_entries",)

    def __init__(self):
        self._entries = SortedDict()

    def put(self, ts: int, side: int, key, key_id, value, input_index: int = -1) -> None:
        """Append a value to the list of (ts, side, key); ``key_id`` is the key's identity.

        Cost: O(log N) for a new entry, O(1) amortised to append to an existing one."""
        store_key = (ts, side) + key_bytes_and_type(key_id)
        values = self._entries.get(store_key)
        if values is None:
            self._entries[store_key] = [(key, value, input_index)]
        else:
            values.append((key, value, input_index))

    def delete(self, ts: int, side: int, key_id) -> bool:
        """Remove every value of (ts, side, key); True if there were any. Cost: O(log N)."""
        store_key = (ts, side) + key_bytes_and_type(key_id)
        if store_key in self._entries:
            del self._entries[store_key]
            return True
        return False

    def delete_matched(self, side: int, key_id, matches) -> None:
        """A join found ``matches`` (window-store entries, ts first) of the key ``key_id`` on
        ``side``: none of them may be emitted with null any more (``putIfAbsent(key, null)`` per
        match). Cost: O(m) for m matches, plus O(log N) per entry deleted."""
        entries = self._entries
        if not entries:
            return
        tail = key_bytes_and_type(key_id)
        for match in matches:
            store_key = (match[0], side) + tail
            if store_key in entries:
                del entries[store_key]

    def delete_entries(self, store_keys) -> None:
        """Remove the entries of ``store_keys`` (from :meth:`items`). Cost: O(log N) per key."""
        entries = self._entries
        for store_key in store_keys:
            del entries[store_key]

    def items(self):
        """``(store_key, values)`` in iteration order; ``store_key`` is ``(ts, side, key_bytes,
        key_type)``. Cost: O(1) per item yielded (a walk of the sorted keys).

        Do not modify the store while iterating; collect the keys and :meth:`delete_entries` after."""
        entries = self._entries
        for store_key in entries.keys():
            yield store_key, entries[store_key]

    def flattened(self):
        """``(ts, side, key, value, input_index)`` one per stored value, in iteration order.
        Cost: O(V) for V stored values (a new list)."""
        return [(sk[0], sk[1], k, v, i) for sk, values in self.items() for (k, v, i) in values]

    def __len__(self) -> int:
        """Number of entries (distinct (ts, side, key)). Cost: O(1)."""
        return len(self._entries)

    def __bool__(self) -> bool:
        """Whether any entry is stored. Cost: O(1)."""
        return bool(self._entries)
