"""Captured topics as record files: JSONL or Parquet rows with topic, partition, offset, ts, key,
value; and the output files of ``kssim replay``. Shared by every engine (it models no Kafka rule).

The rows of the files (a folder: its data files in name order), in the order the files are given
and in file order, are the input records: a row's position is its input index (the ``input`` that
outputs name) and that order is ``as_listed``. ``offset`` is optional (default: the previous offset of its topic partition + 1)
and read only by ``timestamp_sync``, where a task takes each partition's records in offset order:
there (``offsets_matter``) given offsets must increase within a topic partition; ``as_listed``
processes the rows in file order and ignores them. Bad rows are errors naming the file, the line
(JSONL) or row (Parquet) and the field; nothing is silently lost. The Spark backend reads the same
files with the same numbering and checks (``spark_backend/runtime/record_files.py``).

The readers live in :mod:`reference.model.captures` (kcat, console, JSONL and Parquet captures,
topic mapping, streaming); :func:`iter_record_files`, :func:`read_record_files` and
:func:`read_rows` are thin wrappers over them.

The rules a row must follow are defined here once, for both engines:

- :func:`parse_json`: strict JSON (a JSONL line; a Parquet ``key``/``value`` cell, which holds
  JSON text): no ``NaN``/``Infinity``, no repeated object key, nothing after the value;
- :func:`check_record`: the fields (:data:`RECORD_FIELDS`, :data:`REQUIRED_FIELDS`) and their
  values (integers are Java longs, :data:`MAX_LONG`), raising a :class:`RecordProblem` (field,
  problem) that each engine locates in its file;
- :func:`check_parquet_columns`: a Parquet file's column types (:data:`PARQUET_KINDS`).

Outputs (``kssim replay --output``): :func:`check_output_path` refuses, before any work, an output
that is an input (or lies in an input folder), in a missing folder or with an unknown extension
(:func:`check_drops_path`: the same for ``kssim replay --drops``, which must not be the output either);
:func:`open_output` writes one atomically (a temporary file beside it, moved into place only when
complete: on an error or Ctrl-C nothing partial is left and an existing file is untouched).
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import re
import secrets
from typing import Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

import attrs
import orjson

from kssim.reference.model.errors import KssimError, ScenarioError
from kssim.reference.model.records import InputRecord
from kssim.reference.model.render import json_line, output_as_json

RECORD_FIELDS = ("topic", "partition", "offset", "ts", "key", "value")
#: fields a replay's own output rows carry (``input``, ``old_value``): accepted and ignored, so an
#: output file is a valid replay input
IGNORED_FIELDS = ("input", "old_value")
REQUIRED_FIELDS = ("topic", "ts", "key", "value")
#: partitions, offsets and timestamps are Java longs
MAX_LONG = (1 << 63) - 1
#: what a Parquet record file's columns may hold (``null``: a column of nulls only, as Arrow
#: writes a column without a value); key and value are JSON text
PARQUET_KINDS = {"topic": ("string",), "partition": ("integer",), "offset": ("integer",), "ts": ("integer",),
                 "key": ("string",), "value": ("string",)}
#: output files kssim replay writes
OUTPUT_SUFFIXES = (".jsonl", ".parquet")


# --- the rules of a row (both engines) ----------------------------------------------------------

class NotJson(ValueError):
    """Text that is not strict JSON; ``msg`` says why."""

    def __init__(self, msg):
        self.msg = msg
        super().__init__(msg)


def _no_constant(name):
    raise NotJson(f"{name} is not a JSON value")


def _finite_number(text):
    """A JSON number with a fraction or an exponent, as Jackson reads it: a ``double``; one
    beyond a double's range (``1e400``) would be Infinity, which no JSON serde writes back."""
    value = float(text)
    if math.isinf(value):
        raise NotJson(f"the number {text if len(text) <= 40 else text[:37] + '...'} is beyond a double's range "
                      "(Jackson reads it as Infinity, which JSON cannot write)")
    return value


def _unique_keys(pairs):
    seen = set()
    for key, _ in pairs:
        if key in seen:
            raise NotJson(f"repeated object key {key!r}")
        seen.add(key)
    return dict(pairs)


#: how deep arrays and objects may nest in a JSON value (deeper: NotJson, never a RecursionError;
#: Spark's Jackson parser allows 1000 levels, Python's parser about as many)
MAX_JSON_DEPTH = 512
#: a JSON string (skipped) or a bracket, for measuring nesting
_STRING_OR_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def json_depth_problem(text) -> Optional[str]:
    """Why ``text`` nests too deeply (more than :data:`MAX_JSON_DEPTH` levels), or None. Cheap
    unless the text holds more than that many opening brackets."""
    opening = ("[", "{") if isinstance(text, str) else (b"[", b"{")
    if text.count(opening[0]) + text.count(opening[1]) <= MAX_JSON_DEPTH:
        return None
    if not isinstance(text, str):
        text = text.decode("utf-8", "replace")
    depth = 0
    for match in _STRING_OR_BRACKET.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return f"nested deeper than {MAX_JSON_DEPTH} levels"
        elif token in "]}":
            depth -= 1
    return None


def parse_json(text):
    """Strict JSON (NotJson otherwise): what Spark's JSON parser accepts too: no ``NaN`` or
    ``Infinity`` (nor a number that overflows a double), no repeated object key, nothing but whitespace after the value, no nesting
    deeper than :data:`MAX_JSON_DEPTH`."""
    too_deep = json_depth_problem(text)
    if too_deep:
        raise NotJson(too_deep)
    try:
        value = json.loads(text, parse_constant=_no_constant, object_pairs_hook=_unique_keys,
                           parse_float=_finite_number)
    except json.JSONDecodeError as exc:
        raise NotJson(exc.msg) from None
    except RecursionError:  # a deep stack at the call: never a traceback
        raise NotJson("nested too deeply") from None
    # only a \uD800-\uDFFF escape can make a lone surrogate (UTF-8 text cannot hold one)
    if ("\\ud" in text or "\\uD" in text) and _has_lone_surrogate(value):
        raise NotJson("a lone surrogate escape (\\uD800-\\uDFFF without its pair) is not Unicode text: "
                      "Kafka's UTF-8 serializers cannot write it")
    return value


def _has_lone_surrogate(value) -> bool:
    """Does a parsed JSON value hold a string (or object key) with an unpaired surrogate?"""
    if isinstance(value, str):
        return any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    return False


def not_valid_json(msg) -> str:
    """The problem of a JSONL line that is not strict JSON."""
    return f"not valid JSON: {msg}"


#: the problem of a Parquet key/value that is not JSON text (the text follows)
MUST_BE_JSON_TEXT = "must be JSON text, got "


class RecordProblem(ValueError):
    """What is wrong with one record, and in which ``field`` (None: the record itself); each
    engine adds where the record is (file, line, row or input record)."""

    def __init__(self, field, problem):
        self.field = field
        self.problem = problem
        super().__init__(f"field {field}: {problem}" if field else problem)


def _is_long(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_LONG


def no_such_partition(partition, topic, count) -> str:
    return f"partition {partition} does not exist (config.partitions: {topic!r} has {count})"


def unknown_field(name) -> str:
    return (f"unknown field {name!r} (expected: {', '.join(RECORD_FIELDS)}; a replay output's "
            f"{' and '.join(IGNORED_FIELDS)} are ignored)")


def check_record(row, topics: Sequence[str], partitions: Optional[Mapping[str, int]] = None):
    """``(topic, partition, offset, ts, key, value)`` of a decoded row, or a RecordProblem.
    ``partitions`` (topic -> count, default 1) bounds the partition; None leaves that to the
    caller. A missing partition is 0, a missing (or null) offset is None."""
    if row.__class__ is dict:
        # the common, valid row in one test (replays check millions); any other row takes the
        # checks below, which name its problem
        topic, ts = row.get("topic"), row.get("ts")
        partition, offset = row.get("partition", 0), row.get("offset")
        if (topic.__class__ is str and ts.__class__ is int and partition.__class__ is int
                and len(row) == 4 + ("partition" in row) + ("offset" in row) and "key" in row and "value" in row
                and topic in topics and 0 <= ts <= MAX_LONG and 0 <= partition <= MAX_LONG
                and (offset is None or (offset.__class__ is int and 0 <= offset <= MAX_LONG))
                and (partitions is None or partition < partitions.get(topic, 1))):
            return topic, partition, offset, ts, row["key"], row["value"]
    if not isinstance(row, dict):
        raise RecordProblem(None, "a record must be an object")
    for name in row:
        if name not in RECORD_FIELDS and name not in IGNORED_FIELDS:
            raise RecordProblem(name, unknown_field(name))
    for name in REQUIRED_FIELDS:
        if name not in row:
            raise RecordProblem(name, "missing required field")
    topic = row["topic"]
    if not isinstance(topic, str) or topic not in topics:
        raise RecordProblem("topic", f"must be one of {', '.join(topics)}, got {topic!r}")
    partition, offset, ts = row.get("partition", 0), row.get("offset"), row["ts"]
    if not _is_long(partition):
        raise RecordProblem("partition", f"must be a non-negative integer, got {partition!r}")
    if partitions is not None and partition >= partitions.get(topic, 1):
        raise RecordProblem("partition", no_such_partition(partition, topic, partitions.get(topic, 1)))
    if offset is not None and not _is_long(offset):
        raise RecordProblem("offset", f"must be a non-negative integer, got {offset!r}")
    if not _is_long(ts):
        raise RecordProblem("ts", f"must be a non-negative integer timestamp, got {ts!r}")
    return topic, partition, offset, ts, row["key"], row["value"]


def check_parquet_columns(path, kinds: Mapping[str, str]) -> None:
    """A Parquet record file's columns, given as name -> kind (``string``, ``integer``, ``null``
    or the engine's name of another type): the record fields, of the kinds :data:`PARQUET_KINDS`
    allows. ScenarioError naming the file and the column otherwise."""
    for name, kind in kinds.items():
        if name in IGNORED_FIELDS:
            continue
        if name not in RECORD_FIELDS:
            raise ScenarioError(path, f"column {name}", unknown_field(name))
        if kind != "null" and kind not in PARQUET_KINDS[name]:
            wanted = " or ".join("JSON text (string)" if k == "string" and name in ("key", "value") else k
                                 for k in PARQUET_KINDS[name])
            raise ScenarioError(path, f"column {name}", f"must hold {wanted}, got {kind}")
    for name in REQUIRED_FIELDS:
        if name not in kinds:
            raise ScenarioError(path, f"column {name}", "missing required field")


def arrow_kind(dtype) -> str:
    """An Arrow type as a :func:`check_parquet_columns` kind (the integer types Spark reads as
    integers: every signed one, unsigned up to 32 bits)."""
    import pyarrow as pa

    if pa.types.is_dictionary(dtype):
        dtype = dtype.value_type
    if pa.types.is_null(dtype):
        return "null"
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
        return "string"
    if pa.types.is_signed_integer(dtype) or dtype in (pa.uint8(), pa.uint16(), pa.uint32()):
        return "integer"
    return str(dtype)


# --- reading -------------------------------------------------------------------------------------

def read_rows(path) -> Iterator[Tuple[str, dict]]:
    """``(where, decoded row)`` of a JSONL or Parquet record file (``line N`` / ``row N``): the
    readers of :mod:`reference.model.captures` (strict JSON, UTF-8, truncated Parquet named)."""
    from kssim.reference.model.captures import jsonl, parquet
    from kssim.reference.model.captures.detect import PARQUET_MAGIC

    path = os.fspath(path)
    if not os.path.exists(path):
        raise ScenarioError(path, "", "no such file")
    with open(path, "rb") as handle:
        magic = handle.read(len(PARQUET_MAGIC))
    if magic == PARQUET_MAGIC or path.endswith(".parquet") or \
            os.path.basename(os.path.dirname(path)).endswith(".parquet"):
        return parquet.rows(path)
    return jsonl.rows(path)


def data_files(path) -> List[str]:
    """A record file, or a folder's data files in name order (a folder written by Spark: part
    files; names starting with ``_`` or ``.`` are metadata), as the Spark backend reads them."""
    path = os.fspath(path)
    if not os.path.isdir(path):
        return [path]
    return [os.path.join(path, name) for name in sorted(os.listdir(path))
            if not name.startswith(("_", ".")) and os.path.isfile(os.path.join(path, name))]


def read_record_files(paths: Iterable, topics, partitions: dict, offsets_matter: bool = True,
                      extractor=None) -> List[InputRecord]:
    """All rows of ``paths`` as input records, numbered in file order (see the module docstring)."""
    return list(iter_record_files(paths, topics, partitions, offsets_matter, extractor))


def iter_record_files(paths: Iterable, topics, partitions: dict, offsets_matter: bool = True,
                      extractor=None) -> Iterator[InputRecord]:
    """The same records as a stream, read batch by batch: memory stays flat for ``as_listed``.
    ``offsets_matter`` (``timestamp_sync``): given offsets must increase per topic partition.
    ``extractor`` (the topology's key extractor, ``topology.key_extractor_of``: an FK join's FK,
    a GlobalKTable join's key mapper): every ``left`` row must hold what it reads, as the scenario
    loader requires of a scenario's inputs. A thin wrapper of the capture readers
    (:func:`reference.model.captures.open_captures`: any capture format, default options), where
    every record's topic must be one of ``topics``."""
    from kssim.reference.model.captures import CaptureOptions, Captures, TopicPlan, list_sources
    from kssim.reference.model.captures.options import TextFormat

    options = CaptureOptions()
    topics = tuple(topics)
    text = {t: (TextFormat.STRING, TextFormat.STRING) for t in topics}
    captures = Captures(list_sources(paths, options), TopicPlan({t: t for t in topics}, frozenset()), options,
                        text, partitions, offsets_matter, extractor)
    return captures.records()


def load_replay_topology(path, order: Optional[str] = None):
    """A topology file (a scenario file: topology, release and config; its inputs, expected
    output and checkpoints are not used) as the scenario of a replay processed in ``order``
    (None: the topology's default, :func:`replay_order`; a graph refuses ``timestamp_sync``)."""
    from kssim.reference.model.scenario import load_topology_file

    base = load_topology_file(path)
    order = replay_order(base.topology, order, path)
    return attrs.evolve(base, config=attrs.evolve(base.config, order=order), expected=None, checkpoints=None)


def replay_order(topology, order: Optional[str] = None, path=None) -> str:
    """The order a replay of captures through ``topology`` processes them in: ``order`` if given,
    else ``timestamp_sync`` (Kafka's order for captured topics, which carry no cross-topic order)
    for a format-1 operator and ``as_listed`` for a topology graph, which runs as
    TopologyTestDriver runs it; a graph asked for ``timestamp_sync`` is a KssimError naming
    ``path`` (the topology file)."""
    if topology.operator != "graph":
        return order or "timestamp_sync"
    if order not in (None, "as_listed"):
        what = f"{os.fspath(path)} is a topology graph" if path is not None else "a topology graph"
        raise KssimError(f"--order {order}: {what}, processed as listed (TopologyTestDriver's order: the records "
                         f"in the order given); timestamp_sync is for format-1 operators: leave --order out or "
                         f"pass --order as_listed")
    return "as_listed"


# --- writing outputs -----------------------------------------------------------------------------

class OutputPathError(KssimError):
    """An output path kssim refuses before doing any work."""


def output_format(path, suffixes=OUTPUT_SUFFIXES) -> str:
    """``jsonl`` or ``parquet`` (or one of ``suffixes``, without its dot), from an output file's
    extension (OutputPathError otherwise)."""
    path = os.fspath(path)
    for suffix in suffixes:
        if path.endswith(suffix):
            return suffix[1:]
    raise OutputPathError(f"output {path}: unknown extension (expected {' or '.join(suffixes)})")


def _inside(path, folder) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def clashing_input(output, inputs: Iterable, either_way: bool = False) -> Optional[str]:
    """The input ``output`` would overwrite: the same file (also through a link), or a folder
    given as an input that holds it (``either_way``: or an input inside ``output``, a folder);
    None if none. Paths with a URL scheme (``hdfs://``) are not local and never clash."""
    output = os.fspath(output)
    if "://" in output:
        return None
    target = os.path.realpath(output)
    for given in inputs:
        given = os.fspath(given)
        if "://" in given:
            continue
        source = os.path.realpath(given)
        if _inside(target, source) or (either_way and _inside(source, target)):
            return given
        if os.path.exists(output) and os.path.exists(given):
            try:
                if os.path.samefile(output, given):
                    return given
            except OSError:
                pass
    return None


#: ``-o -``: a replay's output as JSONL lines on standard output
STDOUT = "-"


def check_output_path(output, inputs: Iterable, suffixes=OUTPUT_SUFFIXES) -> str:
    """Refuse, before any work, an output file that would destroy an input or that cannot be
    written: the output is an input (or lies in an input folder), its folder does not exist, it
    is a folder, or its extension is not ``.jsonl``/``.parquet`` (or one of ``suffixes``:
    ``kssim timeline`` writes pictures) (OutputPathError, exit 2). Returns the output's format;
    :data:`STDOUT` is JSONL on standard output."""
    output = os.fspath(output)
    inputs = [os.fspath(p) for p in inputs]
    if "" in inputs:  # os.path would read it as the current folder, where the output lies
        raise ScenarioError("--input ''", "", "an empty path names no capture")
    if output == STDOUT and ".jsonl" in suffixes:
        return "jsonl"
    clash = clashing_input(output, inputs)
    if clash is not None:
        what = "is the input" if os.path.realpath(output) == os.path.realpath(clash) or not os.path.isdir(clash) \
            else "lies inside the input folder"
        raise OutputPathError(f"output {output} {what} {clash}: refusing to overwrite a capture "
                              f"(write the output somewhere else)")
    fmt = output_format(output, suffixes)
    folder = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(folder):
        raise OutputPathError(f"output {output}: folder {os.path.dirname(output) or folder} does not exist")
    if os.path.isdir(output):
        raise OutputPathError(f"output {output} is a folder: give a file name ending in {' or '.join(suffixes)}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputPathError(f"output {output}: folder {os.path.dirname(output) or folder} is not writable")
    return fmt


def check_drops_path(drops, inputs, output) -> None:
    """Refuse, before any work, a drops file that is not ``.jsonl``, would overwrite an input, is
    the output, or cannot be written (OutputPathError, exit 2)."""
    drops = os.fspath(drops)
    if not drops.endswith(".jsonl"):
        raise OutputPathError(f"drops file {drops}: give a file name ending in .jsonl")
    if clashing_input(drops, [output]) is not None:
        raise OutputPathError(f"drops file {drops} is the output {output}: give another file name")
    try:
        check_output_path(drops, inputs)
    except OutputPathError as exc:
        raise OutputPathError(str(exc).replace(f"output {drops}", f"drops file {drops}", 1)) from None


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary file name beside ``path`` (same folder, hidden); when the block
    completes the file replaces ``path`` at once (``os.replace``); on any error or Ctrl-C it is
    removed and ``path`` is untouched. The file is created empty, with the usual permissions."""
    path = os.path.abspath(os.fspath(path))
    folder, name = os.path.split(path)
    temp = os.path.join(folder, f".{name}.{secrets.token_hex(4)}.kssim-partial")
    os.close(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    try:
        yield temp
        os.replace(temp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.remove(temp)
        if isinstance(exc, OSError) and exc.filename is None:
            # a failed write (a full disk: ENOSPC) names no file: name the one the user asked for
            raise OSError(exc.errno, exc.strerror or str(exc), path) from exc
        raise


#: the Arrow schema of an output Parquet file: what the Spark backend writes (key, value and
#: old value as JSON text)
def output_parquet_schema(with_old_value: bool):
    import pyarrow as pa

    fields = [("topic", pa.string()), ("partition", pa.int32()), ("key", pa.string()), ("value", pa.string()),
              ("ts", pa.int64()), ("input", pa.int64())]
    if with_old_value:
        fields.append(("old_value", pa.string()))
    return pa.schema(fields)


#: the integers orjson writes (beyond them it refuses; the json module writes any)
_ORJSON_INTS = (-(1 << 63), 1 << 64)


def orjson_writes_alike(value) -> bool:
    """Whether ``orjson.dumps(value)`` gives the bytes of :func:`render.json_line` (UTF-8): for
    strings (same escapes), null, booleans, integers within 64 bits, and arrays and objects of
    those; not for floats (orjson writes ``1e16`` where Python writes ``1e+16``) nor anything
    else. Cost: one look at each nested value."""
    cls = value.__class__
    if cls is str or value is None or cls is bool:
        return True
    if cls is int:
        return _ORJSON_INTS[0] <= value < _ORJSON_INTS[1]
    if cls is dict:
        return all(k.__class__ is str and orjson_writes_alike(v) for k, v in value.items())
    if cls is list:
        return all(orjson_writes_alike(v) for v in value)
    return False


def jsonl_bytes(obj: dict, values=()) -> bytes:
    """``json_line(obj) + "\\n"`` as UTF-8 bytes, by orjson when ``values`` (the parts of ``obj``
    that may hold anything: key, value, old value) are all :func:`orjson_writes_alike`; the rest
    of ``obj`` must be strings and integers."""
    for v in values:
        if not (v.__class__ is str or orjson_writes_alike(v)):
            return (json_line(obj) + "\n").encode("utf-8")
    return orjson.dumps(obj, option=orjson.OPT_APPEND_NEWLINE)


def _json_text(value):
    if value is None:
        return None
    return orjson.dumps(value).decode("utf-8") if orjson_writes_alike(value) else json_line(value)


class OutputWriter:
    """Writes output records to an open output file: JSONL lines (:func:`render.json_line` of
    :func:`render.output_as_json`, written by orjson where the bytes are the same:
    :func:`jsonl_bytes`) or Parquet rows with key/value/old_value as JSON text, in batches.
    ``count``: records written. :meth:`write_many` takes a list of records at once (one write
    call per list)."""

    BATCH = 65536

    def __init__(self, path, fmt: str, with_old_value: bool, sink=None):
        self.fmt, self.with_old_value, self.count = fmt, with_old_value, 0
        self._rows: List[dict] = []
        if sink is not None:  # an open binary stream (standard output), JSONL only
            self._sink = sink
        elif fmt == "parquet":
            import pyarrow.parquet as pq

            self._schema = output_parquet_schema(with_old_value)
            self._sink = pq.ParquetWriter(path, self._schema)
        else:
            self._sink = open(path, "wb", buffering=1 << 20)

    def write(self, rec) -> None:
        self.write_many((rec,))

    def write_many(self, records) -> None:
        if self.fmt != "jsonl":
            for rec in records:
                self._add_row(rec)
            return
        old = self.with_old_value
        lines = []
        dumps, newline = orjson.dumps, orjson.OPT_APPEND_NEWLINE
        for rec in records:
            obj = output_as_json(rec, old)
            key, value = rec[2], rec[3]
            if not old and (key.__class__ is str or key is None) and (value.__class__ is str or value is None):
                lines.append(dumps(obj, option=newline))  # the usual record: text key and value
            else:
                lines.append(jsonl_bytes(obj, (key, value, obj["old_value"]) if old else (key, value)))
        self.count += len(lines)
        self._sink.write(b"".join(lines))

    def _add_row(self, rec) -> None:
        obj = output_as_json(rec, self.with_old_value)
        self.count += 1
        for name in ("key", "value", "old_value"):
            if name in obj:
                obj[name] = _json_text(obj[name])
        self._rows.append(obj)
        if len(self._rows) >= self.BATCH:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa

        if self._rows:
            self._sink.write_table(pa.Table.from_pylist(self._rows, schema=self._schema))
            self._rows = []

    def flush(self) -> None:
        """What was written reaches the stream (a stream kssim does not own stays open)."""
        self._sink.flush()

    def close(self) -> None:
        if self.fmt == "parquet":
            self._flush()
        self._sink.close()


@contextlib.contextmanager
def open_output(path, with_old_value: bool = False):
    """An :class:`OutputWriter` on ``path`` (format from its extension), written atomically
    (:func:`atomic_path`): the file appears, complete, only when the block completes."""
    if os.fspath(path) == STDOUT:
        writer = OutputWriter(None, "jsonl", with_old_value, sink=sys.stdout.buffer)
        try:
            yield writer
        finally:
            writer.flush()
        return
    fmt = output_format(path)
    with atomic_path(path) as temp:
        writer = OutputWriter(temp, fmt, with_old_value)
        try:
            yield writer
        finally:
            writer.close()


def write_outputs(path, records, with_old_value: bool = False) -> int:
    """Write output records to ``path`` (JSONL or Parquet, atomically); returns how many."""
    with open_output(path, with_old_value) as writer:
        for rec in records:
            writer.write(rec)
    return writer.count


@attrs.frozen
class ReplaySummary:
    """What a replay did: ``outputs`` records written, ``drops`` per reason code, and the
    ``failure`` (a KafkaWouldFail: the output stops before that input) or None."""

    outputs: int
    drops: Mapping[str, int] = attrs.field(factory=dict)
    failure: Optional[object] = None
    #: captured topic -> records skipped (``--ignore-topic``, or the output topic in an input capture)
    ignored: Mapping[str, int] = attrs.field(factory=dict)

    @property
    def dropped(self) -> int:
        return sum(self.drops.values())


#: records between two progress updates
PROGRESS_STEP = 4096


def counted(records, bar, every: int = PROGRESS_STEP):
    """``records``, unchanged, advancing the progress bar ``bar`` (``update(n)``) every ``every``
    records and once at the end (replays and diffs of both engines)."""
    done = 0
    for rec in records:
        yield rec
        done += 1
        if done == every:
            bar.update(done)
            done = 0
    bar.update(done)
