"""Record files (captured topics) -> the ``records`` frame of the Spark backend.

The contract is ``reference.model.record_files``'s: JSONL (one object a line: ``topic``, ``partition``
(default 0), ``offset`` (optional), ``ts``, ``key``, ``value``; key and value any JSON) or Parquet
(the same columns; ``key``/``value`` are strings holding JSON text, as ``outputs.write_parquet``
writes them). The rows, in the order the paths are given and in file order, are the input records
(that order is ``as_listed`` and defines ``idx``); a missing ``offset`` is the previous offset of
its topic partition + 1; given offsets must increase within a topic partition; partitions must
exist. A bad row is a ScenarioError naming the file, the input record and the problem.

How, without funnelling the rows through one task:

- numbering: every row knows its ``file``, ``block`` (the split's start) and ``pos`` (increasing
  within a split: Parquet's row index, a JSONL line's position in its split); Spark reads splits
  largest first, so a count per (file, split) and the listing order give each split its first
  index: ``idx = shift(file, block) + pos``. The same small aggregation finds the first row that
  is bad on its own (unknown topic, missing ts, partition out of range, ...): one pass, no sort.
- offsets, only for ``timestamp_sync`` (the one order that reads them: a task takes each
  partition's records in offset order): a window over each topic partition in file order gives
  the effective offset (the last given one plus the rows since) and checks that given offsets
  increase. ``as_listed`` processes the rows in file order and reads no offset (as the
  reference's reader, ``reference.model.record_files``).
"""
from __future__ import annotations

import json
from typing import Sequence

import attrs

from reference.model.errors import ScenarioError

from spark_backend.runtime.inputs import TOPICS, _json_or_none
from spark_backend.runtime.outputs import SIMPLE_JSON

_PARSED = (("topic", "string"), ("partition", "int64"), ("offset", "int64"), ("ts", "int64"),
           ("key", "string"), ("value", "string"), ("error", "string"))
PARSED_DDL = "topic STRING, partition BIGINT, offset BIGINT, ts BIGINT, key STRING, value STRING, error STRING"
RECORD_FIELDS = ("topic", "partition", "offset", "ts", "key", "value")


def _int(value):
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _parse_jsonl(batches):
    """JSONL lines -> record columns (key/value as JSON text), plus what is wrong with a line."""
    import pyarrow as pa

    for batch in batches:
        cols = {name: [] for name, _ in _PARSED}
        for line in batch.column("value").to_pylist():
            error, obj = None, {}
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                error = f"not valid JSON: {exc.msg}"
            if error is None and not isinstance(obj, dict):
                error, obj = "a record must be an object", {}
            unknown = [name for name in obj if name not in RECORD_FIELDS]
            missing = [name for name in ("topic", "ts", "key", "value") if name not in obj]
            if error is None and unknown:
                error = f"unknown field {unknown[0]!r} (expected: {', '.join(RECORD_FIELDS)})"
            if error is None and missing:
                error = f"missing required field {missing[0]!r}"
            for name, raw in (("partition", obj.get("partition", 0)), ("offset", obj.get("offset")), ("ts", obj.get("ts"))):
                if error is None and raw is not None and _int(raw) is None:
                    error = f"field {name} must be an integer, got {raw!r}"
            cols["topic"].append(obj.get("topic") if isinstance(obj.get("topic"), str) else None)
            cols["partition"].append(_int(obj.get("partition", 0)))
            cols["offset"].append(_int(obj.get("offset")))
            cols["ts"].append(_int(obj.get("ts")))
            cols["key"].append(_json_or_none(obj.get("key")))
            cols["value"].append(_json_or_none(obj.get("value")))
            cols["error"].append(error)
        yield pa.RecordBatch.from_arrays([pa.array(cols[n], getattr(pa, t)()) for n, t in _PARSED],
                                         names=[n for n, _ in _PARSED])


def _parse_jsonl_located(batches):
    """``_parse_jsonl`` keeping each line's file and position columns."""
    import pyarrow as pa

    for batch in batches:
        located = [batch.column(n) for n in ("file", "block", "pos")]
        for parsed in _parse_jsonl([batch]):
            yield pa.RecordBatch.from_arrays(parsed.columns + located, names=parsed.schema.names + ["file", "block", "pos"])


def _qualified(spark, path):
    jvm = spark._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    fs = hadoop_path.getFileSystem(spark._jsc.hadoopConfiguration())
    return fs.makeQualified(hadoop_path).toString().rstrip("/")


def _located_rows(spark, paths, fmt):
    """The rows with ``topic, partition, offset, ts, key, value, error`` (a JSONL line's parse
    error) and their location ``file, block, pos``."""
    from pyspark.sql import functions as F

    if fmt == "parquet":
        raw = spark.read.parquet(*paths)
        unknown = [c for c in raw.columns if c not in RECORD_FIELDS]
        missing = [c for c in ("topic", "ts", "key", "value") if c not in raw.columns]
        if unknown or missing:
            raise ScenarioError(paths[0], "", f"Parquet record files need the columns {', '.join(RECORD_FIELDS)} "
                                              f"(unknown: {unknown}, missing: {missing})")
        return raw.select(
            "topic", (F.col("partition") if "partition" in raw.columns else F.lit(0)).cast("bigint").alias("partition"),
            (F.col("offset") if "offset" in raw.columns else F.lit(None)).cast("bigint").alias("offset"),
            F.col("ts").cast("bigint"), F.col("key").cast("string"), F.col("value").cast("string"),
            F.lit(None).cast("string").alias("error"), F.col("_metadata.file_path").alias("file"),
            F.lit(0).cast("bigint").alias("block"), F.col("_metadata.row_index").alias("pos"))
    text = spark.read.text(paths).filter(F.trim("value") != "") \
        .select("value", F.col("_metadata.file_path").alias("file"),
                F.col("_metadata.file_block_start").alias("block"), F.monotonically_increasing_id().alias("pos"))
    return text.mapInArrow(_parse_jsonl_located, PARSED_DDL + ", file STRING, block BIGINT, pos BIGINT")


def _not_json(name):
    """Parquet's key/value must hold JSON text (a plain ``hello`` is the usual mistake). Simple
    values are JSON by the pattern; the rest goes through Spark's strict parser, which differs
    from Python's (the reference's) only on oddities: it refuses ``NaN`` and repeated object keys
    and accepts trailing content after a value."""
    from pyspark.sql import functions as F

    text = F.col(name)
    bad = text.isNotNull() & ~text.rlike(SIMPLE_JSON) & F.try_parse_json(text).isNull()
    return bad, F.concat(F.lit(f"field {name} must be JSON text, got "), text)


def _row_problem(partitions):
    """What is wrong with a row on its own (null if nothing)."""
    from pyspark.sql import functions as F

    count = F.lit(1)
    for topic, n in partitions.items():
        count = F.when(F.col("topic") == topic, F.lit(n)).otherwise(count)
    key_bad, key_problem = _not_json("key")
    value_bad, value_problem = _not_json("value")
    return (F.when(F.col("error").isNotNull(), F.col("error"))
            .when(key_bad, key_problem).when(value_bad, value_problem)
            .when(~F.col("topic").isin(*TOPICS), F.concat(F.lit("field topic must be one of left, right, got "),
                                                        F.coalesce(F.col("topic"), F.lit("null"))))
            .when(F.col("ts").isNull() | (F.col("ts") < 0), F.lit("field ts must be a non-negative integer timestamp"))
            .when((F.col("partition") < 0) | (F.col("partition") >= count),
                  F.concat(F.lit("field partition: partition "), F.col("partition").cast("string"),
                           F.lit(" does not exist (config.partitions)")))
            .when(F.col("offset").isNotNull() & (F.col("offset") < 0), F.lit("field offset must be non-negative")))


@attrs.frozen
class RecordStats:
    """What the writers need to know of a replay's inputs: how many records (the output order
    is split into ranges of input indexes), and how many values are not simple JSON (with none,
    every joined value is built in Spark: no Python)."""

    records: int
    complex_values: int


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
    raw = raw.withColumn("off", F.coalesce(given.getField("o"), F.lit(-1)) + F.col("rn") - F.coalesce(given.getField("rn"), F.lit(0)))
    previous = F.lag("off").over(in_partition)
    raw = raw.withColumn("problem", F.when(off.isNotNull() & previous.isNotNull() & (off <= previous),
                                           F.lit(OFFSETS_DECREASE)))
    return raw, F.col("off")


def read_record_files(spark, paths: Sequence[str], sid: int = 0, partitions: dict = None, fmt: str = None,
                      with_offsets: bool = True):
    """``records`` for one scenario from JSONL or Parquet record files (``.parquet`` files or
    folders: Parquet; anything else: JSONL), numbered and checked as the module docstring says
    (``partitions``: topic -> count, default 1); returns ``(records, RecordStats)``.
    ``with_offsets`` (``timestamp_sync``) computes
    each row's offset ``off`` and checks that given offsets increase; without it ``off`` is the
    given offset or null: ``as_listed`` processes the rows in file order and reads no offset."""
    from pyspark.sql import functions as F

    paths = [str(p) for p in paths]
    partitions = partitions or {}
    fmt = fmt or ("parquet" if all(p.rstrip("/").endswith(".parquet") for p in paths) else "jsonl")
    raw = _located_rows(spark, paths, fmt)
    problem = _row_problem(partitions)
    splits = raw.groupBy("file", "block").agg(
        F.count("*").alias("n"), F.min("pos").alias("first"),
        F.min(F.when(problem.isNotNull(), F.col("pos"))).alias("bad"),
        F.count_if(F.col("value").isNotNull() & ~F.col("value").rlike(SIMPLE_JSON)).alias("complex"),
    ).collect()
    layout = _Layout(spark, paths, [r.asDict() for r in splits])
    if layout.problem is not None:
        file, block, pos = layout.problem
        bad = raw.filter((F.col("file") == file) & (F.col("block") == block) & (F.col("pos") == pos)) \
            .select(problem.alias("problem")).first()
        raise ScenarioError(file, f"input record {layout.idx_of(file, block, pos)}", bad["problem"])
    raw = raw.withColumn("idx", layout.idx_column())
    off = F.col("offset")
    if with_offsets:
        raw, off = _offsets(raw)
        bad = raw.filter(F.col("problem").isNotNull()).groupBy().agg(
            F.min(F.struct("idx", "file", "problem")).alias("first")).collect()[0]["first"]
        if bad is not None:
            raise ScenarioError(bad["file"], f"input record {bad['idx']}", bad["problem"])
    records = raw.select(
        F.lit(sid).cast("int").alias("sid"), F.col("idx").cast("bigint"),
        F.when(F.col("topic") == "left", 0).otherwise(1).alias("side"), F.col("partition").cast("int").alias("task"),
        off.cast("bigint").alias("off"), F.col("ts"), F.col("key"), F.col("value"),
    )
    return records, RecordStats(layout.total, layout.complex_values)


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


