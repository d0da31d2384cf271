"""``kafka-console-consumer`` text captures (Kafka's ``DefaultMessageFormatter``).

One record a line, its fields separated by ``key.separator`` (default tab) in this order, each
present when its property is true: ``print.timestamp`` (``CreateTime:1700000000000``,
``LogAppendTime:...``, or ``NO_TIMESTAMP``), ``print.partition`` (``Partition:0``),
``print.offset`` (``Offset:12``), ``print.headers`` (``NO_HEADERS`` or ``k:v,k2:v2``; not read),
``print.key`` (the key), then the value (``print.value``, on by default). A null key or value is
printed ``null``. Understood here: Kafka 2.7+ clients (earlier ones print a bare partition after
the value: capture without ``print.partition``), ``print.timestamp=true`` and ``print.key=true``
(required: without a timestamp or a key there is nothing to replay), any of partition, offset and
headers, the default ``null.literal`` and ``line.separator``. The layout of a file is read from its
first record line (the prefixes are recognised; headers when they print ``NO_HEADERS``, or with
``--console-headers``), then every line must follow it. A key must not contain the separator (the
first separator after the known fields ends the key); a value may, but not a line break (the
rest of the value would be read as a next line, and refused). A console file names no topic:
``--input TOPIC=PATH`` names it, else the file's name without its extension.
"""
from __future__ import annotations

import re
from typing import Iterator, Tuple

import attrs

from kssim.reference.model.captures.lines import decode_line, read_lines
from kssim.reference.model.captures.options import CaptureOptions
from kssim.reference.model.errors import ScenarioError
from kssim.reference.model.record_files import MAX_LONG

_TIMESTAMP = re.compile(r"(CreateTime|LogAppendTime):(-?[0-9]+)")
_PARTITION = re.compile(r"Partition:(-?[0-9]+)")
_OFFSET = re.compile(r"Offset:(-?[0-9]+)")
NO_TIMESTAMP = "NO_TIMESTAMP"
NO_HEADERS = "NO_HEADERS"
NULL_LITERAL = "null"
TIMESTAMP_PREFIXES = ("CreateTime:", "LogAppendTime:", NO_TIMESTAMP)


def looks_like(first_line: str) -> bool:
    """Whether a first line is console-consumer text printed with ``print.timestamp=true``."""
    return first_line.startswith(TIMESTAMP_PREFIXES)


@attrs.frozen
class Layout:
    """Which optional fields a console file's lines carry (read from its first record line)."""

    separator: str
    partition: bool
    offset: bool
    headers: bool


def _fail(path, n, field, problem):
    return ScenarioError(path, f"line {n}, field {field}" if field else f"line {n}", problem)


def _layout(path, n, line: str, options: CaptureOptions) -> Layout:
    sep = options.console_key_separator
    fields = line.split(sep)
    if not fields[0].startswith(TIMESTAMP_PREFIXES):
        raise _fail(path, n, "timestamp", "no timestamp: capture with kafka-console-consumer --property "
                                          "print.timestamp=true (Kafka Streams orders records by it)")
    rest = fields[1:]
    partition = bool(rest) and _PARTITION.fullmatch(rest[0]) is not None
    rest = rest[partition:]
    offset = bool(rest) and _OFFSET.fullmatch(rest[0]) is not None
    rest = rest[offset:]
    headers = options.console_headers or (bool(rest) and rest[0] == NO_HEADERS)
    return Layout(sep, partition, offset, headers)


def _long(path, n, field, text):
    number = int(text)
    if not 0 <= number <= MAX_LONG:
        raise _fail(path, n, field, f"must be a non-negative Java long, got {text}")
    return number


#: both key and value are text (row field, the field errors name)
RAW_TEXT = (("key", "key"), ("value", "value"))


def numbered(path, topic: str, options: CaptureOptions) -> Iterator[Tuple[int, dict, tuple]]:
    """``(line number, row, raw)`` of each line: a kssim record row of ``topic`` whose key and
    value are text (``raw``)."""
    layout = usual = None
    for n, raw in read_lines(path):
        line = decode_line(path, n, raw)
        if layout is None:
            layout = _layout(path, n, line, options)
            usual = _usual_line(layout)
        match = usual.fullmatch(line)
        if match is not None:  # the usual line, in one step; anything else is parsed field by field
            ts, partition, offset, key, value = match.groups()
            ts, partition = int(ts), int(partition or 0)
            offset = int(offset) if offset else None
            if ts <= MAX_LONG and partition <= MAX_LONG and (offset is None or offset <= MAX_LONG) and \
                    (layout.headers or key != NO_HEADERS):
                row = {"topic": topic, "ts": ts, "partition": partition,
                       "key": None if key == NULL_LITERAL else key, "value": None if value == NULL_LITERAL else value}
                if offset is not None:
                    row["offset"] = offset
                yield n, row, RAW_TEXT
                continue
        yield n, _record(path, n, line, layout, topic), RAW_TEXT


def _usual_line(layout: Layout):
    """A regular expression for a well-formed line of ``layout``: groups ts, partition, offset
    (empty when the layout has none), key (up to the first separator), value."""
    sep = re.escape(layout.separator)
    pattern = "(?:CreateTime|LogAppendTime):([0-9]{1,19})"
    pattern += sep + "Partition:([0-9]{1,19})" if layout.partition else "()"
    pattern += sep + "Offset:([0-9]{1,19})" if layout.offset else "()"
    if layout.headers:
        pattern += sep + ".*?"
    pattern += sep + "(.*?)" + sep + "(.*)"
    return re.compile(pattern, re.DOTALL)


def _record(path, n, line, layout: Layout, topic) -> dict:
    sep = layout.separator
    head, _, rest = line.partition(sep)
    match = _TIMESTAMP.fullmatch(head)
    if match is None:
        if head == NO_TIMESTAMP:
            raise _fail(path, n, "timestamp", "the record has no timestamp (NO_TIMESTAMP): Kafka Streams needs one")
        raise _fail(path, n, "timestamp", f"expected CreateTime:N or LogAppendTime:N, got {head[:40]!r}")
    ts = _long(path, n, "timestamp", match.group(2))
    partition = offset = None
    if layout.partition:
        field, _, rest = rest.partition(sep)
        match = _PARTITION.fullmatch(field)
        if match is None:
            raise _fail(path, n, "partition", f"expected Partition:N (as on the first line of the file), got {field[:40]!r}")
        partition = _long(path, n, "partition", match.group(1))
    if layout.offset:
        field, _, rest = rest.partition(sep)
        match = _OFFSET.fullmatch(field)
        if match is None:
            raise _fail(path, n, "offset", f"expected Offset:N (as on the first line of the file), got {field[:40]!r}")
        offset = _long(path, n, "offset", match.group(1))
    if layout.headers:
        _, _, rest = rest.partition(sep)
    key_text, found, value_text = rest.partition(sep)
    if not found:
        raise _fail(path, n, "key", "no key: capture with kafka-console-consumer --property print.key=true "
                                    f"(and the same --console-key-separator as its key.separator, {sep!r})")
    if key_text == NO_HEADERS and not layout.headers:
        raise _fail(path, n, "headers", "this line has headers but the file's first line had none: pass "
                                        "--console-headers (the capture used print.headers=true)")
    row = {"topic": topic, "ts": ts, "key": None if key_text == NULL_LITERAL else key_text,
           "value": None if value_text == NULL_LITERAL else value_text}
    if partition is not None:
        row["partition"] = partition
    if offset is not None:
        row["offset"] = offset
    return row
