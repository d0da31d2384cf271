"""kssim's Parquet record files: the columns of the JSONL records (``key`` and ``value`` hold JSON
text), checked by :func:`reference.model.record_files.check_parquet_columns`; read batch by batch
with Arrow. A truncated or damaged file is an error naming it (the row, when it breaks mid-way)."""
from __future__ import annotations

from typing import Iterator, Tuple

from kssim.reference.model.captures.lines import loads_strict
from kssim.reference.model.errors import ScenarioError
from kssim.reference.model.record_files import MUST_BE_JSON_TEXT, NotJson, arrow_kind, check_parquet_columns

#: rows per Arrow batch: memory stays flat whatever the file's size
BATCH_ROWS = 65536


def _pyarrow(path):
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ScenarioError(path, "", "reading Parquet needs pyarrow (pip install pyarrow)") from None
    return pq


def open_file(path):
    """The ``pyarrow.parquet.ParquetFile`` of ``path``, its columns checked; ScenarioError when
    it is not a readable Parquet file."""
    pq = _pyarrow(path)
    import pyarrow as pa

    try:
        source = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise ScenarioError(path, "", f"not a readable Parquet file (truncated or damaged?): {exc}") from None
    check_parquet_columns(path, {field.name: arrow_kind(field.type) for field in source.schema_arrow})
    return source


def count_rows(path) -> int:
    return open_file(path).metadata.num_rows


def numbered(path) -> Iterator[Tuple[int, dict, tuple]]:
    """``(row number from 0, row, ())`` of each row, key and value decoded."""
    import pyarrow as pa

    source = open_file(path)
    n = 0
    batches = source.iter_batches(batch_size=BATCH_ROWS)
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except (pa.ArrowException, OSError) as exc:
            raise ScenarioError(path, f"row {n}", f"cannot be read (truncated or damaged file?): {exc}") from None
        try:
            rows = batch.to_pylist()
        except (pa.ArrowException, UnicodeDecodeError) as exc:
            raise ScenarioError(path, f"rows {n}-{n + batch.num_rows - 1}", f"cannot be read: {exc}") from None
        for row in rows:
            yield n, _decode_json_columns(path, f"row {n}", row), ()
            n += 1


def rows(path) -> Iterator[Tuple[str, dict]]:
    """``(where, row)`` of each row (``where``: ``row N``, from 0), key and value decoded."""
    for n, row, _ in numbered(path):
        yield f"row {n}", row


def _decode_json_columns(path, where, row: dict) -> dict:
    """In Parquet, ``key`` and ``value`` are strings holding JSON text (a null is a null key/value)."""
    for name in ("key", "value"):
        text = row.get(name)
        if text is not None:
            try:
                row[name] = loads_strict(text)
            except NotJson:
                raise ScenarioError(path, f"{where}, field {name}", MUST_BE_JSON_TEXT + repr(text)) from None
    return row
