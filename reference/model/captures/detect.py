"""Which format a capture file is in (``--input-format auto``), and a folder's data files.

A file starting with Parquet's magic bytes ``PAR1`` (or named ``.parquet``) is Parquet; otherwise
its first non-blank line decides: a JSON object with kcat's fields (``payload``, ``tstype`` or
``broker``) is kcat, another JSON object a kssim JSONL record, a line starting ``CreateTime:``,
``LogAppendTime:`` or ``NO_TIMESTAMP`` kafka-console-consumer text. A file with no record has no
format (None). A folder's files must all be in one format.
"""
from __future__ import annotations

import os
from typing import List, Optional

from kssim.reference.model.captures import console, kcat
from kssim.reference.model.captures.lines import decode_line, loads_strict, read_lines
from kssim.reference.model.captures.options import InputFormat
from kssim.reference.model.errors import ScenarioError
from kssim.reference.model.record_files import NotJson

PARQUET_MAGIC = b"PAR1"


def data_files(path) -> List[str]:
    """A capture file, or a folder's data files in name order (names starting with ``_`` or
    ``.`` are metadata, as Spark writes them); ScenarioError if it does not exist."""
    path = os.fspath(path)
    if path == "":
        raise ScenarioError("--input ''", "", "an empty path names no capture")
    if not os.path.exists(path):
        raise ScenarioError(path, "", "no such file or folder")
    if not os.path.isdir(path):
        return [path]
    names = [name for name in sorted(os.listdir(path)) if not name.startswith(("_", "."))]
    folders = [name for name in names if os.path.isdir(os.path.join(path, name))]
    if folders:
        # Spark's partitionBy("topic") writes topic=orders/part-...: its records would be skipped unseen
        hive = "=" in folders[0]
        raise ScenarioError(path, "", f"holds the subfolder {folders[0]!r}"
                                      f"{' (Hive-style partitioning: its files lack that column)' if hive else ''}: "
                                      "kssim reads the record files directly in a folder, each record naming its "
                                      "topic; write the capture without partitionBy, or pass its files as inputs")
    return [os.path.join(path, name) for name in names if os.path.isfile(os.path.join(path, name))]


def _named_parquet(path) -> bool:
    return path.endswith(".parquet") or os.path.basename(os.path.dirname(path)).endswith(".parquet")


#: the first bytes of compressed files, and the command that undoes each
COMPRESSED = ((b"\x1f\x8b", "gzip", "gunzip"), (b"BZh", "bzip2", "bunzip2"), (b"\xfd7zXZ\x00", "xz", "unxz"),
              (b"\x28\xb5\x2f\xfd", "zstd", "unzstd"), (b"PK\x03\x04", "zip", "unzip"))


def check_not_compressed(path) -> None:
    """ScenarioError naming the compression when the file ``path`` is compressed: its bytes would
    otherwise be read as text and called something else (NUL bytes, not UTF-8)."""
    with open(path, "rb") as handle:
        head = handle.read(6)
    for magic, name, command in COMPRESSED:
        if head.startswith(magic):
            raise ScenarioError(path, "", f"is a {name}-compressed file: kssim reads uncompressed captures "
                                          f"({command} it first)")


def detect_format(path) -> Optional[InputFormat]:
    """The format of the capture file ``path`` from its content; None when it holds no record.
    ScenarioError when no format fits (naming the line)."""
    with open(path, "rb") as handle:
        head = handle.read(len(PARQUET_MAGIC))
    if head == PARQUET_MAGIC or _named_parquet(path):
        return InputFormat.PARQUET
    for n, line in read_lines(path):
        if line.lstrip().startswith(b"{"):
            try:
                first = loads_strict(line)
            except (NotJson, UnicodeDecodeError):
                return InputFormat.JSONL  # its reader names what is wrong with the line
            return InputFormat.KCAT if isinstance(first, dict) and kcat.looks_like(first) else InputFormat.JSONL
        text = decode_line(path, n, line)
        if console.looks_like(text):
            return InputFormat.CONSOLE
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise ScenarioError(path, f"line {n}", f"cannot tell the capture format from {shown!r}: expected a JSON "
                                               f"object (kcat -C -J, kssim JSONL) or kafka-console-consumer text "
                                               f"starting with CreateTime:/LogAppendTime: (capture with --property "
                                               f"print.timestamp=true); or give --input-format")
    return None


def folder_format(folder, files, formats) -> None:
    """ScenarioError when the files of ``folder`` are in more than one format."""
    seen = {}
    for path, fmt in zip(files, formats):
        if fmt is not None:
            seen.setdefault(fmt, path)
    if len(seen) > 1:
        kinds = ", ".join(f"{os.path.basename(p)} is {f.value}" for f, p in seen.items())
        raise ScenarioError(folder, "", f"the folder mixes capture formats ({kinds}): give one folder per format")
