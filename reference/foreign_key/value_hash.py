"""The hash of an LHS value that a foreign-key join's subscription carries and its response is
checked against (``SubscriptionSendProcessorSupplier`` / ``ResponseJoinProcessorSupplier``).

Kafka hashes the serialized LHS value with Murmur3 x64-128; only equality of two hashes is ever
used, so kssim takes another 128-bit digest of the value's bytes: BLAKE2b (16 bytes) of its
compact JSON text in document order (the bytes a JSON serde writes: ``{"a":1,"b":2}`` and
``{"b":2,"a":1}`` differ, as do ``1`` and ``1.0``). A deleted LHS row hashes to None, and None
equals None. Equal values hash equal, so a value that comes back (v1 -> v2 -> v1) makes a
response computed for the first v1 valid again, as in Kafka.

:class:`HashCache` computes each LHS value's hash once: when the subscription is sent, and
reuses it when a response is checked against the same (identical) stored value.
"""
from __future__ import annotations

import hashlib
import json

_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, check_circular=False).encode
_blake2b = hashlib.blake2b


def value_hash(value):
    """The 16-byte digest of ``value``'s serialized bytes; None for None (a deleted row)."""
    if value is None:
        return None
    return _blake2b(_encode(value).encode("utf-8", "replace"), digest_size=16).digest()


def short(digest) -> str:
    """A hash for people: its first 8 hex digits, or ``null`` (a delete's hash)."""
    return "null" if digest is None else digest.hex()[:8]


class HashCache:
    """The hash of each LHS key's current value, computed once per stored value object.

    Keyed by the key's identity; an entry ``(value, hash)`` is reused only while the store
    still holds that very object (``is``), so it can never be stale. Cost: O(1) expected per
    lookup, plus one hash when the value changed."""

    __slots__ = ("entries",)

    def __init__(self):
        self.entries = {}  # key identity -> (value, hash)

    def of(self, key_id, value):
        """The hash of ``value``, the current value of ``key_id`` (None: the row is absent)."""
        if value is None:
            self.entries.pop(key_id, None)
            return None
        cached = self.entries.get(key_id)
        if cached is not None and cached[0] is value:
            return cached[1]
        digest = _blake2b(_encode(value).encode("utf-8", "replace"), digest_size=16).digest()
        self.entries[key_id] = (value, digest)
        return digest
