"""KStream-GlobalKTable joins (inner, left), set-based.

Source: ``KStreamGlobalKTableJoin`` / ``KStreamKTableJoinProcessor`` (0.10.2+), the GlobalKTable's
``KTableSource`` and ``GlobalStateManagerImpl#restoreState`` (digest: kafka-semantics-joins.md 3.1,
kafka-semantics-4x.md for KAFKA-19208). ``left`` is the stream, ``right`` the global table's topic.
How each rule is computed:

- the global store (``global_table_joins``, KIP-99): one key-value store per instance holding the
  whole topic, shared by every task, never versioned. Its updates are ordered by the *global*
  position ``gpos`` (not per task): with ``config.global_table`` ``as_listed`` the processing order
  of the whole scenario (``g1..g4``: the input index, or timestamp synchronisation with the tasks
  interleaved), the table's records taking their place in it; with ``bootstrap`` every table
  record first, by input index (the start-up restore), then the stream in its order: the table
  rows' ``g1..g4`` become ``(0, -1, 0, idx)``, so events (drops, failures) are ordered that way too.
- the table's source (``table_source.with_source_rules``, run with the one store as "task 0" and
  ``gpos`` as the sequence): a null key is skipped (``null_key``); a tombstone deletes; KIP-557's
  idempotent updates (``ktable_emit_on_change``: 2.6.0, 2.6.1, 2.7.0) are skipped in ``as_listed``
  only (the restore writes the store without ``KTableSource``). In ``bootstrap`` before 0.11
  (``global_restore_skips_null_key``, KAFKA-5047) a null-key table record kills the application
  at start-up (``global_restore_null_key``); its position ahead of every stream row makes the
  first such record (input order) the run's failure, with nothing of the stream before it.
- the key mapper: ``mkey``, the ``reference.model.keys.key_text`` of
  ``reference.model.topology.extract_key`` over the record (an Arrow UDF over the shared model: JSON
  text cannot tell ``"1"`` from ``1`` in Spark's JSON functions); a mapper whose source (value or
  key) is null gives null. ``{"from": "key"}`` without a field is the key column itself, no UDF.
- the lookup (stream rows with a mapped key): the last stored table update of the mapped key
  before the stream row in ``gpos`` order, a window ``last`` per (scenario, key) (a tombstone
  leaves the key absent).
- null checks (window-free, per stream row):
  * before 2.7 (no ``global_join_null_stream_key``): a null key (``null_key``) or a null value
    (``null_value``) is dropped before mapping; a null mapped key then fails the task
    (``global_join_null_mapped_key_throws``, before 1.0.1: ``global_lookup_null_key``) or, from
    1.0.1, means no match: left ``joiner(v, null)`` (``global_left_join_null_mapped_key``), inner
    nothing and no drop.
  * 2.7+ (``global_join_null_stream_key``, KAFKA-10277): a null value (``null_value``) or a null
    mapped key (``null_join_key``) is dropped, unless the join is left, the value is non-null and
    either the key is null (``null_key_outer_emit``, KIP-962, 3.7+) or the mapped key is null
    (``global_left_join_null_mapped_key``, KAFKA-19208, 4.1+); a null stream key with a mapped key
    is joined, output key null.
  The null-value drop (``kip77_join_semantics``) holds in every release that has the join.
- outputs: inner where the lookup found a value, left always; key = stream key, ts = the stream
  record's ts (the processor forwards the stream record with a new value: ``output_ts_max`` does
  not apply), value ``joiner(stream value, table value)``; one output per stream record.
"""
from __future__ import annotations

import json

import attrs
from pyspark.sql import Window
from pyspark.sql import functions as F

from kssim.reference.model.codes import DropReason, FailureCode

from kssim.spark_backend.joins.table_source import with_source_rules
from kssim.spark_backend.runtime.outputs import DROP, FAILURE, OLD_NONE, OUTPUT, events

UP_TO = (Window.unboundedPreceding, Window.currentRow)


def _mapped_keys(keys, values, sources, fields):
    """Arrow UDF body: the mapped key text of each row (null where the mapper's source is null)."""
    import pyarrow as pa

    from kssim.reference.model.errors import KssimError
    from kssim.reference.model.keys import key_text
    from kssim.reference.model.topology import ExtractorError, KeyExtractorSpec, extract_key

    out = []
    mappers = {}
    for key, value, source, field in zip(keys.to_pylist(), values.to_pylist(), sources.to_pylist(),
                                         fields.to_pylist()):
        if (value if source == "value" else key) is None:
            out.append(None)
            continue
        mapper = mappers.get((source, field))
        if mapper is None:
            mapper = mappers[(source, field)] = KeyExtractorSpec(source=source, field=field)
        try:
            mapped = extract_key(mapper, None if key is None else json.loads(key),
                                 None if value is None else json.loads(value))
        except ExtractorError as exc:  # a replayed row: the scenario loader rejects these up front
            raise KssimError(f"{exc.where}: {exc}") from None
        out.append(key_text(mapped))
    return pa.array(out, pa.string())


def mapped_key(key, value, source, field, where):
    """The key mapper's result as ``key_text`` on the rows ``where`` (see the module docstring)."""
    identity = (source == "key") & field.isNull()
    by_value = source == "value"
    needs = where & ~identity & F.when(by_value, value).otherwise(key).isNotNull()
    # a Python UDF runs on every row of its plan node: the other rows get nulls, answered at once
    udf = F.arrow_udf(_mapped_keys, "string")
    mapped = udf(F.when(needs & ~by_value, key), F.when(needs & by_value, value), F.when(needs, source), field)
    return F.when(where & identity, key).when(needs, mapped)


def _global_position(frame):
    """``g1..g4`` of the rows in the order the one global store sees (module docstring): in
    ``bootstrap`` a table row's key becomes ``(0, -1, 0, idx)``, ahead of every stream row (whose
    ``g1`` is an input index or a timestamp and ``g2`` a task, never negative; ``g1`` stays in the
    input-index range a replay's output buckets read); ``gpos`` is the key as one struct."""
    restored = F.col("gt_bootstrap") & (F.col("side") == 1)
    frame = frame.select(
        *[c for c in frame.columns if c not in ("g1", "g2", "g3", "g4")],
        F.when(restored, F.lit(0)).otherwise(F.col("g1")).cast("bigint").alias("g1"),
        F.when(restored, F.lit(-1)).otherwise(F.col("g2")).cast("bigint").alias("g2"),
        F.when(restored, F.lit(0)).otherwise(F.col("g3")).cast("bigint").alias("g3"),
        F.when(restored, F.col("idx")).otherwise(F.col("g4")).cast("bigint").alias("g4"))
    return frame.select("*", F.struct(*[F.col(c) for c in ("g1", "g2", "g3", "g4")]).alias("gpos"))


def _stream_checks(frame):
    """``drop``/``fail`` of stream rows and ``jkey`` (the store key a row writes or looks up)."""
    stream = F.col("side") == 0
    key_null, value_null = F.col("key").isNull(), F.col("value").isNull()
    mapped = mapped_key(F.col("key"), F.col("value"), F.col("gt_source"), F.col("gt_field"), stream)
    frame = frame.select("*", F.when(stream, mapped).otherwise(F.col("key")).alias("jkey"))
    mapped_null = F.col("jkey").isNull()
    left = F.col("join") == "left"
    mapper_first = F.col("global_join_null_stream_key")  # [global_join_null_stream_key] KAFKA-10277, 2.7
    # [null_key_outer_emit] KIP-962 (3.7) / [global_left_join_null_mapped_key] KAFKA-19208 (4.1)
    exempt = left & ~value_null & ((key_null & F.col("null_key_outer_emit"))
                                   | (mapped_null & F.col("global_left_join_null_mapped_key")))
    drop = (F.when(~stream, F.lit(None))
            .when(~mapper_first & key_null, F.lit(DropReason.NULL_KEY.code))
            # [kip77_join_semantics] a null value is dropped in every release with the join
            .when(~mapper_first & value_null, F.lit(DropReason.NULL_VALUE.code))
            .when(mapper_first & ~exempt & value_null, F.lit(DropReason.NULL_VALUE.code))
            .when(mapper_first & ~exempt & mapped_null, F.lit(DropReason.NULL_JOIN_KEY.code)))
    frame = frame.select("*", drop.alias("drop"))
    # [global_join_null_mapped_key_throws] before 1.0.1 the store's get(null) throws
    fail = F.when(stream & F.col("drop").isNull() & ~mapper_first & mapped_null
                  & F.col("global_join_null_mapped_key_throws"), F.lit(FailureCode.GLOBAL_LOOKUP_NULL_KEY.code))
    # a null mapped key is no match: left joins with null ([global_left_join_null_mapped_key] 1.0.1-2.6,
    # or exempt in 2.7+), an inner join emits nothing
    null_mapped_emits = left & (mapper_first | F.col("global_left_join_null_mapped_key"))
    return frame.select("*", fail.alias("fail"), null_mapped_emits.alias("null_mapped_emits"))


def _table_source(frame, features):
    """The global table's source over the one store: ``stored``, ``src_drop``, ``src_fail``."""
    table = F.col("side") == 1
    keep = [c for c in frame.columns if c not in ("task", "seq", "ktable_emit_on_change")]
    frame = frame.select(
        *keep, F.col("task").alias("otask"), F.col("seq").alias("oseq"),
        F.lit(0).alias("task"), F.col("gpos").alias("seq"),
        # [ktable_emit_on_change] KTableSource only: the start-up restore writes the store directly
        (F.col("ktable_emit_on_change") & ~F.col("gt_bootstrap")).alias("ktable_emit_on_change"),
        table.alias("is_table"), F.lit(False).alias("t_ver"), F.lit(None).cast("bigint").alias("t_ret"))
    # a GlobalKTable is never versioned (TopologyException "GlobalTables cannot be versioned.")
    frame = with_source_rules(frame, attrs.evolve(features, versioned=False))
    return frame.drop("task", "seq").withColumnRenamed("otask", "task").withColumnRenamed("oseq", "seq")


def global_table_join(frame, features):
    """``frame``: records of global_table_join scenarios with configs and processing order.
    Returns its events (``outputs.events``)."""
    frame = _stream_checks(_global_position(frame))
    frame = _table_source(frame, features)
    per_key = Window.partitionBy("sid", "jkey").orderBy("gpos").rowsBetween(*UP_TO)
    last_put = F.last(F.when(F.col("stored"), F.struct(F.col("value").alias("v"))), ignorenulls=True).over(per_key)
    stream = F.col("side") == 0
    looks_up = stream & F.col("drop").isNull() & F.col("fail").isNull() & F.col("jkey").isNotNull()
    frame = frame.select("*", F.when(looks_up, last_put.getField("v")).alias("tval"))
    tval, left = F.col("tval"), F.col("join") == "left"
    joined = stream & F.col("drop").isNull() & F.col("fail").isNull() & F.when(
        F.col("jkey").isNull(), F.col("null_mapped_emits")).otherwise(left | tval.isNotNull())
    # [global_restore_skips_null_key] before 0.11 the start-up restore dies on a null-key table record
    restore_fails = F.col("gt_bootstrap") & ~F.col("global_restore_skips_null_key") & (F.col("side") == 1) \
        & F.col("key").isNull()
    etype = (F.when(restore_fails | F.col("fail").isNotNull() | F.col("src_fail").isNotNull(), F.lit(FAILURE))
             .when(F.col("drop").isNotNull() | F.col("src_drop").isNotNull(), F.lit(DROP))
             .when(joined, F.lit(OUTPUT)))
    text = F.coalesce(F.when(restore_fails, F.lit(FailureCode.GLOBAL_RESTORE_NULL_KEY.code)), F.col("fail"),
                      F.col("src_fail"), F.col("drop"), F.col("src_drop"))
    zero = F.lit(0).cast("bigint")
    return events(frame, etype=etype, f1=zero, f2=F.lit(b""), f3=zero, n_null=F.lit(False), n_l=F.col("value"),
                  n_r=tval, o_kind=F.lit(OLD_NONE), text=text)
