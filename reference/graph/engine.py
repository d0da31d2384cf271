"""A topology graph's task: the processors of every plan node, wired as the plan says, and
``TopologyTestDriver``'s processing loop (``../shared/spec/topology-graphs.md``, Processing model):

1. the input record goes to its topic's source processor and is processed to completion,
   depth-first; what processors write to internal topics (repartition, foreign-key subscription
   and response topics) is held back;
2. the driver commits (record caches flush) and then appends the held records, in the order they
   were written, to their topics' queues (:mod:`reference.graph.queues`);
3. while a queue holds records, the task takes the head of the queue the heap gives (smallest head
   timestamp, Java's heap order on ties), processes it the same way, commits, appends.

The task's stream time is the largest timestamp it took. Keys are serialized by the one JSON serde
of graphs (:func:`reference.model.keys.json_key_serde`) while the task runs, which orders window,
session, suppress and subscription stores as Kafka's JSON bytes do.
"""
from __future__ import annotations

from functools import partial

import attrs

from kssim.reference.graph import aggregations, joins, stream_nodes as sn, table_nodes as tn
from kssim.reference.graph.cache import RecordCache
from kssim.reference.graph.queues import InternalQueues
from kssim.reference.model import keys
from kssim.reference.model.engines import GRAPH_TRAFFIC
from kssim.reference.model.pending import pending_of
from kssim.reference.model.graph import expressions as ex
from kssim.reference.model.graph import functions as fn
from kssim.reference.model.graph.nodes import (AggregateOp, FilterOp, FlatMapValuesOp, GroupByKeyOp, GroupByOp, JoinOp,
                                         Kind, MapOp, MapValuesOp, MergeOp, RepartitionOp, SelectKeyOp,
                                         StreamSourceOp, SuppressOp, TableSourceOp, ToOp, ToStreamOp, ToTableOp,
                                         WindowedByOp)
from kssim.reference.model.graph.plan import Plan, aggregation_of_node, compile_graph, windowed_spec_above
from kssim.reference.model.suppression import suppression_plan
from kssim.reference.model.topology import StreamTableJoinSpec, TableSpec, TableTableJoinSpec
from kssim.reference.joins.table_source import make_store
from kssim.reference.runtime.engine import TaskContext
from kssim.reference.runtime.operators import builder_for
from kssim.reference.suppress.processor import KTableSuppressProcessor


class GraphContext(TaskContext):
    """The task context of a graph: :class:`TaskContext` plus the internal-topic writes held until
    the record is done, the topic of the record being processed and the task's stream time."""

    __slots__ = ("held", "current_topic", "stream_time")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.held: list = []
        self.current_topic = ""
        self.stream_time = -1

    def send_internal(self, topic, key, value, ts, why=None):
        self.held.append((topic, key, value, ts, why))


def build(topology, profile, config, instance_state) -> "GraphTask":
    return GraphTask(compile_graph(topology, profile, config.store), profile, config)


class GraphTask:
    """Every sub-topology of the graph in one task (``TopologyTestDriver`` runs one)."""

    __slots__ = ("plan", "profile", "config", "ctx", "processors", "receivers", "queues", "cache")

    def __init__(self, plan: Plan, profile, config):
        self.plan = plan
        self.profile = profile
        self.config = config
        self.ctx = None
        self.processors: list = []
        self.receivers: dict = {}  # topic (source or internal) -> the process methods it feeds
        self.queues = InternalQueues()
        self.cache = RecordCache(profile.record_cache_skips_null_changes) if config.caching else None

    def process(self, topic, key, value, ts, ctx):
        if self.ctx is None:
            self._build(ctx)
        previous = keys.set_json_key_serde(True)
        try:
            traffic = GRAPH_TRAFFIC.get()  # kssim timeline's record of what the task takes, or None
            take = self._take
            take(topic, key, value, ts, None, traffic)
            queues = self.queues
            while queues:
                topic, key, value, ts, why = queues.take()
                take(topic, key, value, ts, why, traffic)
        finally:
            keys.set_json_key_serde(previous)

    def pending(self, task: int) -> tuple:
        """What the graph's nodes hold, node by node (each item names its node, ``graph[3] join``).
        A task that never took a record has built no processors and holds nothing. The internal
        queues are drained after every input, so no repartitioned or FK record waits in them."""
        held = []
        for processor in self.processors:
            held.extend(pending_of(processor, task))
        return tuple(held)

    def _take(self, topic, key, value, ts, why, traffic=None):
        """One record taken by the task: processed depth-first, then the driver's commit."""
        ctx = self.ctx
        if ts > ctx.stream_time:
            ctx.stream_time = ts
        ctx.current_topic = topic
        if traffic is not None:
            traffic.append((topic, key, value, ts, ctx.input_index, ctx.stream_time))
        for receiver in self.receivers[topic]:
            receiver(key, value, ts, why)
        if self.cache is not None:
            self.cache.commit()
        if ctx.held:
            self._commit()

    def _commit(self):
        """The driver's capture after a commit: what was written to internal topics joins their queues."""
        ctx = self.ctx
        held, ctx.held = ctx.held, []
        append = self.queues.append
        for record in held:
            append(record)

    # --- building the processors from the plan ---------------------------------------------------
    def _build(self, ctx):
        self.ctx = ctx
        plan = self.plan
        for node_plan in plan.nodes:
            processor = self._processor(node_plan)
            if self.cache is not None and getattr(processor, "cacheable", False):
                processor.cache = self.cache.register(processor, node_plan.send_old_values)
            self.processors.append(processor)
        for node_plan in plan.nodes:
            self._wire(node_plan)

    def _receive(self, topic, method):
        self.receivers.setdefault(topic, []).append(method)

    def _wire(self, node_plan):
        parent = self.processors[node_plan.node.index]
        sinks: dict = {}
        for edge in node_plan.children:
            child = self.processors[edge.child]
            target = child.process if edge.port == 0 else child.process_other
            if edge.repartition is None:
                parent.children.append(target)
                continue
            if edge.repartition not in sinks:
                sink = sn.RepartitionSink(edge.repartition, self.ctx, edge.repartition, edge.drops_null_keys,
                                          self.profile.repartition_keeps_null_keys_for_relaxed_joins)
                sinks[edge.repartition] = sink
                parent.children.append(sink.process)
            self._receive(edge.repartition, target)

    def _processor(self, node_plan):
        node = node_plan.node
        op = node.op
        ctx, profile = self.ctx, self.profile
        name = f"graph[{node.index}] {node.name}"
        up = None if node.upstream is None else self.processors[node.upstream]
        if isinstance(op, StreamSourceOp):
            p = sn.StreamSource(name, ctx)
            self._receive(op.topic, p.process)
            return p
        if isinstance(op, TableSourceOp):
            p = self._table_source(name, node_plan, TableSpec(op.versioned, op.history_retention_ms))
            self._receive(op.topic, p.process)
            return p
        if isinstance(op, ToTableOp):
            return self._table_source(name, node_plan, TableSpec())
        table = node.kind is Kind.TABLE
        if isinstance(op, FilterOp):
            predicate = ex.compile_pred(op.predicate)
            if table:
                skip = node_plan.send_old_values and not node_plan.versioned and profile.ktable_filter_skips_null_changes
                return tn.TableFilter(name, ctx, predicate, op.negate, node_plan.send_old_values, skip, up)
            return sn.StreamFilter(name, ctx, predicate, op.negate)
        if isinstance(op, MapValuesOp):
            mapper = ex.compile_expr(op.mapper)
            if table:
                return tn.TableMapValues(name, ctx, mapper, node_plan.send_old_values, up)
            return sn.StreamMapValues(name, ctx, mapper)
        if isinstance(op, SelectKeyOp):
            return sn.SelectKey(name, ctx, ex.compile_expr(op.mapper))
        if isinstance(op, MapOp):
            return sn.StreamMap(name, ctx, ex.compile_expr(op.key), ex.compile_expr(op.value))
        if isinstance(op, FlatMapValuesOp):
            return sn.FlatMapValues(name, ctx, ex.compile_expr(op.mapper))
        if isinstance(op, GroupByOp):
            if node.kind is Kind.GROUPED_TABLE:
                versioned = node_plan.versioned or self.plan.nodes[node.upstream].versioned
                return tn.TableGroupBy(name, ctx, ex.compile_expr(op.key), ex.compile_expr(op.value),
                                       profile.table_group_by_single_record,
                                       profile.versioned_tables and versioned, profile.table_group_by_subtract_first)
            return sn.SelectKey(name, ctx, ex.compile_expr(op.key))
        if isinstance(op, (MergeOp, GroupByKeyOp, WindowedByOp, RepartitionOp)):
            return sn.PassThrough(name, ctx)
        if isinstance(op, ToStreamOp):
            return sn.TableToStream(name, ctx)
        if isinstance(op, ToOp):
            return sn.TopicSink(name, ctx, op.topic)
        if isinstance(op, AggregateOp):
            return self._aggregate(name, node_plan, op)
        if isinstance(op, SuppressOp):
            return tn.Suppress(name, ctx, self._suppress_processor(node_plan, op), up)
        if isinstance(op, JoinOp):
            return self._join(name, node_plan, op, up)
        raise AssertionError(f"no processor for {node.name}")

    def _table_source(self, name, node_plan, table_spec):
        if not node_plan.materialized:
            return tn.PassThroughTableSource(name, self.ctx)
        return tn.MaterializedTableSource(name, self.ctx, make_store(table_spec), node_plan.send_old_values,
                                          self.profile.ktable_emit_on_change)

    def _aggregate(self, name, node_plan, op):
        node = node_plan.node
        upstream_kind = self.plan.graph.nodes[node.upstream].kind
        if upstream_kind is Kind.WINDOWED_STREAM:
            spec = attrs.evolve(node_plan.spec, send_old_values=node_plan.send_old_values)
            operator = builder_for(spec.operator)(spec, self.profile, self.config, {})
            return aggregations.WindowedAggregate(name, self.ctx, operator, spec.emit == "on_window_close")
        aggregation = aggregation_of_node(op)
        if upstream_kind is Kind.GROUPED_TABLE:
            if op.subtractor is not None:
                subtract = op.subtractor
            else:
                named = fn.graph_subtractor(op.type.value, op.function)
                subtract = lambda key, aggregate, value: named(aggregate, value)  # noqa: E731 (keyless named)
            return aggregations.TableAggregate(name, self.ctx, aggregation, subtract, node_plan.send_old_values,
                                               self.profile)
        return aggregations.StreamAggregate(name, self.ctx, aggregation, node_plan.send_old_values, self.profile)

    def _suppress_processor(self, node_plan, op):
        spec = attrs.evolve(windowed_spec_above(self.plan, node_plan.node.upstream) or _PLAIN_KEYS, suppress=op.spec)
        plan = suppression_plan(spec, self.profile)
        return KTableSuppressProcessor(plan, report_old_values=node_plan.send_old_values)

    def _join(self, name, node_plan, op, left):
        node = node_plan.node
        nodes = self.plan.nodes
        right = self.processors[op.other]
        right_kind = nodes[op.other].node.kind
        joiner = fn.graph_joiner(op.joiner, op.joiner_separator)
        ctx, profile = self.ctx, self.profile
        if node.kind is Kind.STREAM and right_kind is Kind.STREAM:
            return joins.StreamStreamJoin(name, ctx, node_plan.spec, profile, self.config)
        if node.kind is Kind.STREAM:
            spec = StreamTableJoinSpec(join=op.type.format1, grace_ms=op.grace_ms, joiner=joiner)
            return joins.StreamTableJoin(name, ctx, spec, profile, right)
        left_versioned, right_versioned = nodes[node.upstream].versioned, nodes[op.other].versioned
        if op.foreign_key is not None:
            join = joins.ForeignKeyJoin(name, ctx, op.type.format1, joiner, ex.compile_expr(op.foreign_key), left,
                                        right, profile, node_plan.send_old_values, left_versioned, right_versioned)
            for internal, topic in join.topics.items():
                self._receive(topic, partial(join.receive_internal, internal))
            return join
        return joins.TableTableJoin(name, ctx, op.type.format1, joiner, left, right, profile,
                                    node_plan.send_old_values, left_versioned, right_versioned)


#: a stand-in operator spec for suppress on plain keys (``until: time_limit``): plain key bytes
_PLAIN_KEYS = TableTableJoinSpec(join="inner")
