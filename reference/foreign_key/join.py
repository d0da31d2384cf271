"""The foreign-key join's two sub-topologies, wired per partition (``KTableImpl#doJoinOnForeignKey``).

Kafka builds two sub-topologies, hence two tasks per partition number p:

- the LHS task (left topic partition p, response topic partition p): the left table source with
  old values, :mod:`~reference.foreign_key.subscription_send` -> subscription topic; and
  response topic -> :mod:`~reference.foreign_key.response_join` -> result table -> output
  partition p;
- the foreign task (right topic partition p, subscription topic partition p): subscription topic
  -> :mod:`~reference.foreign_key.subscription_receive` (the subscription store) ->
  :mod:`~reference.foreign_key.subscription_join` -> response topic; and the right table source ->
  :mod:`~reference.foreign_key.foreign_table_join` (prefix scan) -> response topic.

Their state is disjoint, so kssim keeps both in one object per partition number
(:class:`ForeignKeyJoinTask`), which dispatches on the topic; the internal topics are routed
(:mod:`~reference.foreign_key.routing`) and delivered by the runtime (``ctx.send``), in
``TopologyTestDriver``'s order (``synchronous``) or a seeded interleaving (``interleaved``). The
left topic's partition count is the response topic's, the right topic's the subscription
topic's.
"""
from __future__ import annotations

from kssim.reference.foreign_key.foreign_table_join import ForeignTableJoin
from kssim.reference.foreign_key.instructions import RESPONSE_TOPIC, SUBSCRIPTION_TOPIC
from kssim.reference.foreign_key.response_join import ResponseJoin
from kssim.reference.foreign_key.routing import Routing
from kssim.reference.foreign_key.subscription_join import SubscriptionJoin
from kssim.reference.foreign_key.subscription_receive import SubscriptionReceive
from kssim.reference.foreign_key.subscription_send import SubscriptionSend
from kssim.reference.foreign_key.value_hash import HashCache
from kssim.reference.joins.table_source import TableSource, make_store
from kssim.reference.model.codes import DropReason
from kssim.reference.model.keys import key_identity
from kssim.reference.runtime.explain import Why, show
from kssim.reference.stores.kv_store import KeyValueStore
from kssim.reference.stores.subscription_store import SubscriptionStore


def build(spec, profile, config, instance_state):
    return ForeignKeyJoinTask(spec, profile, config)


def _getter(store):
    """The table's value getter: the newest row ``(value, ts, input index)`` of a key identity."""
    return store.get if store.versioned else store.rows.get


class ForeignKeyJoinTask:
    """The LHS task and the foreign task of one partition number."""

    __slots__ = ("left_source", "send", "drop_not_latest_left", "receive", "foreign", "response")

    def __init__(self, spec, profile, config):
        emit_on_change = profile.ktable_emit_on_change
        routing = Routing(config.partition_count("left"), config.partition_count("right"),
                          profile.fk_response_to_primary_partition)
        hashes = HashCache()
        # LHS task: doJoinOnForeignKey enables old values (and so materializes) the left table
        self.left_source = TableSource("left", make_store(spec.left_table), True, emit_on_change=emit_on_change)
        self.drop_not_latest_left = profile.versioned_tables and spec.left_table.versioned
        self.send = SubscriptionSend(spec, profile, routing, hashes)
        result_source = None
        if spec.send_old_values:
            # the result KTableSource materializes itself to send old values
            result_source = TableSource("result", KeyValueStore(), True, emit_on_change=emit_on_change)
        self.response = ResponseJoin(spec, _getter(self.left_source.store), hashes, result_source)
        # foreign task: the right table (old values on, unused: no old == new short-circuit)
        right_source = TableSource("right", make_store(spec.right_table), False, emit_on_change=emit_on_change)
        store = SubscriptionStore()
        self.receive = SubscriptionReceive(profile, store, SubscriptionJoin(_getter(right_source.store), routing))
        self.foreign = ForeignTableJoin(right_source, store, routing,
                                        profile.versioned_tables and spec.right_table.versioned)

    def process(self, topic, key, value, ts, ctx):
        if topic == RESPONSE_TOPIC:
            self.response.process(key, value, ts, ctx)
        elif topic == SUBSCRIPTION_TOPIC:
            self.receive.process(key, value, ts, ctx)
        elif topic == "left":
            self._left(key, value, ts, ctx)
        else:
            self.foreign.process(key, value, ts, ctx)

    def _left(self, key, value, ts, ctx):
        key_id = key if key.__class__ is str and key.isascii() else key_identity(key)
        change = self.left_source.update(key, key_id, value, ts, ctx)
        if change is None:
            return  # dropped by the table source (reason recorded there)
        if self.drop_not_latest_left and not change[1]:
            why = None
            if ctx.explain:
                why = Why("out_of_order_versioned_update",
                          f"left table {show(key)}:{show(value)}@{ts} is not the newest version of its key (newest "
                          f"ts {self.left_source.store.newest_ts(key_id)}): stored as history, no subscription sent "
                          "('Skipping out-of-order record from versioned table while performing table-table join')",
                          ref="SubscriptionSendProcessorSupplier, KIP-914")
            ctx.drop(DropReason.OUT_OF_ORDER_VERSIONED_UPDATE, why)
            return
        self.send.process(key, key_id, value, change[0], ts, ctx)
