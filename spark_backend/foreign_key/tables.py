"""The two KTable sources of an FK join and what their stores hold, set-based.

``doJoinOnForeignKey`` materializes both tables and makes both sources send old values. Per input
record (``side`` 0: the LHS, primary table; 1: the RHS, foreign table), in its task:

- the source rules (``spark_backend.joins.table_source``): ``null_key`` (KTableSource skips a null
  key), ``expired_versioned_put`` (``versioned_tables``), ``idempotent_update`` (KIP-557,
  ``ktable_emit_on_change``); a versioned put's ``isLatest`` from the per-key replay of
  ``RocksDBVersionedStore`` (``spark_backend.stores.versioned_store``, the one sequential step,
  only in batches with versioned tables);
- a *change* is a stored update that is the latest version (every stored update of a key-value
  store): it is what the table's value getter returns from then on (a tombstone: nothing). The
  value getter of a versioned table returns the latest version, so an out-of-order put never
  changes it; the join processors drop it (``out_of_order_versioned_update``, KIP-914:
  ``SubscriptionSendProcessorSupplier`` on the LHS, ``ForeignTableJoinProcessorSupplier`` on the
  RHS);
- the LHS change's old value (``Change#oldValue``): the value of the key's previous change in the
  task (a window ``last`` per (scenario, task, key) in processing order), with its FK;
- the FK of every LHS value (``keys.foreign_key``), carried with the value, so the old value's FK
  is the one extracted when it was new.
"""
from __future__ import annotations

from pyspark.sql import Window
from pyspark.sql import functions as F

from kssim.spark_backend.foreign_key.keys import foreign_key
from kssim.spark_backend.joins.table_source import with_source_rules
from kssim.spark_backend.stores.versioned_store import PUT, python_partitions, replay

BEFORE = (Window.unboundedPreceding, -1)


def with_tables(frame, features):
    """``frame``: the fk_join records (clustered by scenario and task, with configs and processing
    order). Adds ``src_drop``/``src_fail``/``stored`` (the source rules), ``is_latest``,
    ``change``, ``fk`` (LHS rows with a value) and ``old`` (LHS rows: struct ``v``, ``fk`` of the
    value before, or null: absent)."""
    side = F.col("side")
    frame = frame.select("*", F.lit(True).alias("is_table"),
                         F.when(side == 0, F.col("lver")).otherwise(F.col("rver")).alias("t_ver"),
                         F.when(side == 0, F.col("lret")).otherwise(F.col("rret")).alias("t_ret"))
    frame = with_source_rules(frame, features)
    frame = frame.select("*", F.col("seq").alias("pos"), side.alias("store"),
                         F.when(F.col("stored"), F.lit(PUT)).alias("v_kind"),
                         F.lit(None).cast("bigint").alias("asof"), F.lit(None).cast("bigint").alias("observed"))
    frame = replay(frame, F.col("t_ver") & F.col("stored"), features.versioned)
    is_latest = F.coalesce(F.col("v_latest"), F.lit(True))
    lhs_value = F.when((side == 0) & F.col("stored") & is_latest, F.col("value"))
    fk = foreign_key(F.col("key"), lhs_value, F.col("fk_source"), F.col("fk_field"), F.col("fk_extractor_with_key"))
    # one Python task per core, not per shuffle partition (most of them empty)
    frame = python_partitions(frame).select("*", is_latest.alias("is_latest"),
                                            (F.col("stored") & is_latest).alias("change"), fk.alias("fk"))
    per_key = Window.partitionBy("sid", "task", "side", "key").orderBy("seq").rowsBetween(*BEFORE)
    old = F.last(F.when(F.col("change"), F.struct(F.col("value").alias("v"), F.col("fk").alias("fk"))),
                 ignorenulls=True).over(per_key)
    return frame.select("*", F.when(side == 0, old).alias("old"))
