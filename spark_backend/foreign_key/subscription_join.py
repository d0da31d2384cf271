"""The RHS side of a subscription record (``SubscriptionReceiveProcessorSupplier`` and
``SubscriptionJoinProcessorSupplier``; 2.4-3.6: ``SubscriptionStoreReceiveProcessorSupplier``,
``SubscriptionJoinForeignProcessorSupplier``): the LHS-triggered responses, set-based.

Synchronous delivery (TopologyTestDriver): what an input sends is processed before the next input,
so a subscription record sits, in its task's order, right after the LHS input that sent it. The
RHS table's value there is an *as-of lookup*: the last RHS change of the FK in the task of the
subscription's partition before that input (a window ``last`` over the RHS changes and the
lookups of one (scenario, task, FK), in processing order). A versioned RHS answers with its latest
version (``tables.py``: only latest versions are changes).

- The receiver stores a subscription under ``CombinedKey(fk, pk)`` (``DELETE_KEY_*``: deletes it);
  that store is ``foreign_table_join.py``'s. A null FK (the 3.7+ left join's,
  ``fk_left_join_null_foreign_key``) is passed on unstored with ``PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE``
  (the receiver would drop one with any other instruction, ``null_foreign_key``, but no release
  sends that, so there is no such drop here).
- The join answers per instruction (``resultTs`` = max(subscription ts, RHS row ts) when the RHS
  row exists, else the subscription ts; the response key is the PK): ``DELETE_KEY_AND_PROPAGATE``
  (hash, null); ``PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE`` (hash, RHS value or null);
  ``PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE`` (hash, RHS value) only if the RHS row exists;
  ``DELETE_KEY_NO_PROPAGATE`` nothing. A null FK finds no RHS row.
- The response goes to the subscription's ``r`` (``subscription_send.routed``: the LHS record's
  partition since 3.3, ``fk_response_to_primary_partition``; before, the PK's). Responses of one
  input keep the order the subscriptions were sent (``f1``).
"""
from __future__ import annotations

from pyspark.sql import Window
from pyspark.sql import functions as F

from kssim.spark_backend.foreign_key.rows import CARRIED, ORDER, aligned, few
from kssim.spark_backend.foreign_key.subscription_send import (DELETE_KEY_AND_PROPAGATE, DELETE_KEY_NO_PROPAGATE,
                                                         PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE)

UP_TO = (Window.unboundedPreceding, Window.currentRow)


def lhs_triggered(subs, rhs_changes):
    """``subs``: subscription rows (``subscription_send.routed``: with ``q`` and ``r``);
    ``rhs_changes``: ``(sid, idx, g1..g4, q, fk, rv, rts, CARRIED)``, the RHS changes in their
    task. Returns response rows (``rows.RESPONSE_COLUMNS``)."""
    asks = subs.filter(F.col("instr") != DELETE_KEY_NO_PROPAGATE)
    lookups = asks.select("*", F.lit(1).alias("role"), F.lit(None).cast("string").alias("rv"),
                          F.lit(None).cast("bigint").alias("rts"))
    rows = few(lookups.unionByName(aligned(rhs_changes.select("*", F.lit(0).alias("role")), lookups)))
    per_fk = Window.partitionBy("sid", "q", "fk").orderBy(*ORDER, "role").rowsBetween(*UP_TO)
    state = F.last(F.when(F.col("role") == 0, F.struct(F.col("rv").alias("v"), F.col("rts").alias("t"))),
                   ignorenulls=True).over(per_fk)
    rows = rows.select("*", F.when(F.col("fk").isNotNull(), state).alias("rhs")).filter(F.col("role") == 1)
    present = F.col("rhs.v").isNotNull()
    ts = F.when(present, F.greatest(F.col("sts"), F.col("rhs.t"))).otherwise(F.col("sts"))
    foreign_value = F.when(F.col("instr") != DELETE_KEY_AND_PROPAGATE, F.col("rhs.v"))
    responds = (F.col("instr") != PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE) | present
    return rows.filter(responds).select(
        "sid", "idx", *ORDER, "r", "pk", "hash",
        foreign_value.alias("fv"), ts.alias("ts"), F.col("sub").alias("f1"), F.lit(b"").alias("f2"), *CARRIED)
