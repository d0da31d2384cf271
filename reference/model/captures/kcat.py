"""``kcat -C -J`` captures: one JSON envelope a line, as kcat (formerly kafkacat) prints it.

Accepted fields (kcat's JSON output): ``topic``, ``partition``, ``offset``, ``tstype``
(``create``, ``logappend``; ``unknown`` or absent when the broker gave no timestamp), ``ts``
(absent with it), ``broker``, ``headers`` (a flat list ``[name, value, ...]``, or an object of
lists; absent when the record has none; not read), ``key`` and ``payload`` (the bytes as text, or
null). With a deserializer (``-s avro``) kcat writes the key or payload as JSON with
``key_schema_id``/``value_schema_id`` (used as they are), or null with ``key_error`` /
``payload_error``: such a record is an error. Any other field is an error.
"""
from __future__ import annotations

from typing import Iterator, Tuple

from kssim.reference.model.captures import jsonl
from kssim.reference.model.errors import ScenarioError

KCAT_FIELDS = ("topic", "partition", "offset", "tstype", "ts", "broker", "headers", "key", "payload",
               "key_error", "payload_error", "key_schema_id", "value_schema_id")
#: kcat's timestamp types that carry a timestamp
TIMESTAMP_TYPES = ("create", "logappend")


def looks_like(first: dict) -> bool:
    """Whether a JSON object line is a kcat envelope rather than a kssim record."""
    return "payload" in first or "tstype" in first or "broker" in first


#: the key and value as text, and the fields they are named by in errors
RAW_TEXT = (("key", "key"), ("value", "payload"))
RAW_KEY, RAW_VALUE = RAW_TEXT[:1], RAW_TEXT[1:]


def numbered(path) -> Iterator[Tuple[int, dict, tuple]]:
    """``(line number, row, raw)`` of each line: a kssim record row (topic, partition, offset, ts,
    key, value) and which of key and value are still text (``raw``: (row field, kcat field)
    pairs; a field kcat deserialized itself, with a schema id, is JSON already)."""
    for n, envelope, _ in jsonl.numbered(path):
        if envelope.__class__ is dict and envelope.keys() <= _USUAL_FIELDS and _REQUIRED <= envelope.keys():
            # the usual envelope in one step; anything else is checked field by field
            key, payload, headers = envelope["key"], envelope["payload"], envelope.get("headers")
            if (envelope["tstype"] in TIMESTAMP_TYPES and (key is None or key.__class__ is str)
                    and (payload is None or payload.__class__ is str) and envelope["partition"] is not None
                    and envelope["offset"] is not None and (headers is None or headers.__class__ in (list, dict))):
                yield n, {"topic": envelope["topic"], "partition": envelope["partition"], "offset": envelope["offset"],
                          "ts": envelope["ts"], "key": key, "value": payload}, RAW_TEXT
                continue
        yield (n,) + _record(path, f"line {n}", envelope)


#: the fields of an envelope without deserializer output
_USUAL_FIELDS = frozenset(("topic", "partition", "offset", "tstype", "ts", "broker", "headers", "key", "payload"))
#: the fields every usual envelope has
_REQUIRED = frozenset(("topic", "partition", "offset", "tstype", "ts", "key", "payload"))


def _fail(path, where, field, problem):
    return ScenarioError(path, f"{where}, field {field}" if field else where, problem)


def _record(path, where, envelope):
    if not isinstance(envelope, dict):
        raise _fail(path, where, None, "a kcat -J record must be a JSON object")
    for name in envelope:
        if name not in KCAT_FIELDS:
            raise _fail(path, where, name, f"unknown kcat field {name!r} (expected: {', '.join(KCAT_FIELDS)})")
    for name in ("topic", "partition", "offset", "key", "payload"):
        if name not in envelope:
            raise _fail(path, where, name, "missing field (kcat -C -J writes it for every record)")
    for name, field in (("key_error", "key"), ("payload_error", "payload")):
        if name in envelope:
            raise _fail(path, where, field, f"kcat could not deserialize the {field}: {envelope[name]}")
    tstype = envelope.get("tstype")
    if "ts" not in envelope or tstype not in TIMESTAMP_TYPES:
        raise _fail(path, where, "ts", f"the record has no timestamp (tstype {tstype!r}): Kafka Streams needs "
                                       f"one (CreateTime or LogAppendTime)")
    headers = envelope.get("headers")
    if headers is not None and not isinstance(headers, (list, dict)):
        raise _fail(path, where, "headers", f"must be kcat's list [name, value, ...] or object, got {headers!r}")
    if envelope["partition"] is None or envelope["offset"] is None:
        field = "partition" if envelope["partition"] is None else "offset"
        raise _fail(path, where, field, "must be a non-negative integer, got None")
    key_raw = _is_text(path, where, envelope, "key", "key_schema_id")
    value_raw = _is_text(path, where, envelope, "payload", "value_schema_id")
    row = {"topic": envelope["topic"], "partition": envelope["partition"], "offset": envelope["offset"],
           "ts": envelope["ts"], "key": envelope["key"], "value": envelope["payload"]}
    return row, RAW_TEXT if key_raw and value_raw else RAW_KEY if key_raw else RAW_VALUE if value_raw else ()


def _is_text(path, where, envelope, field, schema_field) -> bool:
    """Whether the key or payload is text to read (not JSON kcat deserialized itself)."""
    if schema_field in envelope:  # kcat deserialized it (Avro) and wrote it as JSON
        return False
    text = envelope[field]
    if text is not None and not isinstance(text, str):
        raise _fail(path, where, field, f"must be the {field} bytes as text (a string) or null, got {text!r}")
    return True
