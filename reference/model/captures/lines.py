"""Reading line-based captures safely and fast: UTF-8 lines with their numbers (:func:`read_lines`),
strict JSON with orjson (:func:`loads_strict`), and a captured key or value text as kssim's value
(:func:`decode_text`).

The strict rules are :func:`reference.model.record_files.parse_json`'s (no NaN/Infinity, no
repeated object key, nothing after the value, at most ``MAX_JSON_DEPTH`` levels). orjson keeps all
of them but one: it takes the last of repeated keys. The check, all at C speed: a JSON text has one
``:`` per object key written plus those inside strings, so a text with as many ``:`` as its outer
object has keys repeats none (the usual record); orjson writes the parsed value back with one
``:`` per key kept and the same ``:`` inside strings (it never escapes them). So when the text holds
no ``\\u003a``-style escape and both counts are equal, no key was dropped. orjson also turns
integers beyond 64 bits into floats where Python keeps them exact: a text with a run of 19 digits
goes to the strict parser, as does any text orjson refuses (for the precise message).
"""
from __future__ import annotations

from typing import Iterator, Tuple

import orjson

from kssim.reference.model.captures.options import TextFormat
from kssim.reference.model.errors import ScenarioError
from kssim.reference.model.record_files import MAX_JSON_DEPTH, NotJson, json_depth_problem, parse_json

_loads = orjson.loads
_JSONDecodeError = orjson.JSONDecodeError


def loads_strict(text):
    """Strict JSON of ``text`` (str, or bytes of UTF-8): the value, or NotJson (a bytes text
    that is not UTF-8 raises UnicodeDecodeError)."""
    # a text shorter than the depth limit cannot nest deeper than it
    if len(text) > MAX_JSON_DEPTH and json_depth_problem(text):
        return _strict(text)  # raises NotJson
    try:
        value = _loads(text)
    except _JSONDecodeError:
        return _strict(text)
    if text.__class__ is not bytes:
        text = text.encode("utf-8", "surrogatepass")
    if _LONG_DIGITS in text.translate(_DIGITS_AS_ZERO):
        return _strict(text)
    colons = text.count(b":")
    # as many ":" as the keys of the outer object: no room for a repeated key (the usual record);
    # else orjson writes each key once with one ":" and never escapes ":" in a string: the same
    # count of ":" means no key was repeated (see the module docstring)
    if (colons == len(value) if value.__class__ is dict else colons == 0) or \
            (colons == _dumps(value).count(b":") and b"\\u003" not in text):
        return value
    return _strict(text)


#: 19 digits in a row (digits mapped to 0): maybe an integer beyond what orjson keeps exact
#: (it makes those floats)
_LONG_DIGITS = b"0" * 19
_DIGITS_AS_ZERO = bytes.maketrans(b"0123456789", b"0" * 10)
_dumps = orjson.dumps


def _strict(text):
    return parse_json(text.decode("utf-8") if text.__class__ is bytes else text)


# --- lines ---------------------------------------------------------------------------------------

def encoding_problem(head: bytes) -> str:
    """Why a file starting with ``head`` is not a UTF-8 capture, or ''."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "UTF-16 text (it starts with a UTF-16 byte-order mark): kssim reads UTF-8 captures " \
               "(convert it, e.g. iconv -f UTF-16 -t UTF-8)"
    if head.startswith(b"\xef\xbb\xbf"):
        return "the file starts with a UTF-8 byte-order mark: save it without one"
    return ""


def not_utf8(exc: UnicodeDecodeError) -> str:
    return (f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at column {exc.start + 1}): kssim reads UTF-8 "
            f"captures")


HOLDS_NUL = "holds NUL bytes: UTF-16 text? kssim reads UTF-8 captures"


def read_lines(path) -> Iterator[Tuple[int, bytes]]:
    """``(line number, line)`` of each non-blank line of ``path`` as bytes, without its line
    end; ScenarioError for a UTF-16 file, a UTF-8 byte-order mark or a line holding NUL bytes
    (UTF-16 without a mark). The caller checks UTF-8 (orjson does, for JSON lines)."""
    with open(path, "rb") as handle:
        for n, line in enumerate(handle, 1):
            if n == 1:
                problem = encoding_problem(line)
                if problem:
                    raise ScenarioError(path, "line 1", problem)
            if line.isspace() or not line:
                continue
            if b"\x00" in line:
                raise ScenarioError(path, f"line {n}", HOLDS_NUL)
            yield n, line.rstrip(b"\r\n")


def count_lines(path) -> int:
    """How many non-blank lines ``path`` holds (the records of a line-based capture)."""
    count = 0
    with open(path, "rb") as handle:
        for line in handle:
            if not line.isspace():
                count += 1
    return count


def decode_line(path, n: int, line: bytes) -> str:
    """A line as text; ScenarioError naming the line when it is not UTF-8."""
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError(path, f"line {n}", not_utf8(exc)) from None


def decode_text(fmt: TextFormat, text, path, where: str, field: str):
    """A captured key or value text as kssim's key or value: the JSON it holds (``fmt`` JSON;
    ScenarioError naming ``where`` and ``field`` when it is not strict JSON) or the text itself;
    None stays None."""
    if text is None or fmt is TextFormat.STRING:
        return text
    try:
        return loads_strict(text)
    except NotJson as exc:
        shown = text if len(text) <= 60 else text[:57] + "..."
        raise ScenarioError(path, f"{where}, field {field}",
                            f"not valid JSON ({exc.msg}): {shown!r} (read it as text with --{_option(field)}-format "
                            f"string)") from None


def _option(field: str) -> str:
    return "key" if field == "key" else "value"
