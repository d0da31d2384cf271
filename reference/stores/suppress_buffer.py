"""The suppress buffer: Kafka's ``InMemoryTimeOrderedKeyValueChangeBuffer`` (2.1-2.8:
``InMemoryTimeOrderedKeyValueBuffer``), as ``KTableSuppressProcessor`` uses it.

- One entry per key. The entry's place in the buffer is its *buffer time* (a record timestamp, or
  a window end) and its key bytes: ``BufferKey(time, key)``, ordered by time, then by the key's
  serialized bytes compared unsigned (``Bytes#compareTo``).
- Non-resetting ``put``: a key already buffered keeps its place (the buffer time of its first
  update) and its *prior value* (the old value of that first update); only its record (new and old
  value, timestamp, topic) is replaced. A key not buffered enters at the given time.
- ``min_timestamp``: the smallest buffer time (``Long.MAX_VALUE`` when empty), kept up to date on
  every put and eviction, as Kafka's field is.
- ``evict_while(predicate, callback)``: while the predicate holds (it is asked before every
  eviction), hand the first entry in buffer order to the callback, then remove it.
- ``num_records`` and ``buffer_size``: the entry count and the sum of the entries' size estimates
  (:func:`reference.model.suppression.buffered_record_size`, per release), kept incrementally:
  a replaced entry's size is taken off and the new one's added.

Keys are identities (:func:`reference.model.keys.key_identity`, for windowed keys with the window,
see :mod:`reference.suppress.processor`): two results are one buffered key exactly when their
serialized bytes are equal, as in Kafka. ``N`` below is the number of buffered entries. The
changelog (``flush``, restore) is not modelled: kssim runs never restart.
"""
from __future__ import annotations

from typing import Callable, Optional

import attrs
from sortedcontainers import SortedDict

from kssim.reference.model.suppression import JAVA_LONG_MAX


@attrs.frozen(slots=True)
class BufferedChange:
    """One buffered result: the key's latest ``Change(new, old)`` with its record context, the
    prior value's bytes, and what kssim keeps to explain it.

    ``key_id`` is the key's identity (the index key), ``ts`` the latest update's timestamp (what
    the eviction forwards), ``topic`` the topic whose record produced it, ``input_index`` the input
    that did, ``first_input_index`` the input that first buffered the key, ``why`` the upstream
    explanation of the latest update (or None), ``size`` the entry's size estimate."""

    key_id: object
    key: object
    new: object
    old: object
    prior: Optional[bytes]
    ts: int
    topic: str
    input_index: int
    first_input_index: int
    why: object
    size: int
    prior_value: object = None


@attrs.frozen(slots=True, order=True)
class BufferKey:
    """An entry's place: buffer ``time``, then the key's serialized bytes (unsigned), then the key's
    JSON type name (kssim keys of two types never meet in Kafka, where a topic has one serde)."""

    time: int
    key_bytes: bytes
    type_name: str


class SuppressBuffer:
    """A time-ordered buffer of the latest change per key (see the module docstring).

    Backed by a ``dict`` from key identity to :class:`BufferKey` (Kafka's ``index``) and a
    sortedcontainers ``SortedDict`` from :class:`BufferKey` to :class:`BufferedChange` (Kafka's
    ``sortedMap``, a ``TreeMap``)."""

    __slots__ = ("_index", "_sorted", "_size", "_min_timestamp")

    def __init__(self):
        self._index = {}
        self._sorted = SortedDict()
        self._size = 0
        self._min_timestamp = JAVA_LONG_MAX

    def buffered(self, key_id) -> Optional[BufferedChange]:
        """The entry of a key identity, or None when the key is not buffered. Cost: O(1)."""
        place = self._index.get(key_id)
        return None if place is None else self._sorted[place]

    def put(self, time: int, key_bytes: bytes, entry: BufferedChange) -> None:
        """Buffer ``entry`` for its key: at ``(time, key_bytes)`` if the key is new, in its existing
        place otherwise (non-resetting). The caller builds the entry (with the prior value of the
        existing entry, if any). Cost: O(log N) for a new key, O(1) for a buffered one."""
        place = self._index.get(entry.key_id)
        if place is None:
            place = BufferKey(time, key_bytes, type(entry.key).__name__)
            self._index[entry.key_id] = place
            self._sorted[place] = entry
            if time < self._min_timestamp:
                self._min_timestamp = time
            self._size += entry.size
        else:
            self._size += entry.size - self._sorted[place].size
            self._sorted[place] = entry

    def evict_while(self, predicate: Callable[[], bool], callback: Callable[[BufferKey, BufferedChange], None]) -> int:
        """While ``predicate()`` holds and the buffer is not empty, remove the first entry in buffer
        order and pass it (with its place) to ``callback``; return how many were evicted. The
        predicate sees the buffer after each removal. Cost: O(log N) per evicted entry."""
        evicted = 0
        sorted_entries = self._sorted
        while sorted_entries and predicate():
            place, entry = sorted_entries.popitem(0)
            # Kafka calls back before removing; here the callback sees the buffer without the entry
            del self._index[entry.key_id]
            self._size -= entry.size
            self._min_timestamp = sorted_entries.peekitem(0)[0].time if sorted_entries else JAVA_LONG_MAX
            callback(place, entry)
            evicted += 1
        return evicted

    def entries(self):
        """``[(place, entry)]`` in buffer order (what the next evictions would take first): what
        ``kssim run --pending`` lists. Cost: O(N) (a new list; end of a run only)."""
        return list(self._sorted.items())

    @property
    def min_timestamp(self) -> int:
        """The smallest buffer time, ``Long.MAX_VALUE`` when empty. Cost: O(1)."""
        return self._min_timestamp

    @property
    def num_records(self) -> int:
        """The number of buffered keys (``numRecords``). Cost: O(1)."""
        return len(self._index)

    @property
    def buffer_size(self) -> int:
        """The sum of the entries' size estimates (``bufferSize``). Cost: O(1)."""
        return self._size

    def __len__(self):
        """Same as :attr:`num_records`. Cost: O(1)."""
        return len(self._index)

