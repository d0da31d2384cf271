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
