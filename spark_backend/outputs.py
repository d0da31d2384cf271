"""Outputs of the Spark backend: the joined values, OutputRecords, and JSONL / Parquet writers.

The operator modules emit *result rows*: the joiner's two arguments as JSON text (``n_l``,
``n_r``; ``n_null`` when the result value is null, e.g. a table tombstone) and the same for the old
value (``o_kind``: 0 = no old value reported, 1 = a null old value, 2 = ``joiner(o_l, o_r)``).
The named joiner (``pair``, ``concat``; ``reference.joiners``, Java's string rules) is applied
here, once per output record: in Python on the driver for :func:`to_output_records`, and in a
pandas UDF for the file writers, so both paths build values the same way.

Record order is the engine's output order: per scenario, by the processing order of the input
that emitted the record (``g1..g4``), then by the order the operator forwarded within that input
(``f1..f3``).
"""
from __future__ import annotations

import json

from reference.joiners import make_joiner
from reference.records import NO_OLD_VALUE, OutputRecord
from reference.scenario import OUTPUT_TOPIC

OLD_NONE, OLD_NULL, OLD_JOINED = 0, 1, 2
OUTPUT, DROP, FAILURE = 0, 1, 2

#: Every operator turns its frame into *events*, one per row at most: ``etype`` OUTPUT (a result
#: row), DROP (``text`` = reason code) or FAILURE (``text`` = message), attributed to input ``idx``
#: whose processing-order key is ``g1..g4``; ``f1..f3`` order the outputs of one input.
EVENT_DDL = ("etype INT, sid INT, task INT, idx BIGINT, g1 BIGINT, g2 BIGINT, g3 BIGINT, g4 BIGINT, "
             "f1 BIGINT, f2 BINARY, f3 BIGINT, key STRING, ts BIGINT, n_null BOOLEAN, n_l STRING, n_r STRING, "
             "o_kind INT, o_l STRING, o_r STRING, text STRING")
EVENT_COLUMNS = tuple(part.split()[0] for part in EVENT_DDL.split(", "))
OUTPUT_ORDER = ("sid", "g1", "g2", "g3", "g4", "f1", "f2", "f3")


def events(frame, **columns):
    """Select the event columns from ``frame``: each given as a Column (or a column name);
    missing ones are null. Rows whose ``etype`` is null are no event and are dropped."""
    from pyspark.sql import functions as F

    types = dict(part.split() for part in EVENT_DDL.split(", "))
    present = set(frame.columns)
    picked = []
    for name in EVENT_COLUMNS:
        col = columns.get(name, name if name in present else None)
        col = F.lit(None) if col is None else (F.col(col) if isinstance(col, str) else col)
        picked.append(col.cast(types[name]).alias(name))
    return frame.select(*picked).filter(F.col("etype").isNotNull())


def _load(text):
    return None if text is None else json.loads(text)


class JoinedValues:
    """Applies a scenario's joiner to JSON-text arguments; joiners are built once per name."""

    def __init__(self):
        self._joiners = {}

    def joiner(self, name, separator):
        fn = self._joiners.get((name, separator))
        if fn is None:
            fn = self._joiners[(name, separator)] = make_joiner(name, separator if separator is not None else "+")
        return fn

    def value(self, name, separator, is_null, left, right):
        if is_null:
            return None
        return self.joiner(name, separator)(_load(left), _load(right))

    def old_value(self, name, separator, kind, left, right):
        if kind == OLD_NONE:
            return NO_OLD_VALUE
        if kind == OLD_NULL:
            return None
        return self.joiner(name, separator)(_load(left), _load(right))


def to_output_records(rows, joiner_of) -> list:
    """Collected result rows (in output order) -> OutputRecords; ``joiner_of(sid)`` gives the
    scenario's ``(joiner, separator)`` (a name, or a user callable from the Python API)."""
    values = JoinedValues()
    out = []
    for r in rows:
        name, sep = joiner_of(r["sid"])
        if callable(name):
            fn = name
            value = None if r["n_null"] else fn(_load(r["n_l"]), _load(r["n_r"]))
            old = (NO_OLD_VALUE if r["o_kind"] == OLD_NONE else None if r["o_kind"] == OLD_NULL
                   else fn(_load(r["o_l"]), _load(r["o_r"])))
        else:
            value = values.value(name, sep, r["n_null"], r["n_l"], r["n_r"])
            old = values.old_value(name, sep, r["o_kind"], r["o_l"], r["o_r"])
        out.append(OutputRecord(OUTPUT_TOPIC, r["task"], _load(r["key"]), value, r["ts"], r["idx"], old))
    return out


# --- file writers ------------------------------------------------------------------------------

def _joined_values(batches):
    """Append the joined ``value`` and ``old_value`` (JSON text) to result rows (mapInArrow)."""
    import pyarrow as pa

    from .inputs import json_text

    values = JoinedValues()
    for batch in batches:
        cols = {n: batch.column(n).to_pylist() for n in ("joiner", "sep", "n_null", "n_l", "n_r", "o_kind", "o_l", "o_r")}
        new, old = [], []
        for j, s, nn, nl, nr, ok, ol, orr in zip(*cols.values()):
            v = values.value(j, s, nn, nl, nr)
            new.append(None if v is None else json_text(v))
            o = values.old_value(j, s, ok, ol, orr)
            old.append(None if o is None or o is NO_OLD_VALUE else json_text(o))
        yield pa.RecordBatch.from_arrays(batch.columns + [pa.array(new, pa.string()), pa.array(old, pa.string())],
                                         names=batch.schema.names + ["value", "old_value"])


def output_frame(events, configs):
    """The OUTPUT events -> output records as a DataFrame (``sid, topic, partition, key, value, ts,
    input``, plus ``old_value`` JSON text where the scenario reports old values), keys and values as
    JSON text, sorted in output order."""
    from pyspark.sql import functions as F

    from pyspark.sql.types import StringType, StructField, StructType

    results = events.filter(F.col("etype") == OUTPUT) \
        .join(F.broadcast(configs.select("sid", "joiner", "sep", "send_old")), "sid")
    schema = StructType(results.schema.fields + [StructField("value", StringType()),
                                                 StructField("old_value", StringType())])
    from .versioned_store import python_partitions

    return (python_partitions(results).mapInArrow(_joined_values, schema)
            .orderBy(*OUTPUT_ORDER)
            .select("sid", F.lit(OUTPUT_TOPIC).alias("topic"), F.col("task").alias("partition"), "key",
                    "value", "ts", F.col("idx").alias("input"),
                    F.when(F.col("send_old"), F.col("old_value")).alias("old_value"),
                    F.col("send_old").alias("has_old_value")))


def write_parquet(frame, path, mode="overwrite", single_file=False):
    """Output records as Parquet (part files in output order): key/value/old_value hold JSON text."""
    frame = frame.drop("has_old_value")
    (frame.coalesce(1) if single_file else frame).write.mode(mode).parquet(path)


def write_jsonl(frame, path, mode="overwrite", single_file=False):
    """Output records as JSONL (Spark's part files under ``path``, in output order), one object a
    line with the fields of ``kssim run --format jsonl``: key/value are JSON values, not JSON text."""
    from pyspark.sql import functions as F

    def json_field(name, column):
        return F.concat(F.lit(f'"{name}":'), F.coalesce(column, F.lit("null")))

    fields = [json_field("topic", F.lit(json.dumps(OUTPUT_TOPIC))),
              json_field("partition", F.col("partition").cast("string")),
              json_field("key", F.col("key")), json_field("value", F.col("value")),
              json_field("ts", F.col("ts").cast("string")), json_field("input", F.col("input").cast("string"))]
    old = F.when(F.col("has_old_value"), F.concat(F.lit(","), json_field("old_value", F.col("old_value")))) \
        .otherwise(F.lit(""))
    line = F.concat(F.lit("{"), F.concat_ws(",", *fields), old, F.lit("}"))
    lines = frame.select(line.alias("value"))
    (lines.coalesce(1) if single_file else lines).write.mode(mode).text(path)
