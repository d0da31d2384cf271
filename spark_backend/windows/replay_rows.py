"""What the windowed aggregations' sequential replays (``mapInArrow`` bodies) share: windowed key
text, JSON values, and Arrow batches of their output rows."""
from __future__ import annotations

import json

_ARROW_TYPES = {"INT": "int32", "BIGINT": "int64", "BINARY": "binary", "STRING": "string", "BOOLEAN": "bool_"}


def windowed_key_text(key_text: str, start: int, end: int) -> str:
    """``reference.model.records.windowed_key(key, start, end)`` as key text (compact JSON in
    document order, as ``reference.model.keys.key_text`` writes it), from the key's own text."""
    return f'{{"key":{key_text},"start":{start},"end":{end}}}'


def json_value(value):
    """A value as compact JSON text (``spark_backend.runtime.inputs.json_text``), None for null."""
    if value is None:
        return None
    if value.__class__ is int:  # the hot case (count, sum): its text is its JSON
        return str(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def record_type(name: str, fields):
    """A light record class over ``fields`` (one per input row of a replay)."""
    from collections import namedtuple

    return namedtuple(name, fields)


def arrow_batch(rows, ddl: str):
    """Rows (tuples in ``ddl``'s column order) as one Arrow record batch of that schema; values
    past the schema's columns at the end of a row are left out."""
    import pyarrow as pa

    fields = [part.split() for part in ddl.split(", ")]
    columns = list(zip(*rows)) if rows else [()] * len(fields)
    arrays = [pa.array(column, getattr(pa, _ARROW_TYPES[kind])()) for (name, kind), column in zip(fields, columns)]
    return pa.RecordBatch.from_arrays(arrays, names=[name for name, _ in fields])
