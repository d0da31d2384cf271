"""The node graph of a topology graph (``../shared/spec/topology-graphs.md``): one small frozen
class per operation, the one table of operations (:data:`OPERATIONS`: argument parser, accepted
input kinds and result kind), and :func:`parse_graph`, which reads ``topology: {"graph": [...]}``
and checks it as the spec's Errors section says, naming the node by index and the field.

A node is a :class:`GraphNode`: its index in the list, optional ``id``, its upstream node index
(None for a source) and its operation (one of the ``*Op`` classes). Kinds (``KStream``,
``KTable``, ...) and windowed keys are resolved here, because the checks need them; what Kafka
builds from the graph (repartition topics, old values, materialization) is
:mod:`reference.model.graph.plan`'s.
"""
from __future__ import annotations

import enum
from typing import Callable, Optional

import attrs

from kssim.reference.model.graph import expressions as ex
from kssim.reference.model.graph import functions as fn
from kssim.reference.model.topology import JoinWindowSpec, SuppressSpec, TimeWindowSpec, _parse_suppress, _Reader


class Kind(enum.Enum):
    """The DSL type a node yields."""

    STREAM = "stream"
    TABLE = "table"
    GROUPED_STREAM = "grouped stream"
    GROUPED_TABLE = "grouped table"
    WINDOWED_STREAM = "windowed stream"
    NONE = "none (a sink)"


class WindowType(enum.Enum):
    TIME = "time"
    SLIDING = "sliding"
    SESSION = "session"


@attrs.frozen
class WindowedKeys:
    """Keys of a table (or stream) that descends from a windowed aggregation: the window type and
    the size that makes a key's ``end`` (``None`` for sessions: their end is the session's)."""

    window: WindowType
    size_ms: Optional[int]


class JoinType(enum.Enum):
    INNER = "join"
    LEFT = "left_join"
    OUTER = "outer_join"

    @property
    def format1(self) -> str:
        """The join type's name in format 1's operator specs."""
        return {"join": "inner", "left_join": "left", "outer_join": "outer"}[self.value]


# --- operations: one frozen class each -----------------------------------------------------------

@attrs.frozen
class StreamSourceOp:
    topic: str


@attrs.frozen
class TableSourceOp:
    topic: str
    versioned: bool = False
    history_retention_ms: Optional[int] = None


@attrs.frozen
class FilterOp:
    predicate: object
    negate: bool = False


@attrs.frozen
class MapValuesOp:
    mapper: object


@attrs.frozen
class SelectKeyOp:
    mapper: object


@attrs.frozen
class MapOp:
    key: object
    value: object


@attrs.frozen
class FlatMapValuesOp:
    mapper: object


@attrs.frozen
class MergeOp:
    other: int  # the index of the other stream's node


@attrs.frozen
class RepartitionOp:
    pass


@attrs.frozen
class ToTableOp:
    pass


@attrs.frozen
class ToStreamOp:
    pass


@attrs.frozen
class GroupByKeyOp:
    pass


@attrs.frozen
class GroupByOp:
    key: object
    value: object  # None on a stream (KStream#groupBy keeps the value)


@attrs.frozen
class WindowedByOp:
    window: WindowType
    size_ms: int = 0            # time windows
    advance_ms: int = 0         # time windows
    time_difference_ms: int = 0  # sliding windows
    gap_ms: int = 0             # session windows
    grace_ms: Optional[int] = None
    emit: str = "on_update"

    def time_window(self) -> TimeWindowSpec:
        return TimeWindowSpec(size_ms=self.size_ms, advance_ms=self.advance_ms, grace_ms=self.grace_ms)


class AggregationType(enum.Enum):
    COUNT = "count"
    REDUCE = "reduce"
    AGGREGATE = "aggregate"


@attrs.frozen
class AggregateOp:
    """``count()``, ``reduce(NAME)`` or ``aggregate(NAME)`` on a grouped or windowed stream or a
    grouped table. A graph built by the Python API may hold an
    :class:`reference.model.aggregations.Aggregation` in ``function`` and, on a grouped table,
    its subtractor ``(key, aggregate, value) -> aggregate`` in ``subtractor`` (None: the named one)."""

    type: AggregationType
    function: object = "count"
    subtractor: object = None


@attrs.frozen
class JoinOp:
    type: JoinType
    other: int
    joiner: str = "pair"
    joiner_separator: str = "+"
    window: Optional[JoinWindowSpec] = None
    window_api: Optional[str] = None  # None: not given (time_difference for a stream-stream join)
    grace_ms: Optional[int] = None
    foreign_key: object = None


@attrs.frozen
class SuppressOp:
    spec: SuppressSpec


@attrs.frozen
class ToOp:
    topic: str


@attrs.frozen
class GraphNode:
    """One node: its place in the list, its optional ``id``, its upstream node (index; None for a
    source), its operation (``name``: the JSON field, e.g. ``left_join``) and the kind it yields."""

    index: int
    name: str
    op: object
    upstream: Optional[int] = None
    id: Optional[str] = None
    kind: Kind = Kind.STREAM
    windowed: Optional[WindowedKeys] = None

    @property
    def where(self) -> str:
        return f"topology.graph[{self.index}]"

    @property
    def inputs(self) -> tuple:
        """Every upstream node index: the upstream, then a binary operation's other side."""
        other = getattr(self.op, "other", None)
        return (self.upstream,) if other is None else (self.upstream, other)


@attrs.frozen
class GraphTopology:
    """A topology graph: nodes in list order (the DSL call order)."""

    nodes: tuple
    #: the graph as written (the JSON list), for what reads the DSL program itself (``kssim describe``)
    source: tuple = attrs.field(default=(), eq=False)
    operator: str = attrs.field(default="graph", init=False)

    def describe(self, release: str = "3.9") -> str:
        """The text Kafka's ``Topology#describe()`` prints for this DSL program
        (:func:`reference.model.graph.describe.describe_graph`)."""
        from kssim.reference.model.graph.describe import describe_graph

        return describe_graph(list(self.source), release)

    @property
    def source_topics(self) -> tuple:
        return tuple(n.op.topic for n in self.nodes if isinstance(n.op, (StreamSourceOp, TableSourceOp)))

    @property
    def sink_topics(self) -> tuple:
        seen = []
        for n in self.nodes:
            if isinstance(n.op, ToOp) and n.op.topic not in seen:
                seen.append(n.op.topic)
        return tuple(seen)

    def node_by_id(self, node_id: str) -> GraphNode:
        return next(n for n in self.nodes if n.id == node_id)


# --- the table of operations ----------------------------------------------------------------------

S, T, GS, GT, WS = Kind.STREAM, Kind.TABLE, Kind.GROUPED_STREAM, Kind.GROUPED_TABLE, Kind.WINDOWED_STREAM


@attrs.frozen
class Operation:
    """One row of the operations table: the JSON field, its parser ``(arg, where, fail, kind) ->
    op``, and the result kind for each input kind it accepts (empty for a source)."""

    name: str
    parse: Callable
    results: dict
    dsl: str
    binary: bool = False


def _empty(arg, where, fail, kind, name):
    if arg != {}:
        raise fail(where, f"{name} takes the empty object {{}}, got {arg!r}")


def _topic(arg, where, fail):
    if not isinstance(arg, str) or not arg:
        raise fail(where, f"must be a topic name (a non-empty string), got {arg!r}")
    return arg


def _parse_stream(arg, where, fail, kind):
    return StreamSourceOp(_topic(arg, where, fail))


def _parse_table(arg, where, fail, kind):
    return TableSourceOp(_topic(arg, where, fail))


def _parse_filter(negate):
    def parse(arg, where, fail, kind):
        return FilterOp(ex.parse_pred(arg, where, fail), negate)
    return parse


def _parse_map_values(arg, where, fail, kind):
    return MapValuesOp(ex.parse_expr(arg, where, fail))


def _parse_select_key(arg, where, fail, kind):
    return SelectKeyOp(ex.parse_expr(arg, where, fail))


def _parse_map(arg, where, fail, kind):
    r = _object_reader(arg, where, fail)
    r.check_known(("key", "value"))
    for field in ("key", "value"):
        if field not in arg:
            raise fail(f"{where}.{field}", "missing required field")
    return MapOp(ex.parse_expr(arg["key"], f"{where}.key", fail), ex.parse_expr(arg["value"], f"{where}.value", fail))


def _parse_flat_map_values(arg, where, fail, kind):
    return FlatMapValuesOp(ex.parse_expr(arg, where, fail))


def _parse_nothing(cls, name):
    def parse(arg, where, fail, kind):
        _empty(arg, where, fail, kind, name)
        return cls()
    return parse


def _parse_group_by(arg, where, fail, kind):
    r = _object_reader(arg, where, fail)
    r.check_known(("key", "value") if kind is T else ("key",))
    if "key" not in arg:
        raise fail(f"{where}.key", "missing required field")
    key = ex.parse_expr(arg["key"], f"{where}.key", fail)
    if kind is not T:
        return GroupByOp(key, None)
    value = ex.parse_expr(arg.get("value", "$value"), f"{where}.value", fail)
    return GroupByOp(key, value)


_WINDOW_FIELDS = {
    "time": ("size_ms", "advance_ms", "grace_ms"),
    "sliding": ("time_difference_ms", "grace_ms"),
    "session": ("gap_ms", "grace_ms"),
}


def _parse_windowed_by(arg, where, fail, kind):
    r = _object_reader(arg, where, fail)
    r.check_known(tuple(_WINDOW_FIELDS) + ("emit",))
    types = [t for t in _WINDOW_FIELDS if t in arg]
    if len(types) != 1:
        raise fail(where, "must hold exactly one of time, sliding, session")
    window_type = types[0]
    w = r.sub(window_type)
    w.check_known(_WINDOW_FIELDS[window_type])
    emit = r.get("emit", str, default="on_update", choices=("on_update", "on_window_close"))
    grace = w.get("grace_ms", int, nullable=True) if window_type != "sliding" else w.get("grace_ms", int)
    if window_type == "time":
        size = w.get("size_ms", int)
        return WindowedByOp(WindowType.TIME, size_ms=size, advance_ms=w.get("advance_ms", int, default=size),
                            grace_ms=grace, emit=emit)
    if window_type == "sliding":
        return WindowedByOp(WindowType.SLIDING, time_difference_ms=w.get("time_difference_ms", int), grace_ms=grace,
                            emit=emit)
    return WindowedByOp(WindowType.SESSION, gap_ms=w.get("gap_ms", int), grace_ms=grace, emit=emit)


def _parse_count(arg, where, fail, kind):
    _empty(arg, where, fail, kind, "count")
    return AggregateOp(AggregationType.COUNT, "count")


def _parse_reduce(arg, where, fail, kind):
    return AggregateOp(AggregationType.REDUCE, fn.parse_function_name(arg, where, fail, fn.REDUCE_NAMES))


def _parse_aggregate(arg, where, fail, kind):
    return AggregateOp(AggregationType.AGGREGATE, fn.parse_function_name(arg, where, fail, fn.AGGREGATE_NAMES))


def _parse_suppress_arg(arg, where, fail, kind):
    # format 1's reader reads a "suppress" field of an object: wrap the argument in one
    holder = _Reader({"suppress": arg}, where.rsplit(".", 1)[0], fail)
    return SuppressOp(_parse_suppress(holder))


def _parse_to(arg, where, fail, kind):
    return ToOp(_topic(arg, where, fail))


def _object_reader(arg, where, fail) -> _Reader:
    if not isinstance(arg, dict):
        raise fail(where, f"must be an object, got {arg!r}")
    return _Reader(arg, where, fail)


def _parse_join(join_type):
    def parse(arg, where, fail, kind):
        r = _object_reader(arg, where, fail)
        r.check_known(("other", "joiner", "joiner_separator", "window", "window_api", "grace_ms", "foreign_key"))
        other = r.get("other", str)
        joiner = r.get("joiner", str, default="pair", choices=fn.JOINER_NAMES)
        separator = r.get("joiner_separator", str, default="+")
        window = None
        if "window" in arg:
            w = r.sub("window")
            w.check_known(("before_ms", "after_ms", "grace_ms"))
            window = JoinWindowSpec(before_ms=w.get("before_ms", int), after_ms=w.get("after_ms", int),
                                    grace_ms=w.get("grace_ms", int, default=None, nullable=True))
        window_api = r.get("window_api", str, default=None, choices=("time_difference", "legacy"))
        grace = r.get("grace_ms", int, default=None, nullable=True)
        foreign_key = None
        if "foreign_key" in arg:
            foreign_key = ex.parse_expr(arg["foreign_key"], f"{where}.foreign_key", fail)
        # the other side's node index is resolved by parse_graph (ids are resolved against earlier nodes)
        return JoinOp(join_type, other, joiner, separator, window, window_api, grace, foreign_key)
    return parse


#: the one table of operations: JSON field -> parser, accepted input kinds -> result kind, DSL
OPERATIONS = {op.name: op for op in (
    Operation("stream", _parse_stream, {}, "builder.stream(topic)"),
    Operation("table", _parse_table, {}, "builder.table(topic)"),
    Operation("filter", _parse_filter(False), {S: S, T: T}, "filter"),
    Operation("filter_not", _parse_filter(True), {S: S, T: T}, "filterNot"),
    Operation("map_values", _parse_map_values, {S: S, T: T}, "mapValues"),
    Operation("select_key", _parse_select_key, {S: S}, "KStream#selectKey"),
    Operation("map", _parse_map, {S: S}, "KStream#map"),
    Operation("flat_map_values", _parse_flat_map_values, {S: S}, "KStream#flatMapValues"),
    Operation("merge", lambda arg, where, fail, kind: arg, {S: S}, "KStream#merge", binary=True),
    Operation("repartition", _parse_nothing(RepartitionOp, "repartition"), {S: S}, "KStream#repartition"),
    Operation("to_table", _parse_nothing(ToTableOp, "to_table"), {S: T}, "KStream#toTable"),
    Operation("to_stream", _parse_nothing(ToStreamOp, "to_stream"), {T: S}, "KTable#toStream"),
    Operation("group_by_key", _parse_nothing(GroupByKeyOp, "group_by_key"), {S: GS}, "KStream#groupByKey"),
    Operation("group_by", _parse_group_by, {S: GS, T: GT}, "groupBy"),
    Operation("windowed_by", _parse_windowed_by, {GS: WS}, "KGroupedStream#windowedBy"),
    Operation("count", _parse_count, {GS: T, GT: T, WS: T}, "count"),
    Operation("reduce", _parse_reduce, {GS: T, GT: T, WS: T}, "reduce"),
    Operation("aggregate", _parse_aggregate, {GS: T, GT: T, WS: T}, "aggregate"),
    Operation("join", _parse_join(JoinType.INNER), {S: S, T: T}, "join", binary=True),
    Operation("left_join", _parse_join(JoinType.LEFT), {S: S, T: T}, "leftJoin", binary=True),
    Operation("outer_join", _parse_join(JoinType.OUTER), {S: S, T: T}, "outerJoin", binary=True),
    Operation("suppress", _parse_suppress_arg, {T: T}, "KTable#suppress"),
    Operation("to", _parse_to, {S: Kind.NONE}, "KStream#to"),
)}

SOURCE_OPERATIONS = ("stream", "table")
_NODE_FIELDS = ("id", "from", "materialized")
#: operations that need plain keys (a windowed key would need another key serde)
_PLAIN_KEYS_ONLY = ("merge", "repartition", "to_table", "group_by_key", "group_by", "join", "left_join",
                    "outer_join")
#: operations after which a windowed key stays windowed
_KEEPS_WINDOWED_KEYS = ("suppress", "to_stream", "filter", "filter_not", "map_values", "flat_map_values")


def parse_graph(obj, fail, where: str = "topology") -> GraphTopology:
    """Read ``topology`` (``{"graph": [...]}``) into a :class:`GraphTopology`; ``fail(where,
    message)`` makes the error, which names the node (``topology.graph[3].group_by.key``)."""
    if not isinstance(obj, dict):
        raise fail(where, "must be an object")
    for name in obj:
        if name != "graph":
            raise fail(f"{where}.{name}", "a graph topology holds only \"graph\" (a list of nodes)")
    items = obj["graph"]
    if not isinstance(items, list) or not items:
        raise fail(f"{where}.graph", "must be a non-empty list of nodes")
    nodes: list = []
    ids: dict = {}
    for index, item in enumerate(items):
        nodes.append(_parse_node(item, index, nodes, ids, fail, f"{where}.graph[{index}]"))
    graph = GraphTopology(tuple(nodes), tuple(items))
    _check_topics(graph, fail, where)
    return graph


def _parse_node(item, index, nodes, ids, fail, where) -> GraphNode:
    if not isinstance(item, dict):
        raise fail(where, f"a node must be an object, got {item!r}")
    names = [name for name in item if name not in _NODE_FIELDS]
    unknown = [name for name in names if name not in OPERATIONS]
    if unknown:
        raise fail(f"{where}.{unknown[0]}", f"unknown field (an operation: {', '.join(OPERATIONS)}; or one of "
                                            f"{', '.join(_NODE_FIELDS)})")
    if len(names) != 1:
        raise fail(where, "a node needs exactly one operation" + (f", got {', '.join(names)}" if names else ""))
    name = names[0]
    operation = OPERATIONS[name]
    node_id = item.get("id")
    if "id" in item:
        if not isinstance(node_id, str) or not node_id:
            raise fail(f"{where}.id", f"must be a non-empty string, got {node_id!r}")
        if node_id in ids:
            raise fail(f"{where}.id", f"id {node_id!r} is already the id of node {ids[node_id]}")
    if "materialized" in item and name != "table":
        raise fail(f"{where}.materialized", "only a table source takes materialized")
    op_where = f"{where}.{name}"
    if name in SOURCE_OPERATIONS:
        if "from" in item:
            raise fail(f"{where}.from", f"a source ({name}) has no upstream node")
        op = operation.parse(item[name], op_where, fail, None)
        if name == "table" and "materialized" in item:
            op = _materialized(op, item["materialized"], f"{where}.materialized", fail)
        kind = S if name == "stream" else T
        node = GraphNode(index, name, op, None, node_id, kind, None)
    else:
        upstream = _upstream(item, index, nodes, ids, fail, where)
        up = nodes[upstream]
        if up.kind not in operation.results:
            accepted = " or ".join(k.value for k in operation.results)
            raise fail(where if "from" not in item else f"{where}.from",
                       f"{name} takes a {accepted}, but its upstream (node {upstream}) is a {up.kind.value}")
        op = operation.parse(item[name], op_where, fail, up.kind)
        if operation.binary:
            op = _resolve_other(op, name, item[name], index, nodes, ids, fail, op_where)
        kind = operation.results[up.kind]
        windowed = _windowed_keys(name, op, up, nodes)
        if up.windowed is not None and name in _PLAIN_KEYS_ONLY:
            raise fail(op_where, f"{name} needs plain keys, but its upstream (node {upstream}) has windowed keys "
                                 "(select_key or map give plain keys)")
        if isinstance(op, JoinOp):
            kind = _check_join(op, up, nodes[op.other], fail, op_where)
        if isinstance(op, SuppressOp) and op.spec.until == "window_close" and up.windowed is None:
            raise fail(f"{op_where}.until", "Suppressed.untilWindowCloses needs a table with windowed keys (Kafka: "
                                            "'Window close time is only defined for windowed computations'); "
                                            "use until: time_limit")
        if isinstance(op, SuppressOp) and op.spec.until == "window_close" \
                and op.spec.buffer.when_full == "emit_early":
            raise fail(f"{op_where}.buffer.when_full", "untilWindowCloses takes a strict buffer (unbounded or "
                                                       "shut_down); emit_early would emit non-final results")
        node = GraphNode(index, name, op, upstream, node_id, kind, windowed)
    if node_id is not None:
        ids[node_id] = index
    return node


def _materialized(op: TableSourceOp, obj, where, fail) -> TableSourceOp:
    r = _object_reader(obj, where, fail)
    r.check_known(("versioned", "history_retention_ms"))
    versioned = r.get("versioned", bool, default=False)
    retention = r.get("history_retention_ms", int, default=None, nullable=True)
    if versioned and retention is None:
        raise fail(f"{where}.history_retention_ms", "a versioned table needs history_retention_ms")
    if retention is not None and not versioned:
        raise fail(f"{where}.history_retention_ms", "only a versioned table (versioned: true) has a history retention")
    if retention is not None and retention < 0:
        raise fail(f"{where}.history_retention_ms", f"must not be negative, got {retention}")
    return attrs.evolve(op, versioned=versioned, history_retention_ms=retention)


def _upstream(item, index, nodes, ids, fail, where) -> int:
    if "from" in item:
        ref = item["from"]
        if not isinstance(ref, str) or ref not in ids:
            raise fail(f"{where}.from", f"{ref!r} is not the id of an earlier node"
                                        + (f" (ids so far: {', '.join(ids)})" if ids else ""))
        return ids[ref]
    if index == 0:
        raise fail(where, "the first node must be a source (stream or table)")
    previous = nodes[index - 1]
    if previous.kind is Kind.NONE:
        raise fail(where, f"the node before it (node {index - 1}) is a sink (to): give this node a \"from\"")
    return index - 1


def _resolve_other(op, name, arg, index, nodes, ids, fail, where):
    ref = op.other if isinstance(op, JoinOp) else arg
    field = f"{where}.other" if isinstance(op, JoinOp) else where
    if not isinstance(ref, str) or ref not in ids:
        raise fail(field, f"{ref!r} is not the id of an earlier node" + (f" (ids so far: {', '.join(ids)})" if ids else ""))
    other = ids[ref]
    if isinstance(op, JoinOp):
        return attrs.evolve(op, other=other)
    if nodes[other].kind is not S:
        raise fail(field, f"merge takes a stream, but node {other} is a {nodes[other].kind.value}")
    if nodes[other].windowed is not None:
        raise fail(field, f"merge needs plain keys, but node {other} has windowed keys")
    return MergeOp(other)


def _windowed_keys(name, op, up, nodes) -> Optional[WindowedKeys]:
    if isinstance(op, AggregateOp) and up.kind is WS:
        w = up.op
        if w.window is WindowType.TIME:
            return WindowedKeys(WindowType.TIME, w.size_ms)
        if w.window is WindowType.SLIDING:
            return WindowedKeys(WindowType.SLIDING, w.time_difference_ms)
        return WindowedKeys(WindowType.SESSION, None)
    if name in _KEEPS_WINDOWED_KEYS:
        return up.windowed
    return None


def _check_join(op: JoinOp, left: GraphNode, right: GraphNode, fail, where) -> Kind:
    """The join's kind from its two sides (the spec's Joins table); errors for any other combination."""
    if right.windowed is not None:
        raise fail(f"{where}.other", f"a join needs plain keys, but node {right.index} has windowed keys")
    pair = (left.kind, right.kind)
    if pair == (S, S):
        if op.window is None:
            raise fail(f"{where}.window", "a stream-stream join needs a window (before_ms, after_ms, grace_ms)")
        if op.foreign_key is not None or op.grace_ms is not None:
            raise fail(where, "a stream-stream join takes window (and window_api), not foreign_key or grace_ms")
        return S
    if op.window is not None or op.window_api is not None:
        raise fail(f"{where}.window", "only a stream-stream join takes a window")
    if pair == (S, T):
        if op.type is JoinType.OUTER:
            raise fail(where, "a stream-table join is join or left_join (KStream has no outerJoin with a KTable)")
        if op.foreign_key is not None:
            raise fail(f"{where}.foreign_key", "a foreign-key join joins two tables")
        return S
    if pair == (T, T):
        if op.grace_ms is not None:
            raise fail(f"{where}.grace_ms", "only a stream-table join takes grace_ms")
        if op.foreign_key is not None:
            if op.type is JoinType.OUTER:
                raise fail(where, "a foreign-key join is join or left_join (Kafka has no foreign-key outerJoin)")
            if ex.reads_key(op.foreign_key):
                raise fail(f"{where}.foreign_key", "the foreign-key extractor sees the left value only ($key and "
                                                   "key_field are the key-aware extractor of Kafka 4.0, KIP-1104)")
        return T
    raise fail(where, f"a join of a {left.kind.value} (node {left.index}) with a {right.kind.value} (node "
                      f"{right.index}) does not exist (stream x stream, stream x table, table x table)")


def _check_topics(graph: GraphTopology, fail, where) -> None:
    read_by: dict = {}
    for node in graph.nodes:
        if isinstance(node.op, (StreamSourceOp, TableSourceOp)):
            topic = node.op.topic
            if topic in read_by:
                raise fail(f"{node.where}.{node.name}", f"topic {topic!r} is already read by node {read_by[topic]} "
                                                        "(Kafka subscribes a topic once: read it from that node's id)")
            read_by[topic] = node.index
    sinks = [n for n in graph.nodes if isinstance(n.op, ToOp)]
    if not sinks:
        raise fail(f"{where}.graph", "the graph has no sink (to): nothing would be written")
    sorts: dict = {}
    for node in sinks:
        topic = node.op.topic
        if topic in read_by:
            raise fail(f"{node.where}.to", f"topic {topic!r} is read by node {read_by[topic]}: a topic is either a "
                                           "source or a sink (the test driver would feed the sink's records back)")
        up = graph.nodes[node.upstream]
        sort = up.windowed
        if topic in sorts and sorts[topic][0] != sort:
            raise fail(f"{node.where}.to", f"topic {topic!r} is also written by node {sorts[topic][1]} with keys of "
                                           "another sort (plain or windowed by another window)")
        sorts.setdefault(topic, (sort, node.index))

