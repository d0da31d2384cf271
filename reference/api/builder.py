"""``StreamsBuilder``, ``KStream``, ``KTable``, ``KGroupedStream``, the windowed streams and
``Topology``: Kafka Streams' DSL for the operators kssim models, building exactly the specs a
scenario file describes (:mod:`reference.model.topology`).

A kssim topology is one operator writing topic ``output``:

- a join of topics ``left`` and ``right``:

  - ``builder.stream("left").join / left_join / outer_join(builder.stream("right"), joiner, windows).to("output")``
  - ``builder.stream("left").join / left_join(builder.table("right"[, materialized]), joiner[, joined]).to("output")``
  - ``builder.table("left").join / left_join / outer_join(builder.table("right"), joiner)[.suppress(s)].to_stream().to("output")``

- a windowed aggregation of topic ``input``:
  ``builder.stream("input").group_by_key().windowed_by(TimeWindows | SessionWindows | SlidingWindows)
  [.emit_strategy(e)].count() / aggregate(...) / reduce(...)[.suppress(s)].to_stream().to("output")``;
- a join of two windowed tables (seed 003's "WTable" join): ``left`` and ``right`` each aggregated
  over the same ``TimeWindows``, joined with ``join / left_join / outer_join``; the right table may
  first be shifted, ``right.to_stream().map(KeyValueMapper.shift_window(ms)).to_table()``.

Each DSL method checks its spec at once (as Kafka's DSL methods throw at the call) with
:func:`reference.model.topology.check_topology` under the newest modelled release that has the API
used; ``build()`` checks the shape (one operator, its inputs, its sink); the driver re-checks the
spec under its release.
"""
from __future__ import annotations

from typing import List, Optional

import attrs

from reference.model.aggregations import Aggregation
from reference.model.errors import TopologyError
from reference.model.topology import (
    OPERATOR_INPUT_TOPICS, SessionAggregateSpec, SlidingAggregateSpec, StreamStreamJoinSpec, StreamTableJoinSpec,
    TableSpec, TableTableJoinSpec, WindowAggregateSpec, WindowedTableJoinSpec,
)
from reference.api.options import (
    EmitStrategy, JoinWindows, Joined, KeyValueMapper, Materialized, SessionWindows, SlidingWindows, Suppressed,
    TimeWindows, callable_aggregate_fields, callable_reduce_fields, check_with_newest_api, joiner_fields,
    materialized_retention, named_aggregate_fields, named_reduce_fields,
)

OUTPUT_TOPIC = "output"
JOIN_SPECS = (StreamStreamJoinSpec, StreamTableJoinSpec, TableTableJoinSpec)
WINDOWED_AGGREGATE_SPECS = (SessionAggregateSpec, WindowAggregateSpec, SlidingAggregateSpec)
_SPEC_TYPES = JOIN_SPECS + WINDOWED_AGGREGATE_SPECS + (WindowedTableJoinSpec,)
#: What each join reads: a stream or a table source per side.
_INPUT_KINDS = {
    "stream_stream_join": ("KStream", "KStream"),
    "stream_table_join": ("KStream", "KTable"),
    "table_table_join": ("KTable", "KTable"),
}
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

class StreamsBuilder:
    """Kafka's ``StreamsBuilder``: ``stream(topic)``, ``table(topic[, materialized])``, ``build()``."""

    def __init__(self):
        self._sources = {}
        self._operators: List[_Operator] = []
        self._sinks: List[tuple] = []

    def stream(self, topic: str) -> "KStream":
        """``StreamsBuilder#stream(topic)``."""
        return KStream(self, self._add_source(topic, None))

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
        return KTable(self, self._add_source(topic, table))

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

    def build(self) -> "Topology":
        """``StreamsBuilder#build()``: the topology, if it is one operator reading the operator's
        input topics (``left`` and ``right``, or ``input``) and written to ``output`` (the only
        topologies kssim models)."""
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


def _check_input(where: str, whose: str, node, topic: str, kind: str) -> None:
    if not isinstance(node, _Source) or node.topic != topic:
        raise TopologyError(where, f"the {whose} input must be read from topic {topic!r}, got {node.describe()}")
    if node.describe() != f"{kind}({topic})":
        # a table turned into a stream (toStream) is not a stream source: it drops what a
        # KTable source drops, so the scenario's operator would not describe it
        raise TopologyError(where, f"the {whose} input must be {kind}({topic}) "
                                   f"(builder.{kind[1:].lower()}({topic!r})), got {node.describe()}")


class KStream:
    """Kafka's ``KStream``: ``join`` / ``left_join`` / ``outer_join`` with a KStream (``JoinWindows``),
    ``join`` / ``left_join`` with a KTable (optional ``Joined``), ``group_by_key()``, ``to(topic)``,
    and for a shifted windowed-table join ``map(KeyValueMapper.shift_window(ms))`` and ``to_table()``."""

    def __init__(self, builder: StreamsBuilder, node):
        self._builder = builder
        self._node = node

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
        if isinstance(other, KStream):
            if joined is not None or isinstance(windows, Joined):
                raise TypeError(f"a KStream-KStream {method} takes JoinWindows, not Joined")
            if not isinstance(windows, JoinWindows):
                raise TypeError(f"a KStream-KStream {method} needs JoinWindows (windows can't be null), got {windows!r}")
            spec = StreamStreamJoinSpec(join=join_type, window=windows.spec, window_api=windows.window_api, **fields)
        elif isinstance(other, KTable):
            if isinstance(windows, Joined) and joined is None:
                windows, joined = None, windows  # positional, as Kafka's join(table, joiner, joined)
            if windows is not None:
                raise TypeError(f"a KStream-KTable {method} takes an optional Joined, not {windows!r}")
            if joined is not None and not isinstance(joined, Joined):
                raise TypeError(f"a KStream-KTable {method} takes a Joined, got {joined!r}")
            if not isinstance(other._node, _Source):
                raise TopologyError("KStream." + method, "the table of a stream-table join must be a source table "
                                                         "(builder.table(topic))")
            spec = StreamTableJoinSpec(join=join_type, table=other._node.table,
                                       grace_ms=joined.grace_ms if joined is not None else None, **fields)
        else:
            raise TypeError(f"KStream#{method} joins a KStream or a KTable, got {other!r}")
        return KStream(self._builder, self._builder._add_operator(spec, (self._node, other._node), method))

    def group_by_key(self) -> "KGroupedStream":
        """``KStream#groupByKey()``: group by the record key (no repartition) for an aggregation."""
        return KGroupedStream(self._builder, self._node)

    def map(self, mapper) -> "KStream":
        """``KStream#map(mapper)``; kssim models one mapper, ``KeyValueMapper.shift_window(ms)`` on a
        windowed aggregation's stream (the right side of a shifted windowed-table join)."""
        if not isinstance(mapper, KeyValueMapper):
            raise TopologyError("KStream.map", "kssim models KStream#map only as KeyValueMapper.shift_window(ms) "
                                               f"(a shifted windowed-table join), got {mapper!r}")
        node = self._node
        if not (isinstance(node, _Operator) and isinstance(node.spec, WindowAggregateSpec)):
            raise TopologyError("KStream.map", "KeyValueMapper.shift_window maps the windowed keys of a time-windowed "
                                               f"aggregation's stream (table.to_stream()), not {node.describe()}")
        return KStream(self._builder, _ShiftWindows(node, mapper.shift_ms))

    def to_table(self) -> "KTable":
        """``KStream#toTable()`` (KIP-523, 2.5+): a key-value table of the stream, never expiring;
        kssim models it after ``map(KeyValueMapper.shift_window(ms))``."""
        if not isinstance(self._node, _ShiftWindows):
            raise TopologyError("KStream.to_table", "kssim models KStream#toTable only after "
                                                    f"map(KeyValueMapper.shift_window(ms)), not on {self._node.describe()}")
        return KTable(self._builder, _ToTable(self._node))

    def to(self, topic: str) -> None:
        """``KStream#to(topic)``."""
        self._builder._sinks.append((self._node, topic))


class KGroupedStream:
    """Kafka's ``KGroupedStream`` (``KStream.group_by_key()``): ``windowed_by`` windows."""

    def __init__(self, builder: StreamsBuilder, node):
        self._builder = builder
        self._node = node

    def windowed_by(self, windows):
        """``KGroupedStream#windowedBy(windows)``: a :class:`TimeWindowedKStream` for ``TimeWindows``
        and ``SlidingWindows`` (KIP-450, 2.7+), a :class:`SessionWindowedKStream` for
        ``SessionWindows`` (KIP-94)."""
        if isinstance(windows, (TimeWindows, SlidingWindows)):
            return TimeWindowedKStream(self._builder, self._node, windows)
        if isinstance(windows, SessionWindows):
            return SessionWindowedKStream(self._builder, self._node, windows)
        if windows is None:
            raise TypeError("windows can't be null")
        raise TypeError(f"windowed_by takes TimeWindows, SessionWindows or SlidingWindows, got {windows!r}")


class _WindowedKStream:
    """What ``TimeWindowedKStream`` and ``SessionWindowedKStream`` share: the emit strategy,
    ``count`` and ``reduce``; each builds the spec of its windows."""

    def __init__(self, builder: StreamsBuilder, node, windows):
        self._builder = builder
        self._node = node
        self._windows = windows
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
        return KTable(self._builder, self._builder._add_operator(spec, (self._node,), method))

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


class KTable:
    """Kafka's ``KTable``: ``join`` / ``left_join`` / ``outer_join`` with a KTable, ``to_stream()``,
    ``suppress(suppressed)`` and ``enable_sending_old_values()`` on an operator's result."""

    def __init__(self, builder: StreamsBuilder, node):
        self._builder = builder
        self._node = node

    def join(self, other: "KTable", joiner) -> "KTable":
        """``KTable#join(other, joiner)``."""
        return self._join("inner", "join", other, joiner)

    def left_join(self, other: "KTable", joiner) -> "KTable":
        """``KTable#leftJoin(other, joiner)``."""
        return self._join("left", "left_join", other, joiner)

    def outer_join(self, other: "KTable", joiner) -> "KTable":
        """``KTable#outerJoin(other, joiner)``."""
        return self._join("outer", "outer_join", other, joiner)

    def _join(self, join_type, method, other, joiner) -> "KTable":
        _same_builder(self, other)
        if not isinstance(other, KTable):
            raise TypeError(f"KTable#{method} joins a KTable, got {other!r} (a KStream joins a KTable, not the reverse)")
        fields = joiner_fields(joiner)
        nodes = (self._node, other._node)
        if all(isinstance(node, _Source) for node in nodes):
            spec = TableTableJoinSpec(join=join_type, left_table=nodes[0].table, right_table=nodes[1].table, **fields)
        elif any(isinstance(node, _Source) for node in nodes):
            raise TopologyError("KTable." + method, "kssim models table-table joins of two source tables, or of two "
                                                    "windowed aggregations; this joins one of each")
        else:
            spec = _windowed_table_join_spec(method, join_type, nodes, fields)
        return KTable(self._builder, self._builder._add_operator(spec, nodes, method))

    def suppress(self, suppressed: Suppressed) -> "KTable":
        """``KTable#suppress(suppressed)`` (KIP-328, 2.1+) on an operator's table result: a
        windowed aggregation or windowed-table join (``Suppressed.until_window_closes`` or
        ``until_time_limit``) or a table-table join (``until_time_limit``)."""
        if not isinstance(suppressed, Suppressed):
            raise TypeError(f"suppress takes a Suppressed, got {suppressed!r}")
        node = self._node
        if isinstance(node, _Suppress):
            raise TopologyError("KTable.suppress", "kssim models one suppress, on the operator's result")
        if not (isinstance(node, _Operator) and isinstance(node.spec, _TABLE_RESULT_SPECS)):
            raise TopologyError("KTable.suppress", "kssim models suppress on the result of a table-table join, a "
                                                   f"windowed aggregation or a windowed-table join, not {node.describe()}")
        check_with_newest_api(attrs.evolve(node.spec, suppress=suppressed.spec))
        return KTable(self._builder, _Suppress(node, suppressed.spec))

    def enable_sending_old_values(self) -> "KTable":
        """Ask for the result's old values, as a downstream operator does through
        ``KTableImpl#enableSendingOldValues`` (e.g. an aggregation): the spec's ``send_old_values``.
        It can change what the processors upstream suppress; output records then carry
        ``old_value``. On a suppressed table it reaches the operator above, as Kafka's suppress
        processor passes the request on. Returns this table."""
        node = self._node.parents[0] if isinstance(self._node, _Suppress) else self._node
        if not isinstance(node, _Operator) or not isinstance(node.spec, _TABLE_RESULT_SPECS):
            raise TopologyError("KTable.enable_sending_old_values",
                                "kssim models sending old values on the result of a table-table join, a windowed "
                                "aggregation or a windowed-table join only")
        node.spec = attrs.evolve(node.spec, send_old_values=True)
        return self

    def to_stream(self) -> KStream:
        """``KTable#toStream()``: the changelog as a stream (new values only, as Kafka)."""
        return KStream(self._builder, self._node)


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
    spec (what a scenario file's ``topology`` parses to). ``Topology(spec)`` wraps a spec read
    from a scenario file, so the driver can run it too."""

    def __init__(self, spec):
        if not isinstance(spec, _SPEC_TYPES):
            raise TypeError("a Topology wraps the spec of a join (stream-stream, stream-table, table-table, "
                            f"windowed-table) or of a windowed aggregation, got {spec!r}")
        self.spec = spec

    def describe(self) -> str:
        """Python code that builds this topology with this API (``b`` is a StreamsBuilder)."""
        from reference.api.export import describe_spec

        return describe_spec(self.spec)

    def to_scenario(self, inputs, *, name: str, release: Optional[str] = None, store: str = "rocksdb",
                    emit_interval_ms: int = 0, expected=None, checkpoints=None, description: str = "",
                    source: str = "") -> dict:
        """This topology and ``inputs`` as a scenario document (format 1), ready for ``json.dump``.

        ``inputs``: ``(topic, key, value, ts)`` tuples, dicts or input records. ``expected``
        (optional): ``(key, value, ts)`` tuples, dicts or the driver's ``TestRecord`` s (whose
        input index becomes ``after_input``). The document is checked by loading it back.
        Raises :class:`UnsavableTopologyError` when a joiner or aggregation is a Python callable.
        """
        from reference.api.export import scenario_document

        return scenario_document(self.spec, inputs, name=name, release=release, store=store,
                                 emit_interval_ms=emit_interval_ms, expected=expected, checkpoints=checkpoints,
                                 description=description, source=source)

    def __eq__(self, other):
        return isinstance(other, Topology) and other.spec == self.spec

    def __hash__(self):
        return hash(self.spec)

    def __repr__(self):
        return f"Topology({self.spec!r})"
