"""Inputs of the Spark backend: scenarios and record files -> one records DataFrame per batch.

Every batch (many scenarios, or one topology replayed over record files) becomes

- ``records``: one row per input record: ``sid`` (scenario id = position in the batch), ``idx``
  (the input index: position in the scenario's ``inputs`` / row in the record file), ``side``
  (0 = ``left``, 1 = ``right``: the topic's rank, which also breaks timestamp ties), ``task`` (the
  partition; task N reads partition N of each topic), ``off`` (the offset in the topic partition:
  list order within (topic, partition), or the file's ``offset``), ``ts``, and ``key``/``value`` as
  compact JSON text (``None`` for a JSON null, i.e. a null key or a null value / tombstone);
- ``configs``: one row per scenario with the topology fields and the release rules the operators
  need, read from the profile by rule name (never by comparing versions).

Keys and values stay JSON text through the whole job: equality (joins on key, KIP-557's
idempotence check) is equality of that text, i.e. of the bytes a JSON serde writes, and the joiner
is applied once, at the end (``outputs.py``).

Record files (the contract of ``reference.record_files``): JSONL (one object a line: ``topic``,
``partition`` (default 0), ``offset`` (optional), ``ts``, ``key``, ``value``; key and value any
JSON) or Parquet (the same columns; ``key``/``value`` are strings holding JSON text, as
:func:`outputs.write_parquet` writes them). The rows, in the order the paths are given and in file
order, are the input records (that order is ``as_listed`` and defines ``idx``).
"""
from __future__ import annotations

import json
from typing import List, Sequence

import attrs

from reference.topology import StreamTableJoinSpec, TableSpec, TableTableJoinSpec

from . import stream_stream_settings

SIDES = {"left": 0, "right": 1}
TOPICS = ("left", "right")

RECORD_COLUMNS = ("sid", "idx", "side", "task", "off", "ts", "key", "value")
RECORDS_DDL = ("sid INT, idx BIGINT, side INT, task INT, off BIGINT, ts BIGINT, key STRING, value STRING")

#: Per-scenario settings; the operator modules read them as columns (many scenarios per job).
CONFIG_DDL = (
    "sid INT, op STRING, join STRING, ts_sync BOOLEAN, order_key STRING, "
    "kip77 BOOLEAN, ts_max BOOLEAN, emit_on_change BOOLEAN, null_key_emit BOOLEAN, "
    "grace BIGINT, lver BOOLEAN, lret BIGINT, rver BOOLEAN, rret BIGINT, send_old BOOLEAN, "
    "joiner STRING, sep STRING, " + stream_stream_settings.CONFIG_DDL
)
CONFIG_COLUMNS = tuple(part.split()[0] for part in CONFIG_DDL.split(", "))

IMPLEMENTED = ("stream_table_join", "table_table_join", "stream_stream_join")


@attrs.frozen
class Features:
    """Which optional rules a batch needs at all. Read on the driver from the configs, so a job
    only contains the windows its scenarios use (each window is a sort of the whole batch)."""

    ts_sync: bool = True
    versioned: bool = True
    grace: bool = True
    emit_on_change: bool = True
    operators: frozenset = frozenset(IMPLEMENTED)
    stream_stream: stream_stream_settings.Features = stream_stream_settings.Features()

    @classmethod
    def of(cls, config_rows):
        rows = list(config_rows)
        return cls(operators=frozenset(r["op"] for r in rows),
                   stream_stream=stream_stream_settings.Features.of(rows),
                   ts_sync=any(r["ts_sync"] for r in rows),
                   versioned=any(r["lver"] or r["rver"] for r in rows),
                   grace=any(r["grace"] is not None for r in rows),
                   emit_on_change=any(r["emit_on_change"] for r in rows))


def json_text(value) -> str:
    """Compact JSON text in document order (no key sorting): what a JSON serde would write, so
    equal text is equal bytes (keys, KIP-557's idempotence check) and joiners print maps in order."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _json_or_none(value):
    return None if value is None else json_text(value)


def _table_fields(table: TableSpec):
    return bool(table.versioned), table.history_retention_ms


def config_row(sid: int, scenario) -> dict:
    """The settings of one scenario as a ``configs`` row (release rules read by name)."""
    spec, profile, config = scenario.topology, scenario.profile, scenario.config
    row = {
        "sid": sid, "op": spec.operator, "join": spec.join,
        "ts_sync": config.order == "timestamp_sync",
        # PartitionGroup's priority key (KIP-353 / 2.4): both later rules merge partitions on the
        # running max of their timestamps; before 2.1 on MinTimestampTracker's partition time
        "order_key": "prefix_max" if (profile.partition_choice_raw_head or profile.partition_choice_max_head)
        else "suffix_min",
        "kip77": profile.kip77_join_semantics,
        "ts_max": profile.output_ts_max,
        "emit_on_change": profile.ktable_emit_on_change,
        "null_key_emit": profile.null_key_outer_emit,
        "grace": None, "lver": False, "lret": None, "rver": False, "rret": None,
        "send_old": False,
        "joiner": spec.joiner if isinstance(spec.joiner, str) else None,
        "sep": spec.joiner_separator,
    }
    if isinstance(spec, StreamTableJoinSpec):
        row["grace"] = spec.grace_ms
        row["rver"], row["rret"] = _table_fields(spec.table)
    elif isinstance(spec, TableTableJoinSpec):
        row["lver"], row["lret"] = _table_fields(spec.left_table)
        row["rver"], row["rret"] = _table_fields(spec.right_table)
        row["send_old"] = spec.send_old_values
    row.update(stream_stream_settings.config_fields(scenario))
    return row


def record_rows(sid: int, inputs) -> List[tuple]:
    """Rows of ``records`` for one scenario's input records (offsets = list order per partition)."""
    offsets = {}
    rows = []
    for rec in inputs:
        part = (rec.topic, rec.partition)
        off = offsets.get(part, 0)
        offsets[part] = off + 1
        rows.append((sid, rec.index, SIDES[rec.topic], rec.partition, off, rec.ts,
                     _json_or_none(rec.key), _json_or_none(rec.value)))
    return rows


def _frame(spark, rows, ddl, columns):
    import pandas as pd

    pdf = pd.DataFrame.from_records(rows, columns=list(columns)) if rows else None
    if pdf is None:
        return spark.createDataFrame([], ddl)
    return spark.createDataFrame(pdf, ddl)


def scenarios_to_frames(spark, scenarios: Sequence, sids: Sequence[int]):
    """``(records, configs, features)`` for the scenarios ``scenarios[i]`` with ids ``sids[i]``."""
    rows, configs = [], []
    for sid, scenario in zip(sids, scenarios):
        rows.extend(record_rows(sid, scenario.inputs))
        configs.append(config_row(sid, scenario))
    records = _frame(spark, rows, RECORDS_DDL, RECORD_COLUMNS)
    return records, config_frame(spark, configs), Features.of(configs)


# --- record files ----------------------------------------------------------------------------

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


def _qualified(spark, path):
    jvm = spark._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    fs = hadoop_path.getFileSystem(spark._jsc.hadoopConfiguration())
    return fs.makeQualified(hadoop_path).toString().rstrip("/")


def _file_ranks(spark, frame, paths):
    """Each file's rank in the order the user listed the paths (a folder's files by name), as a
    small DataFrame ``(file, file_rank)``. Spark reads splits largest first, so file order must
    be rebuilt from the file names."""
    given = [_qualified(spark, p) for p in paths]
    files = [r["file"] for r in frame.select("file").distinct().collect()]

    def rank(name):
        for i, root in enumerate(given):
            if name == root or name.startswith(root + "/"):
                return (i, name)
        return (len(given), name)

    ordered = sorted(files, key=rank)
    return spark.createDataFrame([(f, i) for i, f in enumerate(ordered)] or [("", 0)], "file STRING, file_rank INT")


def _numbered(spark, frame, paths):
    """Number the rows 0..n-1 in file order without funnelling them through one task: rows carry
    their ``file``, ``block`` (the split's start) and ``pos`` (increasing within a split), and a
    small count per (file, split) gives each group's first index."""
    from pyspark.sql import functions as F

    frame = frame.join(F.broadcast(_file_ranks(spark, frame, paths)), "file")
    groups = frame.groupBy("file_rank", "block").agg(F.count("*").alias("n"), F.min("pos").alias("first")).collect()
    starts, total = [], 0
    for g in sorted(groups, key=lambda g: (g["file_rank"], g["block"])):
        starts.append((g["file_rank"], g["block"], total - g["first"]))
        total += g["n"]
    shift = spark.createDataFrame(starts or [(0, 0, 0)], "file_rank INT, block BIGINT, shift BIGINT")
    return frame.join(F.broadcast(shift), ["file_rank", "block"]) \
        .withColumn("idx", F.col("shift") + F.col("pos")).drop("shift", "pos", "block")


def read_record_files(spark, paths: Sequence[str], sid: int = 0, partitions: dict = None, fmt: str = None):
    """``records`` for one scenario from JSONL or Parquet record files (``.parquet`` files or
    folders: Parquet; anything else: JSONL), with the rules of ``reference.record_files``: rows
    numbered in the order the paths are given and in file order; a missing ``offset`` is the
    previous offset of that topic partition + 1; given offsets must increase within a topic
    partition; partitions must exist (``partitions``: topic -> count, default 1). A bad row is a
    ScenarioError naming the file and the row."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from reference.errors import ScenarioError

    paths = [str(p) for p in paths]
    partitions = partitions or {}
    fmt = fmt or ("parquet" if all(p.rstrip("/").endswith(".parquet") for p in paths) else "jsonl")
    if fmt == "parquet":
        raw = spark.read.parquet(*paths)
        unknown = [c for c in raw.columns if c not in RECORD_FIELDS]
        missing = [c for c in ("topic", "ts", "key", "value") if c not in raw.columns]
        if unknown or missing:
            raise ScenarioError(paths[0], "", f"Parquet record files need the columns {', '.join(RECORD_FIELDS)} "
                                              f"(unknown: {unknown}, missing: {missing})")
        raw = raw.select(
            "topic", (F.col("partition") if "partition" in raw.columns else F.lit(0)).cast("bigint").alias("partition"),
            (F.col("offset") if "offset" in raw.columns else F.lit(None)).cast("bigint").alias("offset"),
            F.col("ts").cast("bigint"), F.col("key").cast("string"), F.col("value").cast("string"),
            F.lit(None).cast("string").alias("error"), F.col("_metadata.file_path").alias("file"),
            F.lit(0).cast("bigint").alias("block"), F.col("_metadata.row_index").alias("pos"))
    else:
        text = spark.read.text(paths).filter(F.trim("value") != "") \
            .select("value", F.col("_metadata.file_path").alias("file"),
                    F.col("_metadata.file_block_start").alias("block"), F.monotonically_increasing_id().alias("pos"))
        schema = PARSED_DDL + ", file STRING, block BIGINT, pos BIGINT"
        raw = text.mapInArrow(_parse_jsonl_located, schema)
    raw = _numbered(spark, raw, paths)

    in_partition = Window.partitionBy("topic", "partition").orderBy("idx")
    rn = F.row_number().over(in_partition)
    raw = raw.withColumn("rn", rn)
    given = F.last(F.when(F.col("offset").isNotNull(), F.struct(F.col("rn").alias("rn"), F.col("offset").alias("o"))),
                   ignorenulls=True).over(in_partition.rowsBetween(Window.unboundedPreceding, Window.currentRow))
    raw = raw.withColumn("off", F.coalesce(given.getField("o"), F.lit(-1)) + F.col("rn") - F.coalesce(given.getField("rn"), F.lit(0)))
    previous = F.lag("off").over(in_partition)
    count = F.lit(1)
    for topic, n in partitions.items():
        count = F.when(F.col("topic") == topic, F.lit(n)).otherwise(count)
    problem = (F.when(F.col("error").isNotNull(), F.col("error"))
               .when(~F.col("topic").isin(*TOPICS), F.concat(F.lit("field topic must be one of left, right, got "),
                                                           F.coalesce(F.col("topic"), F.lit("null"))))
               .when(F.col("ts").isNull() | (F.col("ts") < 0), F.lit("field ts must be a non-negative integer timestamp"))
               .when((F.col("partition") < 0) | (F.col("partition") >= count),
                     F.concat(F.lit("field partition: partition "), F.col("partition").cast("string"),
                              F.lit(" does not exist (config.partitions)")))
               .when(F.col("offset").isNotNull() & (F.col("offset") < 0), F.lit("field offset must be non-negative"))
               .when(F.col("offset").isNotNull() & previous.isNotNull() & (F.col("offset") <= previous),
                     F.lit("offsets of a topic partition must increase in file order")))
    raw = raw.withColumn("problem", problem)
    bad = raw.filter(F.col("problem").isNotNull()).orderBy("idx").select("file", "idx", "problem").limit(1).collect()
    if bad:
        raise ScenarioError(bad[0]["file"], f"input record {bad[0]['idx']}", bad[0]["problem"])
    return raw.select(
        F.lit(sid).cast("int").alias("sid"), F.col("idx").cast("bigint"),
        F.when(F.col("topic") == "left", 0).otherwise(1).alias("side"), F.col("partition").cast("int").alias("task"),
        F.col("off").cast("bigint"), F.col("ts"), F.col("key"), F.col("value"),
    )


def _parse_jsonl_located(batches):
    """``_parse_jsonl`` keeping each line's file and position columns."""
    import pyarrow as pa

    for batch in batches:
        located = [batch.column(n) for n in ("file", "block", "pos")]
        for parsed in _parse_jsonl([batch]):
            yield pa.RecordBatch.from_arrays(parsed.columns + located, names=parsed.schema.names + ["file", "block", "pos"])


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


def config_frame(spark, rows: Sequence[dict]):
    return _frame(spark, [tuple(c[k] for k in CONFIG_COLUMNS) for c in rows], CONFIG_DDL, CONFIG_COLUMNS)
