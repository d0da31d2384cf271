"""Hypothesis strategies for topology graphs (``../shared/spec/topology-graphs.md``): random,
*valid* DSL programs with inputs, for ``kssim difftest --graphs``.

A graph grows from one or two sources by a small grammar: each step picks an open node (one whose
kind takes more operations, mostly one of the newest, so chains form, sometimes an older one, so
branches form) and one of the operations its kind accepts (:data:`OPERATIONS` of the shared model
says which), restricted to what every release under test has (:class:`GraphCaps`) and to the
operations that take windowed keys where the node has them. Grouping is one production: a
``group_by_key``/``group_by``, for a grouped stream sometimes a ``windowed_by``, then ``count``,
``reduce`` or ``aggregate``, so no grouped node is left without its aggregation. A binary
operation's other side is a new source or an earlier node of the right kind. Finally every open
leaf is closed with a sink (a table through ``to_stream``), so every branch is observable.

Expressions come from the spec's language (:func:`expressions`, :func:`predicates`), biased to
the fields the inputs' values have (``{"g": .., "n": .., "fk": .., "items": [..]}``, the
corpus's shape), so that groups, joins and filters meet. Inputs have few keys per topic (the
right side of a foreign-key join is keyed by foreign keys), null keys and values, ties,
out-of-order records and jumps (:func:`strategies.timestamps`).

Graphs are built valid; the loader (:func:`scenario_from_dict` at every release asked, which
runs ``compile_graph``'s release checks) confirms it, and a rare rejection (a combination the
grammar does not track, e.g. a suppress feeding old values before 2.3) is filtered.
"""
from __future__ import annotations

import copy
from typing import List, Optional

import attrs
from hypothesis import assume, strategies as st

from kssim.reference.model.errors import KssimError
from kssim.reference.model.graph import functions as fn
from kssim.reference.model.graph.expressions import CMP_OPS
from kssim.reference.model.graph.nodes import OPERATIONS, Kind
from kssim.reference.model.scenario import scenario_from_dict

from kssim.differential_tests.strategies import timestamps
from kssim.differential_tests.window_strategies import suppress_spec

GRAPH = "graph"  # the name difftest reports graph cases under (a graph topology's ``operator``)

#: every operation a generated graph may hold (the spec's operations table)
ALL_OPERATIONS = tuple(OPERATIONS)
#: operations that take a windowed key (the spec: "Windowed keys are allowed only where ..."); the
#: others need plain keys
TAKE_WINDOWED_KEYS = frozenset(("filter", "filter_not", "map_values", "flat_map_values", "select_key", "map",
                                "to_stream", "suppress", "to"))
#: operations after which a windowed key stays windowed
KEEP_WINDOWED_KEYS = frozenset(("suppress", "to_stream", "filter", "filter_not", "map_values", "flat_map_values"))
#: the join operations, and which of them each join kind has
JOINS = ("join", "left_join", "outer_join")
_JOINS_OF = {"stream_stream": JOINS, "stream_table": ("join", "left_join"), "table_table": JOINS,
             "foreign_key": ("join", "left_join")}

#: the fields of generated values, and their small pools (so groups and joins meet)
GROUPS = ("a", "b", "c")
FOREIGN_KEYS = ("x", "y", "z")
#: per source topic, the keys its records get: plain keys, group names (a table joined after a
#: re-key by ``g``) or foreign keys (the right side of a foreign-key join)
KEY_POOLS = {"plain": ("k1", "k2", "k3"), "groups": GROUPS, "foreign": FOREIGN_KEYS}


@attrs.frozen
class GraphCaps:
    """What every release under test has, by the rules of ``reference.model.profiles``."""

    to_table: bool
    repartition: bool
    suppress: bool
    versioned: bool
    foreign_key: bool
    stream_table_grace: bool
    sliding: bool
    session: bool
    explicit_grace: bool
    legacy_grace: bool
    emit_on_close: bool
    time_difference: bool
    legacy_join_grace: bool
    in_memory: bool

    @classmethod
    def of(cls, profiles) -> "GraphCaps":
        every = lambda rule: all(getattr(p, rule) for p in profiles)  # noqa: E731
        return cls(
            to_table=every("kstream_to_table"), repartition=every("kstream_repartition"),
            suppress=every("suppress_operator"), versioned=every("versioned_tables"),
            foreign_key=every("foreign_key_joins"), stream_table_grace=every("stream_table_grace"),
            sliding=every("sliding_windows"), session=every("session_windows"),
            explicit_grace=every("windowed_grace"),
            legacy_grace=not any(p.legacy_window_builders_removed for p in profiles),
            emit_on_close=every("emit_on_window_close"), time_difference=every("time_difference_windows"),
            legacy_join_grace=every("join_window_grace"),
            in_memory=every("in_memory_window_stores") and every("stream_joined_store_suppliers"))

    @property
    def windows(self) -> bool:
        """Can a window be written for every release (an explicit grace, or the legacy default
        one: no release pair spanning 2.0 and 4.0 has either)?"""
        return self.explicit_grace or self.legacy_grace

    def has(self, operation: str) -> bool:
        """Does every release have ``operation`` (the node; a join's variants are asked apart)?"""
        needs = {"to_table": self.to_table, "repartition": self.repartition, "suppress": self.suppress}
        return needs.get(operation, True)


@attrs.frozen
class Slot:
    """What the grammar knows of a node it made: its kind, its windowed keys (None: plain; else
    the sort, which sinks sharing a topic must agree on), and, for a table read straight from a
    versioned source (through filters and mapValues only), that source's history retention (a
    stream-table join with a grace period needs it)."""

    kind: Kind
    windowed: Optional[tuple] = None
    versioned_retention: Optional[int] = None


class _Graph:
    """The graph under construction during one draw (scratch state: it never leaves the draw).
    Every node gets an id and, unless a source, an explicit ``from``; :func:`compact` removes
    the ones the spec does not need once the graph is complete."""

    def __init__(self):
        self.nodes: List[dict] = []
        self.slots: List[Slot] = []
        self.topics: dict = {}  # source topic -> key pool name
        self.children: List[int] = []  # per node, how many nodes read it

    def add(self, node: dict, slot: Slot, upstream: Optional[int] = None, other: Optional[int] = None) -> int:
        index = len(self.nodes)
        node = {**node, "id": f"n{index}"}
        if upstream is not None:
            node["from"] = self.nodes[upstream]["id"]
            self.children[upstream] += 1
        if other is not None:
            self.children[other] += 1
        self.nodes.append(node)
        self.slots.append(slot)
        self.children.append(0)
        return index

    def id_of(self, index: int) -> str:
        return self.nodes[index]["id"]

    def open_nodes(self) -> List[int]:
        return [i for i, s in enumerate(self.slots) if s.kind in (Kind.STREAM, Kind.TABLE)]


# --- expressions and predicates --------------------------------------------------------------------

_FIELDS = ("g", "n", "fk", "items")


def _const():
    return st.sampled_from((None, 0, 1, 2, 3, "a", "b", "c", "x", True)).map(lambda v: {"const": v})


@st.composite
def expressions(draw, depth: int = 2, key_fields=("key", "start", "end")):
    """An EXPR of the spec's language: every form reachable, mostly the ones that read the values'
    fields (``field`` of ``g``, ``n``, ``fk``, ``items``), nested at most ``depth`` deep."""
    leaves = st.one_of(
        st.sampled_from(("$key", "$value")),
        st.sampled_from(_FIELDS).map(lambda f: {"field": f}),
        st.sampled_from(key_fields).map(lambda f: {"key_field": f}),
        _const())
    if depth <= 0:
        return draw(leaves)
    sub = expressions(depth - 1, key_fields)
    form = draw(st.sampled_from(("leaf", "leaf", "field", "concat", "object", "list", "add", "mod")))
    if form == "leaf":
        return draw(leaves)
    if form == "field":
        return {"field": draw(st.sampled_from(_FIELDS))}
    if form == "concat":
        return {"concat": draw(st.lists(sub, min_size=1, max_size=3))}
    if form == "object":
        names = draw(st.lists(st.sampled_from(_FIELDS), min_size=1, max_size=3, unique=True))
        return {"object": {name: draw(sub) for name in names}}
    if form == "list":
        return {"list": draw(st.lists(sub, min_size=0, max_size=3))}
    if form == "add":
        return {"add": [draw(sub), draw(st.one_of(_const(), sub))]}
    return {"mod": [draw(sub), draw(st.sampled_from((2, 3, -2)))]}


def _group_key():
    """A key a group or re-key maps to: mostly a value field with few values, so groups collide."""
    return st.one_of(
        st.sampled_from(({"field": "g"}, {"field": "g"}, {"mod": [{"field": "n"}, 3]}, {"field": "fk"}, "$key",
                         {"concat": [{"field": "g"}, {"const": "-"}, {"mod": [{"field": "n"}, 2]}]},
                         {"object": {"g": {"field": "g"}}})),
        expressions(1))


def _value_expr():
    """A value mapper: mostly one that keeps the value's shape (the fields downstream reads)."""
    keep = {"object": {"g": {"field": "g"}, "n": {"add": [{"field": "n"}, {"const": 1}]}, "fk": {"field": "fk"}}}
    return st.one_of(
        st.sampled_from(("$value", keep, {"field": "n"}, {"list": ["$key", "$value"]},
                         {"concat": ["$key", {"const": ":"}, "$value"]})),
        expressions(2))


#: ``flat_map_values`` mappers: a list field (zero to two records), two copies, the value itself
#: (one record), a rebuilt one-element list, and null (no record)
FLAT_MAPPERS = ({"field": "items"}, {"list": ["$value", "$value"]}, "$value",
                {"list": [{"object": {"g": {"field": "g"}, "n": {"field": "n"}}}]}, {"const": None})


@st.composite
def predicates(draw, depth: int = 2):
    """A PRED: ``cmp`` (every operator) on a value field against a constant, ``is_null``, and
    ``not``/``and``/``or`` around them."""
    cmp = st.builds(lambda left, op, right: {"cmp": [left, op, right]},
                    st.sampled_from(({"field": "n"}, {"field": "g"}, "$value", {"field": "fk"}, "$key")),
                    st.sampled_from(CMP_OPS), st.one_of(_const(), st.sampled_from(({"const": 4}, {"field": "n"}))))
    leaf = st.one_of(cmp, cmp, st.sampled_from(_FIELDS + ("$value",)).map(
        lambda f: {"is_null": f if f == "$value" else {"field": f}}))
    if depth <= 0:
        return draw(leaf)
    form = draw(st.sampled_from(("leaf", "leaf", "leaf", "not", "and", "or")))
    if form == "leaf":
        return draw(leaf)
    if form == "not":
        return {"not": draw(predicates(depth - 1))}
    return {form: draw(st.lists(predicates(depth - 1), min_size=0, max_size=3))}


# --- windows, joins, aggregations -------------------------------------------------------------------

def _grace(draw, caps: GraphCaps, values=(0, 0, 2, 5)):
    """An explicit grace where every release has one, the legacy default (None) where every
    release still has it, sometimes either."""
    if not caps.explicit_grace:
        return None
    if caps.legacy_grace and draw(st.integers(0, 5)) == 0:
        return None
    return draw(st.sampled_from(values))


@st.composite
def window_arg(draw, caps: GraphCaps):
    """``windowed_by``'s argument: time (hopping or tumbling), sliding or session windows, emit
    on update or (3.3+) on window close."""
    types = ["time"] + (["sliding"] if caps.sliding else []) + (["session"] if caps.session else [])
    window_type = draw(st.sampled_from(types))
    if window_type == "time":
        size = draw(st.sampled_from((5, 10, 20)))
        window = {"size_ms": size, "advance_ms": size if draw(st.booleans()) else draw(st.sampled_from((1, 2, 5))),
                  "grace_ms": _grace(draw, caps)}
    elif window_type == "sliding":
        window = {"time_difference_ms": draw(st.sampled_from((2, 5, 10))), "grace_ms": draw(st.sampled_from((0, 2, 5)))}
    else:
        window = {"gap_ms": draw(st.sampled_from((2, 3, 5, 10))), "grace_ms": _grace(draw, caps)}
    arg = {window_type: window}
    if caps.emit_on_close and draw(st.integers(0, 3)) == 0:
        arg["emit"] = "on_window_close"
    return arg


def _window_sort(arg: dict) -> tuple:
    """The sort of keys a windowed aggregation gives (sinks sharing a topic must agree on it)."""
    if "time" in arg:
        return ("time", arg["time"]["size_ms"])
    if "sliding" in arg:
        return ("sliding", arg["sliding"]["time_difference_ms"])
    return ("session", None)


@st.composite
def aggregation(draw):
    """``count``, ``reduce`` or ``aggregate`` with one of the named functions."""
    operation = draw(st.sampled_from(("count", "reduce", "aggregate")))
    if operation == "count":
        return {"count": {}}
    names = fn.REDUCE_NAMES if operation == "reduce" else fn.AGGREGATE_NAMES
    return {operation: draw(st.sampled_from(names))}


@st.composite
def join_window(draw, caps: GraphCaps):
    """A stream-stream join's ``window`` and ``window_api`` (``ofTimeDifference*`` from 3.1, the
    legacy ``JoinWindows.of`` with a grace from 2.1)."""
    before = draw(st.sampled_from((0, 2, 5, 10)))
    after = before if draw(st.integers(0, 2)) else draw(st.sampled_from((0, 3, 10)))
    if caps.time_difference and draw(st.integers(0, 3)):
        return {"before_ms": before, "after_ms": after, "grace_ms": draw(st.sampled_from((0, 0, 3, 10)))}, \
            "time_difference"
    grace = draw(st.sampled_from((None, 0, 5))) if caps.legacy_join_grace else None
    return {"before_ms": before, "after_ms": after, "grace_ms": grace}, "legacy"


def _joiner(draw) -> dict:
    if draw(st.booleans()):
        return {"joiner": "pair"}
    return {"joiner": "concat", "joiner_separator": draw(st.sampled_from(("+", "-")))}


# --- the grammar ------------------------------------------------------------------------------------

def _source(draw, g: _Graph, caps: GraphCaps, kind: Kind, keys: Optional[str] = None, versioned_odds: int = 4) -> int:
    """A new source reading a new topic (a topic is read by one source); a table is versioned
    (where every release has them) in one of ``versioned_odds``."""
    prefix = "s" if kind is Kind.STREAM else "t"
    topic = f"{prefix}{1 + sum(1 for t in g.topics if t.startswith(prefix))}"
    g.topics[topic] = keys or draw(st.sampled_from(("plain", "plain", "plain", "groups")))
    if kind is Kind.STREAM:
        return g.add({"stream": topic}, Slot(Kind.STREAM))
    node = {"table": topic}
    retention = None
    if caps.versioned and draw(st.integers(1, versioned_odds)) == 1:
        retention = draw(st.sampled_from((0, 5, 20, 100)))
        node["materialized"] = {"versioned": True, "history_retention_ms": retention}
    return g.add(node, Slot(Kind.TABLE, versioned_retention=retention))


def _operations_for(slot: Slot, caps: GraphCaps) -> List[str]:
    """The operations (and the grouping production, ``group``) the node's kind and keys take in
    every release under test, as the shared model's table of operations says."""
    out = [name for name, operation in OPERATIONS.items()
           if operation.results.get(slot.kind) in (Kind.STREAM, Kind.TABLE, Kind.NONE)
           and caps.has(name) and (slot.windowed is None or name in TAKE_WINDOWED_KEYS)]
    if slot.windowed is None:
        # group_by_key / group_by [+ windowed_by] + an aggregation: where the stateful rules are,
        # so drawn as often as three operations
        out.extend(("group",) * 3)
    return out


def _other_side(draw, g: _Graph, caps: GraphCaps, upstream: int, kind: Kind, keys: Optional[str] = None,
                versioned_odds: int = 4) -> int:
    """A binary operation's other side of ``kind``: an earlier node with plain keys (not the
    upstream itself), or a new source."""
    earlier = [i for i, s in enumerate(g.slots) if s.kind is kind and s.windowed is None and i != upstream]
    if earlier and keys is None and draw(st.integers(0, 2)) == 0:
        return draw(st.sampled_from(earlier))
    return _source(draw, g, caps, kind, keys, versioned_odds)


def _join(draw, g: _Graph, caps: GraphCaps, upstream: int) -> None:
    left = g.slots[upstream]
    if left.kind is Kind.STREAM:
        variant = draw(st.sampled_from(("stream_stream", "stream_table")))
    else:
        variant = draw(st.sampled_from(("table_table", "foreign_key") if caps.foreign_key else ("table_table",)))
    operation = draw(st.sampled_from(_JOINS_OF[variant]))
    right_kind = Kind.STREAM if variant == "stream_stream" else Kind.TABLE
    # a stream-table join's table is versioned more often: its grace period (KIP-923) needs one
    other = _other_side(draw, g, caps, upstream, right_kind, "foreign" if variant == "foreign_key" else None,
                        versioned_odds=2 if variant == "stream_table" else 4)
    arg = {"other": g.id_of(other), **_joiner(draw)}
    if variant == "stream_stream":
        arg["window"], api = draw(join_window(caps))
        if api == "legacy" or draw(st.booleans()):
            arg["window_api"] = api  # time_difference is the default: sometimes said, sometimes not
    elif variant == "stream_table":
        retention = g.slots[other].versioned_retention
        if caps.stream_table_grace and retention is not None and draw(st.booleans()):
            arg["grace_ms"] = draw(st.sampled_from(tuple(v for v in (0, 3, 10, retention) if v <= retention)))
    elif variant == "foreign_key":
        arg["foreign_key"] = draw(st.sampled_from(({"field": "fk"}, {"field": "fk"}, {"field": "g"},
                                                   {"concat": [{"field": "fk"}]})))
    result = Kind.STREAM if left.kind is Kind.STREAM else Kind.TABLE
    g.add({operation: arg}, Slot(result), upstream, other)


def _group(draw, g: _Graph, caps: GraphCaps, upstream: int) -> None:
    """group_by_key / group_by, for a stream sometimes windowed_by, then the aggregation."""
    slot = g.slots[upstream]
    if slot.kind is Kind.STREAM and draw(st.booleans()):
        grouped = g.add({"group_by_key": {}}, Slot(Kind.GROUPED_STREAM), upstream)
    elif slot.kind is Kind.STREAM:
        grouped = g.add({"group_by": {"key": draw(_group_key())}}, Slot(Kind.GROUPED_STREAM), upstream)
    else:
        arg = {"key": draw(_group_key())}
        if draw(st.integers(0, 2)):
            arg["value"] = draw(st.sampled_from(("$value", {"field": "n"}, {"field": "g"}, {"field": "n"})))
        grouped = g.add({"group_by": arg}, Slot(Kind.GROUPED_TABLE), upstream)
    windowed = None
    if slot.kind is Kind.STREAM and caps.windows and draw(st.booleans()):
        window = draw(window_arg(caps))
        grouped = g.add({"windowed_by": window}, Slot(Kind.WINDOWED_STREAM), grouped)
        windowed = _window_sort(window)
    g.add(draw(aggregation()), Slot(Kind.TABLE, windowed), grouped)


def _unary(draw, g: _Graph, caps: GraphCaps, upstream: int, name: str) -> None:
    slot = g.slots[upstream]
    kind = OPERATIONS[name].results[slot.kind]
    windowed = slot.windowed if name in KEEP_WINDOWED_KEYS else None
    retention = slot.versioned_retention if name in ("filter", "filter_not", "map_values") else None
    windowed_keys = ("key", "start", "end") if slot.windowed is not None else ("key",)
    if name in ("filter", "filter_not"):
        arg = draw(predicates())
    elif name == "map_values":
        arg = draw(_value_expr())
    elif name == "flat_map_values":
        arg = draw(st.sampled_from(FLAT_MAPPERS))
    elif name == "select_key":
        arg = draw(st.one_of(_group_key(), expressions(1, windowed_keys)))
    elif name == "map":
        arg = {"key": draw(st.one_of(_group_key(), expressions(1, windowed_keys))), "value": draw(_value_expr())}
    elif name == "suppress":
        arg = draw(suppress_spec(windowed=slot.windowed is not None))
    else:  # repartition, to_table, to_stream
        arg = {}
    g.add({name: arg}, Slot(kind, windowed, retention), upstream)


def _merge(draw, g: _Graph, caps: GraphCaps, upstream: int) -> None:
    other = _other_side(draw, g, caps, upstream, Kind.STREAM)
    g.add({"merge": g.id_of(other)}, Slot(Kind.STREAM), upstream, other)


class _Sinks:
    """Sink topics: a fresh one, or one already written with keys of the same sort."""

    def __init__(self):
        self.by_sort: dict = {}
        self.count = 0

    def topic(self, draw, sort) -> str:
        taken = self.by_sort.get(sort, [])
        if taken and draw(st.booleans()):
            return draw(st.sampled_from(taken))
        self.count += 1
        topic = "out" if self.count == 1 else f"out{self.count}"
        self.by_sort.setdefault(sort, []).append(topic)
        return topic


def _sink(draw, g: _Graph, sinks: _Sinks, upstream: int) -> None:
    if g.slots[upstream].kind is Kind.TABLE:
        upstream = g.add({"to_stream": {}}, Slot(Kind.STREAM, g.slots[upstream].windowed), upstream)
    g.add({"to": sinks.topic(draw, g.slots[upstream].windowed)}, Slot(Kind.NONE), upstream)


def _step(draw, g: _Graph, caps: GraphCaps, sinks: _Sinks) -> None:
    """One production: an operation on an open node (mostly one of the three newest)."""
    open_nodes = g.open_nodes()
    upstream = draw(st.sampled_from(open_nodes[-3:] if draw(st.integers(0, 3)) else open_nodes))
    name = draw(st.sampled_from(_operations_for(g.slots[upstream], caps)))
    if name == "group":
        _group(draw, g, caps, upstream)
    elif name in JOINS:
        _join(draw, g, caps, upstream)
    elif name == "merge":
        _merge(draw, g, caps, upstream)
    elif name == "to":
        _sink(draw, g, sinks, upstream)
    else:
        _unary(draw, g, caps, upstream, name)


@st.composite
def graphs(draw, caps: GraphCaps, max_steps: int = 6):
    """A graph (the node list, compacted) and its source topics with their key pools."""
    g = _Graph()
    sinks = _Sinks()
    _source(draw, g, caps, draw(st.sampled_from((Kind.STREAM, Kind.TABLE))))
    if draw(st.integers(0, 3)) == 0:
        _source(draw, g, caps, draw(st.sampled_from((Kind.STREAM, Kind.TABLE))))
    for _ in range(draw(st.integers(1, max_steps))):
        _step(draw, g, caps, sinks)
    for index in range(len(g.nodes)):  # every open leaf gets a sink, so every branch shows
        if g.slots[index].kind in (Kind.STREAM, Kind.TABLE) and g.children[index] == 0:
            _sink(draw, g, sinks, index)
    return compact(g.nodes), dict(g.topics)


# --- values and inputs -----------------------------------------------------------------------------

def _object_values() -> tuple:
    """Every object value the inputs take: a group ``g``, a number ``n``, a foreign key ``fk``
    (absent, null or one of :data:`FOREIGN_KEYS`) and ``items`` (absent or a short list)."""
    foreign = ((),) + tuple((("fk", fk),) for fk in FOREIGN_KEYS + (None,))
    items = ((), (("items", []),), (("items", ["a"]),), (("items", ["b", "a"]),))
    return tuple(dict((("g", g), ("n", n)) + f + i)
                 for g in GROUPS for n in range(-2, 10) for f in foreign for i in items)


#: drawn from with one draw (a value drawn field by field costs Hypothesis several)
OBJECT_VALUES = _object_values()


@st.composite
def values(draw):
    """A small object like the corpus's (:data:`OBJECT_VALUES`); now and then a bare letter; a
    null (a tombstone) in one of seven."""
    shape = draw(st.integers(0, 13))
    if shape <= 1:
        return None
    if shape == 2:
        return draw(st.sampled_from(GROUPS))
    return copy.deepcopy(draw(st.sampled_from(OBJECT_VALUES)))


@st.composite
def graph_inputs(draw, topics: dict, max_inputs: int = 16):
    """Records for the graph's source topics: few keys per topic (its pool), null keys, values
    (:func:`values`), timestamps mostly increasing with ties, out-of-order records and jumps."""
    n = draw(st.integers(1, max_inputs))
    ts = draw(timestamps(n))
    names = sorted(topics)
    out = []
    for i in range(n):
        topic = draw(st.sampled_from(names))
        key = None if draw(st.integers(0, 9)) == 0 else draw(st.sampled_from(KEY_POOLS[topics[topic]]))
        out.append({"topic": topic, "key": key, "value": draw(values()), "ts": ts[i]})
    return out


@st.composite
def graph_scenarios(draw, profiles: tuple, max_steps: int = 6, max_inputs: int = 16):
    """A graph scenario document valid in every profile of ``profiles``."""
    caps = GraphCaps.of(profiles)
    graph, topics = draw(graphs(caps, max_steps))
    config = {"order": "as_listed",
              "store": draw(st.sampled_from(("rocksdb", "rocksdb", "in_memory") if caps.in_memory else ("rocksdb",)))}
    if draw(st.integers(0, 3)) == 0:
        config["caching"] = True
    doc = {"format": "kssim-scenario/1", "name": "graph-generated", "topology": {"graph": graph},
           "config": config, "inputs": draw(graph_inputs(topics, max_inputs))}
    assume(all(valid_in(doc, p.release) for p in profiles))
    return doc


def valid_in(doc: dict, release: str) -> bool:
    """Does ``release``'s loader (with ``compile_graph``'s release checks) accept ``doc``?"""
    try:
        scenario_from_dict({**doc, "semantics": release})
    except KssimError:
        return False
    return True


# --- the written form -------------------------------------------------------------------------------

def operation_of(node: dict) -> str:
    """A written node's operation (its one field that is not ``id``, ``from`` or ``materialized``)."""
    return next(name for name in node if name in OPERATIONS)


def operations_of(doc: dict) -> List[str]:
    """The operation of each node of a graph document, in order."""
    return [operation_of(node) for node in doc["topology"]["graph"]]


def references(node: dict) -> List[str]:
    """The ids a node names: its ``from`` and a binary operation's other side."""
    out = [node["from"]] if "from" in node else []
    name = operation_of(node)
    arg = node[name]
    if name == "merge":
        out.append(arg)
    elif name in JOINS:
        out.append(arg["other"])
    return out


def explicit(graph: list) -> list:
    """The graph with an id on every node and a ``from`` on every non-source node (the form the
    shrinker edits: moving a node never changes what another node reads)."""
    out, used = [], {n["id"] for n in graph if "id" in n}
    fresh = (f"n{i}" for i in range(10 ** 6) if f"n{i}" not in used)
    for index, node in enumerate(graph):
        node = copy.deepcopy(node)
        node.setdefault("id", next(fresh))
        if operation_of(node) not in ("stream", "table") and "from" not in node:
            node["from"] = out[index - 1]["id"]
        out.append(node)
    return out


def compact(graph: list) -> list:
    """The graph as the spec writes it: ``from`` only where the upstream is not the node just
    before (or that node is a sink), ids only where named, renumbered ``n1``, ``n2``, ... in order."""
    nodes = explicit(graph)
    for index, node in enumerate(nodes):
        previous = nodes[index - 1] if index else None
        after_previous = previous is not None and node.get("from") == previous["id"]
        if after_previous and operation_of(previous) != "to":
            del node["from"]
    named = {ref for node in nodes for ref in references(node)}
    renamed = {}
    for node in nodes:
        if node["id"] in named:
            renamed[node["id"]] = f"n{len(renamed) + 1}"
    out = []
    for node in nodes:
        old_id = node.pop("id")
        name = operation_of(node)
        if "from" in node:
            node["from"] = renamed[node["from"]]
        if name == "merge":
            node[name] = renamed[node[name]]
        elif name in JOINS:
            node[name] = {**node[name], "other": renamed[node[name]["other"]]}
        ordered = {k: node[k] for k in node if k != "from"}
        if "from" in node:
            ordered = {"from": node["from"], **ordered}
        if old_id in renamed:
            ordered["id"] = renamed[old_id]
        out.append(ordered)
    return out
