"""Record files (captured topics) -> the ``records`` frame of the Spark backend, two ways:

- :func:`records_from_reader`: input records read on the driver by the shared reader
  (``reference.model.captures``: every capture format, topic mapping, key/value formats), so
  both engines see exactly the same records and refuse a bad one with the same message. Used for
  small inputs (``replay.DRIVER_READ_RECORDS``: no file scan, no numbering or validation job)
  and for every capture Spark cannot scan itself; streamed (Arrow batches, a temporary Parquet
  file beyond one batch), so memory does not grow with the input;
- :func:`read_record_files`: large JSONL/Parquet record files scanned by Spark, as follows.

The contract is ``reference.model.record_files``'s: JSONL (one object a line: ``topic``, ``partition``
(default 0), ``offset`` (optional), ``ts``, ``key``, ``value``; key and value any JSON) or Parquet
(the same columns; ``key``/``value`` are strings holding JSON text, as ``outputs.write_parquet``
writes them). The rows, in the order the paths are given and in file order, are the input records
(that order is ``as_listed`` and defines ``idx``); a missing ``offset`` is the previous offset of
its topic partition + 1; given offsets must increase within a topic partition; partitions must
exist. A bad row is a ScenarioError naming the file, the input record and the problem. The rules
are the model's, so both engines accept and refuse the same rows: strict JSON (``parse_json``: no
``NaN``, no repeated object key, nothing after the value), the fields of a row (``check_record``,
run on each JSONL line) and a Parquet file's column types (``check_parquet_columns``).

How, without funnelling the rows through one task:

- numbering: every row knows its ``file``, ``block`` (the split's start) and ``pos`` (increasing
  within a split: Parquet's row index, a JSONL line's position in its split); Spark reads splits
  largest first, so a count per (file, split) and the listing order give each split its first
  index: ``idx = shift(file, block) + pos``. The same small aggregation finds the first row that
  is bad on its own (unknown topic, missing ts, partition out of range, ...): one pass, no sort.
- key identity: ``key`` is ``reference.model.keys.key_text`` of the JSON key, as for scenarios.
  A JSONL line is parsed by Python (``parse_json``, as the reference's reader) and its key
  written by ``key_text``. A Parquet key is JSON text as some writer wrote it (``1.00``, ``1e2``,
  ``[1, 2]``, ``"\u00e9"``), which is not its identity: keys that match ``outputs.SIMPLE_JSON``
  (strings without escapes, integers in canonical form, booleans) are already their ``key_text``;
  if any other key is present (counted with the split sizes), those keys are rewritten by
  ``key_text(json.loads(text))`` in an Arrow UDF, so ``1.00`` is ``1.0`` (the float 1.0, not the
  integer ``1``) and ``[1, 2]`` is ``[1,2]``. A text Spark's parser accepted but Python's refuses
  (trailing content after the value) is then a bad row, as the reference says; a flat object of
  such members is its own canonical text too (``outputs.CANONICAL_FLAT_OBJECT``: no Python for
  it). Parquet values are rewritten the same way only where their bytes are compared (``canonical_values``: KIP-557's
  idempotence check, ``ktable_emit_on_change``); elsewhere a value is only read through
  ``json.loads`` (the joiners) or when it is simple JSON, so its spelling does not matter.
- offsets, only for ``timestamp_sync`` (the one order that reads them: a task takes each
  partition's records in offset order): a window over each topic partition in file order gives
  the effective offset (the last given one plus the rows since) and checks that given offsets
  increase. ``as_listed`` processes the rows in file order and reads no offset (as the
  reference's reader, ``reference.model.record_files``).
"""
from __future__ import annotations

import functools
import json
import os
import re
from typing import Iterable, Optional, Sequence

import attrs

from kssim.reference.model.errors import ScenarioError
from kssim.reference.model.keys import key_text
from kssim.reference.model.record_files import (MUST_BE_JSON_TEXT, PARQUET_KINDS, RECORD_FIELDS, NotJson,  # noqa: F401
                                          RecordProblem, check_parquet_columns, check_record, not_valid_json,
                                          parse_json)

from kssim.spark_backend.runtime.inputs import SIDES, TOPICS, _json_or_none
from kssim.spark_backend.runtime.outputs import CANONICAL_FLAT_OBJECT, SIMPLE_JSON

_PARSED = (("topic", "string"), ("partition", "int64"), ("offset", "int64"), ("ts", "int64"),
           ("key", "string"), ("value", "string"), ("error", "string"))
PARSED_DDL = "topic STRING, partition BIGINT, offset BIGINT, ts BIGINT, key STRING, value STRING, error STRING"


def _int(value):
    """A Java long (None otherwise: the row is bad, ``check_record`` says why)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and -(1 << 63) <= value < (1 << 63) else None


def _kind(data_type) -> str:
    """A Spark column type as a ``record_files.check_parquet_columns`` kind."""
    name = data_type.typeName()
    if name in ("byte", "short", "integer", "long"):
        return "integer"
    return {"string": "string", "void": "null"}.get(name, data_type.simpleString())


def _parse_jsonl(batches, topics=TOPICS):
    """JSONL lines -> record columns (key/value as JSON text), plus what is wrong with a line."""
    import pyarrow as pa

    for batch in batches:
        cols = {name: [] for name, _ in _PARSED}
        for line in batch.column("value").to_pylist():
            error, obj = None, {}
            try:  # the shared rules (reference.model.record_files), as the reference's reader
                obj = parse_json(line)
                check_record(obj, topics)
            except NotJson as exc:
                error, obj = not_valid_json(exc.msg), {}
            except RecordProblem as exc:
                error = str(exc)
                obj = obj if isinstance(obj, dict) else {}
            cols["topic"].append(obj.get("topic") if isinstance(obj.get("topic"), str) else None)
            cols["partition"].append(_int(obj.get("partition", 0)))
            cols["offset"].append(_int(obj.get("offset")))
            cols["ts"].append(_int(obj.get("ts")))
            cols["key"].append(key_text(obj.get("key")))
            cols["value"].append(_json_or_none(obj.get("value")))
            cols["error"].append(error)
        yield pa.RecordBatch.from_arrays([pa.array(cols[n], getattr(pa, t)()) for n, t in _PARSED],
                                         names=[n for n, _ in _PARSED])


def _parse_jsonl_located(batches, topics=TOPICS):
    """``_parse_jsonl`` keeping each line's file and position columns."""
    import pyarrow as pa

    for batch in batches:
        located = [batch.column(n) for n in ("file", "block", "pos")]
        for parsed in _parse_jsonl([batch], topics):
            yield pa.RecordBatch.from_arrays(parsed.columns + located, names=parsed.schema.names + ["file", "block", "pos"])


def _qualified(spark, path):
    jvm = spark._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    fs = hadoop_path.getFileSystem(spark._jsc.hadoopConfiguration())
    return fs.makeQualified(hadoop_path).toString().rstrip("/")


def _located_rows(spark, paths, fmt, topics=TOPICS):
    """The rows with ``topic, partition, offset, ts, key, value, error`` (a JSONL line's parse
    error) and their location ``file, block, pos``."""
    from pyspark.sql import functions as F

    if fmt == "parquet":
        raw = spark.read.parquet(*paths)
        kinds = {f.name: _kind(f.dataType) for f in raw.schema.fields}
        for name, kind in kinds.items():
            # Arrow's null type (a column without a value) reads as integers: a column of nulls only
            if kind not in PARQUET_KINDS.get(name, (kind,)) and raw.filter(F.col(name).isNotNull()).limit(1).count() == 0:
                kinds[name] = "null"
        check_parquet_columns(paths[0], kinds)
        return raw.select(
            F.col("topic").cast("string").alias("topic"), (F.col("partition") if "partition" in raw.columns else F.lit(0)).cast("bigint").alias("partition"),
            (F.col("offset") if "offset" in raw.columns else F.lit(None)).cast("bigint").alias("offset"),
            F.col("ts").cast("bigint"), F.col("key").cast("string"), F.col("value").cast("string"),
            F.lit(None).cast("string").alias("error"), F.col("_metadata.file_path").alias("file"),
            F.lit(0).cast("bigint").alias("block"), F.col("_metadata.row_index").alias("pos"))
    text = spark.read.text(paths).filter(F.trim("value") != "") \
        .select("value", F.col("_metadata.file_path").alias("file"),
                F.col("_metadata.file_block_start").alias("block"), F.monotonically_increasing_id().alias("pos"))
    parse = functools.partial(_parse_jsonl_located, topics=tuple(topics))
    return text.mapInArrow(parse, PARSED_DDL + ", file STRING, block BIGINT, pos BIGINT")


#: a number that may overflow a double (an exponent of three digits, or 309 digits before a
#: fraction): Spark's parser reads it as Infinity; such a row is judged by the shared reader
#: (``parse_json``), which refuses the ones that do overflow, naming the record
MAYBE_BEYOND_DOUBLE = r"[0-9][eE]\+?0*[1-9][0-9]{2}|[0-9]{309}"


def _not_json(name):
    """Parquet's value must hold JSON text (a plain ``hello`` is the usual mistake). Simple
    values are JSON by the pattern; the rest goes through Spark's strict parser, which differs
    from Python's (the reference's) only on oddities: it refuses ``NaN``, repeated object keys and
    escaped lone surrogates and accepts trailing content after a value. Used only for Parquet
    values that are not rewritten (``_canonical``, where Python's parser judges them, as it
    judges every Parquet key that is not simple JSON)."""
    from pyspark.sql import functions as F

    text = F.col(name)

    def elements(suffix):
        return F.json_array_length(F.concat(F.lit("["), text, F.lit(suffix)))

    # Spark's parser stops after the first value: "[text]" holds one element and "[text,0]" two
    # only when nothing follows the value (``1 2``, ``[1] ]``, ``{} x`` fail one or the other)
    one_value = F.coalesce((elements("]") == 1) & (elements(",0]") == 2), F.lit(False))
    bad = text.isNotNull() & ~text.rlike(SIMPLE_JSON) & (F.try_parse_json(text).isNull() | ~one_value
                                                         | text.rlike(MAYBE_BEYOND_DOUBLE))
    return bad, F.concat(F.lit(f"field {name} {MUST_BE_JSON_TEXT}"), text)


def _row_problem(partitions, spark_json_checks=(), topics=TOPICS):
    """What is wrong with a row on its own (null if nothing); ``spark_json_checks``: the columns
    whose JSON text Spark's parser checks (``_not_json``)."""
    from pyspark.sql import functions as F

    count = F.lit(1)
    for topic, n in partitions.items():
        count = F.when(F.col("topic") == topic, F.lit(n)).otherwise(count)
    problems = F.when(F.col("error").isNotNull(), F.col("error"))
    for name in spark_json_checks:
        bad, problem = _not_json(name)
        problems = problems.when(bad, problem)
    return (problems
            .when(~F.coalesce(F.col("topic").isin(*topics), F.lit(False)), F.concat(F.lit(f"field topic must be one of {', '.join(topics)}, got "),
                                                        F.coalesce(F.col("topic"), F.lit("null"))))
            .when(F.col("ts").isNull() | (F.col("ts") < 0), F.lit("field ts must be a non-negative integer timestamp"))
            .when(F.col("partition").isNull(), F.lit("field partition must be a non-negative integer, got null"))
            .when((F.col("partition") < 0) | (F.col("partition") >= count),
                  F.concat(F.lit("field partition: partition "), F.col("partition").cast("string"),
                           F.lit(" does not exist (config.partitions: '"), F.col("topic"), F.lit("' has "),
                           count.cast("string"), F.lit(")")))
            .when(F.col("offset").isNotNull() & (F.col("offset") < 0), F.lit("field offset must be non-negative")))


def _canonical_texts(texts, as_key: bool):
    """Arrow UDF body: each JSON text (null: none) -> ``(text, problem)``, the text as
    ``key_text`` / ``json_text`` of ``parse_json`` of it (a JSON ``null`` is null), or the
    reference's complaint when Python's parser refuses it."""
    import pyarrow as pa

    if texts.null_count == len(texts):
        return pa.StructArray.from_arrays([texts.cast(pa.string()), texts.cast(pa.string())], names=["text", "problem"])
    out, problems = [], []
    for text in texts.to_pylist():
        if text is None:
            out.append(None)
            problems.append(None)
            continue
        try:
            value = parse_json(text)
        except ValueError:
            out.append(None)
            problems.append(MUST_BE_JSON_TEXT + repr(text))
            continue
        out.append(key_text(value) if as_key else _json_or_none(value))
        problems.append(None)
    return pa.StructArray.from_arrays([pa.array(out, pa.string()), pa.array(problems, pa.string())],
                                      names=["text", "problem"])


def _canonical_key_texts(texts):
    return _canonical_texts(texts, True)


def _canonical_value_texts(texts):
    return _canonical_texts(texts, False)


def _canonical(raw, names):
    """``raw`` with the columns ``names`` (``key``, ``value``) rewritten as their canonical text
    where they are not simple JSON (see the module docstring), and ``json_problem``: the first
    of them Python's parser refuses, or null."""
    from pyspark.sql import functions as F

    bodies = {"key": _canonical_key_texts, "value": _canonical_value_texts}
    problems = []
    for name in names:
        text = F.col(name)
        # a flat object of simple members is its own canonical text too: no Python for it
        simple = text.isNull() | text.rlike(SIMPLE_JSON) | text.rlike(CANONICAL_FLAT_OBJECT)
        udf = F.arrow_udf(bodies[name], "text STRING, problem STRING")
        raw = raw.withColumn("_canon", udf(F.when(~simple, text)))
        raw = raw.withColumn(name, F.when(simple, text).otherwise(F.col("_canon.text"))) \
            .withColumn("_problem_" + name, F.concat(F.lit(f"field {name} "), F.col("_canon.problem"))).drop("_canon")
        problems.append(F.col("_problem_" + name))
    raw = raw.withColumn("json_problem", F.coalesce(*problems))
    return raw.drop(*["_problem_" + name for name in names])


@attrs.frozen
class RecordStats:
    """What the writers need to know of a replay's inputs: how many records (the output order
    is split into ranges of input indexes), and how many values are not simple JSON (with none,
    every joined value is built in Spark: no Python)."""

    records: int
    complex_values: int
    #: keys and values that may hold a float or an integer beyond 38 digits (:data:`MAY_HOLD_FLOAT`);
    #: None: not looked for. With none, a graph's native columns need no guard (``graph.mappers``)
    float_like: Optional[int] = None


#: what any JSON text holding a float (a digit, then a fraction or an exponent: JSON's grammar,
#: whatever the spelling) or an integer of 39 digits or more has somewhere; strings may match too,
#: which only costs the guard (NaN and Infinity never get here: the reader refuses them)
MAY_HOLD_FLOAT = "[0-9][.eE]|[0-9]{39}"


OFFSETS_DECREASE = "offsets of a topic partition must increase in file order"


class _Layout:
    """Where each split's rows start (``shift``), from the count per (file, split); the first
    row that is bad on its own; how many rows and values that are not simple JSON (see
    ``outputs.SIMPLE_JSON``) there are."""

    def __init__(self, spark, paths, splits):
        given = [_qualified(spark, p) for p in paths]

        def rank(name):
            for i, root in enumerate(given):
                if name == root or name.startswith(root + "/"):
                    return (i, name)
            return (len(given), name)

        files = sorted({r["file"] for r in splits}, key=rank)
        self.file_rank = {f: i for i, f in enumerate(files)}
        self.shift, total = {}, 0
        for r in sorted(splits, key=lambda r: (self.file_rank[r["file"]], r["block"])):
            self.shift[(self.file_rank[r["file"]], r["block"])] = total - r["first"]
            total += r["n"]
        self.total = total
        self.complex_values = sum(r["complex"] for r in splits)
        self.complex_keys = sum(r["complex_keys"] for r in splits)
        self.float_like = sum(r["float_like"] for r in splits)
        self.uncanonical_values = sum(r["uncanonical"] for r in splits)
        bad = [(self.idx_of(r["file"], r["block"], r["bad"]), (r["file"], r["block"], r["bad"]))
               for r in splits if r["bad"] is not None]
        #: ``(file, block, pos)`` of the first row that is bad on its own, or None
        self.problem = min(bad, default=(None, None))[1]

    def idx_of(self, file, block, pos):
        return self.shift[(self.file_rank[file], block)] + pos

    def idx_column(self):
        """``idx`` of every row, from its location (literal maps: a few entries per file)."""
        from pyspark.sql import functions as F

        def literal_map(pairs, key_type, value_type):
            if not pairs:
                return F.create_map().cast(f"map<{key_type},{value_type}>")
            return F.create_map(*[F.lit(x).cast(t) for pair in pairs for x, t in zip(pair, (key_type, value_type))])

        file_rank = literal_map(list(self.file_rank.items()), "string", "int")
        # a split is (file rank, block start): one long, blocks being byte offsets below 2^40
        shift = literal_map([(rank * _SPLIT_SCALE + block, s) for (rank, block), s in self.shift.items()],
                            "bigint", "bigint")
        split = file_rank[F.col("file")].cast("bigint") * F.lit(_SPLIT_SCALE) + F.col("block")
        return shift[split] + F.col("pos")


_SPLIT_SCALE = 1 << 40


def _offsets(raw):
    """``(raw, off)``: each row's effective offset (given, or the previous one of its topic
    partition + 1), and a ``problem`` where a given offset does not increase."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    off = F.col("offset")
    in_partition = Window.partitionBy("topic", "partition").orderBy("idx")
    raw = raw.withColumn("rn", F.row_number().over(in_partition))
    given = F.last(F.when(off.isNotNull(), F.struct(F.col("rn").alias("rn"), off.alias("o"))), ignorenulls=True) \
        .over(in_partition.rowsBetween(Window.unboundedPreceding, Window.currentRow))
    # rows since the last given offset first: an offset may be Long.MAX (offset + rn would overflow)
    since = F.col("rn") - F.coalesce(given.getField("rn"), F.lit(0))
    raw = raw.withColumn("off", F.coalesce(given.getField("o"), F.lit(-1)) + since)
    previous = F.lag("off").over(in_partition)
    raw = raw.withColumn("problem", F.when(off.isNotNull() & previous.isNotNull() & (off <= previous),
                                           F.lit(OFFSETS_DECREASE)))
    return raw, F.col("off")


def _extractor_problems(keys, values, source, field, role):
    """Arrow UDF body: for each ``left`` row (key and value as JSON text), what the topology's key
    extractor cannot read in it (``reference.model.topology.check_extractable``, the reference's
    rule), as ``field <where>: <message>``, or null."""
    import pyarrow as pa

    from kssim.reference.model.topology import ExtractorError, KeyExtractorSpec, check_extractable

    out = []
    for key, value, src, fld, rol in zip(keys.to_pylist(), values.to_pylist(), source.to_pylist(), field.to_pylist(),
                                         role.to_pylist()):
        problem = None
        if src is not None:
            try:
                check_extractable(KeyExtractorSpec(source=src, field=fld, role=rol),
                                  None if key is None else json.loads(key),
                                  None if value is None else json.loads(value))
            except ExtractorError as exc:
                problem = f"field {exc.where}: {exc}"
        out.append(problem)
    return pa.array(out, pa.string())


def _surely_extractable(extractor):
    """A column true where the extractor surely reads a row (its JSON text is valid): nothing to
    read (null), no field (the whole key or value), or an object with the field as a member of
    its own: ``"field":`` right after the opening brace or a comma with no ``{`` before it (a
    quote after a comma never opens a string's content in valid JSON: a name). A field whose name
    JSON escapes is left to Python (only nulls are sure)."""
    from pyspark.sql import functions as F

    text = F.col(extractor.source)
    if extractor.field is None:
        return F.lit(True)
    if re.fullmatch(r'[^"\\\x00-\x1f]*', extractor.field) is None:
        return text.isNull()
    return text.isNull() | text.rlike(r'^\{(?:[^{]*?,)?\Q"' + extractor.field + r'"\E:')


def _sum_value_problems(values, checked):
    """Arrow UDF body: for each row of a topic whose values a ``sum`` adds (``checked``), what the
    scenario loader's check (``reference.model.aggregations.check_aggregated_value``) says is wrong
    with its value (JSON text), as ``field value: <message>``, or null."""
    import pyarrow as pa

    from kssim.reference.model.aggregations import check_aggregated_value

    out = []
    for value, check in zip(values.to_pylist(), checked.to_pylist()):
        problem = None
        if check and value is not None:
            problem = check_aggregated_value("sum", json.loads(value))
        out.append(None if problem is None else f"field value: {problem}")
    return pa.array(out, pa.string())


def read_record_files(spark, paths: Sequence[str], sid: int = 0, partitions: dict = None, fmt: str = None,
                      with_offsets: bool = True, canonical_values: bool = False, extractor=None, topics=TOPICS,
                      sum_topics: Sequence[str] = (), keep_topic: bool = False):
    """``records`` for one scenario from JSONL or Parquet record files (``.parquet`` files or
    folders: Parquet; anything else: JSONL), numbered and checked as the module docstring says
    (``partitions``: topic -> count, default 1); returns ``(records, RecordStats)``.
    ``with_offsets`` (``timestamp_sync``) computes
    each row's offset ``off`` and checks that given offsets increase; without it ``off`` is the
    given offset or null: ``as_listed`` processes the rows in file order and reads no offset.
    ``canonical_values``: rewrite Parquet values as their canonical JSON text too (KIP-557's
    idempotence check compares value bytes; keys are always rewritten). ``extractor``: the
    topology's key extractor (``reference.model.topology.key_extractor_of``: an FK join's FK, a
    GlobalKTable join's key mapper); every ``left`` row must hold what it reads, as the scenario
    loader (and the reference's reader) requires. ``sum_topics``: the topics whose values a ``sum``
    aggregation adds: each must be an integer that fits a Java long, as the loader requires.
    ``keep_topic``: add each row's ``topic`` name (a graph's source topics are not sides)."""
    from pyspark.sql import functions as F

    paths = [str(p) for p in paths]
    partitions = partitions or {}
    fmt = fmt or ("parquet" if all(p.rstrip("/").endswith(".parquet") for p in paths) else "jsonl")
    raw = _located_rows(spark, paths, fmt, topics)
    # JSONL: key and value come from Python's parser (valid JSON). Parquet: keys are judged and
    # rewritten by Python (``_canonical``), values too with canonical_values, else by Spark's parser
    python_values = canonical_values and fmt == "parquet"
    problem = _row_problem(partitions, ("value",) if fmt == "parquet" and not python_values else (), topics)
    splits = raw.groupBy("file", "block").agg(
        F.count("*").alias("n"), F.min("pos").alias("first"),
        F.min(F.when(problem.isNotNull(), F.col("pos"))).alias("bad"),
        F.count_if(F.col("value").isNotNull() & ~F.col("value").rlike(SIMPLE_JSON)).alias("complex"),
        # a JSONL key is key_text already (written by _parse_jsonl)
        F.count_if(F.lit(fmt == "parquet") & F.col("key").isNotNull() & ~F.col("key").rlike(SIMPLE_JSON))
        .alias("complex_keys"),
        F.count_if(F.col("key").rlike(MAY_HOLD_FLOAT) | F.col("value").rlike(MAY_HOLD_FLOAT)).alias("float_like"),
        # values _canonical would hand to Python (a flat object of simple members is canonical already)
        F.count_if(F.col("value").isNotNull() & ~F.col("value").rlike(SIMPLE_JSON)
                   & ~F.col("value").rlike(CANONICAL_FLAT_OBJECT)).alias("uncanonical"),
    ).collect()
    layout = _Layout(spark, paths, [r.asDict() for r in splits])
    first_bad = None
    if layout.problem is not None:
        file, block, pos = layout.problem
        bad = raw.filter((F.col("file") == file) & (F.col("block") == block) & (F.col("pos") == pos)) \
            .select(problem.alias("problem")).first()
        first_bad = (layout.idx_of(file, block, pos), file, bad["problem"])
    raw = raw.withColumn("idx", layout.idx_column())
    rewrite = [name for name, wanted in (("key", layout.complex_keys > 0),
                                         ("value", python_values and layout.uncanonical_values > 0))
               if wanted]
    if rewrite:
        raw = _canonical(raw, rewrite)
        python_bad = raw.filter(F.col("json_problem").isNotNull()).groupBy().agg(
            F.min(F.struct("idx", "file", "json_problem")).alias("first")).collect()[0]["first"]
        # the reference decodes key and value before it checks the other fields of a row
        if python_bad is not None and (first_bad is None or python_bad["idx"] <= first_bad[0]):
            first_bad = (python_bad["idx"], python_bad["file"], python_bad["json_problem"])
    if extractor is not None:
        udf = F.arrow_udf(_extractor_problems, "string")
        left = F.col("topic") == "left"
        # Python checks only the rows not surely readable (most have their member plainly)
        unsure = raw.filter(left & ~_surely_extractable(extractor))
        unreadable = unsure.select("idx", "file", udf(F.when(left, F.col("key")), F.when(left, F.col("value")),
                                                      F.when(left, F.lit(extractor.source)),
                                                      F.lit(extractor.field).cast("string"),
                                                      F.lit(extractor.role)).alias("problem")) \
            .filter(F.col("problem").isNotNull()).groupBy().agg(F.min(F.struct("idx", "file", "problem")).alias("first")) \
            .collect()[0]["first"]
        if unreadable is not None and (first_bad is None or unreadable["idx"] < first_bad[0]):
            first_bad = (unreadable["idx"], unreadable["file"], unreadable["problem"])
    if sum_topics:
        udf = F.arrow_udf(_sum_value_problems, "string")
        unaddable = raw.select("idx", "file", udf(F.col("value"), F.col("topic").isin(*sum_topics)).alias("problem")) \
            .filter(F.col("problem").isNotNull()).groupBy().agg(F.min(F.struct("idx", "file", "problem")).alias("first")) \
            .collect()[0]["first"]
        if unaddable is not None and (first_bad is None or unaddable["idx"] < first_bad[0]):
            first_bad = (unaddable["idx"], unaddable["file"], unaddable["problem"])
    if first_bad is not None:
        idx, file, message = first_bad
        raise ScenarioError(file, f"input record {idx}", message)
    off = F.col("offset")
    if with_offsets:
        raw, off = _offsets(raw)
        bad = raw.filter(F.col("problem").isNotNull()).groupBy().agg(
            F.min(F.struct("idx", "file", "problem")).alias("first")).collect()[0]["first"]
        if bad is not None:
            raise ScenarioError(bad["file"], f"input record {bad['idx']}", bad["problem"])
    records = raw.select(
        F.lit(sid).cast("int").alias("sid"), F.col("idx").cast("bigint"),
        # an aggregation's one topic, ``input``, is side 0 as a join's ``left`` (inputs.SIDES)
        F.when(F.col("topic") == "right", 1).otherwise(0).alias("side"), F.col("partition").cast("int").alias("task"),
        off.cast("bigint").alias("off"), F.col("ts"), F.col("key"), F.col("value"),
        *([F.col("topic")] if keep_topic else []),
    )
    return records, RecordStats(layout.total, layout.complex_values, layout.float_like)


def write_record_files(spark, scenario, path: str, fmt: str = "jsonl") -> None:
    """Write a scenario's inputs as a record file (JSONL: one object a line, key/value as JSON;
    Parquet: key/value as JSON text), with explicit offsets, in list order."""
    offsets = {}
    rows = []
    for rec in scenario.inputs:
        off = offsets.get((rec.topic, rec.partition), 0)
        offsets[(rec.topic, rec.partition)] = off + 1
        rows.append({"topic": rec.topic, "partition": rec.partition, "offset": off, "ts": rec.ts,
                     "key": rec.key, "value": rec.value})
    if fmt == "jsonl":
        with open(path, "w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row) + "\n")
        return
    table = [(r["topic"], r["partition"], r["offset"], r["ts"], _json_or_none(r["key"]), _json_or_none(r["value"]))
             for r in rows]
    ddl = "topic STRING, partition INT, offset BIGINT, ts BIGINT, key STRING, value STRING"
    spark.createDataFrame(table, ddl).coalesce(1).write.mode("overwrite").parquet(path)




# --- small inputs and captures Spark cannot scan: the shared reader on the driver -----------------

#: rows per Arrow batch of driver-read records; an input of at most one batch stays in memory
DRIVER_BATCH_ROWS = 1 << 16


_RECORD_TYPES = (("sid", "int32"), ("idx", "int64"), ("side", "int32"), ("task", "int32"), ("off", "int64"),
                 ("ts", "int64"), ("key", "string"), ("value", "string"))


def _record_batches(inputs: Iterable, counts: dict):
    """Input records (``reference.model.records.InputRecord``) -> Arrow batches of ``records``
    rows (``inputs.RECORDS_DDL``; offsets: position in the topic partition, as the reference
    orders a partition), ``DRIVER_BATCH_ROWS`` at a time. ``counts`` gets ``records`` and
    ``complex_values`` (values that are not simple JSON)."""
    import pyarrow as pa

    simple = re.compile(SIMPLE_JSON)
    schema = pa.schema(_RECORD_TYPES)
    offsets = {}
    batch = []
    for rec in inputs:
        part = (rec.topic, rec.partition)
        off = offsets.get(part, 0)
        offsets[part] = off + 1
        value = _json_or_none(rec.value)
        if value is not None and simple.match(value) is None:
            counts["complex_values"] += 1
        batch.append((0, rec.index, SIDES[rec.topic], rec.partition, off, rec.ts, key_text(rec.key), value))
        if len(batch) == DRIVER_BATCH_ROWS:
            counts["records"] += len(batch)
            yield pa.RecordBatch.from_arrays([pa.array(c, t) for c, t in zip(zip(*batch), schema.types)], schema=schema)
            batch = []
    counts["records"] += len(batch)
    columns = list(zip(*batch)) if batch else [[] for _ in _RECORD_TYPES]
    yield pa.RecordBatch.from_arrays([pa.array(c, t) for c, t in zip(columns, schema.types)], schema=schema)


def records_from_reader(spark, inputs: Iterable, folder: str):
    """``(records, RecordStats)`` for one scenario (sid 0) from input records read on the driver
    (the shared reader: ``reference.model.record_files.iter_record_files`` or a capture reader),
    so both engines see exactly the same records and refuse the same rows with the same message
    (the reader's ScenarioError, raised here, before any Spark job). Streamed: an input of one
    batch becomes an in-memory frame; a larger one is written batch by batch to a Parquet file in
    ``folder`` (a work folder the caller removes after the replay) that Spark scans."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kssim.spark_backend.runtime.inputs import RECORDS_DDL

    counts = {"records": 0, "complex_values": 0}
    batches = _record_batches(inputs, counts)
    first = next(batches)
    second = next(batches, None)
    if second is None:
        frame = spark.createDataFrame(pa.Table.from_batches([first]).to_pandas(), RECORDS_DDL) if first.num_rows \
            else spark.createDataFrame([], RECORDS_DDL)
        return frame, RecordStats(counts["records"], counts["complex_values"])
    path = os.path.join(folder, "records.parquet")
    with pq.ParquetWriter(path, first.schema) as writer:
        for batch in (first, second):
            writer.write_batch(batch)
        for batch in batches:
            writer.write_batch(batch)
    frame = spark.read.schema(RECORDS_DDL).parquet(path)
    return frame, RecordStats(counts["records"], counts["complex_values"])
