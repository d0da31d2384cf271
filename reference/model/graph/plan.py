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
- where the filter before a repartition sink **drops null keys** (``key != null`` before 3.7;
  since KIP-962 unless a left or outer join lies downstream);
- for tables, whether it **sends old values** and whether it is **materialized**, as the DSL
  settles both while the program is built, in call order (:class:`_TableBuild`:
  ``KTableImpl#enableSendingOldValues(forceMaterialization)`` asked by ``KTable#groupBy``,
  ``suppress``, left/outer and foreign-key joins, and, without forcing, by ``KTable#filter``
  since KAFKA-10077; value getters materialize sources), and whether it descends from a
  **versioned** table;
- the repartition topics' names as Kafka generates them (:mod:`reference.model.graph.describe`);
- the operator spec of format 1 that a stateful node runs on (joins, windowed aggregations), so
  that one set of checks (:func:`reference.model.topology.check_topology`) covers both forms.

:func:`compile_graph` also makes the release checks of the spec's Errors section: an operation
the release lacks is an error naming the node and the release.
"""
from __future__ import annotations

from typing import Optional

import attrs

from kssim.reference.model.aggregations import Aggregation
from kssim.reference.model.errors import TopologyError
from kssim.reference.model.graph import functions as fn
from kssim.reference.model.graph.nodes import (AggregateOp, AggregationType, FilterOp, FlatMapValuesOp, GraphNode,
                                         GraphTopology, GroupByKeyOp, GroupByOp, JoinOp, JoinType, Kind, MapOp,
                                         MapValuesOp, MergeOp, RepartitionOp, SelectKeyOp, SuppressOp,
                                         TableSourceOp, ToTableOp, WindowedByOp, WindowType)
from kssim.reference.model.topology import (SessionAggregateSpec, SlidingAggregateSpec, StreamStreamJoinSpec,
                                      WindowAggregateSpec, check_topology)


@attrs.frozen
class Edge:
    """A node's record stream into ``child`` (at ``port``), through ``repartition`` (an internal
    topic's name) when Kafka inserts one; ``drops_null_keys``: the filter Kafka puts before that
    topic's sink drops null-key records."""

    child: int
    port: int = 0
    repartition: Optional[str] = None
    drops_null_keys: bool = False


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
    #: per graph node, the sub-topology (``Topology#describe()``'s number) its processor is in;
    #: None where the built topology could not be modelled (a graph built in code without its JSON)
    subtopologies: Optional[tuple] = None


def compile_graph(graph: GraphTopology, profile, store: str = "rocksdb") -> Plan:
    """The plan of ``graph`` at ``profile``'s release (``store``: ``config.store``); a
    :class:`TopologyError` naming the node and field for what the release or Kafka refuses."""
    nodes = graph.nodes
    for node in nodes:
        _check_release(node, nodes, profile)
    required = _repartition_required(nodes)
    edges, internal = _edges(nodes, required, profile)
    kafka = _kafka_topology(graph)
    edges, internal = _kafka_topic_names(kafka, edges, internal)
    tables = _tables(nodes, profile)
    versioned = _versioned_lineage(nodes)
    plans = []
    for node in nodes:
        i = node.index
        spec = _operator_spec(node, nodes)
        if spec is not None:
            _check_spec(spec, node, profile, store)
        plans.append(NodePlan(
            node=node, children=tuple(edges[i]), repartition_required=required[i], send_old_values=tables.old[i],
            materialized=tables.store[i], versioned=versioned[i], spec=spec))
    _check_join_grace(nodes)
    return Plan(graph=graph, nodes=tuple(plans), internal_topics=tuple(internal),
                subtopologies=_subtopologies(kafka, nodes))


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


def _needs_repartition(node: GraphNode, up: GraphNode, required) -> bool:
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


def _relaxed_join(node: GraphNode, nodes) -> bool:
    """A join labelled ``NULL_KEY_RELAXED_JOIN`` (KIP-962): stream-table left, stream-stream left
    and outer joins, which join null-key records."""
    op = node.op
    if not isinstance(op, JoinOp) or node.kind is not Kind.STREAM:
        return False
    if nodes[op.other].kind is Kind.TABLE:
        return op.type is JoinType.LEFT
    return op.type in (JoinType.LEFT, JoinType.OUTER)


def _relaxed_join_downstream(nodes) -> list:
    """Per node: whether it or a node downstream of it (through any edges) is a relaxed join."""
    children = [[] for _ in nodes]
    for node in nodes:
        for up in node.inputs:
            if up is not None:
                children[up].append(node.index)
    reaches = [False] * len(nodes)
    for node in reversed(nodes):  # children come later in the list
        i = node.index
        reaches[i] = _relaxed_join(node, nodes) or any(reaches[c] for c in children[i])
    return reaches


def _drops_null_keys(node: GraphNode, up: GraphNode, relaxed, profile) -> bool:
    """The filter before a DSL repartition sink: ``key != null`` from 0.10.1; since 3.7 a pass-all
    filter that ``InternalStreamsBuilder#rewriteRepartitionNodes`` turns back into ``key != null``
    unless a relaxed join lies downstream [repartition_keeps_null_keys_for_relaxed_joins, KIP-962].
    A table ``groupBy``'s repartition has no filter (``KTableRepartitionMap`` drops null keys)."""
    if up.kind is Kind.GROUPED_TABLE:
        return False
    if profile.repartition_keeps_null_keys_for_relaxed_joins:
        return not relaxed[node.index]
    return True


def _edges(nodes, required, profile):
    relaxed = _relaxed_join_downstream(nodes)
    edges = [[] for _ in nodes]
    internal = []
    shared = {}  # (stream node, join) -> topic: repartitionForJoin keeps the first repartition node
    for node in nodes:
        for port, up_index in enumerate(node.inputs):
            if up_index is None:
                continue
            up = nodes[up_index]
            topic = None
            if _needs_repartition(node, up, required):
                if isinstance(node.op, JoinOp) and up_index in shared:
                    topic = shared[up_index]
                else:
                    topic = f"graph[{node.index}]{'.other' if port else ''}-repartition"
                    internal.append(topic)
                    if isinstance(node.op, JoinOp):
                        shared[up_index] = topic
            drops = topic is not None and _drops_null_keys(node, up, relaxed, profile)
            edges[up_index].append(Edge(node.index, port, topic, drops))
    # a shared topic has one filter: it keeps null keys if any join behind it needs them
    keeps = {e.repartition for out in edges for e in out if e.repartition is not None and not e.drops_null_keys}
    edges = [[attrs.evolve(e, drops_null_keys=False) if e.repartition in keeps else e for e in out] for out in edges]
    return edges, internal


def _kafka_topology(graph: GraphTopology):
    """The topology Kafka builds for the graph (:mod:`reference.model.graph.describe`), or None
    for a graph without its JSON (built in code) or one the model cannot build: names and
    sub-topology numbers are for people; the semantics do not depend on them."""
    if not graph.source:
        return None
    from kssim.reference.model.graph.describe import build_topology

    try:
        return build_topology(list(graph.source))
    except Exception:  # noqa: BLE001 (see the docstring)
        return None


def _subtopologies(topology, nodes) -> Optional[tuple]:
    if topology is None:
        return None
    numbers = []
    for node in nodes:
        made = topology.made_by(node.index)["nodes"]
        if made:
            numbers.append(topology.subtopology_of(made[-1]))
        else:  # group_by_key, windowed_by: no processor of their own, their upstream's
            numbers.append(None if node.upstream is None else numbers[node.upstream])
    return tuple(numbers)


def _kafka_topic_names(topology, edges, internal):
    """The repartition topics under the names Kafka generates for them (``...-repartition`` after
    the processor or store that made them), so explanations and pictures say what
    ``Topology#describe()`` says; without a modelled topology, kssim's names."""
    if topology is None:
        return edges, internal
    from kssim.reference.model.graph.describe import TopicKind

    made = {}
    for topic in topology.internal_topics.values():
        if topic.kind is TopicKind.REPARTITION and topic.graph_node is not None:
            made.setdefault(topic.graph_node, []).append(topic.name)
    renamed = {}
    for name in internal:
        consumer = int(name[len("graph["):name.index("]")])
        names = made.get(consumer, [])
        if names:
            renamed[name] = names.pop(0)
    if len(set(renamed.values())) != len(renamed):
        return edges, internal
    edges = [[attrs.evolve(e, repartition=renamed.get(e.repartition, e.repartition)) for e in out] for out in edges]
    return edges, [renamed.get(name, name) for name in internal]


# --- old values, value getters, materialization ---------------------------------------------------

class _TableBuild:
    """Old values and materialization as Kafka's DSL settles them while the program is built, in
    call order: ``enableSendingOldValues(force)`` asked of a table answers whether it will send
    old values; a source (or ``to_table``) without a store answers no unless forced, which
    materializes it; ``filter``/``map_values``/``suppress`` ask their parent; aggregations and join
    results always can. A value getter (asked by joins) materializes a source through
    ``filter``/``map_values``/``suppress`` (their getters read the parent's). Before 2.3 a
    suppressed table can give neither (a ClassCastException when the topology is built): the
    node that asks is an error."""

    def __init__(self, nodes, profile=None):
        self.nodes = nodes
        self.profile = profile
        self.asker = None  # the node being built (what a refused request is named after)
        self.old = [False] * len(nodes)
        self.store = [isinstance(n.op, TableSourceOp) and n.op.versioned or isinstance(n.op, AggregateOp)
                      for n in nodes]

    def enable_old_values(self, index: int, force: bool) -> bool:
        node = self.nodes[index]
        op = node.op
        if isinstance(op, (TableSourceOp, ToTableOp)):
            if not self.store[index]:
                if not force:
                    return False
                self.store[index] = True
            self.old[index] = True
            return True
        if isinstance(op, SuppressOp):
            self._suppressed_table_usable(node, "old values")
        if isinstance(op, (FilterOp, MapValuesOp, SuppressOp)):
            if self.enable_old_values(node.upstream, force):
                self.old[index] = True
            return self.old[index]
        if isinstance(op, JoinOp) and op.foreign_key is None:
            self.enable_old_values(node.upstream, force)
            self.enable_old_values(op.other, force)
        self.old[index] = True  # aggregations, join results: they hold (or compute) their old values
        return True

    def need_getter(self, index: int) -> None:
        node = self.nodes[index]
        if isinstance(node.op, (TableSourceOp, ToTableOp)):
            self.store[index] = True
        elif isinstance(node.op, (FilterOp, MapValuesOp)) and node.kind is Kind.TABLE:
            self.need_getter(node.upstream)
        elif isinstance(node.op, SuppressOp):
            # KTableSuppressProcessorSupplier#view reads the parent's getter for keys not buffered
            self._suppressed_table_usable(node, "a value getter")
            self.need_getter(node.upstream)

    def _suppressed_table_usable(self, node: GraphNode, what: str) -> None:
        """Before 2.3 a suppressed KTable's processor supplier is a plain ``ProcessorSupplier``,
        and ``KTableImpl#valueGetterSupplier`` / ``#enableSendingOldValues`` cast it to a
        ``KTableProcessorSupplier``: a ClassCastException while the topology is built
        [``suppress_enables_old_values``, KAFKA-8199]."""
        profile = self.profile
        if profile is None or profile.suppress_enables_old_values:
            return
        asker = self.asker
        where = f"{node.where}.{node.name}" if asker is None else f"{asker.where}.{asker.name}"
        raise TopologyError(where, f"before Kafka 2.3 (KAFKA-8199) a suppressed KTable ({node.where}) cannot "
                                   f"give {what}, which this operation asks of it (ClassCastException when the topology "
                                   f"is built; modelled release {profile.release})")

    def build(self, node: GraphNode, profile) -> None:
        """What constructing ``node`` asks of its upstream tables."""
        self.asker = node
        op = node.op
        if isinstance(op, FilterOp) and node.kind is Kind.TABLE:
            # KTableFilter (KAFKA-10077, 2.7): old values if the parent already has them without
            # materializing anything, to avoid forwarding deletes for rows that never passed
            if profile.ktable_filter_old_values_if_materialized:
                self.old[node.index] = self.enable_old_values(node.upstream, False)
        elif isinstance(op, GroupByOp) and node.kind is Kind.GROUPED_TABLE:
            self.enable_old_values(node.upstream, True)
        elif isinstance(op, SuppressOp) and profile.suppress_enables_old_values:
            self.enable_old_values(node.upstream, True)
        elif isinstance(op, JoinOp):
            if self.nodes[op.other].kind is Kind.TABLE:
                self.need_getter(op.other)
            if node.kind is Kind.TABLE:
                self.need_getter(node.upstream)
                if op.foreign_key is not None or op.type in (JoinType.LEFT, JoinType.OUTER):
                    self.enable_old_values(node.upstream, True)
                if op.foreign_key is None and op.type is JoinType.OUTER:
                    self.enable_old_values(op.other, True)


def _tables(nodes, profile) -> _TableBuild:
    tables = _TableBuild(nodes, profile)
    if not profile.ktable_source_lazy_materialization:
        # before 2.2 (KAFKA-6036) every builder.table() source had a store
        for node in nodes:
            if isinstance(node.op, TableSourceOp):
                tables.store[node.index] = True
    for node in nodes:
        tables.build(node, profile)
    return tables


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
        window, window_api = op.window, op.window_api or "time_difference"
        if window_api == "time_difference" and window.grace_ms is None:
            window = attrs.evolve(window, grace_ms=0)  # ofTimeDifferenceWithNoGrace
        return StreamStreamJoinSpec(join=op.type.format1, window=window, window_api=window_api,
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
    """The :class:`reference.model.aggregations.Aggregation` an aggregation node applies (the
    node's own when the Python API put one there)."""
    if isinstance(op.function, Aggregation):
        return op.function
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


def windowed_spec_above(plan: Plan, index: Optional[int]):
    """The format-1 spec of the windowed aggregation whose windowed keys reach node ``index``
    (following the upstream while keys stay windowed), or None: keys are plain. What a
    ``suppress`` on windowed keys is planned from (its close times, its key bytes)."""
    while index is not None:
        node_plan = plan.nodes[index]
        if node_plan.spec is not None and isinstance(node_plan.node.op, AggregateOp):
            return node_plan.spec
        if node_plan.node.windowed is None:
            return None
        index = node_plan.node.upstream
    return None
