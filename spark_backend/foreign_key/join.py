"""The FK join of a batch: the stages of this package wired together, and its events.

``foreign_key_join(frame, features)`` takes the fk_join records of a batch (clustered by scenario
and task, with configs and processing order) and returns their events (``outputs.events``):

1. ``tables.with_tables``: the sources, versioned stores, changes, FKs and old values (read by
   every later stage: computed once, a lazy local checkpoint);
2. ``subscription_send``: each LHS change -> 0-2 subscription rows (and ``null_foreign_key`` drops),
   routed to the task of their FK's partition, their responses to the LHS record's task (3.3+) or
   the PK's partition;
3. ``subscription_join.lhs_triggered``: each subscription's response from the RHS table as of its
   input; ``foreign_table_join.rhs_triggered``: each RHS change's responses from the subscriptions
   live in its task;
4. ``response_join.responses_joined``: the hash check against the LHS table as of the causing
   input, the results (``stale_fk_response`` drops), old values.

Drops of the sources (``null_key``, ``expired_versioned_put``, ``idempotent_update``) and of the
join processors (``out_of_order_versioned_update``) are attributed to their input, as are the
outputs and drops of every response (``idx`` and ``g1..g4`` of the input that caused it).
"""
from __future__ import annotations

from pyspark.sql import functions as F

from kssim.reference.model.codes import DropReason

from kssim.spark_backend.foreign_key.foreign_table_join import rhs_triggered
from kssim.spark_backend.foreign_key.response_join import responses_joined
from kssim.spark_backend.foreign_key.rows import CARRIED, ORDER, ROUTING, few
from kssim.spark_backend.foreign_key.subscription_join import lhs_triggered
from kssim.spark_backend.foreign_key.subscription_send import INSTRUCTION_RULES, instructions, routed, subscriptions
from kssim.spark_backend.foreign_key.tables import with_tables
from kssim.spark_backend.runtime.inputs import CONFIG_COLUMNS
from kssim.spark_backend.runtime.outputs import DROP, EVENT_COLUMNS, FAILURE, OLD_NONE, events


#: the settings the join processors read (``changes_joined``)
_SETTINGS_READ = ("join",) + INSTRUCTION_RULES + ROUTING + CARRIED


def _narrow(tables):
    """``tables`` without the settings no stage reads: a batch's rows carry every operator's
    settings (well over a hundred columns), and a checkpoint stores each row whole."""
    unread = set(CONFIG_COLUMNS) - set(_SETTINGS_READ) - set(EVENT_COLUMNS)
    return tables.select(*[c for c in tables.columns if c not in unread])


def foreign_key_join(frame, features):
    """Events of the fk_join scenarios in ``frame`` (see the module docstring)."""
    tables = _narrow(with_tables(frame, features)).localCheckpoint(eager=False)
    # KIP-914: a join whose parent is versioned drops out-of-order updates [versioned_tables]
    out_of_order = F.col("stored") & F.col("t_ver") & ~F.col("is_latest")
    # the inputs' own drops and failures: the sources, the join processors
    drop = F.coalesce(F.col("src_drop"), F.when(out_of_order, F.lit(DropReason.OUT_OF_ORDER_VERSIONED_UPDATE.code)))
    etype = F.when(F.col("src_fail").isNotNull(), F.lit(FAILURE)).when(drop.isNotNull(), F.lit(DROP))
    own = events(tables, etype=etype,
                 text=F.coalesce(F.col("src_fail"), drop), o_kind=F.lit(OLD_NONE))
    return few(changes_joined(tables, features).unionByName(own))


def changes_joined(tables, features, result_key=None):
    """The events of the join processors for the two tables' changes: the results, the drops of
    the response join (``stale_fk_response``; with old values ``idempotent_update``) and of the
    send processor (``null_foreign_key``). ``tables``: one row per table update (``side``,
    ``change``: it moved the table's value getter, ``key``, ``value``, ``ts``, ``task``, ``idx``,
    ``g1..g4``; LHS rows: ``fk`` and ``old`` as :func:`tables.with_tables` adds them) with the
    scenario's settings; ``result_key``: see ``response_join.responses_joined``. Stages 2 to 4
    of the module docstring; the graph stage (``spark_backend.graph.foreign_key_stages``) feeds it
    a graph node's arrivals."""
    side = F.col("side")
    lhs = tables.filter((side == 0) & F.col("change"))
    changes = instructions(lhs).localCheckpoint(eager=False)
    subs = routed(subscriptions(changes), features.foreign_key.partitioned)
    subs = subs.localCheckpoint(eager=False)
    rhs_changes = tables.filter((side == 1) & F.col("change")).select(
        "sid", "idx", *ORDER, F.col("task").alias("q"), F.col("key").alias("fk"), F.col("value").alias("rv"),
        F.col("ts").alias("rts"), *CARRIED)
    responses = few(lhs_triggered(subs, rhs_changes).unionByName(rhs_triggered(rhs_changes, subs)))
    lhs_values = few(lhs).select("sid", F.col("task").alias("r"), F.col("key").alias("pk"), *ORDER,
                                 F.col("value").alias("cur"))
    joined = events(responses_joined(responses, lhs_values, features, result_key), f3=F.lit(0))
    send_drops = events(changes, etype=F.when(F.col("send_drop").isNotNull(), F.lit(DROP)), text="send_drop",
                        o_kind=F.lit(OLD_NONE))
    return joined.unionByName(send_drops)
