"""Record keys as Kafka sees them: serialized bytes. One definition for every engine and store.

Kafka Streams keys every store, join and partitioner by the key's serialized bytes, never by the
deserialized object: two keys are the same key exactly when their bytes are equal. Scenario keys
are JSON values; kssim serializes them as a topic's key serde would, chosen by the key's JSON type:
strings as UTF-8 (``StringSerializer``; a lone surrogate becomes ``?``, as Java's
``String#getBytes(UTF_8)`` writes it), integers as 8-byte big-endian two's complement
(``LongSerializer``; for ints that fit 32 bits the order equals ``IntegerSerializer``'s), floats
as IEEE-754 doubles, booleans as one byte, arrays and objects as their compact JSON text in
document order (a JSON serde: reordered fields are different bytes, a different key).

- :func:`serialized_key`: those bytes. Stores that Kafka orders by key bytes (the outer-join store,
  the grace buffer, later the FK subscription store's CombinedKey) compare them unsigned, as
  Python compares ``bytes``; murmur2 partitioning hashes them.
- :func:`key_identity`: what stores and joins use as the key (dict keys, equality): equal exactly
  when the serialized bytes are equal and the keys are of the same JSON type. A real topic has one
  key serde, so keys of different types never meet in Kafka; kssim keeps them apart rather than let
  ``"\x01"`` and ``true`` (both one byte 0x01) collide. So ``1``, ``1.0``, ``true`` and ``"1"`` are
  four different keys, as they are to Kafka.
- :func:`key_text`: the same identity as text, for engines that carry keys as strings (the Spark
  backend joins on it): compact JSON in document order with lone surrogates replaced as above;
  ``key_text(a) == key_text(b)`` exactly when ``key_identity(a) == key_identity(b)``
  (``tests/model/test_keys.py`` checks it on generated keys).
"""
from __future__ import annotations

import json
import struct
from contextlib import contextmanager

_LONG = struct.Struct(">q")
_DOUBLE = struct.Struct(">d")


def murmur2(data: bytes) -> int:
    """Kafka's 32-bit murmur2 (``Utils.murmur2``, seed 0x9747b28c), as a signed int."""
    m, r = 0x5BD1E995, 24
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    for i in range(0, length - length % 4, 4):
        k = data[i] | data[i + 1] << 8 | data[i + 2] << 16 | data[i + 3] << 24
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    tail = length % 4
    base = length - tail
    if tail == 3:
        h ^= data[base + 2] << 16
    if tail >= 2:
        h ^= data[base + 1] << 8
    if tail >= 1:
        h ^= data[base]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(key, partitions: int) -> int:
    """The partition Kafka's default partitioner picks for a non-null key:
    ``toPositive(murmur2(keyBytes)) % numPartitions``."""
    return (murmur2(serialized_key(key)) & 0x7FFFFFFF) % partitions


#: which serde writes keys: format 1's per-type serdes, or the one JSON serde of topology graphs
_JSON_SERDE = [False]


def set_json_key_serde(on: bool) -> bool:
    """Switch the JSON key serde on or off (see :func:`json_key_serde`); returns the previous state,
    for a caller that restores it itself (the graph task does, per record: cheaper than a context
    manager on the hot path)."""
    previous = _JSON_SERDE[0]
    _JSON_SERDE[0] = on
    return previous


@contextmanager
def json_key_serde():
    """Within it, :func:`serialized_key` writes keys as graphs' JSON serde does (Jackson's compact
    JSON, :func:`reference.model.graph.expressions.serialize`): a graph's task runs in it, so its
    stores order keys by those bytes. The reference engine is single-threaded; this is its state."""
    previous = _JSON_SERDE[0]
    _JSON_SERDE[0] = True
    try:
        yield
    finally:
        _JSON_SERDE[0] = previous


def serialized_key(key) -> bytes:
    """The bytes the key serde writes for a non-null key (see the module docstring)."""
    if _JSON_SERDE[0]:
        from kssim.reference.model.graph.expressions import serialize

        return serialize(key)
    kind = type(key)
    if kind is str:
        return key.encode("utf-8", "replace")
    if kind is bool:
        return b"\x01" if key else b"\x00"
    if kind is int:
        if -(1 << 63) <= key < (1 << 63):
            return _LONG.pack(key)
        return str(key).encode("ascii")
    if kind is float:
        return _DOUBLE.pack(key)
    return json.dumps(key, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "replace")


def key_identity(key):
    """The key as stores and joins compare it (see the module docstring); None stays None.

    An ASCII string is its own identity (the hot path: no copy); any other key is the pair
    ``(JSON type, serialized bytes)``, which never equals a string. Cost: O(len) for strings
    (``isascii``), one serialization otherwise."""
    if key.__class__ is str:
        return key if key.isascii() else key.encode("utf-8", "replace").decode("utf-8")
    if key is None:
        return None
    return (key.__class__.__name__, serialized_key(key))


def key_text(key):
    """The key's identity as compact JSON text (document order), or None for a null key."""
    if key is None:
        return None
    text = json.dumps(key, separators=(",", ":"), ensure_ascii=False)
    return text if text.isascii() else text.encode("utf-8", "replace").decode("utf-8")
