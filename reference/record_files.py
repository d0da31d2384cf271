"""Captured topics as record files: JSONL or Parquet rows with topic, partition, offset, ts, key,
value. Shared by every engine (it models no Kafka rule).

Rows are put in each partition's offset order; the canonical input list is ordered by (topic as
the topology declares them, partition, offset), and a row's index in it is the ``input`` that
outputs name. Bad rows are errors naming the file, the line (JSONL) or row (Parquet) and the
field; duplicate (topic, partition, offset) coordinates are errors too: nothing is silently lost.
"""
from __future__ import annotations

import json
import os
from typing import Iterable, Iterator, List, Tuple

from .errors import ScenarioError
from .records import NO_OLD_VALUE, InputRecord

RECORD_FIELDS = ("topic", "partition", "offset", "ts", "key", "value")


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _rows_jsonl(path) -> Iterator[Tuple[str, dict]]:
    with open(path, encoding="utf-8") as handle:
        for n, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                yield f"line {n}", json.loads(line)
            except json.JSONDecodeError as exc:
                raise ScenarioError(path, f"line {n}", f"not valid JSON: {exc.msg}") from None


def _rows_parquet(path) -> Iterator[Tuple[str, dict]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ScenarioError(path, "", "reading Parquet needs pyarrow (pip install 'kssim[spark]')") from None
    n = 0
    for batch in pq.ParquetFile(path).iter_batches():
        for row in batch.to_pylist():
            yield f"row {n}", _decode_json_columns(row)
            n += 1


def _decode_json_columns(row: dict) -> dict:
    """Parquet files written by kssim carry keys and values as JSON text (``key_json``/``value_json``)."""
    out = dict(row)
    for name in ("key", "value"):
        col = f"{name}_json"
        if col in out:
            text = out.pop(col)
            out[name] = None if text is None else json.loads(text)
    return out


def read_rows(path) -> Iterator[Tuple[str, dict]]:
    path = os.fspath(path)
    if not os.path.exists(path):
        raise ScenarioError(path, "", "no such file")
    if path.endswith(".parquet"):
        return _rows_parquet(path)
    return _rows_jsonl(path)


def read_record_files(paths: Iterable, topics, partitions: dict) -> List[InputRecord]:
    """All rows of ``paths`` as input records in canonical order (see the module docstring)."""
    rows = []
    seen = {}
    rank = {t: i for i, t in enumerate(topics)}
    for path in paths:
        for where, row in read_rows(path):
            rec = _check_row(path, where, row, rank, partitions)
            coord = (rec[0], rec[1], rec[2])
            if coord in seen:
                raise ScenarioError(path, where, f"duplicate record: topic {coord[0]!r} partition {coord[1]} offset {coord[2]} "
                                                 f"already read at {seen[coord]}")
            seen[coord] = f"{path} {where}"
            rows.append(rec)
    rows.sort(key=lambda r: (rank[r[0]], r[1], r[2]))
    return [InputRecord(topic=t, key=k, value=v, ts=ts, partition=p, index=i) for i, (t, p, _, ts, k, v) in enumerate(rows)]


def _check_row(path, where, row, rank, partitions):
    if not isinstance(row, dict):
        raise ScenarioError(path, where, "a record must be an object")
    for name in row:
        if name not in RECORD_FIELDS:
            raise ScenarioError(path, f"{where}, field {name}", f"unknown field (expected: {', '.join(RECORD_FIELDS)})")
    for name in ("topic", "ts", "key", "value"):
        if name not in row:
            raise ScenarioError(path, f"{where}, field {name}", "missing required field")
    topic = row["topic"]
    if topic not in rank:
        raise ScenarioError(path, f"{where}, field topic", f"must be one of {', '.join(rank)}, got {topic!r}")
    partition, offset, ts = row.get("partition", 0), row.get("offset"), row["ts"]
    if not _is_int(partition) or not 0 <= partition < partitions.get(topic, 1):
        raise ScenarioError(path, f"{where}, field partition", f"must be a partition of {topic!r} (0 to {partitions.get(topic, 1) - 1}), got {partition!r}")
    if offset is None:
        raise ScenarioError(path, f"{where}, field offset", "missing required field (records are replayed in offset order)")
    if not _is_int(offset) or offset < 0:
        raise ScenarioError(path, f"{where}, field offset", f"must be a non-negative integer, got {offset!r}")
    if not _is_int(ts) or ts < 0:
        raise ScenarioError(path, f"{where}, field ts", f"must be a non-negative integer timestamp, got {ts!r}")
    return (topic, partition, offset, ts, row["key"], row["value"])


def output_row(rec, source: InputRecord, with_old_value: bool) -> dict:
    row = {"topic": rec.topic, "partition": rec.partition, "key": rec.key, "value": rec.value, "ts": rec.ts,
           "input": rec.input_index, "input_topic": source.topic, "input_partition": source.partition}
    if with_old_value:
        row["old_value"] = None if rec.old_value is NO_OLD_VALUE else rec.old_value
    return row


def write_rows(path, rows: List[dict]) -> None:
    """JSONL (one object a line), or Parquet with keys and values as JSON text columns."""
    path = os.fspath(path)
    if path.endswith(".parquet"):
        import pyarrow as pa
        import pyarrow.parquet as pq

        table_rows = []
        for row in rows:
            r = {k: v for k, v in row.items() if k not in ("key", "value", "old_value")}
            r["key_json"] = json.dumps(row["key"], sort_keys=True)
            r["value_json"] = json.dumps(row["value"], sort_keys=True)
            if "old_value" in row:
                r["old_value_json"] = json.dumps(row["old_value"], sort_keys=True)
            table_rows.append(r)
        pq.write_table(pa.Table.from_pylist(table_rows), path)
        return
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, sort_keys=False) + "\n")
