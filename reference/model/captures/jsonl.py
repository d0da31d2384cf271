"""kssim's JSONL record files: one JSON object a line with ``topic``, ``partition`` (default 0),
``offset`` (optional), ``ts``, ``key``, ``value`` (JSON values), checked by the shared row rules
(:func:`reference.model.record_files.check_record`)."""
from __future__ import annotations

from typing import Iterator, Tuple

from kssim.reference.model.captures.lines import HOLDS_NUL, encoding_problem, loads_strict, not_utf8
from kssim.reference.model.errors import ScenarioError
from kssim.reference.model.record_files import NotJson, not_valid_json


def numbered(path) -> Iterator[Tuple[int, object, tuple]]:
    """``(line number, decoded line, ())`` of each non-blank line; ScenarioError naming the line
    when one is not strict JSON or not UTF-8 (and for UTF-16 files, see :func:`lines.read_lines`)."""
    first = True
    with open(path, "rb") as handle:
        for n, line in enumerate(handle, 1):
            if first:
                first = False
                problem = encoding_problem(line)
                if problem:
                    raise ScenarioError(path, "line 1", problem)
            if line.isspace():
                continue
            try:
                yield n, loads_strict(line), ()
            except NotJson as exc:
                if b"\x00" in line:
                    raise ScenarioError(path, f"line {n}", HOLDS_NUL) from None
                raise ScenarioError(path, f"line {n}", not_valid_json(exc.msg)) from None
            except UnicodeDecodeError as exc:
                raise ScenarioError(path, f"line {n}", not_utf8(exc)) from None


def rows(path) -> Iterator[Tuple[str, object]]:
    """``(where, decoded line)`` of each non-blank line (``where``: ``line N``)."""
    for n, row, _ in numbered(path):
        yield f"line {n}", row
