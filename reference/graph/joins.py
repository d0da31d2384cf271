"""Join processors of graphs; each has ``process`` (the left port) and ``process_other`` (the
right port).

- stream x stream: the format-1 operator (:mod:`reference.joins.stream_stream`: both window stores,
  outer-join store, grace, the spurious-result fix), its results forwarded as stream records;
- stream x table: the format-1 ``StreamTableJoin`` (:mod:`reference.joins.stream_table`: null
  rules, KIP-962, versioned as-of lookups, the KIP-923 grace buffer) looking the table up through
  the table node's value getter instead of a store of its own; table updates trigger nothing;
- table x table: ``KTableKTableInnerJoin`` / ``LeftJoin`` / ``RightJoin`` / ``OuterJoin`` (the
  rules of :mod:`reference.joins.table_table`), the other side read through its value getter;
- foreign key: the stages of :mod:`reference.foreign_key` (subscription send, receive, join,
  foreign-table prefix scan, response join), fed the two tables' changes and getters; the
  subscription and response topics are the task's internal queues.
"""
from __future__ import annotations

import attrs

from kssim.reference.foreign_key.foreign_table_join import ForeignTableJoin
from kssim.reference.foreign_key.instructions import RESPONSE_TOPIC, SUBSCRIPTION_TOPIC
from kssim.reference.foreign_key.response_join import ResponseJoin
from kssim.reference.foreign_key.routing import Routing
from kssim.reference.foreign_key.subscription_join import SubscriptionJoin
from kssim.reference.foreign_key.subscription_receive import SubscriptionReceive
from kssim.reference.foreign_key.subscription_send import SubscriptionSend
from kssim.reference.foreign_key.value_hash import HashCache
from kssim.reference.graph.stream_nodes import Change, Processor
from kssim.reference.graph.table_nodes import ForwardingContext, identity_of, key_of
from kssim.reference.joins import stream_stream, stream_table
from kssim.reference.joins.table_source import TableSource
from kssim.reference.joins.table_table import _KIP77_RULES, _LEGACY_RULES
from kssim.reference.model.codes import DropReason
from kssim.reference.model.pending import pending_of, with_node
from kssim.reference.model.records import NO_OLD_VALUE
from kssim.reference.model.topology import KeyExtractorSpec
from kssim.reference.runtime.explain import show
from kssim.reference.stores.kv_store import KeyValueStore
from kssim.reference.stores.subscription_store import SubscriptionStore


class StreamStreamJoin(Processor):
    __slots__ = ("operator", "forwarding")

    def __init__(self, name, ctx, spec, profile, config):
        super().__init__(name, ctx)
        self.operator = stream_stream.build(spec, profile, config, {})
        self.forwarding = ForwardingContext(ctx, self, stream=True)

    def process(self, key, value, ts, why=None):
        self.forwarding.incoming = why
        self.operator.process("left", key, value, ts, self.forwarding)

    def process_other(self, key, value, ts, why=None):
        self.forwarding.incoming = why
        self.operator.process("right", key, value, ts, self.forwarding)

    def pending(self, task: int) -> tuple:
        """The format-1 join's outer-join store, named by this node."""
        return with_node(pending_of(self.operator, task), self.name)


class _GetterRows:
    """A value getter seen as the ``rows`` dict the format-1 stream-table join reads."""

    __slots__ = ("table",)

    def __init__(self, table):
        self.table = table

    def get(self, key_id):
        return self.table.get(key_of(key_id), key_id)


class StreamTableJoin(Processor):
    __slots__ = ("join", "forwarding")

    def __init__(self, name, ctx, spec, profile, table):
        super().__init__(name, ctx)
        join = stream_table.StreamTableJoin(spec, profile)
        join.store = table if getattr(table, "store", None) is not None and table.store.versioned else None
        join.versioned = join.store is not None
        join.rows = _GetterRows(table)
        self.join = join
        self.forwarding = ForwardingContext(ctx, self, stream=True)

    def process(self, key, value, ts, why=None):
        self.forwarding.incoming = why
        self.join.process("left", key, value, ts, self.forwarding)

    def process_other(self, key, change, ts, why=None):
        pass  # the table side only updates its table (upstream); a KTable update triggers nothing

    def pending(self, task: int) -> tuple:
        """The format-1 join's grace buffer (KIP-923), named by this node."""
        return with_node(self.join.pending(task), self.name)


class TableTableJoin(Processor):
    """Both join processors of a table-table join and the result's value getter."""

    __slots__ = ("joiner", "left", "right", "left_rule", "right_rule", "send_old", "ts_max", "join",
                 "left_drops_old_versions", "right_drops_old_versions", "store")

    def __init__(self, name, ctx, join: str, joiner, left, right, profile, send_old: bool,
                 left_versioned: bool, right_versioned: bool):
        super().__init__(name, ctx)
        self.joiner = joiner
        self.left, self.right = left, right
        self.left_rule, self.right_rule = (_KIP77_RULES if profile.kip77_join_semantics else _LEGACY_RULES)[join]
        self.join = join
        self.send_old = send_old
        self.ts_max = profile.output_ts_max
        self.left_drops_old_versions = profile.versioned_tables and left_versioned
        self.right_drops_old_versions = profile.versioned_tables and right_versioned

    def process(self, key, change, ts, why=None):
        self._side(key, change, ts, why, True)

    def process_other(self, key, change, ts, why=None):
        self._side(key, change, ts, why, False)

    def _side(self, key, change, ts, why, is_left):
        if key is None:
            self.drop(DropReason.NULL_KEY, f"null key at ts {ts}: skipped by the table-table join", "KTableKTableJoin")
            return
        if not change.latest and (self.left_drops_old_versions if is_left else self.right_drops_old_versions):
            self.drop(DropReason.OUT_OF_ORDER_VERSIONED_UPDATE, f"{show(key)}@{ts} is not the newest version of its "
                      "key: ignored by the join", "KTableKTableJoin, KIP-914")
            return
        key_id = identity_of(key)
        other = (self.right if is_left else self.left).get(key, key_id)
        rule = self.left_rule if is_left else self.right_rule
        result = rule(self.joiner, is_left, change.new, change.old, other, self.send_old)
        if result is None:
            return
        new_out, old_out, rule_name = result
        out_ts = ts if other is None or not self.ts_max or other[1] <= ts else other[1]
        if self.ctx.explain:
            why = self.hop(why, rule_name, f"joined with {show(None if other is None else other[0])}: "
                                           f"{show(new_out)} at ts {out_ts}")
        self.forward(key, Change(new_out, old_out if self.send_old else None), out_ts, why)

    def get(self, key, key_id):
        """The join result's value getter (``KTableKTable*JoinValueGetter``)."""
        left, right = self.left.get(key, key_id), self.right.get(key, key_id)
        if self.join == "inner" and (left is None or right is None):
            return None
        if self.join == "left" and left is None:
            return None
        if left is None and right is None:
            return None
        value = self.joiner(None if left is None else left[0], None if right is None else right[0])
        ts = max(row[1] for row in (left, right) if row is not None)
        return (value, ts, -1)


@attrs.frozen
class _ForeignKeyJoinSettings:
    """What the format-1 FK stages read of their spec."""

    join: str
    joiner: object
    joiner_separator: str = "+"


class _AppliedUpdate:
    """The foreign-table stage expects a table source to update; in a graph the right table node
    upstream already did, so this hands the stage the change as that node forwarded it. ``store``:
    the versioned store behind the right table (its explanations of out-of-order updates read it)."""

    __slots__ = ("change", "store")

    def __init__(self, store=None):
        self.change = None
        self.store = store

    def update(self, key, key_id, value, ts, ctx):
        return self.change


class ForeignKeyJoin(Processor):
    """``KTable#join(other, foreignKeyExtractor, joiner)``: both sub-topologies' stages in the task."""

    __slots__ = ("send", "response", "receive", "foreign", "applied", "left_drops_old_versions",
                 "topics", "forwarding", "result_store", "cache")

    def __init__(self, name, ctx, join: str, joiner, extractor, left, right, profile, send_old: bool,
                 left_versioned: bool, right_versioned: bool):
        super().__init__(name, ctx)
        settings = _ForeignKeyJoinSettings(join, joiner)
        routing = Routing(1, 1, profile.fk_response_to_primary_partition)
        hashes = HashCache()
        self.send = _subscription_send(join, extractor, profile, routing, hashes)
        self.left_drops_old_versions = profile.versioned_tables and left_versioned
        self.result_store = None
        result_source = None
        if send_old:
            self.result_store = KeyValueStore()
            result_source = TableSource("result", self.result_store, True,
                                        emit_on_change=profile.ktable_emit_on_change)
        self.response = ResponseJoin(settings, lambda pk_id: left.get(key_of(pk_id), pk_id), hashes, result_source)
        store = SubscriptionStore()
        self.receive = SubscriptionReceive(profile, store, SubscriptionJoin(lambda k_id: right.get(key_of(k_id), k_id),
                                                                           routing))
        self.applied = _AppliedUpdate(_store_behind(right))
        self.foreign = ForeignTableJoin(self.applied, store, routing, profile.versioned_tables and right_versioned)
        self.topics = {SUBSCRIPTION_TOPIC: f"{name} subscription", RESPONSE_TOPIC: f"{name} response"}
        self.forwarding = _ForeignKeyContext(ctx, self)
        self.cache = None  # a NamedCache when record caches are on and the result is materialized

    @property
    def cacheable(self) -> bool:
        """The result has a store (old values asked for), which Kafka caches."""
        return self.result_store is not None

    def process(self, key, change, ts, why=None):
        """A change of the left (primary) table."""
        if key is None:
            return
        if self.left_drops_old_versions and not change.latest:
            self.drop(DropReason.OUT_OF_ORDER_VERSIONED_UPDATE, f"{show(key)}@{ts} is not the newest version of its "
                      "key: no subscription sent", "SubscriptionSendProcessorSupplier, KIP-914")
            return
        self.forwarding.incoming = why
        self.send.process(key, identity_of(key), change.new, change.old, ts, self.forwarding)

    def process_other(self, key, change, ts, why=None):
        """A change of the right (foreign) table."""
        if key is None:
            return
        self.applied.change = (change.old, change.latest)
        self.forwarding.incoming = why
        self.foreign.process(key, change.new, ts, self.forwarding)

    def receive_internal(self, topic, key, value, ts, why=None):
        self.forwarding.incoming = None  # the FK stages carry their own trace across the internal topics
        if topic == SUBSCRIPTION_TOPIC:
            self.receive.process(key, value, ts, self.forwarding)
        else:
            self.response.process(key, value, ts, self.forwarding)

    def get(self, key, key_id):
        return None if self.result_store is None else self.result_store.rows.get(key_id)


def _store_behind(table):
    """The store a table node reads through (a filter or map_values reads its parent's), or None."""
    while table is not None:
        store = getattr(table, "store", None)
        if store is not None:
            return store
        table = getattr(table, "parent", None)
    return None


def _subscription_send(join: str, extractor, profile, routing, hashes) -> SubscriptionSend:
    # the format-1 constructor builds its extractor from a KeyExtractorSpec; a graph's extractor is
    # an expression, compiled by the caller, which replaces it
    send = SubscriptionSend(_SendSettings(join), profile, routing, hashes)
    send.fk = extractor
    return send


@attrs.frozen
class _SendSettings:
    join: str
    foreign_key: KeyExtractorSpec = KeyExtractorSpec()


class _ForeignKeyContext(ForwardingContext):
    """The FK stages' context: internal topics are the join's own queues, results are changes."""

    __slots__ = ("_join",)

    def __init__(self, ctx, join: ForeignKeyJoin):
        super().__init__(ctx, join)
        self._join = join

    def send(self, topic, key, value, ts, partition=None):
        self._ctx.send_internal(self._join.topics[topic], key, value, ts, None)

    def emit(self, key, value, ts, why=None, old_value=NO_OLD_VALUE, topic=None):
        cache = self._join.cache
        if cache is None:
            ForwardingContext.emit(self, key, value, ts, why, old_value, topic)
            return
        # the result store's value before this update (its TableSource read it): the cache keeps
        # the first of a generation and forwards the latest result at the commit
        cache.put(key, identity_of(key), value, None if old_value is NO_OLD_VALUE else old_value, ts, self._path(why))
