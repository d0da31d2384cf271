"""``SubscriptionSendProcessorSupplier`` (2.4-3.6: ``ForeignJoinSubscriptionSendProcessorSupplier``):
each LHS change ``Change(new, old)`` becomes 0 to 2 subscription records, set-based.

A window-free expansion: the instructions of one change depend only on the change itself (new and
old value, the FK of each: ``tables.py``) and the release's rules, so each LHS change row gets an
array of ``(fk, instruction)`` and a drop code, and ``posexplode`` makes one row per subscription
(``sub``: 0 for the first record sent, 1 for the second; what the old FK gets is always sent first).

Instructions (``SubscriptionWrapper.Instruction``'s bytes): ``DELETE_KEY_NO_PROPAGATE`` 0,
``DELETE_KEY_AND_PROPAGATE`` 1, ``PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE`` 2,
``PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE`` 3. "FK changed" compares the serialized FKs (the FKs'
``key_text``; a null FK differs from every FK). Per release (digest A.1, kafka-semantics-4x.md):

- 2.4-3.6, and the inner join until 4.0 (``defaultJoinInstructions``): an old value whose FK is
  null, or a new value whose FK is null, drops the whole update (``null_foreign_key``: "Skipping
  record due to null foreign key"); FK changed: 0 to the old FK, then 2 to the new; same FK: 2;
  delete: 1 to the old FK; insert: 3 (inner) or 2 (left);
- left join, 3.7+ (``fk_left_join_null_foreign_key``, KIP-962, ``leftJoinInstructions``): nothing
  for ``Change(null, null)``; if the old FK is not null and the FK changed (a delete's new FK is
  null): 1 to the old FK (4.1+: 0, ``fk_left_unsubscribe_no_propagate``, KAFKA-18713); then always
  2 to the new FK, which may be null (a delete's is): a null-key subscription, never stored;
- inner join, 4.1+ (``fk_inner_null_fk_transitions``, KAFKA-16407/16434; the 4.2 code, whose
  outputs 4.1 shares): a new value with a null FK is dropped (``null_foreign_key``) but unsubscribes
  a non-null old FK with 1; a non-null new FK: changed from a non-null old FK: 0 then 2; the same
  FK, or no old FK: 3; a delete sends 1 to a non-null old FK, nothing (and no drop) otherwise.

Every record carries the hash of the new value (null for a delete: ``hash`` is the new value's
JSON text here, see the package docstring), the LHS key, the LHS record's partition
(``primaryPartition``) and its timestamp. It goes to the partition of its FK (``keys.partition_of``;
a null FK stays in the task, as it is never stored). An out-of-order versioned update never gets
here (``tables.py``).
"""
from __future__ import annotations

from pyspark.sql import functions as F

from kssim.reference.model.codes import DropReason

from kssim.spark_backend.foreign_key.keys import partition_of
from kssim.spark_backend.foreign_key.rows import CARRIED, ROUTING
from kssim.spark_backend.stores.versioned_store import python_partitions

DELETE_KEY_NO_PROPAGATE, DELETE_KEY_AND_PROPAGATE = 0, 1
PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE, PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE = 2, 3

SUB_TYPE = "array<struct<fk:string,instr:int>>"
#: the settings :func:`instructions` reads (besides ``join``)
INSTRUCTION_RULES = ("fk_left_join_null_foreign_key", "fk_left_unsubscribe_no_propagate", "fk_inner_null_fk_transitions")


def _sends(*pairs):
    return F.array(*[F.struct(fk.alias("fk"), F.lit(instr).alias("instr")) for fk, instr in pairs]).cast(SUB_TYPE)


def instructions(frame):
    """LHS change rows (``value`` = new, ``old`` = struct ``v``, ``fk`` of the old value, ``fk`` of the
    new) -> adds ``sends`` (array of ``(fk, instr)``) and ``send_drop`` (a DropReason code or null)."""
    new, nfk = F.col("value"), F.col("fk")
    old, ofk = F.col("old.v"), F.col("old.fk")
    o, n = old.isNotNull(), new.isNotNull()
    ofk_set = o & ofk.isNotNull()
    nfk_or_null = F.when(n, nfk)
    changed = ~ofk.eqNullSafe(nfk_or_null)
    left = F.col("join") == "left"
    null_fk = F.lit(DropReason.NULL_FOREIGN_KEY.code)
    NOTHING = F.array().cast(SUB_TYPE)  # noqa: N806

    # [fk_left_join_null_foreign_key] KIP-962 (3.7): the left join's own rules
    # [fk_left_unsubscribe_no_propagate] KAFKA-18713 (4.1): the old FK without a response
    unsubscribe = F.when(F.col("fk_left_unsubscribe_no_propagate"), F.lit(DELETE_KEY_NO_PROPAGATE)) \
        .otherwise(F.lit(DELETE_KEY_AND_PROPAGATE))
    left_sends = F.when(~o & ~n, NOTHING).otherwise(F.concat(
        F.when(ofk_set & changed, F.array(F.struct(ofk.alias("fk"), unsubscribe.alias("instr")))
               .cast(SUB_TYPE)).otherwise(NOTHING),
        _sends((nfk_or_null, PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE))))

    # [fk_inner_null_fk_transitions] KAFKA-16407/16434 (4.1): null FKs unsubscribe / subscribe
    inner41_sends = (
        F.when(n & nfk.isNull(), F.when(ofk_set, _sends((ofk, DELETE_KEY_AND_PROPAGATE))).otherwise(NOTHING))
        .when(n & ofk_set & changed, _sends((ofk, DELETE_KEY_NO_PROPAGATE),
                                            (nfk, PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)))
        .when(n, _sends((nfk, PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE)))
        .when(ofk_set, _sends((ofk, DELETE_KEY_AND_PROPAGATE)))
        .otherwise(NOTHING))
    inner41_drop = F.when(n & nfk.isNull(), null_fk)

    # 2.4-3.6 (both joins), inner until 4.0: defaultJoinInstructions
    insert = F.when(left, F.lit(PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)) \
        .otherwise(F.lit(PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE))
    skipped = (o & ofk.isNull()) | (n & nfk.isNull())
    classic_sends = (
        F.when(skipped, NOTHING)
        .when(o & n & changed, _sends((ofk, DELETE_KEY_NO_PROPAGATE), (nfk, PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)))
        .when(o & n, _sends((nfk, PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)))
        .when(o, _sends((ofk, DELETE_KEY_AND_PROPAGATE)))
        .when(n, F.array(F.struct(nfk.alias("fk"), insert.alias("instr"))).cast(SUB_TYPE))
        .otherwise(NOTHING))
    classic_drop = F.when(skipped, null_fk)

    left37 = left & F.col("fk_left_join_null_foreign_key")
    inner41 = ~left & F.col("fk_inner_null_fk_transitions")
    sends = F.when(left37, left_sends).when(inner41, inner41_sends).otherwise(classic_sends)
    drop = F.when(left37, F.lit(None)).when(inner41, inner41_drop).otherwise(classic_drop)
    return frame.select("*", sends.alias("sends"), drop.cast("string").alias("send_drop"))




def subscriptions(changes):
    """One row per subscription record of the LHS change rows with ``sends``: ``p`` (the LHS task,
    ``primaryPartition``), ``pk``, ``hash`` (the new value, null for a delete), ``sts`` (the LHS
    record's ts), ``sub`` (send order within the change), ``fk``, ``instr``, and the scenario's
    ``rows.ROUTING`` and ``rows.CARRIED`` settings."""
    return changes.select("*", F.posexplode("sends").alias("sub", "send")).select(
        "sid", "idx", "g1", "g2", "g3", "g4", F.col("task").alias("p"), F.col("key").alias("pk"),
        F.col("value").alias("hash"), F.col("ts").alias("sts"), F.col("sub").cast("bigint").alias("sub"),
        F.col("send.fk").alias("fk"), F.col("send.instr").alias("instr"),
        *ROUTING, *CARRIED)


def routed(subs, partitioned: bool):
    """Subscription rows with ``q``, the task of the subscription topic partition they go to (the
    default partitioner over the FK; a null FK, never stored, stays in the sending task), and
    ``r``, the task of the response topic partition their responses go to: the LHS record's
    (``primaryPartition``, 3.3+), before 3.3 the default partitioner over the PK
    [fk_response_to_primary_partition]. Without ``partitioned`` (every FK scenario of the batch
    has one partition) both are constants; otherwise ``keys.partition_of`` is a Python step, run
    in one task per core."""
    if partitioned:
        subs = python_partitions(subs)
    return subs.select(
        "*", F.when(F.col("fk").isNull(), F.col("p"))
        .otherwise(partition_of(F.col("fk"), F.col("fk_tasks"), partitioned)).alias("q"),
        F.when(F.col("fk_response_to_primary_partition"), F.col("p"))
        .otherwise(partition_of(F.col("pk"), F.col("fk_tasks"), partitioned)).alias("r"))
