"""The subscription store of a foreign-key join (KIP-213): who subscribes to which foreign key.

Kafka keeps it on the right-hand (foreign table) side, in the task that owns the FK's partition
(``SubscriptionReceiveProcessorSupplier`` writes it, ``ForeignTableJoinProcessorSupplier``
prefix-scans it): a ``TimestampedKeyValueStore<Bytes, SubscriptionWrapper>`` keyed by the bytes
of ``CombinedKey(fk, pk)`` (``CombinedKeySchema#toBytes``)::

    [4-byte big-endian length of the serialized FK][serialized FK][serialized PK]

RocksDB (and the in-memory store) order keys by unsigned byte comparison, so a prefix scan over
``[len][FK]`` visits the subscribers of one FK in ascending order of their serialized PK bytes:
that is the order in which an RHS update's responses, hence the join's results, come out.

Keys are serialized as :func:`reference.model.keys.serialized_key` writes them. Like every kssim
store, this one keeps keys of different JSON types apart even where their bytes coincide
(``key_identity``): when FK and PK are strings (the common case) an entry's sort key is exactly
Kafka's CombinedKey bytes; a FK of another type is marked by ``0xFF`` and a type letter in front
of its length, a PK of another type by ``0xFF`` and a type letter in front of its bytes. UTF-8
never contains ``0xFF`` and a length's first byte is at most ``0x7F``, so no marked key equals or
prefixes an unmarked one, a scan returns only its FK's type, and among keys of one type the order
is exactly the CombinedKey bytes' (subscribers of one FK with PKs of another type come after
those with string PKs, grouped by type: orders Kafka, with one serde per topic, never sees).

A value is ``(wrapper, ts)``: the subscription most recently received for (fk, pk) and the
timestamp of its record (the LHS record's ts). Backed by a ``sortedcontainers.SortedDict``
(a hash table plus a sorted list of keys); below, ``n`` is the number of entries and ``m`` the
number of subscribers a scan returns.
"""
from __future__ import annotations

from sortedcontainers import SortedDict

from kssim.reference.model.keys import serialized_key

_LENGTH_BYTES = 4


#: the mark of a key that is not a string: 0xFF and a letter for its JSON type
_TYPE_MARK = {bool: b"\xffb", int: b"\xffi", float: b"\xfff", list: b"\xffl", dict: b"\xffd"}


def prefix_bytes(fk_bytes: bytes) -> bytes:
    """``CombinedKeySchema#prefixBytes``: the 4-byte big-endian length of the serialized FK,
    then the FK bytes."""
    return len(fk_bytes).to_bytes(_LENGTH_BYTES, "big") + fk_bytes


def combined_key_bytes(fk_bytes: bytes, pk_bytes: bytes) -> bytes:
    """``CombinedKeySchema#toBytes``: :func:`prefix_bytes` of the FK, then the serialized PK."""
    return len(fk_bytes).to_bytes(_LENGTH_BYTES, "big") + fk_bytes + pk_bytes


def scan_prefix(fk) -> bytes:
    """The sort-key prefix of every subscriber of ``fk``: its CombinedKey prefix, marked with its
    type unless it is a string. Cost: one serialization."""
    if fk.__class__ is str:
        data = fk.encode("utf-8", "replace")
        return len(data).to_bytes(_LENGTH_BYTES, "big") + data
    data = serialized_key(fk)
    return _TYPE_MARK.get(fk.__class__, b"\xffo") + len(data).to_bytes(_LENGTH_BYTES, "big") + data


def store_key(fk, pk) -> bytes:
    """The sort key of the entry of (fk, pk): the CombinedKey bytes, with the type marks of the
    module docstring for keys that are not strings. Cost: two serializations."""
    if pk.__class__ is str:
        return scan_prefix(fk) + pk.encode("utf-8", "replace")
    return scan_prefix(fk) + _TYPE_MARK.get(pk.__class__, b"\xffo") + serialized_key(pk)


class SubscriptionStore:
    """CombinedKey bytes -> (subscription wrapper, ts), in unsigned byte order of the key."""

    __slots__ = ("_entries",)

    def __init__(self):
        self._entries = SortedDict()

    def get(self, key):
        """The ``(wrapper, ts)`` stored under ``key`` (a :func:`store_key`), or None.

        Cost: O(1) expected (a hash lookup)."""
        return self._entries.get(key)

    def put(self, key, wrapper, ts) -> None:
        """Store ``(wrapper, ts)`` under ``key``, overwriting.

        Cost: O(1) expected when the key is present (a hash update), O(log n) when it is new
        (an insertion into the sorted key list)."""
        self._entries[key] = (wrapper, ts)

    def delete(self, key) -> None:
        """Remove ``key`` if present (a delete of an absent key is a no-op, as in Kafka).

        Cost: O(log n) when present, O(1) expected otherwise."""
        self._entries.pop(key, None)

    def prefix_scan(self, fk):
        """The entries of every subscriber of ``fk``: ``(key, (wrapper, ts))`` pairs in ascending
        order of the CombinedKey bytes, i.e. of the subscribers' serialized PK bytes
        (``store.range(prefix, Bytes.increment(prefix))`` filtered on the prefix, as
        ``ForeignTableJoinProcessorSupplier`` scans). Returned as a list, so the caller may
        change the store while it walks the result.

        Cost: O(log n + m) (one bisection, then the m matching keys)."""
        prefix = scan_prefix(fk)
        entries = self._entries
        out = []
        for key in entries.irange(minimum=prefix):
            if not key.startswith(prefix):
                break
            out.append((key, entries[key]))
        return out

    def __len__(self):
        """Number of subscriptions stored. Cost: O(1)."""
        return len(self._entries)

    def __iter__(self):
        """Every key, in CombinedKey byte order. Cost: O(n) for the whole walk."""
        return iter(self._entries)
