"""``ForeignTableJoinProcessorSupplier`` (2.4-3.6: ``ForeignJoinSubscriptionProcessorSupplier``):
the RHS-triggered responses, set-based.

Every RHS change (a tombstone, a re-put of the same value and the delete of an absent key too:
``Change(null, null)`` is forwarded; no old == new short cut) prefix-scans the subscription store
of its task over its FK and sends one response per subscriber: key = the PK, value = (the stored
subscription's hash, the new RHS value or null), ts = the RHS record's own ts. A null key
(``null_key``) and an out-of-order versioned update (``out_of_order_versioned_update``, KIP-914)
never get here (``tables.py``).

The subscription store, set-based: each (task, FK, PK) entry holds the most recently received
subscription; a ``PROPAGATE_*`` record puts it, a ``DELETE_KEY_*`` record deletes it. So every put
is *live* from its position (the LHS input that sent it; synchronous delivery processes it before
the next input) until the next subscription record of the same (task, FK, PK) (a window ``lead``
in processing order). The scan of an RHS change finds the puts of its (scenario, task, FK) live
at its position, at most one per PK: with the FK's RHS changes ranked 1, 2, ... in processing
order (a running count over the FK's changes and subscription records), a put is live for a
range of ranks, exploded into one row per rank and equi-joined with the changes. The scan visits the entries in
ascending ``CombinedKey`` bytes (``[4-byte FK length][FK bytes][PK bytes]``, one FK: ascending
serialized PK bytes), which is the order the responses are forwarded and processed in:
``f2`` = :func:`pk_order`: the PK's serialized bytes (``spark_backend.joins.stream_table.key_bytes``,
the Spark twin of ``reference.model.keys.serialized_key``). Kafka has one PK serde, so PKs of
different JSON types never meet; kssim keeps them apart as the reference's subscription store
does: string PKs first, then the others behind ``0xFF`` and a letter of their type.

Each response goes to the stored entry's ``r`` (``subscription_send.routed``: its
``primaryPartition`` since 3.3, ``fk_response_to_primary_partition``; before, the default
partition of the PK).
"""
from __future__ import annotations

from pyspark.sql import Window
from pyspark.sql import functions as F

from kssim.spark_backend.foreign_key.rows import CARRIED, ORDER, aligned, few
from kssim.spark_backend.foreign_key.subscription_send import (PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE,
                                                         PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE)
from kssim.spark_backend.joins.stream_table import _FLOAT, key_bytes


#: the type letter the subscription store puts (after 0xFF) in front of a PK that is not a string
_TYPE_LETTERS = (("^(true|false)$", "b"), ("^-?[0-9]+$", "i"), (_FLOAT, "f"), ("^\\[", "l"), ("^\\{", "d"))


def pk_order(pk):
    """The order a prefix scan visits the subscribers of one FK in: ascending bytes of this column.
    A string PK: its serialized (UTF-8) bytes, Kafka's CombinedKey order; a PK of another JSON type
    (``pk`` holds ``key_text``): ``0xFF``, its type letter, its serialized bytes, which sorts it
    after every string (UTF-8 never holds 0xFF) and groups the types."""
    letter = F.lit("o")
    for pattern, name in reversed(_TYPE_LETTERS):
        letter = F.when(pk.rlike(pattern), F.lit(name)).otherwise(letter)
    marked = F.concat(F.unhex(F.lit("FF")), F.encode(letter, "UTF-8"), key_bytes(pk))
    return F.when(pk.startswith('"'), key_bytes(pk)).otherwise(marked)


def _ranked(subs, rhs_changes):
    """The RHS changes and the subscription records of each (scenario, task, FK) in processing
    order, each with ``n``: how many RHS changes of its FK came before it, itself included (a
    running count: an RHS change's rank, 1, 2, ...; a subscription record's count of changes before
    it), and ``total``, the FK's count of RHS changes. The changes carry what a response takes from
    them (``idx``, ``rv``, ``rts``, ``CARRIED``), so they need no join back to ``rhs_changes``."""
    records = subs.filter(F.col("fk").isNotNull()).select(
        "sid", "q", "fk", *ORDER, "sub", "pk", "hash", "r", "instr", F.lit(False).alias("is_rhs"))
    changes = rhs_changes.select("sid", "q", "fk", *ORDER, F.lit(0).cast("bigint").alias("sub"),
                                 F.lit(True).alias("is_rhs"), "idx", "rv", "rts", *CARRIED)
    shared = records.select("*", *[F.lit(None).cast(t).alias(c) for c, t in changes.dtypes if c not in records.columns])
    events_ = few(shared.unionByName(aligned(changes, shared)))
    per_fk = Window.partitionBy("sid", "q", "fk")
    running = F.count(F.when(F.col("is_rhs"), 1)).over(
        per_fk.orderBy(*ORDER, "sub").rowsBetween(Window.unboundedPreceding, Window.currentRow))
    return events_.select("*", running.alias("n"), F.count(F.when(F.col("is_rhs"), 1)).over(per_fk).alias("total"))


def live_subscriptions(ranked):
    """The subscription store's entries with the RHS changes they are live for: ``(sid, q, fk,
    pk, hash, r, rank)``, one row per (entry, rank of an RHS change of its FK that finds it). A put
    is live from its record to the next record of the same (task, FK, PK) (a window ``lead``), so it
    answers the FK's RHS changes ranked ``n + 1`` to the ``n`` of that next record (or ``total``)."""
    per_entry = Window.partitionBy("sid", "q", "fk", "pk").orderBy(*ORDER, "sub")
    subs = ranked.filter(~F.col("is_rhs"))
    rows = subs.select("*", F.coalesce(F.lead("n").over(per_entry), F.col("total")).alias("until"))
    puts = F.col("instr").isin(PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE, PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE)
    live = rows.filter(puts & (F.col("until") > F.col("n")))
    return live.select("sid", "q", "fk", "pk", "hash", "r",
                       F.explode(F.sequence(F.col("n") + 1, F.col("until"))).alias("rank"))


def rhs_triggered(rhs_changes, subs):
    """``rhs_changes``: the RHS changes ``(sid, idx, g1..g4, q, fk, rv, rts, CARRIED)``; ``subs``:
    every subscription row (with ``q`` and ``r``). Returns response rows (``rows.RESPONSE_COLUMNS``).

    The scan is an equi-join of each RHS change (by its rank among its FK's changes) with the
    entries live for that rank: linear in the responses, however long a FK's history."""
    ranked = _ranked(subs, rhs_changes)
    changes = few(ranked.filter(F.col("is_rhs")).select("sid", "idx", *ORDER, "q", "fk", F.col("n").alias("rank"),
                                                        "rv", "rts", *CARRIED))
    scanned = changes.join(few(live_subscriptions(ranked)), ["sid", "q", "fk", "rank"])
    return scanned.select(
        "sid", "idx", *ORDER, "r", "pk", "hash",
        F.col("rv").alias("fv"), F.col("rts").alias("ts"), F.lit(0).cast("bigint").alias("f1"),
        pk_order(F.col("pk")).alias("f2"), *CARRIED)
