"""Captured topics as record files: JSONL or Parquet rows with topic, partition, offset, ts, key,
value. Shared by every engine (it models no Kafka rule).

The rows of the files (a folder: its data files in name order), in the order the files are given
and in file order, are the input records: a row's position is its input index (the ``input`` that
outputs name) and that order is ``as_listed``. ``offset`` is optional (default: the previous offset of its topic partition + 1)
and read only by ``timestamp_sync``, where a task takes each partition's records in offset order:
there (``offsets_matter``) given offsets must increase within a topic partition; ``as_listed``
processes the rows in file order and ignores them. Bad rows are errors naming the file, the line
(JSONL) or row (Parquet) and the field; nothing is silently lost. The Spark backend reads the same
files with the same numbering and checks (``spark_backend/runtime/record_files.py``).
"""
from __future__ import annotations

import json
import os
from typing import Iterable, Iterator, List, Tuple

from reference.model.errors import ScenarioError
from reference.model.records import NO_OLD_VALUE, InputRecord

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
            yield f"row {n}", _decode_json_columns(path, f"row {n}", row)
            n += 1


def _decode_json_columns(path, where, row: dict) -> dict:
    """In Parquet, ``key`` and ``value`` are strings holding JSON text (a null is a null key/value)."""
    for name in ("key", "value"):
        text = row.get(name)
        if text is not None:
            try:
                row[name] = json.loads(text)
            except (TypeError, json.JSONDecodeError):
                raise ScenarioError(path, f"{where}, field {name}", f"must be JSON text, got {text!r}") from None
    return row


def read_rows(path) -> Iterator[Tuple[str, dict]]:
    path = os.fspath(path)
    if not os.path.exists(path):
        raise ScenarioError(path, "", "no such file")
    if path.endswith(".parquet") or os.path.basename(os.path.dirname(path)).endswith(".parquet"):
        return _rows_parquet(path)
    return _rows_jsonl(path)


def data_files(path) -> List[str]:
    """A record file, or a folder's data files in name order (a folder written by Spark: part
    files; names starting with ``_`` or ``.`` are metadata), as the Spark backend reads them."""
    path = os.fspath(path)
    if not os.path.isdir(path):
        return [path]
    return [os.path.join(path, name) for name in sorted(os.listdir(path))
            if not name.startswith(("_", ".")) and os.path.isfile(os.path.join(path, name))]


def read_record_files(paths: Iterable, topics, partitions: dict, offsets_matter: bool = True) -> List[InputRecord]:
    """All rows of ``paths`` as input records, numbered in file order (see the module docstring)."""
    return list(iter_record_files(paths, topics, partitions, offsets_matter))


def iter_record_files(paths: Iterable, topics, partitions: dict, offsets_matter: bool = True) -> Iterator[InputRecord]:
    """The same records as a stream, read batch by batch: memory stays flat for ``as_listed``.
    ``offsets_matter`` (``timestamp_sync``): given offsets must increase per topic partition."""
    index = 0
    last_offset = {}
    rank = {t: i for i, t in enumerate(topics)}
    for path in (file for given in paths for file in data_files(given)):
        for where, row in read_rows(path):
            topic, partition, offset, ts, key, value = _check_row(path, where, row, rank, partitions)
            coord = (topic, partition)
            if offset is None:
                offset = last_offset.get(coord, -1) + 1
            elif offsets_matter and offset <= last_offset.get(coord, -1):
                raise ScenarioError(path, f"{where}, field offset",
                                    f"offset {offset} of topic {topic!r} partition {partition} comes after offset "
                                    f"{last_offset[coord]}: list each partition's records in increasing offset order")
            last_offset[coord] = offset
            yield InputRecord(topic, key, value, ts, partition, index)
            index += 1


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
        raise ScenarioError(path, f"{where}, field partition",
                            f"must be a partition of {topic!r} (0 to {partitions.get(topic, 1) - 1}), got {partition!r}")
    if offset is not None and (not _is_int(offset) or offset < 0):
        raise ScenarioError(path, f"{where}, field offset", f"must be a non-negative integer, got {offset!r}")
    if not _is_int(ts) or ts < 0:
        raise ScenarioError(path, f"{where}, field ts", f"must be a non-negative integer timestamp, got {ts!r}")
    return topic, partition, offset, ts, row["key"], row["value"]


def output_row(rec, with_old_value: bool) -> dict:
    """An output record with the fields of ``kssim run --format jsonl``."""
    row = {"topic": rec.topic, "partition": rec.partition, "key": rec.key, "value": rec.value, "ts": rec.ts,
           "input": rec.input_index}
    if with_old_value:
        row["old_value"] = None if rec.old_value is NO_OLD_VALUE else rec.old_value
    return row


def write_rows(path, rows: List[dict]) -> None:
    """JSONL (one object a line), or Parquet with ``key``/``value``/``old_value`` as JSON text,
    as the Spark backend writes them."""
    path = os.fspath(path)
    if path.endswith(".parquet"):
        import pyarrow as pa
        import pyarrow.parquet as pq

        json_columns = ("key", "value", "old_value")
        # compact, in document order: the text a JSON serde writes (and the Spark backend)
        table_rows = [{k: (None if v is None else json.dumps(v, separators=(",", ":"), ensure_ascii=False))
                       if k in json_columns else v for k, v in row.items()} for row in rows]
        pq.write_table(pa.Table.from_pylist(table_rows), path)
        return
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
