"""The compile step: a topology graph and a release become a :class:`Plan`, what Kafka's
``InternalStreamsBuilder`` builds from its ``GraphNode``s, which every engine reads.

The plan says, per node:

- its **children** in forwarding order (the DSL call order, as Kafka's ``ProcessorNode`` keeps
  them), each edge with the port it feeds (0: the node's upstream, 1: a binary operation's other
  side) and, where Kafka inserts one, the **repartition topic** the records cross on the way
  (``KStreamImpl#createRepartitionedSource``): an aggregation of a grouped stream whose key may
  have changed (``repartitionRequired`` after ``select_key``, ``map``, ``KStream#groupBy``, through
  ``filter``/``map_values``/``flat_map_values``/``merge``), every aggregation of a grouped table
  (``KTable#groupBy``), a stream side of a join whose key may have changed, ``to_table`` of such a
  stream, and every ``repartition``; two joins of one re-keyed stream share its topic
  (``KStreamImpl#repartitionForJoin`` keeps the first repartition node);
- for tables, whether it **sends old values** (``KTableImpl#enableSendingOldValues``, asked by
  ``KTable#groupBy``, ``suppress``, left/outer and foreign-key joins, and passed upstream through
  ``filter``, ``map_values``, ``suppress`` and table-table joins), whether it is **materialized**
  (a store of its own: a source asked for old values or read through a value getter, an
  aggregation, ``to_table``), and whether it descends from a **versioned** table;
- the operator spec of format 1 that a stateful node runs on (joins, windowed aggregations), so
  that one set of checks (:func:`reference.model.topology.check_topology`) covers both forms.

:func:`compile_graph` also makes the release checks of the spec's Errors section: an operation
the release lacks is an error naming the node and the release.
"""
from __future__ import annotations

from typing import Optional

import attrs

from reference.model.errors import TopologyError
from reference.model.graph import functions as fn
from reference.model.graph.nodes import (AggregateOp, AggregationType, FilterOp, FlatMapValuesOp, GraphNode,
                                         GraphTopology, GroupByKeyOp, GroupByOp, JoinOp, JoinType, Kind, MapOp,
                                         MapValuesOp, MergeOp, RepartitionOp, SelectKeyOp, StreamSourceOp, SuppressOp,
                                         TableSourceOp, ToOp, ToStreamOp, ToTableOp, WindowedByOp, WindowType)
from reference.model.topology import (SessionAggregateSpec, SlidingAggregateSpec, StreamStreamJoinSpec,
                                      WindowAggregateSpec, check_topology)


@attrs.frozen
class Edge:
    """A node's record stream into ``child`` (at ``port``), through ``repartition`` (an internal
    topic's name) when Kafka inserts one."""

    child: int
    port: int = 0
    repartition: Optional[str] = None


@attrs.frozen
class NodePlan:
    node: GraphNode
    children: tuple = ()
    repartition_required: bool = False  # streams: the key may have changed since the last partitioning
    send_old_values: bool = False       # tables: forwards Change(new, old) with old values
    materialized: bool = False          # tables: has a store of its own
    versioned: bool = False             # tables: descends from a versioned table (versioned semantics)
    spec: object = None                 # the format-1 operator spec of a join or windowed aggregation


@attrs.frozen
class Plan:
    graph: GraphTopology
    nodes: tuple
    internal_topics: tuple  # repartition topics, in the order Kafka creates them

    def source_of(self, topic: str) -> Optional[int]:
        for n in self.graph.nodes:
            if isinstance(n.op, (StreamSourceOp, TableSourceOp)) and n.op.topic == topic:
                return n.index
        return None


def compile_graph(graph: GraphTopology, profile, store: str = "rocksdb") -> Plan:
    """The plan of ``graph`` at ``profile``'s release (``store``: ``config.store``); a
    :class:`TopologyError` naming the node and field for what the release or Kafka refuses."""
    nodes = graph.nodes
    for node in nodes:
        _check_release(node, nodes, profile)
    required = _repartition_required(nodes)
    edges, internal = _edges(nodes, required)
    old = _old_values(nodes, profile)
    getters = _value_getters_needed(nodes)
    versioned = _versioned_lineage(nodes)
    plans = []
    for node in nodes:
        i = node.index
        spec = _operator_spec(node, nodes)
        if spec is not None:
            _check_spec(spec, node, profile, store)
        plans.append(NodePlan(
            node=node, children=tuple(edges[i]), repartition_required=required[i], send_old_values=old[i],
            materialized=_materialized(node, old[i], getters[i]), versioned=versioned[i], spec=spec))
    _check_join_grace(nodes)
    return Plan(graph=graph, nodes=tuple(plans), internal_topics=tuple(internal))


# --- repartitioning -------------------------------------------------------------------------------

def _repartition_required(nodes) -> list:
    """``KStreamImpl#repartitionRequired`` per node (True: the key may have changed)."""
    required = [False] * len(nodes)
    for node in nodes:
        op = node.op
        if isinstance(op, (SelectKeyOp, MapOp)) or (isinstance(op, GroupByOp) and node.kind is Kind.GROUPED_STREAM):
            required[node.index] = True
        elif isinstance(op, MergeOp):
            required[node.index] = required[node.upstream] or required[op.other]
        elif isinstance(op, (FilterOp, MapValuesOp, FlatMapValuesOp, GroupByKeyOp, WindowedByOp)) \
                and node.kind in (Kind.STREAM, Kind.GROUPED_STREAM, Kind.WINDOWED_STREAM):
            required[node.index] = required[node.upstream]
    return required


def _needs_repartition(node: GraphNode, port: int, up: GraphNode, required) -> bool:
    op = node.op
    if isinstance(op, RepartitionOp):
        return True
    if isinstance(op, AggregateOp):
        return up.kind is Kind.GROUPED_TABLE or required[up.index]
    if isinstance(op, ToTableOp):
        return required[up.index]
    if isinstance(op, JoinOp) and up.kind is Kind.STREAM:
        return required[up.index]
    return False


def _edges(nodes, required):
    edges = [[] for _ in nodes]
    internal = []
    shared = {}  # (stream node, join) -> topic: repartitionForJoin keeps the first repartition node
    for node in nodes:
        for port, up_index in enumerate(node.inputs):
            if up_index is None:
                continue
            up = nodes[up_index]
            topic = None
            if _needs_repartition(node, port, up, required):
                if isinstance(node.op, JoinOp) and up_index in shared:
                    topic = shared[up_index]
                else:
                    topic = f"graph[{node.index}]{'.other' if port else ''}-repartition"
                    internal.append(topic)
                    if isinstance(node.op, JoinOp):
                        shared[up_index] = topic
            edges[up_index].append(Edge(node.index, port, topic))
    return edges, internal


# --- old values, value getters, materialization ---------------------------------------------------

def _old_values(nodes, profile) -> list:
    """Which table nodes send old values: asked for by their consumers, passed upstream through the
    operations whose own old value is computed from their parent's (``enableSendingOldValues``)."""
    old = [False] * len(nodes)

    def enable(index):
        if old[index]:
            return
        old[index] = True
        node = nodes[index]
        op = node.op
        if isinstance(op, (FilterOp, MapValuesOp, SuppressOp)) and node.kind is Kind.TABLE:
            enable(node.upstream)
        elif isinstance(op, JoinOp) and node.kind is Kind.TABLE and op.foreign_key is None:
            enable(node.upstream)
            enable(op.other)

    for node in reversed(nodes):
        op = node.op
        if isinstance(op, GroupByOp) and node.kind is Kind.GROUPED_TABLE:
            enable(node.upstream)
        elif isinstance(op, SuppressOp) and profile.suppress_enables_old_values:
            enable(node.upstream)
        elif isinstance(op, JoinOp) and node.kind is Kind.TABLE:
            if op.foreign_key is not None:
                enable(node.upstream)
            else:
                if op.type in (JoinType.LEFT, JoinType.OUTER):
                    enable(node.upstream)
                if op.type is JoinType.OUTER:
                    enable(op.other)
    return old


def _value_getters_needed(nodes) -> list:
    """Which table nodes are read through a value getter (joins look up the other side's value)."""
    needed = [False] * len(nodes)

    def need(index):
        needed[index] = True
        node = nodes[index]
        if isinstance(node.op, (FilterOp, MapValuesOp)) and node.kind is Kind.TABLE:
            need(node.upstream)  # their getter applies the predicate / mapper to the parent's

    for node in nodes:
        op = node.op
        if isinstance(op, JoinOp):
            if nodes[op.other].kind is Kind.TABLE:
                need(op.other)
            if node.kind is Kind.TABLE:
                need(node.upstream)
    return needed


def _materialized(node: GraphNode, sends_old: bool, getter_needed: bool) -> bool:
    op = node.op
    if isinstance(op, TableSourceOp):
        return op.versioned or sends_old or getter_needed
    return isinstance(op, (AggregateOp, ToTableOp))


def _versioned_lineage(nodes) -> list:
    versioned = [False] * len(nodes)
    for node in nodes:
        op = node.op
        if isinstance(op, TableSourceOp):
            versioned[node.index] = op.versioned
        elif isinstance(op, (FilterOp, MapValuesOp)) and node.kind is Kind.TABLE:
            versioned[node.index] = versioned[node.upstream]
    return versioned


# --- operator specs and release checks -------------------------------------------------------------

def _operator_spec(node: GraphNode, nodes):
    """The format-1 spec a join or windowed aggregation runs on (None for other nodes)."""
    op = node.op
    if isinstance(op, JoinOp) and node.kind is Kind.STREAM and nodes[op.other].kind is Kind.STREAM:
        window = op.window
        if op.window_api == "time_difference" and window.grace_ms is None:
            window = attrs.evolve(window, grace_ms=0)  # ofTimeDifferenceWithNoGrace
        return StreamStreamJoinSpec(join=op.type.format1, window=window, window_api=op.window_api,
                                    joiner=fn.graph_joiner(op.joiner, op.joiner_separator))
    if isinstance(op, AggregateOp) and nodes[node.upstream].kind is Kind.WINDOWED_STREAM:
        w = nodes[node.upstream].op
        aggregation = aggregation_of_node(op)
        emit = w.emit
        if w.window is WindowType.TIME:
            return WindowAggregateSpec(window=w.time_window(), aggregation=aggregation, emit=emit)
        if w.window is WindowType.SLIDING:
            return SlidingAggregateSpec(time_difference_ms=w.time_difference_ms, grace_ms=w.grace_ms,
                                        aggregation=aggregation, emit=emit)
        return SessionAggregateSpec(gap_ms=w.gap_ms, grace_ms=w.grace_ms, aggregation=aggregation, emit=emit)
    return None


def aggregation_of_node(op: AggregateOp):
    """The :class:`reference.model.aggregations.Aggregation` an aggregation node applies."""
    if op.type is AggregationType.COUNT:
        return fn.graph_count()
    if op.type is AggregationType.REDUCE:
        return fn.graph_reducer(op.function)
    return fn.graph_aggregation(op.function)


def _check_spec(spec, node: GraphNode, profile, store: str) -> None:
    """Format 1's checks of the operator spec, the field renamed to the node's."""
    try:
        check_topology(spec, profile, store)
    except TopologyError as exc:
        raise TopologyError(_node_field(node, exc.field), exc.message) from None


def _node_field(node: GraphNode, field: str) -> str:
    rest = field[len("topology"):] if field.startswith("topology") else "." + field
    if rest in (".operator", ""):
        return f"{node.where}.{node.name}"
    if isinstance(node.op, AggregateOp):
        # a windowed aggregation's window fields are the windowed_by node's
        return f"topology.graph[{node.upstream}].windowed_by{rest}"
    return f"{node.where}.{node.name}{rest}"


#: operation -> (profile rule that must hold, what it is, since)
_RELEASE_OPERATIONS = {
    ToTableOp: ("kstream_to_table", "KStream#toTable (KIP-523)"),
    RepartitionOp: ("kstream_repartition", "KStream#repartition (KIP-221)"),
    SuppressOp: ("suppress_operator", "KTable#suppress (KIP-328)"),
}


def _check_release(node: GraphNode, nodes, profile) -> None:
    op = node.op
    where = f"{node.where}.{node.name}"
    needed = _RELEASE_OPERATIONS.get(type(op))
    if needed is not None and not getattr(profile, needed[0]):
        raise TopologyError(where, f"{needed[1]} does not exist in Kafka {profile.release}")
    if isinstance(op, TableSourceOp) and op.versioned and not profile.versioned_tables:
        raise TopologyError(f"{node.where}.materialized.versioned",
                            f"versioned tables (KIP-889) do not exist before Kafka 3.5 (modelled release {profile.release})")
    if isinstance(op, JoinOp) and op.foreign_key is not None and not profile.foreign_key_joins:
        raise TopologyError(f"{where}.foreign_key", "foreign-key table joins (KIP-213) do not exist before Kafka "
                                                    f"2.4 (modelled release {profile.release})")
    if isinstance(op, JoinOp) and op.grace_ms is not None and not profile.stream_table_grace:
        raise TopologyError(f"{where}.grace_ms", "a stream-table join's grace period (KIP-923) does not exist "
                                                 f"before Kafka 3.6 (modelled release {profile.release})")


def _check_join_grace(nodes) -> None:
    """``Joined#withGracePeriod`` needs a versioned table whose history covers the grace (Kafka:
    'History retention must be at least grace period')."""
    for node in nodes:
        op = node.op
        if not (isinstance(op, JoinOp) and op.grace_ms is not None):
            continue
        where = f"{node.where}.{node.name}.grace_ms"
        if op.grace_ms < 0:
            raise TopologyError(where, f"the grace period must not be negative, got {op.grace_ms}")
        source = _table_source_of(nodes, op.other)
        if source is None or not source.op.versioned:
            raise TopologyError(where, "a stream-table join with a grace period needs a versioned table (Kafka: "
                                       "'KTable must be versioned to use a grace period in a stream table join')")
        if source.op.history_retention_ms < op.grace_ms:
            raise TopologyError(where, f"the versioned table's history retention {source.op.history_retention_ms} "
                                       f"ms is below the grace period {op.grace_ms} ms (Kafka: 'History retention "
                                       "must be at least grace period')")


def _table_source_of(nodes, index) -> Optional[GraphNode]:
    node = nodes[index]
    while not isinstance(node.op, TableSourceOp):
        if not isinstance(node.op, (FilterOp, MapValuesOp)):
            return None
        node = nodes[node.upstream]
    return node
