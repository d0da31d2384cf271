"""KStream-KTable joins (inner, left), with versioned tables and the KIP-923 grace buffer, set-based.

Source: ``KStreamKTableJoinProcessor`` (0.10.2+; ``KStreamKTableLeftJoin`` before), the table's
``KTableSource`` (``table_source.py``), ``RocksDBVersionedStore#get(key, asOf)``,
``RocksDBTimeOrderedKeyValueBuffer`` (digest: kafka-semantics-joins.md section 3).

Stream records only (table updates never emit). How each rule is computed:

- drop check (window-free, per record): since KIP-77 (0.10.2, ``kip77_join_semantics``) a null key
  or a null value is dropped (``null_key`` / ``null_value``); since KIP-962 (3.7,
  ``null_key_outer_emit``) a left join keeps a null-key record with a value and emits
  ``joiner(value, null)`` with a null key at once. Before KIP-77 only null keys are
  skipped; a null value is joined (``joiner(null, table value)``).
- table lookup: a *lookup* is (key, the position in the task it happens at, as-of ts). The table's
  state there is given by the stored updates of the key before that position:
  * key-value table: the last update (a window ``last`` per (scenario, task, key) over updates and
    lookups in position order); a tombstone makes the value absent;
  * versioned table (3.5+, ``versioned_tables``; ``get(key, asOf)`` at the stream record's ts):
    answered by the per-key replay of ``RocksDBVersionedStore`` (``versioned_store.py``), the
    lookups interleaved with the puts in position order, with the store's clock at each lookup
    from a window max.
- inner emits only when the table value exists, left always; output key = stream key, ts = the
  stream record's ts, value = ``joiner(stream value, table value)``.
- grace buffer (KIP-923, 3.6+, ``stream_table_grace``; the loader rejects ``grace_ms`` before, so
  a ``grace`` column implies the rule): the buffer's clock is the max ts of the records put into
  it, which equals the running max over the task's earlier non-dropped stream records (a late
  record is below the clock, so it never raises it): a window max. A record is *late* when
  ``clock - grace > ts``: it is joined at once, as of its ts. Otherwise it is buffered, and it is
  evicted by the first put (itself included) after which ``clock >= ts + grace``: since the clock
  is monotone this is the first *new-max* put with ``ts >= ts_r + grace`` (the first point where
  the clock passes the deadline), or the record's own put if that point lies before it. Each
  buffered record gets a second row (``explode``) at its deadline, and one window over the task's
  deadlines and new-max puts ordered by time hands each deadline the next put; the deadline row,
  moved to that position, is the record's lookup.
  An evicted record is joined as of its own ts against the table at the evicting position; the
  records evicted by one put come out ordered by (ts, serialized key bytes: ``key_bytes``, the
  Spark twin of ``reference.model.keys.serialized_key``, buffer sequence), the order of the
  buffer's time-first keys. Records never evicted produce nothing.
  Since 3.7 a left join sends a null-key record into the buffer, whose ``put`` throws
  (``NullPointerException: key cannot be null``): Kafka Streams dies there (3.8/3.9 confirmed),
  failure ``grace_buffer_null_key``.
"""
from __future__ import annotations

from pyspark.sql import Window
from pyspark.sql import functions as F

from kssim.reference.model.codes import DropReason, FailureCode

from kssim.spark_backend.runtime.outputs import DROP, FAILURE, OLD_NONE, OUTPUT, events
from kssim.spark_backend.joins.table_source import with_source_rules
from kssim.spark_backend.stores.versioned_store import LOOKUP, PUT, replay

BEFORE = (Window.unboundedPreceding, -1)
UP_TO = (Window.unboundedPreceding, Window.currentRow)
ORDER = ("g1", "g2", "g3", "g4")

# roles of the rows after the grace step: a record as itself, a buffered record's eviction
# (DEADLINE, placed where it is evicted), and a clock step (STEP: a put that raised the clock)
SELF, DEADLINE, STEP = 0, 1, 2

_LONG_RANGE = (-(2 ** 63), 2 ** 63 - 1)
_INTEGRAL = "^-?[0-9]{1,19}$"
#: a float's key text (``reference.model.keys.key_text`` writes Python's ``repr``: a point or an
#: exponent, or one of the non-finite names); an integer has neither
_FLOAT = r"^(-?Infinity|NaN|-?[0-9]+\.[0-9]+([eE][-+]?[0-9]+)?|-?[0-9]+(\.[0-9]+)?[eE][-+]?[0-9]+)$"


def key_bytes(key):
    """The serialized key bytes (``reference.model.keys.serialized_key``) of a key column holding
    ``key_text``, computed in Spark: a string as UTF-8, a boolean as one byte, an integer as 8
    bytes big-endian (LongSerializer; one beyond 64 bits as its text), a float as its 8 IEEE-754
    bytes (``Double.doubleToLongBits``, which writes NaN as Python's ``struct`` does), an array or
    object as its JSON text. ``tests/spark/test_spark_shared_model.py`` checks it
    against ``serialized_key`` (a native twin: a Python UDF here would cost every grace replay an
    Arrow round trip)."""
    as_string = F.from_json(F.concat(F.lit("["), key, F.lit("]")), "array<string>").getItem(0)
    number = key.cast("decimal(20,0)")
    as_long = key.cast("bigint")
    double_bits = F.call_function("java_method", F.lit("java.lang.Double"), F.lit("doubleToLongBits"),
                                  key.cast("double")).cast("bigint")
    return (F.when(key.startswith('"'), F.encode(as_string, "UTF-8"))
            .when(key == "true", F.unhex(F.lit("01"))).when(key == "false", F.unhex(F.lit("00")))
            .when(key.rlike(_INTEGRAL) & number.between(*_LONG_RANGE), F.unhex(F.lpad(F.hex(as_long), 16, "0")))
            .when(key.rlike(_FLOAT), F.unhex(F.lpad(F.hex(double_bits), 16, "0")))
            .otherwise(F.encode(key, "UTF-8")))


def _stream_checks(frame):
    stream = F.col("side") == 0
    key_null, value_null = F.col("key").isNull(), F.col("value").isNull()
    # [null_key_outer_emit] KIP-962 (3.7): a left join forwards a null-key record with a value
    keeps_null_key = stream & (F.col("join") == "left") & F.col("null_key_outer_emit") & key_null & ~value_null
    # [kip77_join_semantics] since 0.10.2 a null value is dropped too (before: joined)
    drop = (F.when(~stream | keeps_null_key, F.lit(None))
            .when(key_null, F.lit(DropReason.NULL_KEY.code))
            .when(F.col("kip77_join_semantics") & value_null, F.lit(DropReason.NULL_VALUE.code)))
    # the grace buffer's put rejects that null key [stream_table_grace]
    fail = F.when(keeps_null_key & F.col("grace").isNotNull(), F.lit(FailureCode.GRACE_BUFFER_NULL_KEY.code))
    return frame.select("*", drop.alias("drop"), fail.alias("fail"))


def _grace(frame, features):
    """Late / buffered stream records, and where each buffered record is evicted (see above).
    Adds the lookup position ``pos``, the emitting input (``eidx``, ``eg1..eg4``) and ``f1, f2``."""
    if not features.grace:
        return frame.select("*", F.lit(SELF).alias("role"), F.col("seq").alias("pos"), F.col("idx").alias("eidx"),
                            *[F.col(c).alias("e" + c) for c in ORDER],
                            F.lit(0).cast("bigint").alias("f1"), F.lit(b"").alias("f2"))
    joins = (F.col("side") == 0) & F.col("drop").isNull() & F.col("fail").isNull()
    grace = F.col("grace")
    in_task = Window.partitionBy("sid", "task").orderBy("seq").rowsBetween(*BEFORE)
    clock = F.max(F.when(joins, F.col("ts"))).over(in_task)  # the buffer's observedStreamTime
    frame = frame.select("*", F.when(grace.isNotNull(), clock).alias("clock"))
    late = F.col("clock").isNotNull() & (F.col("clock") - grace > F.col("ts"))
    buffered = joins & grace.isNotNull() & ~late
    raises = F.col("clock").isNull() | (F.col("ts") > F.col("clock"))
    roles = F.when(buffered & raises, F.array(F.lit(DEADLINE), F.lit(STEP))) \
        .when(buffered, F.array(F.lit(DEADLINE))).otherwise(F.array(F.lit(SELF)))
    frame = frame.select("*", F.explode(roles).alias("role"))
    role = F.col("role")
    at = F.when(role == DEADLINE, F.col("ts") + grace).when(role == STEP, F.col("ts"))
    frame = frame.select("*", at.alias("at"))
    # the first step at or after a deadline (a step at the deadline's time counts: STEP > DEADLINE),
    # as the last one seen walking time backwards (a prefix frame, linear)
    backwards = Window.partitionBy("sid", "task").orderBy(F.col("at").desc(), F.col("role").desc()) \
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    point = F.struct(F.col("seq").alias("seq"), F.col("idx").alias("idx"), *[F.col(c) for c in ORDER])
    first_step = F.last(F.when(role == STEP, point), ignorenulls=True).over(backwards)
    frame = frame.select("*", F.when(role == DEADLINE, first_step).alias("evict"))
    # a record is evicted by the first clock step at or after its deadline, or by its own put
    # when the clock passed its deadline already
    frame = frame.filter((role == SELF) | ((role == DEADLINE) & F.col("evict").isNotNull()))
    at_own_put = (role == SELF) | (F.col("evict.seq") <= F.col("seq"))

    def emitter(own, field):
        return F.when(at_own_put, F.col(own)).otherwise(F.col("evict." + field))

    deadline = role == DEADLINE
    return frame.select(
        "*", emitter("seq", "seq").alias("pos"), emitter("idx", "idx").alias("eidx"),
        *[emitter(c, c).alias("e" + c) for c in ORDER],
        F.when(deadline, F.col("ts")).otherwise(F.lit(0)).alias("f1"),
        F.when(deadline, key_bytes(F.col("key"))).otherwise(F.lit(b"")).alias("f2"),
    ).drop("evict", "at", "clock")


def _table_values(frame, features):
    """``tval``: the table value each lookup sees (see the module docstring)."""
    lookup = F.col("role").isin(SELF, DEADLINE) & (F.col("side") == 0) & F.col("drop").isNull() \
        & F.col("fail").isNull() & F.col("key").isNotNull()
    frame = frame.select("*", lookup.alias("lookup"),
                         F.when(F.col("stored"), F.lit(PUT)).when(lookup, F.lit(LOOKUP)).alias("v_kind"),
                         F.when(lookup, F.col("ts")).alias("asof"))
    put = F.col("stored")
    per_key = Window.partitionBy("sid", "task", "key").orderBy("pos", "side").rowsBetween(*UP_TO)
    in_task = Window.partitionBy("sid", "task").orderBy("pos", "side").rowsBetween(*UP_TO)
    last_put = F.last(F.when(put, F.struct(F.col("value").alias("v"))), ignorenulls=True).over(per_key)
    frame = frame.select("*", last_put.getField("v").alias("kv_tval"),
                         F.max(F.when(put, F.col("ts"))).over(in_task).alias("observed"))
    # as-of lookups of versioned tables: the per-key replay of RocksDBVersionedStore
    frame = replay(frame.withColumn("store", F.lit(1)), F.col("t_ver"), features.versioned)
    return frame.select("*", F.when(F.col("t_ver"), F.col("v_tval")).otherwise(F.col("kv_tval")).alias("tval"))


def stream_table_join(frame, features):
    """``frame``: records of stream_table_join scenarios, clustered by (scenario, task), with
    configs and processing order. Returns its events (``outputs.events``)."""
    frame = frame.select("*", (F.col("side") == 1).alias("is_table"),
                         F.col("rver").alias("t_ver"), F.col("rret").alias("t_ret"))
    frame = with_source_rules(_stream_checks(frame), features)
    frame = _table_values(_grace(frame, features), features)
    tval = F.col("tval")
    stream_row = F.col("side") == 0
    joined = stream_row & F.col("drop").isNull() & F.col("fail").isNull() \
        & ((F.col("join") == "left") | tval.isNotNull())
    etype = (F.when(F.col("fail").isNotNull() | F.col("src_fail").isNotNull(), F.lit(FAILURE))
             .when(F.col("drop").isNotNull() | F.col("src_drop").isNotNull(), F.lit(DROP))
             .when(joined, F.lit(OUTPUT)))
    text = F.coalesce(F.col("fail"), F.col("src_fail"), F.col("drop"), F.col("src_drop"))
    output = F.col("etype_") == OUTPUT
    frame = frame.select("*", etype.alias("etype_"))
    return events(
        frame, etype="etype_",
        idx=F.when(output, F.col("eidx")).otherwise(F.col("idx")),
        **{c: F.when(output, F.col("e" + c)).otherwise(F.col(c)) for c in ORDER},
        f3=F.col("seq"), n_null=F.lit(False), n_l=F.col("value"), n_r=tval, o_kind=F.lit(OLD_NONE), text=text)
