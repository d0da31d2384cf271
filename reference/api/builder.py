"""``StreamsBuilder``, ``KStream``, ``KTable`` and ``Topology``: Kafka Streams' DSL for the three
joins kssim models, building exactly the specs a scenario file describes (:mod:`reference.model.topology`).

A kssim topology is one join reading topics ``left`` and ``right`` and writing ``output``:

- ``builder.stream("left").join / left_join / outer_join(builder.stream("right"), joiner, windows).to("output")``
- ``builder.stream("left").join / left_join(builder.table("right"[, materialized]), joiner[, joined]).to("output")``
- ``builder.table("left").join / left_join / outer_join(builder.table("right"), joiner).to_stream().to("output")``

Each join method checks its spec at once (as Kafka's DSL methods throw at the call) with
:func:`reference.model.topology.check_topology` under the newest modelled release; ``build()`` checks the
shape (one join, its inputs, its sink); the driver re-checks the spec under its release.
"""
from __future__ import annotations

from typing import List, Optional

import attrs

from reference.model.errors import TopologyError
from reference.model.topology import OPERATOR_INPUT_TOPICS, StreamStreamJoinSpec, StreamTableJoinSpec, TableSpec, TableTableJoinSpec
from reference.api.options import JoinWindows, Joined, Materialized, check_with_newest_api, joiner_fields

OUTPUT_TOPIC = "output"
_SPEC_TYPES = (StreamStreamJoinSpec, StreamTableJoinSpec, TableTableJoinSpec)
#: What each join reads: a stream or a table source per side.
_INPUT_KINDS = {
    "stream_stream_join": ("KStream", "KStream"),
    "stream_table_join": ("KStream", "KTable"),
    "table_table_join": ("KTable", "KTable"),
}


class _Source:
    """A source node: a topic read as a KStream, or as a KTable materialized in ``table``."""

    __slots__ = ("topic", "table")

    def __init__(self, topic: str, table: Optional[TableSpec]):
        self.topic = topic
        self.table = table

    def describe(self) -> str:
        return f"KTable({self.topic})" if self.table is not None else f"KStream({self.topic})"


class _Join:
    """A join node: its two input nodes and the spec it builds. ``spec`` is replaced (never
    mutated) when ``enable_sending_old_values`` is called on a table-table join result."""

    __slots__ = ("spec", "left", "right", "method")

    def __init__(self, spec, left, right, method: str):
        self.spec = spec
        self.left = left
        self.right = right
        self.method = method

    def describe(self) -> str:
        return f"{self.left.describe()}.{self.method}({self.right.describe()})"


class StreamsBuilder:
    """Kafka's ``StreamsBuilder``: ``stream(topic)``, ``table(topic[, materialized])``, ``build()``."""

    def __init__(self):
        self._sources = {}
        self._joins: List[_Join] = []
        self._sinks: List[tuple] = []

    def stream(self, topic: str) -> "KStream":
        """``StreamsBuilder#stream(topic)``."""
        return KStream(self, self._add_source(topic, None))

    def table(self, topic: str, materialized: Optional[Materialized] = None) -> "KTable":
        """``StreamsBuilder#table(topic[, materialized])``; a versioned store (KIP-889) comes from
        ``Materialized.as_(Stores.persistent_versioned_key_value_store(name, retention))``."""
        if materialized is None:
            table = TableSpec()
        elif isinstance(materialized, Materialized):
            store = materialized.store
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

    def _add_join(self, spec, left, right, method) -> _Join:
        check_with_newest_api(spec)
        join = _Join(spec, left, right, method)
        self._joins.append(join)
        return join

    def build(self) -> "Topology":
        """``StreamsBuilder#build()``: the topology, if it is one join of ``left`` and ``right``
        written to ``output`` (the only topologies kssim models)."""
        where = "StreamsBuilder.build"
        if len(self._joins) != 1:
            raise TopologyError(where, f"a kssim topology is exactly one join (stream-stream, stream-table or "
                                       f"table-table), this builder has {len(self._joins)}")
        join = self._joins[0]
        if len(self._sinks) != 1:
            raise TopologyError(where, f"the join's result must be written to topic '{OUTPUT_TOPIC}' exactly once "
                                       f"(with .to('{OUTPUT_TOPIC}'), after .to_stream() for a table join); "
                                       f"found {len(self._sinks)} sink(s)")
        node, topic = self._sinks[0]
        if node is not join:
            raise TopologyError(where, f"the sink writes {node.describe()}, not the join's result")
        if topic != OUTPUT_TOPIC:
            raise TopologyError(where, f"the join's result must go to topic '{OUTPUT_TOPIC}', not {topic!r}")
        expected = OPERATOR_INPUT_TOPICS[join.spec.operator]
        kinds = _INPUT_KINDS[join.spec.operator]
        for side, node, topic, kind in zip(("left", "right"), (join.left, join.right), expected, kinds):
            if not isinstance(node, _Source) or node.topic != topic:
                raise TopologyError(where, f"the join's {side} input must be read from topic {topic!r}, "
                                           f"got {node.describe()}")
            if node.describe() != f"{kind}({topic})":
                # a table turned into a stream (toStream) is not a stream source: it drops what a
                # KTable source drops, so the scenario's operator would not describe it
                raise TopologyError(where, f"the join's {side} input must be {kind}({topic}) "
                                           f"(builder.{kind[1:].lower()}({topic!r})), got {node.describe()}")
        unused = sorted(t for t in self._sources if t not in expected)
        if unused:
            raise TopologyError(where, f"kssim topologies read only topics {', '.join(expected)}; "
                                       f"also read: {', '.join(unused)}")
        return Topology(join.spec)


class KStream:
    """Kafka's ``KStream``: ``join`` / ``left_join`` / ``outer_join`` with a KStream (``JoinWindows``),
    ``join`` / ``left_join`` with a KTable (optional ``Joined``), and ``to(topic)``."""

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
        return KStream(self._builder, self._builder._add_join(spec, self._node, other._node, method))

    def to(self, topic: str) -> None:
        """``KStream#to(topic)``."""
        self._builder._sinks.append((self._node, topic))


class KTable:
    """Kafka's ``KTable``: ``join`` / ``left_join`` / ``outer_join`` with a KTable, ``to_stream()``,
    and ``enable_sending_old_values()`` on a join result."""

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
        tables = []
        for node in (self._node, other._node):
            if not isinstance(node, _Source):
                raise TopologyError("KTable." + method, "kssim models table-table joins of two source tables")
            tables.append(node.table)
        spec = TableTableJoinSpec(join=join_type, left_table=tables[0], right_table=tables[1], **fields)
        return KTable(self._builder, self._builder._add_join(spec, self._node, other._node, method))

    def enable_sending_old_values(self) -> "KTable":
        """Ask for the join result's old values, as a downstream operator does through
        ``KTableImpl#enableSendingOldValues`` (e.g. an aggregation): the spec's ``send_old_values``.
        It can change what the join processors upstream suppress; output records then carry
        ``old_value``. Returns this table."""
        node = self._node
        if not isinstance(node, _Join) or not isinstance(node.spec, TableTableJoinSpec):
            raise TopologyError("KTable.enable_sending_old_values",
                                "kssim models sending old values on the result of a table-table join only")
        node.spec = attrs.evolve(node.spec, send_old_values=True)
        return self

    def to_stream(self) -> KStream:
        """``KTable#toStream()``: the changelog as a stream (new values only, as Kafka)."""
        return KStream(self._builder, self._node)


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
            raise TypeError(f"a Topology wraps a stream-stream, stream-table or table-table join spec, got {spec!r}")
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
        Raises :class:`UnsavableTopologyError` when the joiner is a Python callable.
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
