"""The KTable source (``KTableSource`` and its store) of a join, computed set-based.

Works on a batch frame (clustered by scenario and task, with ``seq``) in which the table updates
are the rows with ``is_table`` and carry their table's settings ``t_ver`` (versioned store?) and
``t_ret`` (history retention); other rows pass through. Adds, for table rows:

- ``src_fail``: real Kafka dies here (a ``FailureCode``'s code). Before KIP-77 (0.10.2,
  ``kip77_join_semantics``) a null key reached the materialized source, and the store / the join
  threw: ``table_source_null_key``.
- ``src_drop``: why the source ignored the update (a ``DropReason``'s code), or null:
  * ``null_key``: KTableSource skips null keys (since 0.10.2, ``kip77_join_semantics``).
  * ``expired_versioned_put`` (versioned store, KIP-889; ``versioned_tables``: the loader rejects
    versioned tables before 3.5, so ``t_ver`` implies the rule): ``ts < observedStreamTime -
    historyRetention``, where the store's clock is the max ``ts`` put into it so far (all keys of
    the task; an expired put cannot raise it, so a running max over the earlier non-null-key
    updates is exact): a window max per (scenario, task) in processing order.
  * ``idempotent_update`` (KIP-557, ``ktable_emit_on_change``: only 2.6.0, 2.6.1, 2.7.0;
    ``putIfDifferentValues``, key-value stores only): the new value's bytes equal the stored ones
    and ``ts >=`` the stored ts, or a tombstone for an absent key. Skipped updates equal the store,
    so the stored value before an update is the previous update's value (a window ``last``); the
    stored ts is the smallest ts in the current run of equal values so far (the run's first update
    and every strictly older one were applied): a window ``max`` of ``(run, -ts)`` over the
    earlier updates of the key, valid when its run is this one.
- ``stored``: the update went into the store.

``isLatest`` of a versioned put (what ``RocksDBVersionedStore#put`` returned) depends on the
store's physical history and comes from the per-key replay in ``versioned_store.py``.
"""
from __future__ import annotations

from pyspark.sql import Window
from pyspark.sql import functions as F

from kssim.reference.model.codes import DropReason, FailureCode

BEFORE = (Window.unboundedPreceding, -1)
UP_TO = (Window.unboundedPreceding, Window.currentRow)


def with_source_rules(frame, features):
    """Adds ``src_fail``, ``src_drop`` and ``stored`` (see the module docstring); the windows of
    versioned stores and KIP-557 only when the batch has such scenarios (``features``)."""
    table, key_null, side = F.col("is_table"), F.col("key").isNull(), F.col("side")
    expired = F.lit(False)
    if features.versioned:
        in_task = Window.partitionBy("sid", "task").orderBy("seq").rowsBetween(*BEFORE)

        def clock_of(side_id):
            return F.max(F.when(table & (side == side_id) & ~key_null, F.col("ts"))).over(in_task)

        observed = F.when(side == 0, clock_of(0)).otherwise(clock_of(1))
        expired = table & F.col("t_ver") & ~key_null & observed.isNotNull() & (F.col("ts") < observed - F.col("t_ret"))
    frame = frame.select("*", expired.alias("src_expired"))
    idempotent = F.lit(False)
    if features.ktable_emit_on_change:
        frame, idempotent = _idempotent(frame, table & ~key_null & ~F.col("src_expired"))

    # [kip77_join_semantics] KTableSource skips a null key since 0.10.2; before, the source dies
    kip77 = F.col("kip77_join_semantics")
    drop = (F.when(table & key_null & kip77, F.lit(DropReason.NULL_KEY.code))
            .when(F.col("src_expired"), F.lit(DropReason.EXPIRED_VERSIONED_PUT.code))
            .when(idempotent, F.lit(DropReason.IDEMPOTENT_UPDATE.code)))
    fail = F.when(table & key_null & ~kip77, F.lit(FailureCode.TABLE_SOURCE_NULL_KEY.code))
    frame = frame.select("*", drop.alias("src_drop"), fail.alias("src_fail"))
    return frame.select("*", (table & F.col("src_drop").isNull() & F.col("src_fail").isNull()).alias("stored")) \
        .drop("src_expired", "src_prev", "src_same", "src_run", "src_oldest")


def _idempotent(frame, in_play):
    """KIP-557's skip test, as a column over ``frame`` (with its helper columns added)."""
    per_key = Window.partitionBy("sid", "task", "side", "key").orderBy("seq")
    previous = F.last(F.when(in_play, F.struct(F.col("value").alias("v"))), ignorenulls=True) \
        .over(per_key.rowsBetween(*BEFORE))
    frame = frame.select("*", previous.alias("src_prev"))
    prev_v, has_prev, value = F.col("src_prev.v"), F.col("src_prev").isNotNull(), F.col("value")
    # null-safe: after a skipped tombstone for an absent key the previous value is null, and a put
    # is then different (a plain == would be null, so no run would start there)
    same_as_store = F.when(value.isNull(), ~has_prev | prev_v.isNull()).otherwise(has_prev & prev_v.eqNullSafe(value))
    # [ktable_emit_on_change] putIfDifferentValues (KIP-557) on a key-value store only
    watches = F.col("ktable_emit_on_change") & ~F.col("t_ver") & in_play
    frame = frame.select("*", (watches & same_as_store).alias("src_same"))
    run = F.max(F.when(in_play & ~F.col("src_same"), F.col("seq"))).over(per_key.rowsBetween(*UP_TO))
    frame = frame.select("*", run.alias("src_run"))
    oldest_in_run = F.max(F.when(in_play, F.struct(F.col("src_run").alias("r"), (-F.col("ts")).alias("t")))) \
        .over(per_key.rowsBetween(*BEFORE))
    frame = frame.select("*", oldest_in_run.alias("src_oldest"))
    stored_ts = F.when(F.col("src_oldest.r") == F.col("src_run"), -F.col("src_oldest.t"))
    return frame, F.col("src_same") & (value.isNull() | (F.col("ts") >= stored_ts))
