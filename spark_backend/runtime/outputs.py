"""Outputs of the Spark backend: the joined values, OutputRecords, and JSONL / Parquet writers.

The operator modules emit *result rows*: the joiner's two arguments as JSON text (``n_l``,
``n_r``; ``n_null`` when the result value is null, e.g. a table tombstone) and the same for the old
value (``o_kind``: 0 = no old value reported, 1 = a null old value, 2 = ``joiner(o_l, o_r)``).
The named joiner (``pair``, ``concat``; ``reference.model.joiners``, Java's string rules) is applied
here, once per output record: in Python on the driver for :func:`to_output_records`, and in a
pandas UDF for the file writers, so both paths build values the same way.

Record order is the engine's output order: per scenario, by the processing order of the input
that emitted the record (``g1..g4``), then by the order the operator forwarded within that input
(``f1..f3``).
"""
from __future__ import annotations

import json

from kssim.reference.model.joiners import make_joiner
from kssim.reference.model.records import NO_OLD_VALUE, OutputRecord
from kssim.reference.model.scenario import OUTPUT_TOPIC

OLD_NONE, OLD_NULL, OLD_JOINED = 0, 1, 2
OUTPUT, DROP, FAILURE = 0, 1, 2

#: Every operator turns its frame into *events*, one per row at most: ``etype`` OUTPUT (a result
#: row), DROP (``text`` = a ``DropReason`` code) or FAILURE (``text`` = a ``FailureCode`` code;
#: ``reference.model.codes``), attributed to input ``idx``
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
        if name is None:  # an aggregation: no joiner, the left argument is the value
            return _load(left)
        return self.joiner(name, separator)(_load(left), _load(right))

    def old_value(self, name, separator, kind, left, right):
        if kind == OLD_NONE:
            return NO_OLD_VALUE
        if kind == OLD_NULL:
            return None
        if name is None:
            return _load(left)
        return self.joiner(name, separator)(_load(left), _load(right))


def to_output_records(rows, joiner_of) -> list:
    """Collected result rows (in output order) -> OutputRecords; ``joiner_of(sid)`` gives the
    scenario's ``(joiner, separator)`` (a name, or a user callable from the Python API; None for
    an aggregation, whose value is ``n_l`` as it is)."""
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
#
# The writers build values in Spark where that is plain string work (a named joiner over JSON
# strings without escapes, integers and booleans: what Java's ``String.valueOf`` prints for them
# is their text, and the result's JSON text is the concatenation), and in Python (``JoinedValues``,
# an Arrow UDF fed only the other rows) for everything else: objects, arrays, floats, escapes.

#: JSON text whose value prints as itself (strings without escapes print as their content;
#: ``-0`` is the integer 0)
SIMPLE_JSON = r'^("[^"\\\x00-\x1f]*"|0|-?[1-9][0-9]*|true|false)$'
#: a separator that can go into a JSON string as it is
_PLAIN_SEPARATOR = r'^[^"\\\x00-\x1f]*$'
_PLAIN_STRING = r'"[^"\\\x00-\x1f]*"'
_SIMPLE_MEMBER = _PLAIN_STRING + r':(?:' + _PLAIN_STRING + r'|0|-?[1-9][0-9]*|true|false|null)'
#: JSON text that is its own canonical text (``inputs.json_text`` of it parsed): a flat object of
#: simple members (``SIMPLE_JSON``'s or ``null``) without a duplicate name (Python keeps the last:
#: a member name is the quoted text right after ``{`` or a comma; ``(?s)``: ``.`` crosses U+2028)
CANONICAL_FLAT_OBJECT = (r'(?s)^(?!.*[{,](' + _PLAIN_STRING + r'):.*,\1:)\{(?:' + _SIMPLE_MEMBER
                         + r'(?:,' + _SIMPLE_MEMBER + r')*)?\}$')


def _native_joined(joiner, sep, left, right):
    """``(ok, value)``: the joined value's JSON text built in Spark, valid where ``ok``."""
    from pyspark.sql import functions as F

    def simple(text):
        return text.isNull() | text.rlike(SIMPLE_JSON)

    def printed(text):  # String.valueOf of a simple JSON value
        content = F.substring(text, F.lit(2), F.length(text) - 2)
        return F.when(text.isNull(), F.lit("null")).when(text.startswith('"'), content).otherwise(text)

    def canonical(text):  # the pair's JSON text holds each argument's text as it is
        return simple(text) | text.rlike(CANONICAL_FLAT_OBJECT)

    sep = F.coalesce(sep, F.lit("+"))

    pair = F.concat(F.lit("["), F.coalesce(left, F.lit("null")), F.lit(","), F.coalesce(right, F.lit("null")), F.lit("]"))
    concat = F.concat(F.lit('"'), printed(left), sep, printed(right), F.lit('"'))
    ok = F.when(joiner == "pair", canonical(left) & canonical(right)) \
        .otherwise(simple(left) & simple(right) & (joiner == "concat") & sep.rlike(_PLAIN_SEPARATOR))
    # an aggregation has no joiner: its value is the left argument's JSON text as it is
    return (F.when(joiner.isNull(), F.lit(True)).otherwise(F.coalesce(ok, F.lit(False))),
            F.when(joiner.isNull(), left).when(joiner == "pair", pair).otherwise(concat))


def _python_joined(new_wanted, old_wanted, joiner, sep, n_l, n_r, o_l, o_r):
    """Arrow UDF body: the joined value and old value (JSON text) of the rows that ask for them."""
    import pyarrow as pa

    from kssim.spark_backend.runtime.inputs import json_text

    values = JoinedValues()
    wanted_new, wanted_old = new_wanted.to_pylist(), old_wanted.to_pylist()
    new, old = [None] * len(wanted_new), [None] * len(wanted_new)
    rows = [i for i, (w_new, w_old) in enumerate(zip(wanted_new, wanted_old)) if w_new or w_old]
    if rows:
        j, s, nl, nr, ol, orr = [c.to_pylist() for c in (joiner, sep, n_l, n_r, o_l, o_r)]
        for i in rows:  # only the rows Spark could not join: most batches have none
            if wanted_new[i]:
                v = values.value(j[i], s[i], False, nl[i], nr[i])
                new[i] = None if v is None else json_text(v)
            if wanted_old[i]:
                o = values.value(j[i], s[i], False, ol[i], orr[i])
                old[i] = None if o is None else json_text(o)
    return pa.StructArray.from_arrays([pa.array(new, pa.string()), pa.array(old, pa.string())],
                                      names=["value", "old_value"])


def joined_values(python_values: bool = True):
    """``(value, old_value)`` columns (JSON text) of result rows with ``joiner``/``sep`` columns:
    built in Spark where ``_native_joined`` can, by the Python joiners for the rest. Without
    ``python_values`` (every input value is simple JSON: ``record_files.RecordStats``) there is no
    rest and no Python step."""
    from pyspark.sql import functions as F

    joiner, sep, n_null, o_kind = F.col("joiner"), F.col("sep"), F.col("n_null"), F.col("o_kind")
    new_ok, new_native = _native_joined(joiner, sep, F.col("n_l"), F.col("n_r"))
    old_ok, old_native = _native_joined(joiner, sep, F.col("o_l"), F.col("o_r"))
    if not python_values:
        return F.when(~n_null, new_native), F.when(o_kind == OLD_JOINED, old_native)
    new_wanted, old_wanted = ~n_null & ~new_ok, (o_kind == OLD_JOINED) & ~old_ok
    wanted = new_wanted | old_wanted
    python = F.arrow_udf(_python_joined, "value STRING, old_value STRING")(
        new_wanted, old_wanted, F.when(wanted, joiner), F.when(wanted, sep),
        *[F.when(w, F.col(c)) for w, c in ((new_wanted, "n_l"), (new_wanted, "n_r"), (old_wanted, "o_l"), (old_wanted, "o_r"))])
    return (F.when(~n_null, F.when(new_ok, new_native).otherwise(python.getField("value"))),
            F.when(o_kind == OLD_JOINED, F.when(old_ok, old_native).otherwise(python.getField("old_value"))))


def with_joiners(events, configs, features=None):
    """Result rows with their scenario's ``joiner``, ``sep`` and ``send_old``."""
    from pyspark.sql import functions as F

    from kssim.spark_backend.runtime.inputs import with_configs

    wanted = configs.select("sid", "joiner", "sep", "send_old")
    if features is not None:
        return with_configs(events, wanted, features)
    return events.join(F.broadcast(wanted), "sid")


def output_columns(value, old_value):
    """The columns of an output record file row (``kssim run --format jsonl``'s fields)."""
    from pyspark.sql import functions as F

    return ["sid", F.lit(OUTPUT_TOPIC).alias("topic"), F.col("task").alias("partition"), "key",
            value.alias("value"), "ts", F.col("idx").alias("input"),
            F.when(F.col("send_old"), old_value).alias("old_value"), F.col("send_old").alias("has_old_value")]


def output_frame(events, configs, features=None, python_values=True):
    """The OUTPUT events -> output records as a DataFrame (``sid, topic, partition, key, value, ts,
    input``, plus ``old_value`` JSON text where the scenario reports old values), keys and values as
    JSON text, sorted in output order (sorted first: the range sort samples its input, which
    would compute the Python values twice)."""
    from pyspark.sql import functions as F

    results = with_joiners(events.filter(F.col("etype") == OUTPUT).drop("text"), configs, features)
    return results.orderBy(*OUTPUT_ORDER).select(*output_columns(*joined_values(python_values)))


def write_parquet(frame, path, mode="overwrite", single_file=False, with_old_value=True):
    """Output records as Parquet (part files in output order) with the reference's columns
    (``reference.model.record_files.output_parquet_schema``): key/value/old_value hold JSON text."""
    frame = frame.drop("sid", "has_old_value", *(() if with_old_value else ("old_value",)))
    (frame.coalesce(1) if single_file else frame).write.mode(mode).parquet(path)


def jsonl_line(topic=None):
    """An output record file row (``output_columns``) as one JSONL line with the fields of
    ``kssim run --format jsonl``: key/value are JSON values, not JSON text. ``topic``: a column of
    each row's topic as JSON text (default: format 1's output topic)."""
    from pyspark.sql import functions as F

    def json_field(name, column):
        return F.concat(F.lit(f'"{name}":'), F.coalesce(column, F.lit("null")))

    fields = [json_field("topic", F.lit(json.dumps(OUTPUT_TOPIC)) if topic is None else topic),
              json_field("partition", F.col("partition").cast("string")),
              json_field("key", F.col("key")), json_field("value", F.col("value")),
              json_field("ts", F.col("ts").cast("string")), json_field("input", F.col("input").cast("string"))]
    old = F.when(F.col("has_old_value"), F.concat(F.lit(","), json_field("old_value", F.col("old_value")))) \
        .otherwise(F.lit(""))
    return F.concat(F.lit("{"), F.concat_ws(",", *fields), old, F.lit("}"))


def write_jsonl(frame, path, mode="overwrite", single_file=False):
    """Output records as JSONL (Spark's part files under ``path``, in output order)."""
    lines = frame.select(jsonl_line().alias("value"))
    (lines.coalesce(1) if single_file else lines).write.mode(mode).text(path)
