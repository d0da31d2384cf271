"""KTable-KTable joins (inner, left, outer), set-based.

Source: ``KTableKTableInnerJoin`` / ``LeftJoin`` / ``RightJoin`` / ``OuterJoin``, ``KTableImpl#doJoin``,
``KTableSource`` (digest: kafka-semantics-joins.md section 4). Every rule here is a function of one
update and of the two tables' states just before it, so the join is window functions over each
task's updates of one key in processing order; only a versioned store's ``isLatest`` is replayed:

- the sources (``table_source.py``): null keys, expired versioned puts, KIP-557 idempotent updates;
  a versioned put's ``isLatest`` comes from the per-key replay of the store (``versioned_store.py``,
  the one sequential step, only in batches with versioned tables);
- the state of each table before an update: the last update of that side that changed what
  ``get(key)`` returns (value and ts; a tombstone makes the value absent), a window ``last`` per
  (scenario, task, key) with a side condition. The value getter of a versioned table returns its
  latest version, so out-of-order versions never change it;
- the join processors (one per side; the right side uses the reversed joiner, so every result
  reads ``joiner(left, right)``):

  * versioned parent (KIP-914, 3.5+, ``versioned_tables``): a ``!isLatest`` update is dropped
    (``out_of_order_versioned_update``);
  * inner: no output unless the other side has a value; then ``new ? joiner(new, other) : null``;
  * left, left side: no output if the other side is absent and new and old are both null (KIP-77's
    unnecessary-tombstone rule, ``kip77_join_semantics``); else ``new ? joiner(new, other) : null``;
  * left, right side (``RightJoin``): no output unless the left value exists; then
    ``joiner(left, new)`` even for a null new value;
  * outer: like left on both sides, the result is ``joiner(new, other)`` if either exists, else a
    tombstone;
  * before KIP-77 (0.10.0, 0.10.1) every update is forwarded: inner ``joiner(new, other)`` when both
    exist else null; left ``new ? joiner(new, other-or-null) : null``; ``RightJoin``
    ``joiner(left, new)`` when the left exists else null; outer ``joiner(new, other)`` unless both
    are null;
  * which old values the processors see: ``leftJoin`` makes the left source send old values,
    ``outerJoin`` both, and a downstream that asks for old values (``send_old_values``) makes both
    sources send and the join compute the old result (``joiner(old, other)`` under the same
    conditions, ``RightJoin``: ``joiner(left, old)`` whenever the left exists);
  * output timestamp (KAFKA-6455, 2.3+, ``output_ts_max``): ``max(ts, other's stored ts)`` when
    the other side has a value, else ``ts``; before 2.3 the update's own ts.
"""
from __future__ import annotations

from pyspark.sql import Window
from pyspark.sql import functions as F

from kssim.reference.model.codes import DropReason

from kssim.spark_backend.runtime.outputs import DROP, FAILURE, OLD_JOINED, OLD_NONE, OLD_NULL, OUTPUT, events
from kssim.spark_backend.joins.table_source import with_source_rules
from kssim.spark_backend.stores.versioned_store import PUT, replay

BEFORE = (Window.unboundedPreceding, -1)


def _state_before(side_id):
    """The (value, ts) ``get(key)`` of side ``side_id``'s table returns just before this update."""
    per_key = Window.partitionBy("sid", "task", "key").orderBy("seq").rowsBetween(*BEFORE)
    change = (F.col("side") == side_id) & F.col("latest_change")
    return F.last(F.when(change, F.struct(F.col("value").alias("v"), F.col("ts").alias("t"))),
                  ignorenulls=True).over(per_key)


def _args(side, mine, other):
    """The joiner arguments (left, right) for this side's value ``mine`` and the other's ``other``."""
    left_side = side == 0
    return F.when(left_side, mine).otherwise(other), F.when(left_side, other).otherwise(mine)


def join_result(side, join, new, old, ov, ots, update_ts):
    """The columns of a KTable-KTable join processor's result for an update of ``side`` (0 left,
    1 right) with new value ``new`` and old value ``old`` (null unless the source sends old values),
    the other side's current value ``ov`` (null: absent) and timestamp ``ots``: ``(emit,
    new_null, o_kind, out_ts, (n_l, n_r, o_l, o_r))`` (the joiner arguments of the new and the old
    result). Shared by the windowed-table join, whose windowed tables join by the same rules."""
    present = ov.isNotNull()
    right_join_side = (join == "left") & (side == 1)
    kip77 = F.col("kip77_join_semantics")  # [kip77_join_semantics]
    # before KIP-77 every update was forwarded and inner/left only read the other side when new
    # or old was non-null
    other = F.when(~kip77 & ~right_join_side & (join != "outer") & new.isNull() & old.isNull(), F.lit(None)) \
        .otherwise(ov)
    has_other = other.isNotNull()
    emit = F.when(~kip77, F.lit(True)) \
        .when((join == "inner") | right_join_side, present) \
        .otherwise(present | new.isNotNull() | old.isNotNull())
    new_null = F.when(join == "inner", new.isNull() | ~has_other) \
        .when(right_join_side, ~has_other) \
        .when(join == "left", new.isNull()) \
        .otherwise(new.isNull() & ~has_other)
    old_joined = F.when(join == "inner", old.isNotNull() & has_other) \
        .when(right_join_side, has_other) \
        .when(join == "left", old.isNotNull()) \
        .otherwise(old.isNotNull() | has_other)
    o_kind = F.when(~F.col("send_old"), F.lit(OLD_NONE)).when(old_joined, F.lit(OLD_JOINED)).otherwise(F.lit(OLD_NULL))
    # [output_ts_max] KAFKA-6455 (2.3): max of both timestamps, before the update's own
    out_ts = F.when(F.col("output_ts_max") & present, F.greatest(update_ts, ots)).otherwise(update_ts)
    return emit, new_null, o_kind, out_ts, _args(side, new, other) + _args(side, old, other)


def table_table_join(frame, features):
    """``frame``: records of table_table_join scenarios, clustered by (scenario, task), with
    configs and processing order. Returns its events (``outputs.events``)."""
    side = F.col("side")
    frame = frame.select("*", F.lit(True).alias("is_table"),
                         F.when(side == 0, F.col("lver")).otherwise(F.col("rver")).alias("t_ver"),
                         F.when(side == 0, F.col("lret")).otherwise(F.col("rret")).alias("t_ret"))
    frame = with_source_rules(frame, features)
    # isLatest of versioned puts: the per-key replay of RocksDBVersionedStore
    frame = frame.select("*", F.col("seq").alias("pos"), side.alias("store"),
                         F.when(F.col("stored"), F.lit(PUT)).alias("v_kind"),
                         F.lit(None).cast("bigint").alias("asof"), F.lit(None).cast("bigint").alias("observed"))
    frame = replay(frame, F.col("t_ver") & F.col("stored"), features.versioned)
    is_latest = F.coalesce(F.col("v_latest"), F.lit(True))
    frame = frame.select("*", is_latest.alias("is_latest"), (F.col("stored") & is_latest).alias("latest_change"))
    frame = frame.select("*", _state_before(0).alias("st_l"), _state_before(1).alias("st_r"))

    join = F.col("join")
    this_state = F.when(side == 0, F.col("st_l")).otherwise(F.col("st_r"))
    other_state = F.when(side == 0, F.col("st_r")).otherwise(F.col("st_l"))
    # which sources send old values (KTableImpl#doJoin, KTableKTableAbstractJoin#enableSendingOldValues)
    sends_old = (F.col("send_old") | ((side == 0) & join.isin("left", "outer")) | ((side == 1) & (join == "outer")))
    new = F.col("value")
    old = F.when(sends_old, this_state.getField("v"))
    ov, ots = other_state.getField("v"), other_state.getField("t")
    emit, new_null, o_kind, out_ts, (n_l, n_r, o_l, o_r) = join_result(side, join, new, old, ov, ots, F.col("ts"))
    # [versioned_tables] KIP-914: a join whose parent is versioned drops out-of-order updates (the
    # loader rejects versioned tables before 3.5, so t_ver implies the rule)
    out_of_order = F.col("stored") & F.col("t_ver") & ~F.col("is_latest")
    etype = (F.when(F.col("src_fail").isNotNull(), F.lit(FAILURE))
             .when(F.col("src_drop").isNotNull() | out_of_order, F.lit(DROP))
             .when(emit, F.lit(OUTPUT)))
    text = F.coalesce(F.col("src_fail"), F.col("src_drop"),
                      F.when(out_of_order, F.lit(DropReason.OUT_OF_ORDER_VERSIONED_UPDATE.code)))
    return events(frame, etype=etype, f1=F.lit(0), f2=F.lit(b""), f3=F.lit(0), ts=out_ts, n_null=new_null,
                  n_l=n_l, n_r=n_r, o_kind=o_kind, o_l=o_l, o_r=o_r, text=text)
