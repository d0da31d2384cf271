"""``StreamsBuilder``, ``KStream``, ``KTable``, ``KGroupedStream``, ``KGroupedTable``, the windowed
streams and ``Topology``: Kafka Streams' DSL, building exactly the topologies a scenario file
describes (:mod:`reference.model.topology`).

``build()`` gives one of two forms:

- **format 1's single operator** when the program is exactly one of them: a join of topics
  ``left`` and ``right`` or a windowed aggregation of topic ``input``, its result written once to
  ``output``, made of format 1's calls only (these programs build the same specs as before
  graphs existed):

  - ``builder.stream("left").join / left_join / outer_join(builder.stream("right"), joiner, windows).to("output")``
  - ``builder.stream("left").join / left_join(builder.table("right"[, materialized]), joiner[, joined]).to("output")``
  - ``builder.table("left").join / left_join / outer_join(builder.table("right"), joiner)[.suppress(s)].to_stream().to("output")``
  - ``builder.stream("input").group_by_key().windowed_by(TimeWindows | SessionWindows | SlidingWindows)
    [.emit_strategy(e)].count() / aggregate(...) / reduce(...)[.suppress(s)].to_stream().to("output")``;
  - a join of two windowed tables (seed 003's "WTable" join): ``left`` and ``right`` each aggregated
    over the same ``TimeWindows``, joined with ``join / left_join / outer_join``; the right table may
    first be shifted, ``right.to_stream().map(KeyValueMapper.shift_window(ms)).to_table()``.

- **a topology graph** (``../shared/spec/topology-graphs.md``) for every other program: any
  topics, several sinks, and ``filter``, ``filter_not``, ``map_values``, ``select_key``, ``map``,
  ``flat_map_values``, ``merge``, ``repartition``, ``to_table``, ``to_stream``, ``group_by_key``,
  ``group_by``, ``count`` / ``reduce`` / ``aggregate`` of grouped streams and tables, every join
  kind, ``suppress``. Each DSL call is recorded as the graph node the spec defines; ``build()``
  reads the node list with the scenario loader's :func:`reference.model.graph.nodes.parse_graph`
  (so a graph the API builds is checked as a scenario file's is) and compiles it under the newest
  release. Mappers, predicates, extractors, joiners and aggregations are JSON (the spec's EXPR,
  PRED and named functions: such a topology can be saved as a scenario file) or Python callables
  (it runs, but ``to_scenario`` refuses it). Format 1's own options (``enable_sending_old_values``,
  ``Materialized.with_retention``, ``merge_separator``, joins of windowed tables) exist only in
  the single-operator form.

Each DSL method checks what it can at once (as Kafka's DSL methods throw at the call): format 1's
specs with :func:`reference.model.topology.check_topology` under the newest modelled release that
has the API used, a graph's expressions when they are given; ``build()`` checks the rest; the
driver re-checks the topology under its release.
"""
from __future__ import annotations

import re
from typing import List, Optional

import attrs

from kssim.reference.model.aggregations import Aggregation
from kssim.reference.model.errors import TopologyError
from kssim.reference.model.graph import functions as graph_functions
from kssim.reference.model.graph.nodes import GraphTopology, parse_graph
from kssim.reference.model.profiles import RELEASE_LINES, profile_for
from kssim.reference.model.topology import (
    OPERATOR_INPUT_TOPICS, OPERATOR_KINDS, SessionAggregateSpec, SlidingAggregateSpec, StreamStreamJoinSpec, StreamTableJoinSpec,
    TableSpec, TableTableJoinSpec, WindowAggregateSpec, WindowedTableJoinSpec,
)
from kssim.reference.api.options import (
    EmitStrategy, GraphArg, JoinWindows, Joined, KeyValueMapper, Materialized, SessionWindows, SlidingWindows,
    Suppressed, TimeWindows, callable_aggregate_fields, callable_reduce_fields, check_with_newest_api, expr_arg,
    flat_mapper_arg, foreign_key_arg, graph_aggregation_arg, graph_joiner_arg, graph_subtractor, join_window_json,
    joiner_fields, key_value_arg, materialized_retention, named_aggregate_fields, named_reduce_fields, pred_arg,
    suppress_json, windowed_by_json,
)

OUTPUT_TOPIC = "output"
JOIN_SPECS = (StreamStreamJoinSpec, StreamTableJoinSpec, TableTableJoinSpec)
WINDOWED_AGGREGATE_SPECS = (SessionAggregateSpec, WindowAggregateSpec, SlidingAggregateSpec)
_SPEC_TYPES = JOIN_SPECS + WINDOWED_AGGREGATE_SPECS + (WindowedTableJoinSpec,)
#: What each join reads, a stream or a table source per side (the model's table of operators says)
_INPUT_KINDS = {name: tuple("KStream" if kind == "stream" else "KTable" for kind in OPERATOR_KINDS[name].input_kinds)
                for name in ("stream_stream_join", "stream_table_join", "table_table_join")}
#: operators whose result is a KTable (enable_sending_old_values, suppress)
_TABLE_RESULT_SPECS = (TableTableJoinSpec, WindowedTableJoinSpec) + WINDOWED_AGGREGATE_SPECS


# --- the nodes of the topology being built ---------------------------------------------------------

class _Source:
    """A source node: a topic read as a KStream, or as a KTable materialized in ``table``."""

    __slots__ = ("topic", "table")

    def __init__(self, topic: str, table: Optional[TableSpec]):
        self.topic = topic
        self.table = table

    parents = ()

    def describe(self) -> str:
        return f"KTable({self.topic})" if self.table is not None else f"KStream({self.topic})"


class _Operator:
    """An operator node (a join, a windowed aggregation, a windowed-table join): its input nodes
    and the spec it builds. ``spec`` is replaced (never mutated) when ``enable_sending_old_values``
    is called on its result."""

    __slots__ = ("spec", "parents", "method")

    def __init__(self, spec, parents: tuple, method: str):
        self.spec = spec
        self.parents = parents
        self.method = method

    def describe(self) -> str:
        if isinstance(self.spec, WINDOWED_AGGREGATE_SPECS):
            return f"{self.parents[0].describe()}.group_by_key().windowed_by(...).{self.method}(...)"
        return f"{self.parents[0].describe()}.{self.method}({self.parents[1].describe()})"


class _Suppress:
    """``KTable#suppress`` on an operator's table result."""

    __slots__ = ("parents", "suppress")

    def __init__(self, parent: _Operator, suppress):
        self.parents = (parent,)
        self.suppress = suppress

    def describe(self) -> str:
        return f"{self.parents[0].describe()}.suppress(...)"


class _ShiftWindows:
    """``KStream#map(KeyValueMapper.shift_window(ms))`` on a windowed table's stream."""

    __slots__ = ("parents", "shift_ms")

    def __init__(self, parent, shift_ms: int):
        self.parents = (parent,)
        self.shift_ms = shift_ms

    def describe(self) -> str:
        return f"{self.parents[0].describe()}.to_stream().map(KeyValueMapper.shift_window({self.shift_ms}))"


class _ToTable:
    """``KStream#toTable()`` (KIP-523) of a shifted windowed table's stream."""

    __slots__ = ("parents",)

    def __init__(self, parent: _ShiftWindows):
        self.parents = (parent,)

    def describe(self) -> str:
        return f"{self.parents[0].describe()}.to_table()"


def _operators_under(node):
    """The operator nodes ``node`` reads (itself included), depth first."""
    if isinstance(node, _Operator):
        yield node
    for parent in node.parents:
        yield from _operators_under(parent)


# --- the builder -------------------------------------------------------------------------------------

class _Call:
    """One DSL call as the graph node the spec defines: ``operation`` (the node's JSON field), its
    argument as a :class:`GraphArg` (JSON, placeholders where Python callables go), its upstream
    call and a binary operation's ``other`` call, a table source's ``materialized`` object,
    whether its keys are windowed, and ``format1_only``: why the call exists only as part of a
    format-1 operator (None: a graph can hold it)."""

    __slots__ = ("index", "operation", "arg", "upstream", "other", "materialized", "windowed", "method",
                 "format1_only")

    def __init__(self, index, operation, arg: GraphArg, upstream, other, materialized, windowed, method,
                 format1_only):
        self.index = index
        self.operation = operation
        self.arg = arg
        self.upstream = upstream
        self.other = other
        self.materialized = materialized
        self.windowed = windowed
        self.method = method
        self.format1_only = format1_only


#: operations after which windowed keys stay windowed (the spec's "windowed keys")
_KEEPS_WINDOWED_KEYS = ("suppress", "to_stream", "filter", "filter_not", "map_values", "flat_map_values")


class StreamsBuilder:
    """Kafka's ``StreamsBuilder``: ``stream(topic)``, ``table(topic[, materialized])``, ``build()``."""

    def __init__(self):
        self._sources = {}
        self._operators: List[_Operator] = []
        self._sinks: List[tuple] = []
        self._calls: List[_Call] = []
        #: the first call that only a topology graph can hold (None: the program may be format 1's)
        self._graph_only: Optional[str] = None
        #: format 1's options used on operator results (enable_sending_old_values)
        self._format1_only: List[str] = []

    def stream(self, topic: str) -> "KStream":
        """``StreamsBuilder#stream(topic)``."""
        source = self._add_source(topic, None)
        return KStream(self, source, self._call("stream", GraphArg(topic), None, method=f"stream({topic!r})"))

    def table(self, topic: str, materialized: Optional[Materialized] = None) -> "KTable":
        """``StreamsBuilder#table(topic[, materialized])``; a versioned store (KIP-889) comes from
        ``Materialized.as_(Stores.persistent_versioned_key_value_store(name, retention))``. A
        ``with_retention`` is for window stores: a key-value store ignores it, as in Kafka."""
        if materialized is None:
            table = TableSpec()
        elif isinstance(materialized, Materialized):
            store = materialized.key_value_store()
            table = TableSpec(versioned=store.versioned, history_retention_ms=store.history_retention_ms)
        else:
            raise TypeError(f"table() takes a Materialized, got {materialized!r}")
        source = self._add_source(topic, table)
        versioned = {"versioned": True, "history_retention_ms": table.history_retention_ms} if table.versioned else None
        return KTable(self, source, self._call("table", GraphArg(topic), None, materialized=versioned,
                                               method=f"table({topic!r})"))

    def _add_source(self, topic, table) -> _Source:
        if not isinstance(topic, str):
            raise TypeError(f"a topic name is a string, got {topic!r}")
        if topic in self._sources:
            # InternalTopologyBuilder: a topic can feed only one source node
            raise TopologyError("StreamsBuilder",
                                f"Invalid topology: Topic {topic} has already been registered by another source.")
        source = _Source(topic, table)
        self._sources[topic] = source
        return source

    def _add_operator(self, spec, parents: tuple, method: str) -> _Operator:
        check_with_newest_api(spec)
        node = _Operator(spec, parents, method)
        self._operators.append(node)
        return node

    def _call(self, operation: str, arg: GraphArg, upstream: Optional[_Call], other: Optional[_Call] = None, *,
              materialized=None, method: str, windowed: Optional[bool] = None, format1_only=None) -> _Call:
        """Record a DSL call as a graph node (in call order, which is the graph's list order)."""
        if windowed is None:
            windowed = upstream is not None and upstream.windowed and operation in _KEEPS_WINDOWED_KEYS
        call = _Call(len(self._calls), operation, arg, upstream, other, materialized, windowed, method, format1_only)
        self._calls.append(call)
        return call

    def _graph_call(self, method: str) -> None:
        """A call that only a topology graph holds was made."""
        if self._graph_only is None:
            self._graph_only = method

    def build(self) -> "Topology":
        """``StreamsBuilder#build()``: format 1's operator spec if the program is exactly one of
        format 1's operators (see the module docstring), else a topology graph."""
        problem = None
        if self._graph_only is None:
            try:
                return self._build_format1()
            except TopologyError as exc:
                problem = exc
        return self._build_graph(problem)

    def _build_format1(self) -> "Topology":
        """The topology, if it is one operator reading the operator's input topics (``left`` and
        ``right``, or ``input``) and written to ``output``."""
        where = "StreamsBuilder.build"
        read = {id(op) for node in self._operators for parent in node.parents for op in _operators_under(parent)}
        tops = [op for op in self._operators if id(op) not in read]
        if len(tops) != 1:
            raise TopologyError(where, "a kssim topology is exactly one join (stream-stream, stream-table, table-table, "
                                       "or of two windowed tables) or one windowed aggregation; this builder has "
                                       f"{len(tops)}")
        top = tops[0]
        what = "aggregation" if isinstance(top.spec, WINDOWED_AGGREGATE_SPECS) else "join"
        if len(self._sinks) != 1:
            raise TopologyError(where, f"the {what}'s result must be written to topic '{OUTPUT_TOPIC}' exactly once "
                                       f"(with .to('{OUTPUT_TOPIC}'), after .to_stream() for a table result); "
                                       f"found {len(self._sinks)} sink(s)")
        node, topic = self._sinks[0]
        suppress = None
        if isinstance(node, _Suppress):
            node, suppress = node.parents[0], node.suppress
        if node is not top:
            raise TopologyError(where, f"the sink writes {self._sinks[0][0].describe()}, not the {what}'s result")
        if topic != OUTPUT_TOPIC:
            raise TopologyError(where, f"the {what}'s result must go to topic '{OUTPUT_TOPIC}', not {topic!r}")
        expected = OPERATOR_INPUT_TOPICS[top.spec.operator]
        if isinstance(top.spec, WINDOWED_AGGREGATE_SPECS):
            _check_input(where, "aggregation's", top.parents[0], "input", "KStream")
        elif isinstance(top.spec, WindowedTableJoinSpec):
            for side, table, topic in zip(("left", "right"), top.parents, expected):
                (aggregation,) = [op for op in _operators_under(table)]
                _check_input(where, f"{side} windowed table's", aggregation.parents[0], topic, "KStream")
        else:
            for side, parent, topic, kind in zip(("left", "right"), top.parents, expected, _INPUT_KINDS[top.spec.operator]):
                _check_input(where, f"join's {side}", parent, topic, kind)
        unused = sorted(t for t in self._sources if t not in expected)
        if unused:
            raise TopologyError(where, f"kssim topologies read only topics {', '.join(expected)}; "
                                       f"also read: {', '.join(unused)}")
        spec = top.spec if suppress is None else attrs.evolve(top.spec, suppress=suppress)
        return Topology(spec)

    def _build_graph(self, format1_problem: Optional[TopologyError]) -> "Topology":
        """The program as a topology graph, read and checked as a scenario file's graph."""
        where = "StreamsBuilder.build"
        only = [c.format1_only for c in self._calls if c.format1_only] + self._format1_only
        if only:
            because = f" ({format1_problem.message})" if format1_problem is not None else ""
            raise TopologyError(where, f"{only[0]} exists only in format 1's single operators, and this program is "
                                       f"not one{because}; a topology graph has no such option")
        calls = self._calls
        try:
            graph = parse_graph({"graph": graph_nodes(calls)}, TopologyError)
            nodes = []
            for node, call in zip(graph.nodes, calls):
                if call.arg.callables:
                    node = attrs.evolve(node, op=attrs.evolve(node.op, **call.arg.callables))
                nodes.append(node)
            graph = GraphTopology(tuple(nodes), graph.source)
            from kssim.reference.model.graph.plan import compile_graph

            compile_graph(graph, _newest_profile_for_graph(calls))
        except TopologyError as exc:
            exc = _naming_the_call(exc, calls)
            if format1_problem is not None:
                exc = TopologyError(exc.field, f"{exc.message}; nor is the program one of format 1's operators: "
                                               f"{format1_problem.message}")
            raise exc from None
        return Topology(graph)


def graph_nodes(calls) -> list:
    """The graph's node list (JSON) of the recorded calls: ``from`` where the upstream is not the
    node just before (or that node is a sink), ``id`` on every node another one names (a source's
    id is its topic)."""
    named = set()
    for call in calls:
        if call.upstream is not None and _needs_from(call, calls):
            named.add(call.upstream.index)
        if call.other is not None:
            named.add(call.other.index)
    ids, used = {}, set()
    for index in sorted(named):
        call = calls[index]
        base = call.arg.json if call.operation in ("stream", "table") else f"{call.operation}-{index}"
        name, n = base, 2
        while name in used:
            name, n = f"{base}-{n}", n + 1
        used.add(name)
        ids[index] = name
    out = []
    for call in calls:
        arg = call.arg.json
        if call.operation == "merge":
            arg = ids[call.other.index]
        elif call.other is not None:
            arg = {"other": ids[call.other.index], **arg}
        node = {call.operation: arg}
        if call.index in ids:
            node["id"] = ids[call.index]
        if call.upstream is not None and _needs_from(call, calls):
            node["from"] = ids[call.upstream.index]
        if call.materialized is not None:
            node["materialized"] = call.materialized
        out.append(node)
    return out


def _needs_from(call: _Call, calls) -> bool:
    return call.upstream.index != call.index - 1 or calls[call.index - 1].operation == "to"


def _newest_profile_for_graph(calls):
    """The newest modelled release, or the newest that still had the legacy window builders
    (``TimeWindows.of``, ``SessionWindows.with``: ``grace_ms`` None) when the program uses them."""
    legacy = any(call.operation == "windowed_by" and any(w.get("grace_ms", 0) is None for w in call.arg.json.values()
                                                         if isinstance(w, dict))
                 for call in calls)
    for release in reversed(RELEASE_LINES):
        profile = profile_for(release)
        if not legacy or not profile.legacy_window_builders_removed:
            return profile
    return profile_for(RELEASE_LINES[-1])


def _naming_the_call(exc: TopologyError, calls) -> TopologyError:
    """``exc`` (its field names a node, ``topology.graph[3].group_by``) with the DSL call that
    made the node."""
    match = re.search(r"graph\[(\d+)\]", exc.field or "")
    if match is None or int(match.group(1)) >= len(calls):
        return exc
    call = calls[int(match.group(1))]
    return TopologyError(exc.field, f"{exc.message} (the call {call.method})")


def _check_input(where: str, whose: str, node, topic: str, kind: str) -> None:
    if not isinstance(node, _Source) or node.topic != topic:
        raise TopologyError(where, f"the {whose} input must be read from topic {topic!r}, got {node.describe()}")
    if node.describe() != f"{kind}({topic})":
        # a table turned into a stream (toStream) is not a stream source: it drops what a
        # KTable source drops, so the scenario's operator would not describe it
        raise TopologyError(where, f"the {whose} input must be {kind}({topic}) "
                                   f"(builder.{kind[1:].lower()}({topic!r})), got {node.describe()}")


class _DslObject:
    """What every DSL object holds: its builder, its format-1 node (None when only a topology
    graph can hold what made it) and its graph call."""

    def __init__(self, builder: StreamsBuilder, node, call: _Call):
        self._builder = builder
        self._node = node
        self._call = call
        if node is None:
            builder._graph_call(call.method)

    def _graph(self, cls, operation: str, arg: GraphArg, method: str, other=None, **kwargs):
        """The graph-only result of ``operation`` on this object."""
        call = self._builder._call(operation, arg, self._call, other, method=f"{self._call.method}.{method}", **kwargs)
        return cls(self._builder, None, call)

    def _where(self, operation: str) -> str:
        return f"topology.graph[{len(self._builder._calls)}].{operation}"


class KStream(_DslObject):
    """Kafka's ``KStream``: ``filter``, ``filter_not``, ``map_values``, ``select_key``, ``map``,
    ``flat_map_values``, ``merge``, ``repartition``, ``to_table``, ``group_by_key``, ``group_by``,
    ``join`` / ``left_join`` / ``outer_join`` with a KStream (``JoinWindows``), ``join`` /
    ``left_join`` with a KTable (optional ``Joined``), ``to(topic)``.

    Mappers and predicates are the graph spec's JSON EXPR / PRED (``{"field": "g"}``, ``"$key"``,
    ``{"cmp": [...]}``) or Python callables called as Kafka calls them: ``(key, value)``
    (``map_values`` and ``flat_map_values`` also ``value`` alone, Kafka's ``ValueMapper``)."""

    def filter(self, predicate) -> "KStream":
        """``KStream#filter(predicate)``: the records for which ``predicate(key, value)`` holds."""
        return self._graph(KStream, "filter", pred_arg(predicate, self._where("filter")), "filter(...)")

    def filter_not(self, predicate) -> "KStream":
        """``KStream#filterNot(predicate)``."""
        return self._graph(KStream, "filter_not", pred_arg(predicate, self._where("filter_not")), "filter_not(...)")

    def map_values(self, mapper) -> "KStream":
        """``KStream#mapValues(mapper)``: ``mapper(value)`` or ``mapper(key, value)`` (or an EXPR)."""
        arg = expr_arg(mapper, self._where("map_values"), "mapper", value_only=True)
        return self._graph(KStream, "map_values", arg, "map_values(...)")

    def select_key(self, mapper) -> "KStream":
        """``KStream#selectKey(mapper)``: the new key ``mapper(key, value)`` (or an EXPR)."""
        return self._graph(KStream, "select_key", expr_arg(mapper, self._where("select_key"), "mapper"),
                           "select_key(...)")

    def map(self, mapper) -> "KStream":
        """``KStream#map(mapper)``: ``mapper(key, value) -> (new key, new value)`` (a ``KeyValue``
        or any pair), or ``{"key": EXPR, "value": EXPR}``. ``KeyValueMapper.shift_window(ms)`` on a
        time-windowed aggregation's stream is also the right side of format 1's shifted
        windowed-table join."""
        if isinstance(mapper, KeyValueMapper):
            node = self._node
            if isinstance(node, _Operator) and isinstance(node.spec, WindowAggregateSpec):
                call = self._builder._call("map", key_value_arg(mapper, self._where("map"), "mapper"), self._call,
                                           method=f"{self._call.method}.map(KeyValueMapper.shift_window(...))")
                return KStream(self._builder, _ShiftWindows(node, mapper.shift_ms), call)
            if not self._call.windowed:
                raise TopologyError("KStream.map", "KeyValueMapper.shift_window maps the windowed keys of a "
                                                   f"time-windowed aggregation's stream (table.to_stream()), not "
                                                   f"{node.describe() if node is not None else self._call.method}")
        return self._graph(KStream, "map", key_value_arg(mapper, self._where("map"), "mapper"), "map(...)")

    def flat_map_values(self, mapper) -> "KStream":
        """``KStream#flatMapValues(mapper)``: a record per element of ``mapper(value)`` (or
        ``mapper(key, value)``, or an EXPR whose list result is split); None gives no record."""
        return self._graph(KStream, "flat_map_values", flat_mapper_arg(mapper, self._where("flat_map_values")),
                           "flat_map_values(...)")

    def merge(self, other: "KStream") -> "KStream":
        """``KStream#merge(stream)``: the records of both streams."""
        _same_builder(self, other)
        if not isinstance(other, KStream):
            raise TypeError(f"KStream#merge takes a KStream, got {other!r}")
        return self._graph(KStream, "merge", GraphArg(None), f"merge({other._call.method})", other=other._call)

    def repartition(self) -> "KStream":
        """``KStream#repartition()`` (KIP-221, 2.6+): the records through a repartition topic."""
        return self._graph(KStream, "repartition", GraphArg({}), "repartition()")

    def to_table(self) -> "KTable":
        """``KStream#toTable()`` (KIP-523, 2.5+): a key-value table of the stream (also the right
        side of format 1's shifted windowed-table join, after ``map(KeyValueMapper.shift_window(ms))``)."""
        if isinstance(self._node, _ShiftWindows):
            call = self._builder._call("to_table", GraphArg({}), self._call, method=f"{self._call.method}.to_table()")
            return KTable(self._builder, _ToTable(self._node), call)
        if self._call.windowed:
            raise TopologyError("KStream.to_table", "KStream#toTable needs plain keys (select_key or map give them); "
                                                    "for windowed keys kssim models toTable only after "
                                                    "map(KeyValueMapper.shift_window(ms)), not on "
                                                    f"{self._node.describe() if self._node else self._call.method}")
        return self._graph(KTable, "to_table", GraphArg({}), "to_table()")

    def group_by_key(self) -> "KGroupedStream":
        """``KStream#groupByKey()``: group by the record key (repartitioned first if the key may
        have changed) for an aggregation."""
        call = self._builder._call("group_by_key", GraphArg({}), self._call,
                                   method=f"{self._call.method}.group_by_key()")
        return KGroupedStream(self._builder, self._node, call)

    def group_by(self, key_selector) -> "KGroupedStream":
        """``KStream#groupBy(keySelector)``: group by ``key_selector(key, value)`` (or an EXPR, or
        ``{"key": EXPR}``), through a repartition topic."""
        if isinstance(key_selector, dict) and set(key_selector) == {"key"}:
            key_selector = key_selector["key"]
        arg = expr_arg(key_selector, self._where("group_by") + ".key", "keySelector", field="key")
        return self._graph(KGroupedStream, "group_by", GraphArg({"key": arg.json}, arg.callables, arg.users),
                           "group_by(...)")

    def join(self, other, joiner, windows=None, joined=None) -> "KStream":
        """``KStream#join(otherStream, joiner, windows)`` / ``KStream#join(table, joiner[, joined])``.
        The third argument is the ``JoinWindows`` (stream) or the ``Joined`` (table), as in Kafka."""
        return self._join("inner", "join", other, joiner, windows, joined)

    def left_join(self, other, joiner, windows=None, joined=None) -> "KStream":
        """``KStream#leftJoin(otherStream, joiner, windows)`` / ``KStream#leftJoin(table, joiner[, joined])``."""
        return self._join("left", "left_join", other, joiner, windows, joined)

    def outer_join(self, other, joiner, windows=None) -> "KStream":
        """``KStream#outerJoin(otherStream, joiner, windows)``; there is no KStream-KTable outer join."""
        if isinstance(other, KTable):
            raise TypeError("KStream#outerJoin takes a KStream: Kafka Streams has no KStream-KTable outer join")
        return self._join("outer", "outer_join", other, joiner, windows, None)

    def _join(self, join_type, method, other, joiner, windows, joined) -> "KStream":
        _same_builder(self, other)
        fields = joiner_fields(joiner)
        graph_arg = graph_joiner_arg(joiner)
        nodes = (self._node, getattr(other, "_node", None))
        spec = None
        if isinstance(other, KStream):
            if joined is not None or isinstance(windows, Joined):
                raise TypeError(f"a KStream-KStream {method} takes JoinWindows, not Joined")
            if not isinstance(windows, JoinWindows):
                raise TypeError(f"a KStream-KStream {method} needs JoinWindows (windows can't be null), got {windows!r}")
            if None not in nodes:
                spec = StreamStreamJoinSpec(join=join_type, window=windows.spec, window_api=windows.window_api, **fields)
            else:
                check_with_newest_api(StreamStreamJoinSpec(join=join_type, window=windows.spec,
                                                           window_api=windows.window_api))
            graph_arg = attrs.evolve(graph_arg, json={**graph_arg.json, **join_window_json(windows)})
        elif isinstance(other, KTable):
            if isinstance(windows, Joined) and joined is None:
                windows, joined = None, windows  # positional, as Kafka's join(table, joiner, joined)
            if windows is not None:
                raise TypeError(f"a KStream-KTable {method} takes an optional Joined, not {windows!r}")
            if joined is not None and not isinstance(joined, Joined):
                raise TypeError(f"a KStream-KTable {method} takes a Joined, got {joined!r}")
            grace_ms = joined.grace_ms if joined is not None else None
            if self._node is not None and isinstance(other._node, _Source):
                spec = StreamTableJoinSpec(join=join_type, table=other._node.table, grace_ms=grace_ms, **fields)
            if grace_ms is not None:
                graph_arg = attrs.evolve(graph_arg, json={**graph_arg.json, "grace_ms": grace_ms})
        else:
            raise TypeError(f"KStream#{method} joins a KStream or a KTable, got {other!r}")
        call = self._builder._call(method, graph_arg, self._call, other._call,
                                   method=f"{self._call.method}.{method}({other._call.method}, ...)")
        if spec is None:
            return KStream(self._builder, None, call)
        return KStream(self._builder, self._builder._add_operator(spec, nodes, method), call)

    def to(self, topic: str) -> None:
        """``KStream#to(topic)``; a program may write several topics, and one topic from several
        streams."""
        if not isinstance(topic, str):
            raise TypeError(f"a topic name is a string, got {topic!r}")
        self._builder._call("to", GraphArg(topic), self._call, method=f"{self._call.method}.to({topic!r})")
        if self._node is not None:
            self._builder._sinks.append((self._node, topic))


class KGroupedStream(_DslObject):
    """Kafka's ``KGroupedStream`` (``KStream.group_by_key()`` / ``group_by(...)``): ``count``,
    ``reduce``, ``aggregate`` per key, or ``windowed_by`` windows."""

    def windowed_by(self, windows):
        """``KGroupedStream#windowedBy(windows)``: a :class:`TimeWindowedKStream` for ``TimeWindows``
        and ``SlidingWindows`` (KIP-450, 2.7+), a :class:`SessionWindowedKStream` for
        ``SessionWindows`` (KIP-94)."""
        if isinstance(windows, (TimeWindows, SlidingWindows)):
            return TimeWindowedKStream(self._builder, self._node, windows, self._call)
        if isinstance(windows, SessionWindows):
            return SessionWindowedKStream(self._builder, self._node, windows, self._call)
        if windows is None:
            raise TypeError("windows can't be null")
        raise TypeError(f"windowed_by takes TimeWindows, SessionWindows or SlidingWindows, got {windows!r}")

    def count(self) -> "KTable":
        """``KGroupedStream#count()``: records per key (null keys and values are skipped)."""
        return self._graph(KTable, "count", GraphArg({}), "count()")

    def reduce(self, reducer) -> "KTable":
        """``KGroupedStream#reduce(reducer)``: ``reducer(aggregate, value)``, a key's first value as
        is; or a named reducer of the graph spec (``"sum"``, ``"string_reduce"``)."""
        operation, arg = graph_aggregation_arg("reduce", reducer, None, graph_functions.REDUCE_NAMES, reduce=True)
        return self._graph(KTable, operation, arg, "reduce(...)")

    def aggregate(self, initializer, aggregator=None) -> "KTable":
        """``KGroupedStream#aggregate(initializer, aggregator)``: ``initializer() -> aggregate``,
        ``aggregator(key, value, aggregate) -> aggregate``; or a named aggregation of the graph
        spec (``"count"``, ``"sum"``, ``"string_adder"``, ``"list"``) or an :class:`Aggregation`."""
        operation, arg = graph_aggregation_arg("aggregate", initializer, aggregator, graph_functions.AGGREGATE_NAMES,
                                               reduce=False)
        return self._graph(KTable, operation, arg, "aggregate(...)")


class KGroupedTable(_DslObject):
    """Kafka's ``KGroupedTable`` (``KTable.group_by(...)``): ``count``, ``reduce(adder,
    subtractor)``, ``aggregate(initializer, adder, subtractor)``; each update of the table
    subtracts the row's old value from its old group and adds the new value to its new group."""

    def count(self) -> "KTable":
        """``KGroupedTable#count()``."""
        return self._graph(KTable, "count", GraphArg({}), "count()")

    def reduce(self, adder, subtractor=None) -> "KTable":
        """``KGroupedTable#reduce(adder, subtractor)``: Kafka's ``Reducer`` s ``(aggregate, value)``;
        or a named reducer (``"sum"``, ``"string_reduce"``) that brings its subtractor."""
        operation, arg = graph_aggregation_arg("reduce", adder, None, graph_functions.REDUCE_NAMES, reduce=True)
        return self._graph(KTable, operation, self._with_subtractor(arg, subtractor, True), "reduce(...)")

    def aggregate(self, initializer, adder=None, subtractor=None) -> "KTable":
        """``KGroupedTable#aggregate(initializer, adder, subtractor)``: ``adder`` and ``subtractor``
        are Kafka's ``Aggregator`` s ``(key, value, aggregate)``, called with the group's key; or a
        named aggregation (``"count"``, ``"sum"``,
        ``"string_adder"``, ``"list"``) that brings its subtractor; or an :class:`Aggregation` and
        a subtractor (``aggregate(aggregation, subtractor)``)."""
        if isinstance(initializer, Aggregation) and subtractor is None:
            adder, subtractor = None, adder
        operation, arg = graph_aggregation_arg("aggregate", initializer, adder, graph_functions.AGGREGATE_NAMES,
                                               reduce=False)
        return self._graph(KTable, operation, self._with_subtractor(arg, subtractor, False), "aggregate(...)")

    @staticmethod
    def _with_subtractor(arg: GraphArg, subtractor, reduce: bool) -> GraphArg:
        if not arg.callables:
            if subtractor is not None:
                raise TypeError("a named function brings its own subtractor; give either a name or callables")
            return arg
        callables = {**arg.callables, "subtractor": graph_subtractor(subtractor, reduce)}
        return GraphArg(arg.json, callables, arg.users + (subtractor,))


class _WindowedKStream:
    """What ``TimeWindowedKStream`` and ``SessionWindowedKStream`` share: the emit strategy,
    ``count`` and ``reduce``; each builds the spec of its windows."""

    def __init__(self, builder: StreamsBuilder, node, windows, call: _Call):
        self._builder = builder
        self._node = node
        self._windows = windows
        self._call = call
        self._emit = "on_update"

    def emit_strategy(self, emit_strategy: EmitStrategy):
        """``emitStrategy(EmitStrategy)`` (KIP-825, 3.3+): ``EmitStrategy.on_window_update()``
        (the default) or ``EmitStrategy.on_window_close()`` for the aggregations made from this
        windowed stream from now on. Returns this windowed stream, as Kafka does."""
        if not isinstance(emit_strategy, EmitStrategy):
            raise TypeError(f"emit_strategy takes an EmitStrategy, got {emit_strategy!r}")
        self._emit = emit_strategy.emit
        return self

    def count(self, materialized: Optional[Materialized] = None) -> "KTable":
        """``count([materialized])``: the number of records per window (null values count)."""
        return self._table("count", {"aggregation": "count", "merge_separator": "+"}, materialized)

    def reduce(self, reducer, materialized: Optional[Materialized] = None, *, merge_separator: str = "+") -> "KTable":
        """``reduce(reducer[, materialized])``: ``reducer(aggregate, value)``, the first value as is;
        sessions merge with the reducer too. ``reducer`` may also be a named reduce
        (``"string_reduce"``; ``merge_separator`` is then its session merger's separator)."""
        if isinstance(reducer, str):
            fields = named_reduce_fields(reducer, merge_separator)
        elif isinstance(reducer, Aggregation):
            if not reducer.is_reduce:
                raise TypeError(f"reduce takes an Aggregation without initializer, got {reducer.name!r}")
            fields = {"aggregation": reducer, "merge_separator": "+"}
        else:
            fields = callable_reduce_fields(reducer, merge_separator)
        return self._table("reduce", fields, materialized)

    def _aggregate(self, initializer, aggregator, merger, materialized, merge_separator, session: bool) -> "KTable":
        if isinstance(initializer, (str, Aggregation)):
            if isinstance(aggregator, Materialized) and materialized is None:
                aggregator, materialized = None, aggregator  # aggregate(name, materialized)
            if aggregator is not None or merger is not None:
                raise TypeError("a named aggregation (or an Aggregation) brings its own aggregator and merger; "
                                "give either it or an initializer and an aggregator")
            if isinstance(initializer, str):
                fields = named_aggregate_fields(initializer, merge_separator)
            else:
                fields = {"aggregation": initializer, "merge_separator": "+"}
        else:
            fields = callable_aggregate_fields(initializer, aggregator, merger, merge_separator, merger_required=session)
        return self._table("aggregate", fields, materialized)

    def _table(self, method: str, fields: dict, materialized) -> "KTable":
        retention = materialized_retention(materialized, method)
        spec = self._spec(emit=self._emit, retention_ms=retention, **fields)
        builder = self._builder
        node = builder._add_operator(spec, (self._node,), method) if self._node is not None else None
        if node is None:
            check_with_newest_api(spec)
        # the graph: windowed_by (no processor of its own: made here, with the emit strategy of now)
        # and the aggregation
        windowed_by = builder._call("windowed_by", GraphArg(windowed_by_json(self._windows, self._emit)), self._call,
                                    method=f"{self._call.method}.windowed_by(...)")
        aggregation = fields["aggregation"]
        if isinstance(aggregation, Aggregation):
            operation = "reduce" if aggregation.is_reduce else "aggregate"
            arg = GraphArg("sum" if aggregation.is_reduce else "count", {"function": aggregation}, (aggregation,))
        elif method == "count":
            operation, arg = "count", GraphArg({})
        else:
            operation, arg = method, GraphArg(aggregation)
        format1_only = None
        if retention is not None:
            format1_only = "Materialized.with_retention (a graph's stores keep Kafka's default retention)"
        elif fields["merge_separator"] != "+":
            format1_only = "merge_separator (a graph's named session mergers use '+')"
        call = builder._call(operation, arg, windowed_by, method=f"{windowed_by.method}.{method}(...)", windowed=True,
                             format1_only=format1_only)
        return KTable(builder, node, call)

    def _spec(self, **fields):
        raise NotImplementedError


class TimeWindowedKStream(_WindowedKStream):
    """Kafka's ``TimeWindowedKStream`` (``windowed_by(TimeWindows | SlidingWindows)``):
    ``count``, ``aggregate(initializer, aggregator)``, ``reduce(reducer)``, ``emit_strategy``."""

    def aggregate(self, initializer, aggregator=None, materialized: Optional[Materialized] = None, *,
                  merge_separator: str = "+") -> "KTable":
        """``aggregate(initializer, aggregator[, materialized])``: ``initializer() -> aggregate``,
        ``aggregator(key, value, aggregate) -> aggregate``. ``initializer`` may instead be a named
        aggregation of the scenario contract (``"sum"``, ``"string_adder"``, ``"list"``,
        ``"count"``) or an :class:`reference.model.aggregations.Aggregation`, with no aggregator."""
        if materialized is not None and not isinstance(materialized, Materialized) and callable(materialized):
            raise TypeError("TimeWindowedKStream#aggregate takes no merger (time windows never merge); "
                            "session_merger belongs to a SessionWindowedKStream")
        return self._aggregate(initializer, aggregator, None, materialized, merge_separator, session=False)

    def _spec(self, **fields):
        w = self._windows
        if isinstance(w, SlidingWindows):
            return SlidingAggregateSpec(time_difference_ms=w.time_difference_ms, grace_ms=w.grace_ms, **fields)
        return WindowAggregateSpec(window=w.spec, **fields)


class SessionWindowedKStream(_WindowedKStream):
    """Kafka's ``SessionWindowedKStream`` (``windowed_by(SessionWindows)``): ``count``,
    ``aggregate(initializer, aggregator, session_merger)``, ``reduce(reducer)``, ``emit_strategy``."""

    def aggregate(self, initializer, aggregator=None, session_merger=None, materialized: Optional[Materialized] = None,
                  *, merge_separator: str = "+") -> "KTable":
        """``aggregate(initializer, aggregator, sessionMerger[, materialized])``; the merger
        ``(key, aggregate1, aggregate2) -> aggregate`` combines two sessions a record bridges.
        ``initializer`` may instead be a named aggregation (``merge_separator``: the separator of
        ``string_adder``'s merger) or an :class:`Aggregation`, with no aggregator and merger."""
        return self._aggregate(initializer, aggregator, session_merger, materialized, merge_separator, session=True)

    def _spec(self, **fields):
        w = self._windows
        return SessionAggregateSpec(gap_ms=w.gap_ms, grace_ms=w.grace_ms, **fields)


class KTable(_DslObject):
    """Kafka's ``KTable``: ``filter``, ``filter_not``, ``map_values``, ``group_by``, ``join`` /
    ``left_join`` / ``outer_join`` with a KTable (``join`` / ``left_join`` also on a foreign key),
    ``suppress``, ``to_stream()``, and format 1's ``enable_sending_old_values()``."""

    def filter(self, predicate) -> "KTable":
        """``KTable#filter(predicate)``: a row that does not pass becomes a delete."""
        return self._graph(KTable, "filter", pred_arg(predicate, self._where("filter")), "filter(...)")

    def filter_not(self, predicate) -> "KTable":
        """``KTable#filterNot(predicate)``."""
        return self._graph(KTable, "filter_not", pred_arg(predicate, self._where("filter_not")), "filter_not(...)")

    def map_values(self, mapper) -> "KTable":
        """``KTable#mapValues(mapper)``: ``mapper(value)`` or ``mapper(key, value)`` (or an EXPR) of
        every non-null value; None turns the row into a delete."""
        arg = expr_arg(mapper, self._where("map_values"), "mapper", value_only=True)
        return self._graph(KTable, "map_values", arg, "map_values(...)")

    def group_by(self, selector) -> "KGroupedTable":
        """``KTable#groupBy(selector)``: ``selector(key, value) -> (group key, value)`` (a
        ``KeyValue`` or any pair), or ``{"key": EXPR[, "value": EXPR]}``."""
        arg = key_value_arg(selector, self._where("group_by"), "selector", value_default=True)
        return self._graph(KGroupedTable, "group_by", arg, "group_by(...)")

    def join(self, other: "KTable", joiner, foreign_key_joiner=None) -> "KTable":
        """``KTable#join(other, joiner)``, or the foreign-key join ``KTable#join(other,
        foreignKeyExtractor, joiner)`` (KIP-213): ``join(other, extractor, joiner)``, the
        extractor ``value -> foreign key`` or an EXPR of the value."""
        if foreign_key_joiner is not None:
            return self._join("inner", "join", other, foreign_key_joiner, joiner)
        return self._join("inner", "join", other, joiner)

    def left_join(self, other: "KTable", joiner, foreign_key_joiner=None) -> "KTable":
        """``KTable#leftJoin(other, joiner)`` / ``KTable#leftJoin(other, foreignKeyExtractor, joiner)``."""
        if foreign_key_joiner is not None:
            return self._join("left", "left_join", other, foreign_key_joiner, joiner)
        return self._join("left", "left_join", other, joiner)

    def outer_join(self, other: "KTable", joiner) -> "KTable":
        """``KTable#outerJoin(other, joiner)``."""
        return self._join("outer", "outer_join", other, joiner)

    def _join(self, join_type, method, other, joiner, foreign_key=None) -> "KTable":
        _same_builder(self, other)
        if not isinstance(other, KTable):
            raise TypeError(f"KTable#{method} joins a KTable, got {other!r} (a KStream joins a KTable, not the reverse)")
        fields = joiner_fields(joiner)
        graph_arg = graph_joiner_arg(joiner)
        call_method = f"{self._call.method}.{method}({other._call.method}, ...)"
        if foreign_key is not None:
            fk = foreign_key_arg(foreign_key, self._where(method) + ".foreign_key")
            graph_arg = GraphArg({**graph_arg.json, "foreign_key": fk.json}, {**graph_arg.callables, **fk.callables},
                                 graph_arg.users + fk.users)
            call = self._builder._call(method, graph_arg, self._call, other._call, method=call_method)
            return KTable(self._builder, None, call)
        nodes = (self._node, other._node)
        windowed = self._call.windowed or other._call.windowed or isinstance(other._node, _ToTable)
        format1_only = None
        if windowed:
            # graphs join plain keys only: a join of windowed tables is format 1's windowed_table_join
            if None in nodes:
                raise TopologyError("KTable." + method, "a join needs plain keys; kssim joins windowed tables only "
                                                        "as the join of two windowed aggregations (format 1's "
                                                        "windowed_table_join)")
            if any(isinstance(node, _Source) for node in nodes):
                raise TopologyError("KTable." + method, "kssim models table-table joins of two source tables, or of "
                                                        "two windowed aggregations; this joins one of each")
            spec = _windowed_table_join_spec(method, join_type, nodes, fields)
            format1_only = "a join of windowed tables (format 1's windowed_table_join)"
        elif all(isinstance(node, _Source) for node in nodes):
            spec = TableTableJoinSpec(join=join_type, left_table=nodes[0].table, right_table=nodes[1].table, **fields)
        else:
            spec = None
        call = self._builder._call(method, graph_arg, self._call, other._call, method=call_method,
                                   format1_only=format1_only)
        if spec is None:
            return KTable(self._builder, None, call)
        return KTable(self._builder, self._builder._add_operator(spec, nodes, method), call)

    def suppress(self, suppressed: Suppressed) -> "KTable":
        """``KTable#suppress(suppressed)`` (KIP-328, 2.1+): ``Suppressed.until_window_closes``
        (windowed keys only) or ``until_time_limit``."""
        if not isinstance(suppressed, Suppressed):
            raise TypeError(f"suppress takes a Suppressed, got {suppressed!r}")
        node = self._node
        call = self._builder._call("suppress", GraphArg(suppress_json(suppressed.spec)), self._call,
                                   method=f"{self._call.method}.suppress(...)")
        if isinstance(node, _Operator) and isinstance(node.spec, _TABLE_RESULT_SPECS):
            check_with_newest_api(attrs.evolve(node.spec, suppress=suppressed.spec))
            return KTable(self._builder, _Suppress(node, suppressed.spec), call)
        if suppressed.spec.until == "window_close" and not self._call.windowed:
            raise TopologyError("KTable.suppress", "Suppressed.untilWindowCloses needs a table with windowed keys "
                                                   "(Kafka: 'Window close time is only defined for windowed "
                                                   "computations'); use Suppressed.until_time_limit")
        return KTable(self._builder, None, call)

    def enable_sending_old_values(self) -> "KTable":
        """Ask for the result's old values, as a downstream operator does through
        ``KTableImpl#enableSendingOldValues`` (e.g. an aggregation): the spec's ``send_old_values``.
        It can change what the processors upstream suppress; output records then carry
        ``old_value``. On a suppressed table it reaches the operator above, as Kafka's suppress
        processor passes the request on. Returns this table. Format 1 only: a topology graph
        decides old values as Kafka's DSL does."""
        node = self._node.parents[0] if isinstance(self._node, _Suppress) else self._node
        if not isinstance(node, _Operator) or not isinstance(node.spec, _TABLE_RESULT_SPECS):
            raise TopologyError("KTable.enable_sending_old_values",
                                "kssim models sending old values on the result of a table-table join, a windowed "
                                "aggregation or a windowed-table join only")
        node.spec = attrs.evolve(node.spec, send_old_values=True)
        self._builder._format1_only.append("enable_sending_old_values()")
        return self

    def to_stream(self) -> KStream:
        """``KTable#toStream()``: the changelog as a stream (new values only, as Kafka)."""
        call = self._builder._call("to_stream", GraphArg({}), self._call, method=f"{self._call.method}.to_stream()")
        return KStream(self._builder, self._node, call)


def _windowed_table_join_spec(method: str, join_type: str, nodes: tuple, fields: dict) -> WindowedTableJoinSpec:
    """The spec of a join of two windowed aggregations (seed 003's "WTable" join), the right one
    possibly shifted; what the scenario's ``windowed_table_join`` cannot say is rejected."""
    where = "KTable." + method
    left, right = nodes
    shift_ms = 0
    if isinstance(right, _ToTable):
        shift_ms = right.parents[0].shift_ms
        right = right.parents[0].parents[0]
        if shift_ms == 0:
            raise TopologyError(where, "a shift of 0 is the direct join of the two windowed tables (shift_ms 0): "
                                       "join them without to_stream().map(...).to_table()")
    sides = []
    for side, node in (("left", left), ("right", right)):
        if isinstance(node, _Suppress):
            raise TopologyError(where, f"the {side} table is suppressed: kssim models suppress on the join's result only")
        if not isinstance(node, _Operator) or not isinstance(node.spec, WINDOWED_AGGREGATE_SPECS):
            raise TopologyError(where, f"kssim models joins of two source tables or of two windowed aggregations; the "
                                       f"{side} table is {node.describe()}")
        spec = node.spec
        if not isinstance(spec, WindowAggregateSpec):
            raise TopologyError(where, "kssim models joins of windowed tables over TimeWindows only; the "
                                       f"{side} table is a {spec.operator}")
        for field, default, what in (("emit", "on_update", "an emit strategy"), ("retention_ms", None, "a retention"),
                                     ("send_old_values", False, "sending old values")):
            if getattr(spec, field) != default:
                raise TopologyError(where, f"the {side} windowed table has {what} ({field} {getattr(spec, field)!r}); "
                                           "the windowed-table join's inputs are plain aggregations (on window update, "
                                           "default retention)")
        sides.append(spec)
    left_spec, right_spec = sides
    if left_spec.window != right_spec.window:
        raise TopologyError(where, f"both windowed tables must use the same TimeWindows: left {left_spec.window}, "
                                   f"right {right_spec.window}")
    if left_spec.merge_separator != right_spec.merge_separator:
        raise TopologyError(where, "both windowed tables' named aggregations must use the same merge_separator")
    return WindowedTableJoinSpec(join=join_type, window=left_spec.window, left_aggregation=left_spec.aggregation,
                                 right_aggregation=right_spec.aggregation, shift_ms=shift_ms,
                                 merge_separator=left_spec.merge_separator, **fields)


def _same_builder(this, other):
    builder = getattr(other, "_builder", None)
    if builder is not None and builder is not this._builder:
        raise TopologyError("join", "both sides of a join must come from the same StreamsBuilder")


class Topology:
    """Kafka's ``Topology``, as ``StreamsBuilder.build()`` returns it: ``spec`` is its topology
    spec (what a scenario file's ``topology`` parses to): format 1's operator spec or a
    :class:`reference.model.graph.nodes.GraphTopology`. ``Topology(spec)`` wraps a spec read
    from a scenario file, so the driver can run it too."""

    def __init__(self, spec):
        if not isinstance(spec, _SPEC_TYPES + (GraphTopology,)):
            raise TypeError("a Topology wraps the spec of a join (stream-stream, stream-table, table-table, "
                            f"windowed-table), of a windowed aggregation or a topology graph, got {spec!r}")
        self.spec = spec

    @property
    def is_graph(self) -> bool:
        """Whether this is a topology graph (else one of format 1's operators)."""
        return isinstance(self.spec, GraphTopology)

    def describe(self, release: Optional[str] = None) -> str:
        """A topology graph: the text Kafka Streams' ``Topology#describe()`` prints for it (at
        ``release``; every modelled release prints 3.9's names today). Format 1's operator:
        Python code that builds it with this API (``b`` is a StreamsBuilder)."""
        if self.is_graph:
            return self.spec.describe(release or "3.9")
        from kssim.reference.api.export import describe_spec

        return describe_spec(self.spec)

    def to_scenario(self, inputs, *, name: str, release: Optional[str] = None, store: str = "rocksdb",
                    emit_interval_ms: int = 0, expected=None, checkpoints=None, description: str = "",
                    source: str = "", caching: bool = False) -> dict:
        """This topology and ``inputs`` as a scenario document, ready for ``json.dump``.

        ``inputs``: ``(topic, key, value, ts)`` tuples, dicts or input records. ``expected``
        (optional): ``(key, value, ts)`` tuples (a graph: ``(topic, key, value, ts)``, or three
        when it writes one topic), dicts or the driver's ``TestRecord`` s (whose input index
        becomes ``after_input``). ``caching``: a graph's ``config.caching``. The document is
        checked by loading it back. Raises :class:`UnsavableTopologyError` when a joiner,
        mapper, predicate or aggregation is a Python callable.
        """
        from kssim.reference.api.export import scenario_document

        return scenario_document(self.spec, inputs, name=name, release=release, store=store,
                                 emit_interval_ms=emit_interval_ms, expected=expected, checkpoints=checkpoints,
                                 description=description, source=source, caching=caching)

    def __eq__(self, other):
        return isinstance(other, Topology) and other.spec == self.spec

    def __hash__(self):
        return hash(self.spec)

    def __repr__(self):
        return f"Topology({self.spec!r})"
