"""RHS side, stage 4: ``ForeignTableJoinProcessorSupplier`` (before 3.5
``ForeignJoinSubscriptionProcessorSupplier``): an update of the foreign (right) table answers
every subscriber of its key.

The update first goes through the right table's source (:mod:`reference.joins.table_source`:
null keys dropped, versioned puts older than the history retention dropped, emit-on-change in
2.6.0-2.7.0). Then:
- [``versioned_tables``, 3.5, KIP-914] a versioned right table's update that is not the latest
  version of its key is dropped (OUT_OF_ORDER_VERSIONED_UPDATE);
- otherwise, for **every** change (a tombstone, a repeated value, a delete of an absent key:
  there is no old == new short-circuit), the subscription store is prefix-scanned over the key
  and each subscriber, in ascending serialized-PK order, gets a response (its stored hash, the
  new value or null) at **the right record's ts**, routed by its stored ``primary_partition``
  (:mod:`reference.foreign_key.routing`).
"""
from __future__ import annotations

from kssim.reference.foreign_key.instructions import RESPONSE_TOPIC, Response
from kssim.reference.model.codes import DropReason
from kssim.reference.model.keys import key_identity
from kssim.reference.runtime.explain import Stored, Why, show


class ForeignTableJoin:
    """The right table's source and the prefix-scanning join processor of one foreign-table task."""

    __slots__ = ("source", "store", "routing", "drop_not_latest")

    def __init__(self, source, store, routing, drop_not_latest: bool):
        self.source = source
        self.store = store
        self.routing = routing
        self.drop_not_latest = drop_not_latest

    def process(self, key, value, ts, ctx):
        key_id = key if key.__class__ is str and key.isascii() else key_identity(key)
        change = self.source.update(key, key_id, value, ts, ctx)
        if change is None:
            return  # dropped by the table source (reason recorded there)
        if self.drop_not_latest and not change[1]:
            self._drop_out_of_order(key, key_id, value, ts, ctx)
            return
        routing = self.routing
        explain = ctx.explain
        for _, (sub, sub_ts) in self.store.prefix_scan(key):
            partition = routing.response_partition(sub.pk, sub.primary_partition)
            trace = None
            if explain:
                registered = sub.trace[0][0] if sub.trace is not None else f"subscription of {show(sub.pk)}@{sub_ts}"
                trace = ([f"right {show(key)}:{show(value)}@{ts} (input {ctx.input_index}): prefix scan of FK "
                          f"{show(key)} in foreign task {ctx.task_id}'s subscription store found {show(sub.pk)} "
                          f"(registered when {registered})",
                          f"response {show(value)} at the right record's ts {ts} to "
                          f"{routing.describe_response(partition)}"],
                         [Stored("right", key, value, ts, ctx.input_index)])
            ctx.send(RESPONSE_TOPIC, sub.pk, Response(sub.hash, value, sub.pk_id, trace), ts, partition)

    def _drop_out_of_order(self, key, key_id, value, ts, ctx):
        why = None
        if ctx.explain:
            newest = self.source.store.newest_ts(key_id)
            why = Why("out_of_order_versioned_update",
                      f"right table {show(key)}:{show(value)}@{ts} is not the newest version of its key (newest ts "
                      f"{newest}): stored as history, no prefix scan ('Skipping out-of-order record from versioned "
                      "table while performing table-table join')", ref="ForeignTableJoinProcessorSupplier, KIP-914")
        ctx.drop(DropReason.OUT_OF_ORDER_VERSIONED_UPDATE, why)
