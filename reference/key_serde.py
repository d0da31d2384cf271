"""The bytes a record key serializes to, where Kafka orders records by serialized key.

Kafka orders some stores by key bytes (the outer-join store of a stream-stream join, the
stream-table grace buffer), so equal-timestamp records come out in key-byte order, not arrival
order. Scenario keys are JSON values; this stands in for a sensible key serde: strings as UTF-8
(``StringSerializer``), integers as 8-byte big-endian two's complement (``LongSerializer``; for
ints that fit 32 bits the order equals ``IntegerSerializer``'s), floats as IEEE-754 doubles,
booleans as one byte, anything else as its compact JSON text. Stores compare these bytes
unsigned, as Python compares ``bytes``.
"""
from __future__ import annotations

import json
import struct

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


def serialized_key(key) -> bytes:
    kind = type(key)
    if kind is str:
        return key.encode("utf-8")
    if kind is bool:
        return b"\x01" if key else b"\x00"
    if kind is int:
        if -(1 << 63) <= key < (1 << 63):
            return _LONG.pack(key)
        return str(key).encode("ascii")
    if kind is float:
        return _DOUBLE.pack(key)
    return json.dumps(key, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
