"""Stage 1: the changes that reach suppress, in their order per task, with the stream time at each.

``KTableSuppressProcessor`` sits right after the operator, in its task: every result the operator
forwards (an OUTPUT event) reaches it, depth-first, in the order the operator forwarded them. So
per (scenario, task) the events of a suppressed scenario, in output order (``g1..g4``, then
``f1..f3``; ``etype`` and ``key`` only make a tie deterministic), are numbered ``r`` = 1, 2, ...
The drops and failures of the operator are numbered too: suppress keeps them where they were.

What suppress forwards while the task processes event ``r`` is ordered, among everything its
input caused, where that event was: ``q``, the event's place among the events of its input in
every task (an input can make several tasks forward: a windowed-table join's shifted right
window is joined in the task of its repartition topic's partition), then its own eviction order.

Stream time at change ``r`` (``st``):

- 2.2+ [``suppress_observed_stream_time``, KAFKA-7895]: ``observedStreamTime``, the running max of
  the timestamps of the changes up to this one, starting at -1 (``ConsumerRecord.NO_TIMESTAMP``);
- 2.1: the task's stream time (``PartitionGroup``), advanced by every input record of the task
  before it is processed (dropped ones included): the running max of ``ts`` over the task's input
  records up to the change's input, in processing order, also from -1.

Key bytes (``key_bytes``, binary, compared unsigned): the buffer's serialized key
(:func:`reference.model.suppression.buffer_key_bytes`), built in Spark from the key text: a plain
key's serde bytes (format 1's per-type serdes: ``spark_backend.joins.stream_table.key_bytes``; a
topology graph's one JSON serde, ``sup_json_serde``: the JSON text); a time or sliding window's
inner key bytes + the start as 8 bytes big-endian; a session's inner key bytes + end + start.
``key_type`` (the key's JSON type name, as Python names it) only orders keys of two JSON types
whose bytes are equal, as the reference's buffer does (in Kafka one topic has one serde).
"""
from __future__ import annotations

from pyspark.sql import Window
from pyspark.sql import functions as F

from kssim.reference.model.suppression import NO_TIMESTAMP

from kssim.spark_backend.joins.stream_table import key_bytes
from kssim.spark_backend.runtime.outputs import OUTPUT, OUTPUT_ORDER

#: the windowed key text ``{"key":K,"start":S,"end":E}`` (``replay_rows.windowed_key_text``): the
#: greedy inner group stops at the last ``,"start":``, so any inner key text parses
WINDOWED_KEY = r'^\{"key":(.*),"start":(-?[0-9]+),"end":(-?[0-9]+)\}$'
#: the output order of a task's events, then what makes two tied events' order deterministic
TASK_ORDER = OUTPUT_ORDER[1:] + ("etype", "key")
#: the output order of one input's events (every task), ties made deterministic
INPUT_ORDER = ("f1", "f2", "f3", "task", "etype", "key")


def ranked(events, features):
    """Events of suppressed scenarios (with the ``sup*`` settings) -> adds ``r``, their position in
    their task's output order, and ``q``, their position among the events of their input. Where
    every input's events are in one task (``settings.Features.cross_task`` false), ``r`` orders
    them as well as ``q`` would: no second window (a shuffle by input) is needed."""
    in_task = Window.partitionBy("sid", "task").orderBy(*TASK_ORDER)
    frame = events.select("*", F.row_number().over(in_task).cast("bigint").alias("r"))
    if not features.suppress.cross_task:
        return frame.select("*", F.col("r").alias("q"))
    in_input = Window.partitionBy("sid", "idx").orderBy(*INPUT_ORDER)
    return frame.select("*", F.row_number().over(in_input).cast("bigint").alias("q"))


def task_stream_times(rows):
    """``(sid, idx, tst)``: the task's stream time when it processes input ``idx`` (2.1), for the
    input records of suppressed scenarios that read it."""
    up_to = Window.partitionBy("sid", "task").orderBy("g1", "g3", "g4") \
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    reads = rows.filter(F.col("sup") & ~F.col("suppress_observed_stream_time"))
    return reads.select("sid", "idx", F.greatest(F.max("ts").over(up_to), F.lit(NO_TIMESTAMP)).alias("tst"))


def with_stream_time(changes, rows, features):
    """The changes (OUTPUT events, ranked) -> adds ``st``, the stream time suppress reads at each."""
    up_to = Window.partitionBy("sid", "task").orderBy("r").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    observed = F.greatest(F.max("ts").over(up_to), F.lit(NO_TIMESTAMP))
    if not features.suppress.task_stream_time:
        return changes.select("*", observed.alias("st"))
    changes = changes.join(task_stream_times(rows), ["sid", "idx"], "left")
    # [suppress_observed_stream_time] KAFKA-7895 (2.2); 2.1 reads the task's stream time
    st = F.when(F.col("suppress_observed_stream_time"), observed).otherwise(F.col("tst"))
    return changes.select(*[c for c in changes.columns if c != "tst"], st.alias("st"))


def _long_bytes(column):
    """A Java long as 8 bytes big-endian (``hex`` of a bigint is its two's complement)."""
    return F.unhex(F.lpad(F.hex(column), 16, "0"))


def _serde_bytes(text, json_serde):
    """The serde's bytes of a key text column: graphs' JSON serde writes the JSON text; format 1's
    per-type serdes what ``key_bytes`` says. Jackson writes a ``\\u00XX`` escape's hex upper-case
    where the key text has it lower-case: the bytes differ there, but no order does (a ``\\u``
    in a JSON text is always an escape, so an escape's hex only meets another escape's hex at the
    same place: digits before letters, and letters in one order, in either case)."""
    return F.when(json_serde, F.encode(text, "UTF-8")).otherwise(key_bytes(text))


def buffer_key_bytes(key, kind, json_serde):
    """The buffer's key bytes of a key text column, written by graphs' JSON serde where
    ``json_serde`` holds (see the module docstring): what orders entries of one buffer time."""
    inner = _serde_bytes(F.regexp_extract(key, WINDOWED_KEY, 1), json_serde)
    start = _long_bytes(F.regexp_extract(key, WINDOWED_KEY, 2).cast("bigint"))
    end = _long_bytes(F.regexp_extract(key, WINDOWED_KEY, 3).cast("bigint"))
    return (F.when(kind == "plain", _serde_bytes(key, json_serde))
            .when(kind == "time_window", F.concat(inner, start))
            .otherwise(F.concat(inner, end, start)))


def key_type(key, kind):
    """The key's JSON type name as Python's ``type(key).__name__`` (windowed keys are objects)."""
    return (F.when(kind != "plain", F.lit("dict"))
            .when(key.startswith('"'), F.lit("str")).when(key.isin("true", "false"), F.lit("bool"))
            .when(key.startswith("["), F.lit("list")).when(key.startswith("{"), F.lit("dict"))
            .when(key.rlike(r"^-?[0-9]+$"), F.lit("int")).otherwise(F.lit("float")))


def window_end(key):
    """The window end of a windowed key text (``Windowed#window().end()``)."""
    return F.regexp_extract(key, WINDOWED_KEY, 3).cast("bigint")


def changes_of(ranked_events):
    """The OUTPUT events: what the operator forwarded to suppress."""
    return ranked_events.filter(F.col("etype") == OUTPUT)
