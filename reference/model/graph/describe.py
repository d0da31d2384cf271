"""The Kafka topology a topology graph builds, and ``Topology#describe()``'s text for it.

A graph (``topology.graph``, spec: topology-graphs.md) is a small Kafka Streams DSL program. This
module models what Kafka Streams 3.9 builds from that program, in three steps that mirror Kafka's:

1. **DSL calls** (``KStreamImpl``, ``KTableImpl``, ``KGroupedStreamImpl``, ... on an
   ``InternalStreamsBuilder``): each graph node is one DSL call, made in list order. A call takes
   names from the builder's one index counter (``KSTREAM-FILTER-0000000003``,
   ``KSTREAM-AGGREGATE-STATE-STORE-0000000002``) and adds *graph nodes* to Kafka's DSL graph; a
   call may add several (a re-keyed stream before an aggregation gets a repartition node, a
   foreign-key join eleven).
2. **Build** (``InternalStreamsBuilder#buildAndOptimizeTopology``, optimization off, the
   default): the graph nodes write sources, processors, sinks and state stores into the topology
   builder in build-priority order. That order is the order of :attr:`KafkaTopology.nodes` and
   numbers the sub-topologies.
3. **Describe** (``InternalTopologyBuilder#describe`` and ``TopologyDescription#toString``):
   sub-topologies are the connected parts of the processor graph (processors sharing a store are
   connected too), numbered by their first node; within one, nodes are ordered by the number of
   paths leaving them, then by name, and each node's ``-->`` / ``<--`` lists are Java
   ``TreeSet``\\ s whose comparator reads node sizes that change while the sets are filled.
   Reproducing that text exactly needs Java's ``HashMap`` iteration order (which decides the order
   the nodes are connected in) and ``TreeMap``'s insertion (see :class:`JavaHashSet`,
   :class:`JavaTreeSet`).

:func:`build_topology` returns the built topology (:class:`KafkaTopology`: its nodes, state
stores, internal topics and sub-topologies, each tagged with the graph node whose DSL call made
it), which tells a runtime which sub-topology, repartition topic and store a graph node uses;
:func:`describe_graph` renders it as ``Topology#describe().toString()`` does.

Release: the rules are Kafka Streams 3.9's (commit c821449 of the 3.9 branch). Older releases
name a few things differently (the foreign-key join's processors and topics before 3.x, for
instance) and lack some operations; ``release`` is accepted for the day that matters, and every
release currently gets 3.9's names and order.

Scope: the graph is assumed valid (the loader checks it). Nothing here evaluates expressions: the
description depends only on the operations and their kinds.
"""
from __future__ import annotations

import heapq
import itertools
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

__all__ = [
    "describe_graph", "build_topology", "KafkaTopology", "TopologyNode", "StateStore",
    "InternalTopic", "Subtopology", "NodeKind", "StoreKind", "TopicKind",
]


# =====================================================================================
# Java collections whose iteration order the description depends on
# =====================================================================================

def java_string_hash(text: str) -> int:
    """``String#hashCode``: 31-polynomial over UTF-16 code units, as an unsigned 32-bit int."""
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h


def java_string_order(text: str) -> bytes:
    """A sort key ordering strings as ``String#compareTo`` does (UTF-16 code units)."""
    return text.encode("utf-16-be")


def _table_size_for(capacity: int) -> int:
    """``HashMap#tableSizeFor``: the smallest power of two >= ``capacity`` (at least 1)."""
    size = 1
    while size < capacity:
        size <<= 1
    return size


class JavaHashSet:
    """A ``java.util.HashSet<String>`` that iterates in Java's order: by bucket of the spread
    hash, then by insertion within a bucket. Resizes happen where Java's do (size above 3/4 of
    the table; a bucket reaching 9 entries in a table below 64). A table of 64 or more with a
    bucket of 9 entries would become a tree bin in Java, with another order; sets here hold a
    few dozen names at most, so that case is not modelled."""

    _LOAD_FACTOR = 0.75
    _TREEIFY_LENGTH = 9
    _MIN_TREEIFY_CAPACITY = 64

    def __init__(self, items: Iterable[str] = (), initial_capacity: Optional[int] = None):
        self._capacity = 16 if initial_capacity is None else _table_size_for(initial_capacity)
        self._buckets: List[List[Tuple[int, str]]] = [[] for _ in range(self._capacity)]
        self._size = 0
        for item in items:
            self.add(item)

    @classmethod
    def copy_of(cls, items: Sequence[str]) -> "JavaHashSet":
        """``new HashSet<>(collection)``: its table starts at max(n / 0.75 + 1, 16)."""
        return cls(items, initial_capacity=max(int(len(items) / 0.75) + 1, 16))

    @staticmethod
    def _spread(h: int) -> int:
        return h ^ (h >> 16)

    def add(self, item: str) -> bool:
        h = self._spread(java_string_hash(item))
        bucket = self._buckets[h & (self._capacity - 1)]
        if any(existing == item for _, existing in bucket):
            return False
        bucket.append((h, item))
        if len(bucket) >= self._TREEIFY_LENGTH and self._capacity < self._MIN_TREEIFY_CAPACITY:
            self._resize()
        self._size += 1
        if self._size > int(self._capacity * self._LOAD_FACTOR):
            self._resize()
        return True

    def _resize(self) -> None:
        # each new bucket receives entries from one old bucket only, so order within is kept
        self._capacity *= 2
        old, self._buckets = self._buckets, [[] for _ in range(self._capacity)]
        for bucket in old:
            for h, item in bucket:
                self._buckets[h & (self._capacity - 1)].append((h, item))

    def __iter__(self) -> Iterator[str]:
        for bucket in self._buckets:
            for _, item in bucket:
                yield item

    def __len__(self) -> int:
        return self._size


class JavaTreeSet:
    """A ``java.util.TreeSet`` with a comparator, as a red-black tree exactly like
    ``TreeMap#put``. The description's comparator reads node sizes that grow after a node was
    inserted, so the in-order sequence is not simply sorted: it depends on the tree's shape at
    each insertion, which this reproduces (including the rebalancing rotations)."""

    _RED, _BLACK = False, True

    class _Entry:
        __slots__ = ("key", "left", "right", "parent", "color")

        def __init__(self, key, parent):
            self.key, self.parent = key, parent
            self.left = self.right = None
            self.color = JavaTreeSet._BLACK

    def __init__(self, compare: Callable[[object, object], int]):
        self._compare = compare
        self._root = None

    def add(self, key) -> bool:
        if self._root is None:
            self._root = self._Entry(key, None)
            return True
        node, cmp = self._root, 0
        while node is not None:
            parent = node
            cmp = self._compare(key, node.key)
            if cmp < 0:
                node = node.left
            elif cmp > 0:
                node = node.right
            else:
                return False
        entry = self._Entry(key, parent)
        if cmp < 0:
            parent.left = entry
        else:
            parent.right = entry
        self._fix_after_insertion(entry)
        return True

    def __iter__(self) -> Iterator:
        stack, node = [], self._root
        while stack or node is not None:
            while node is not None:
                stack.append(node)
                node = node.left
            node = stack.pop()
            yield node.key
            node = node.right

    # --- red-black balancing, as java.util.TreeMap (CLR) ---
    @staticmethod
    def _color(e):
        return JavaTreeSet._BLACK if e is None else e.color

    @staticmethod
    def _parent(e):
        return None if e is None else e.parent

    @staticmethod
    def _left(e):
        return None if e is None else e.left

    @staticmethod
    def _right(e):
        return None if e is None else e.right

    @staticmethod
    def _set_color(e, color):
        if e is not None:
            e.color = color

    def _rotate_left(self, p):
        if p is None:
            return
        r = p.right
        p.right = r.left
        if r.left is not None:
            r.left.parent = p
        r.parent = p.parent
        if p.parent is None:
            self._root = r
        elif p.parent.left is p:
            p.parent.left = r
        else:
            p.parent.right = r
        r.left = p
        p.parent = r

    def _rotate_right(self, p):
        if p is None:
            return
        l = p.left
        p.left = l.right
        if l.right is not None:
            l.right.parent = p
        l.parent = p.parent
        if p.parent is None:
            self._root = l
        elif p.parent.right is p:
            p.parent.right = l
        else:
            p.parent.left = l
        l.right = p
        p.parent = l

    def _fix_after_insertion(self, x):
        red, black = self._RED, self._BLACK
        x.color = red
        while x is not None and x is not self._root and x.parent.color == red:
            grand = self._parent(self._parent(x))
            if self._parent(x) is self._left(grand):
                uncle = self._right(grand)
                if self._color(uncle) == red:
                    self._set_color(self._parent(x), black)
                    self._set_color(uncle, black)
                    self._set_color(grand, red)
                    x = grand
                else:
                    if x is self._right(self._parent(x)):
                        x = self._parent(x)
                        self._rotate_left(x)
                    self._set_color(self._parent(x), black)
                    self._set_color(self._parent(self._parent(x)), red)
                    self._rotate_right(self._parent(self._parent(x)))
            else:
                uncle = self._left(grand)
                if self._color(uncle) == red:
                    self._set_color(self._parent(x), black)
                    self._set_color(uncle, black)
                    self._set_color(grand, red)
                    x = grand
                else:
                    if x is self._left(self._parent(x)):
                        x = self._parent(x)
                        self._rotate_right(x)
                    self._set_color(self._parent(x), black)
                    self._set_color(self._parent(self._parent(x)), red)
                    self._rotate_left(self._parent(self._parent(x)))
        self._root.color = black


# =====================================================================================
# The built topology (what InternalTopologyBuilder holds)
# =====================================================================================

class NodeKind(Enum):
    SOURCE = "Source"
    PROCESSOR = "Processor"
    SINK = "Sink"


class StoreKind(Enum):
    """What a state store is; the names follow Kafka's store types."""
    KEY_VALUE = "key-value"                        # tables, grouped (non-windowed) aggregations
    VERSIONED = "versioned key-value"               # a table source with materialized versioned
    WINDOW = "window"                               # time and sliding window aggregations
    SESSION = "session"                             # session window aggregations
    JOIN_WINDOW = "join window"                     # one side of a stream-stream join
    OUTER_JOIN_SHARED = "outer join shared"         # left/outer stream-stream join's non-joined records
    SUPPRESS_BUFFER = "suppress buffer"             # KTable#suppress
    STREAM_TABLE_JOIN_BUFFER = "stream-table join buffer"  # a stream-table join with a grace period
    FK_SUBSCRIPTION = "foreign-key subscription"    # foreign-key join, right side


class TopicKind(Enum):
    REPARTITION = "repartition"
    FK_SUBSCRIPTION_REGISTRATION = "foreign-key subscription registration"
    FK_SUBSCRIPTION_RESPONSE = "foreign-key subscription response"


@dataclass
class TopologyNode:
    """One source, processor or sink of the built topology."""
    name: str
    kind: NodeKind
    #: the nodes feeding it, in the order Kafka was given them
    predecessors: Tuple[str, ...] = ()
    #: SOURCE: the topics it reads
    topics: Tuple[str, ...] = ()
    #: SINK: the topic it writes
    topic: Optional[str] = None
    #: PROCESSOR: the state stores it is connected to, in connection order
    stores: List[str] = field(default_factory=list)
    #: the index (in the graph's node list) of the node whose DSL call made it
    graph_node: Optional[int] = None


@dataclass
class StateStore:
    name: str
    kind: StoreKind
    #: the processors connected to it, in connection order
    processors: List[str] = field(default_factory=list)
    graph_node: Optional[int] = None


@dataclass
class InternalTopic:
    name: str
    kind: TopicKind
    graph_node: Optional[int] = None


@dataclass
class Subtopology:
    id: int
    #: its nodes in the description's order
    nodes: Tuple[str, ...]


@dataclass
class KafkaTopology:
    """The processor topology Kafka builds for a graph (optimization off)."""
    #: every node, in the order Kafka added it (``InternalTopologyBuilder``'s node factories)
    nodes: Dict[str, TopologyNode]
    stores: Dict[str, StateStore]
    internal_topics: Dict[str, InternalTopic]
    subtopologies: List[Subtopology]
    #: the text of ``Topology#describe().toString()``
    description: str

    def subtopology_of(self, node_name: str) -> int:
        """The id of the sub-topology that holds node ``node_name`` (KeyError if none does)."""
        for subtopology in self.subtopologies:
            if node_name in subtopology.nodes:
                return subtopology.id
        raise KeyError(node_name)

    def made_by(self, graph_node: int) -> Dict[str, List[str]]:
        """What the DSL call of graph node ``graph_node`` added: node, store and topic names."""
        return {
            "nodes": [n.name for n in self.nodes.values() if n.graph_node == graph_node],
            "stores": [s.name for s in self.stores.values() if s.graph_node == graph_node],
            "internal_topics": [t.name for t in self.internal_topics.values() if t.graph_node == graph_node],
        }

    def describe(self) -> str:
        return self.description


class TopologyBuilder:
    """``InternalTopologyBuilder``: collects nodes and stores, and groups nodes into
    sub-topologies (nodes joined by an edge or by a shared store belong together)."""

    def __init__(self):
        self.nodes: Dict[str, TopologyNode] = {}
        self.stores: Dict[str, StateStore] = {}
        self.internal_topics: Dict[str, InternalTopic] = {}
        self._group_parent: Dict[str, str] = {}
        #: the graph node being written, to tag what it adds
        self.current_graph_node: Optional[int] = None

    # --- grouping (Kafka's QuickUnion) ---
    def _root(self, name: str) -> str:
        while self._group_parent[name] != name:
            self._group_parent[name] = self._group_parent[self._group_parent[name]]
            name = self._group_parent[name]
        return name

    def _unite(self, a: str, b: str) -> None:
        ra, rb = self._root(a), self._root(b)
        if ra != rb:
            self._group_parent[ra] = rb

    def _add_node(self, node: TopologyNode) -> None:
        node.graph_node = self.current_graph_node
        self.nodes[node.name] = node
        self._group_parent[node.name] = node.name
        for predecessor in node.predecessors:
            self._unite(node.name, predecessor)

    # --- the calls the DSL's graph nodes make ---
    def add_source(self, name: str, topics: Sequence[str]) -> None:
        self._add_node(TopologyNode(name, NodeKind.SOURCE, topics=tuple(topics)))

    def add_processor(self, name: str, predecessors: Sequence[str]) -> None:
        self._add_node(TopologyNode(name, NodeKind.PROCESSOR, predecessors=tuple(predecessors)))

    def add_sink(self, name: str, topic: str, predecessors: Sequence[str]) -> None:
        self._add_node(TopologyNode(name, NodeKind.SINK, predecessors=tuple(predecessors), topic=topic))

    def add_store(self, name: str, kind: StoreKind, processors: Sequence[str] = ()) -> None:
        self.stores[name] = StateStore(name, kind, graph_node=self.current_graph_node)
        self._connect(name, processors)

    def _connect(self, store: str, processors: Sequence[str]) -> None:
        """``connectProcessorAndStateStore`` for each processor: a shared store puts its
        processors in one sub-topology."""
        entry = self.stores[store]
        for processor in processors:
            if entry.processors:
                self._unite(entry.processors[0], processor)
            if processor not in entry.processors:
                entry.processors.append(processor)
            if store not in self.nodes[processor].stores:
                self.nodes[processor].stores.append(store)

    def connect_stores(self, processor: str, stores: Sequence[str]) -> None:
        for store in stores:
            self._connect(store, (processor,))

    def add_internal_topic(self, name: str, kind: TopicKind) -> None:
        self.internal_topics[name] = InternalTopic(name, kind, self.current_graph_node)

    # --- sub-topologies ---
    def node_groups(self) -> List[List[str]]:
        """``makeNodeGroups``: groups numbered by their first node in the order nodes were
        added; each group lists its nodes in that order."""
        groups: Dict[str, List[str]] = {}
        for name in self.nodes:
            groups.setdefault(self._root(name), []).append(name)
        return list(groups.values())


# =====================================================================================
# The description (InternalTopologyBuilder#describe, TopologyDescription#toString)
# =====================================================================================

class _DescribedNode:
    """``InternalTopologyBuilder.AbstractNode``: a node of one sub-topology's description."""

    def __init__(self, node: TopologyNode):
        self.node = node
        self.name = node.name
        #: the number of paths leaving the node (itself included), grown while edges are added
        self.size = 1
        self.predecessors = JavaTreeSet(_compare_described)
        self.successors = JavaTreeSet(_compare_described)


def _compare_described(a: _DescribedNode, b: _DescribedNode) -> int:
    """``NodeComparator``: larger size first, then by name (names are unique)."""
    if a is b:
        return 0
    if a.size != b.size:
        return b.size - a.size
    ka, kb = java_string_order(a.name), java_string_order(b.name)
    return -1 if ka < kb else (1 if ka > kb else 0)


def _update_size(node: _DescribedNode, delta: int) -> None:
    node.size += delta
    for predecessor in node.predecessors:
        _update_size(predecessor, delta)


def _describe_subtopology(builder: TopologyBuilder, names: List[str]) -> List[_DescribedNode]:
    """``describeSubtopology``: connects the group's nodes in Java ``HashMap`` order (the order
    decides the sizes the ``TreeSet``\\ s see), then sorts them by the final sizes."""
    group = JavaHashSet(names)  # makeNodeGroups' HashSet, filled in the order nodes were added
    by_name = {name: _DescribedNode(builder.nodes[name]) for name in JavaHashSet(group)}
    for name in JavaHashSet(group):  # nodesByName.values(): the same hash order
        node = by_name[name]
        for predecessor_name in node.node.predecessors:
            predecessor = by_name[predecessor_name]
            node.predecessors.add(predecessor)
            predecessor.successors.add(node)
            _update_size(predecessor, node.size)
    return sorted(by_name.values(), key=lambda n: (-n.size, java_string_order(n.name)))


def _names_text(nodes: JavaTreeSet) -> str:
    names = [n.name for n in nodes]
    return ", ".join(names) if names else "none"


def _render_node(described: _DescribedNode) -> str:
    node = described.node
    successors, predecessors = _names_text(described.successors), _names_text(described.predecessors)
    if node.kind is NodeKind.SOURCE:
        topics = ", ".join(JavaHashSet.copy_of(node.topics))
        return f"Source: {node.name} (topics: [{topics}])\n      --> {successors}"
    if node.kind is NodeKind.SINK:
        return f"Sink: {node.name} (topic: {node.topic})\n      <-- {predecessors}"
    # the processor's store set is a HashSet filled in connection order, copied for the description
    stores = ", ".join(JavaHashSet.copy_of(list(JavaHashSet(node.stores))))
    return (f"Processor: {node.name} (stores: [{stores}])\n      --> {successors}"
            f"\n      <-- {predecessors}")


def _finish(builder: TopologyBuilder) -> KafkaTopology:
    subtopologies, text = [], ["Topologies:\n "]
    for group_id, names in enumerate(builder.node_groups()):
        ordered = _describe_subtopology(builder, names)
        subtopologies.append(Subtopology(group_id, tuple(n.name for n in ordered)))
        text.append(f"  Sub-topology: {group_id}\n")
        text.extend(f"    {_render_node(n)}\n" for n in ordered)
        text.append("\n")
    return KafkaTopology(builder.nodes, builder.stores, builder.internal_topics, subtopologies, "".join(text))


# =====================================================================================
# The DSL (InternalStreamsBuilder and the KStream/KTable implementations)
# =====================================================================================

class Prefix:
    """Kafka's generated-name prefixes (the index follows, 10 digits)."""
    STREAM_SOURCE = "KSTREAM-SOURCE-"
    STREAM_SINK = "KSTREAM-SINK-"
    STREAM_FILTER = "KSTREAM-FILTER-"
    STREAM_MAPVALUES = "KSTREAM-MAPVALUES-"
    STREAM_FLATMAPVALUES = "KSTREAM-FLATMAPVALUES-"
    STREAM_KEY_SELECT = "KSTREAM-KEY-SELECT-"
    STREAM_MAP = "KSTREAM-MAP-"
    STREAM_MERGE = "KSTREAM-MERGE-"
    STREAM_REPARTITION = "KSTREAM-REPARTITION-"
    STREAM_TO_TABLE = "KSTREAM-TOTABLE-"
    STREAM_AGGREGATE = "KSTREAM-AGGREGATE-"
    STREAM_REDUCE = "KSTREAM-REDUCE-"
    STREAM_WINDOWED = "KSTREAM-WINDOWED-"
    STREAM_JOIN_THIS = "KSTREAM-JOINTHIS-"
    STREAM_JOIN_OTHER = "KSTREAM-JOINOTHER-"
    STREAM_OUTER_THIS = "KSTREAM-OUTERTHIS-"
    STREAM_OUTER_OTHER = "KSTREAM-OUTEROTHER-"
    STREAM_OUTER_SHARED = "KSTREAM-OUTERSHARED-"
    STREAM_JOIN = "KSTREAM-JOIN-"
    STREAM_LEFT_JOIN = "KSTREAM-LEFTJOIN-"
    TABLE_SOURCE = "KTABLE-SOURCE-"
    TABLE_SINK = "KTABLE-SINK-"
    TABLE_FILTER = "KTABLE-FILTER-"
    TABLE_MAPVALUES = "KTABLE-MAPVALUES-"
    TABLE_TOSTREAM = "KTABLE-TOSTREAM-"
    TABLE_SELECT = "KTABLE-SELECT-"
    TABLE_AGGREGATE = "KTABLE-AGGREGATE-"
    TABLE_REDUCE = "KTABLE-REDUCE-"
    TABLE_SUPPRESS = "KTABLE-SUPPRESS-"
    TABLE_MERGE = "KTABLE-MERGE-"
    TABLE_JOIN_THIS = "KTABLE-JOINTHIS-"
    TABLE_JOIN_OTHER = "KTABLE-JOINOTHER-"
    FK_REGISTRATION = "KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-"
    FK_RESPONSE = "KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-"
    FK_PROCESSOR = "KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-"
    FK_RESOLVER = "KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-"
    FK_STATE_STORE = "KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-"
    FK_OUTPUT = "KTABLE-FK-JOIN-OUTPUT-"


REPARTITION_SUFFIX = "-repartition"
FK_TOPIC_SUFFIX = "-topic"
#: the corpus's name for the k-th versioned table's store (``Stores.persistentVersionedKeyValueStore``)
VERSIONED_STORE_NAME = "versioned-{}"
#: ``createRepartitionedSource`` keeps generated node names only for a generated topic prefix
_GENERATED_PREFIX = re.compile(r"KSTREAM.*-[0-9]{10}")


class NameCounter:
    """``InternalStreamsBuilder``'s index: one counter for processor and store names."""

    def __init__(self):
        self._index = itertools.count()

    def processor(self, prefix: str) -> str:
        return f"{prefix}{next(self._index):010d}"

    def store(self, prefix: str) -> str:
        return f"{prefix}STATE-STORE-{next(self._index):010d}"


@dataclass(eq=False)
class GraphNode:
    """A node of Kafka's DSL graph (``GraphNode``): written into the topology at build time."""
    name: str
    write: Callable[["GraphNode", TopologyBuilder], None]
    origin: Optional[int] = None
    priority: int = -1
    parents: List["GraphNode"] = field(default_factory=list)
    children: List["GraphNode"] = field(default_factory=list)
    written: bool = False

    def parent_names(self) -> List[str]:
        return [p.name for p in self.parents]


# --- what a KTable reads its values from: decides materialization and value-getter stores ---

class TableSource:
    """``KTableSource`` (``builder.table``, ``toTable``, a foreign-key join's result): its store
    exists only if a downstream operation materializes it (or the table is versioned)."""

    def __init__(self, store: str, store_kind: StoreKind, materialized: bool):
        self.store, self.store_kind, self.materialized = store, store_kind, materialized

    def getter_stores(self) -> List[str]:
        self.materialized = True  # "whenever a source ktable is required for getter, it should be materialized"
        return [self.store]

    def send_old_values(self, force_materialization: bool) -> bool:
        if not force_materialization and not self.materialized:
            return False
        self.materialized = True
        return True


class Aggregated:
    """An aggregation's result: always materialized in its own store."""

    def __init__(self, store: str):
        self.store = store

    def getter_stores(self) -> List[str]:
        return [self.store]

    def send_old_values(self, force_materialization: bool) -> bool:
        return True


class Derived:
    """``KTableFilter`` / ``KTableMapValues`` without a store: reads through its parent."""

    def __init__(self, parent: "KTable"):
        self.parent = parent

    def getter_stores(self) -> List[str]:
        return self.parent.getter_stores()

    def send_old_values(self, force_materialization: bool) -> bool:
        return self.parent.send_old_values(force_materialization)


class Suppressed:
    """``KTableSuppressProcessorSupplier``: its buffer first, then the parent's stores."""

    def __init__(self, parent: "KTable", store: str):
        self.parent, self.store = parent, store

    def getter_stores(self) -> List[str]:
        return [self.store] + self.parent.getter_stores()

    def send_old_values(self, force_materialization: bool) -> bool:
        return self.parent.send_old_values(force_materialization)


def _store_union(first: Sequence[str], second: Sequence[str]) -> List[str]:
    """A join's value getter names the union of its sides' stores as a ``HashSet`` sized n1 + n2."""
    return list(JavaHashSet(list(first) + list(second), initial_capacity=len(first) + len(second)))


class JoinedTables:
    """``KTableKTableJoinMerger`` over the join's two sides (``joinThis`` = (left, right),
    ``joinOther`` = (right, left)), whose getters were taken when the join was built."""

    def __init__(self, left: "KTable", right: "KTable", this_side: List[str], other_side: List[str]):
        self.left, self.right = left, right
        self.this_side, self.other_side = this_side, other_side

    def getter_stores(self) -> List[str]:
        return _store_union(self.this_side, self.other_side)

    def send_old_values(self, force_materialization: bool) -> bool:
        # table-table joins require upstream materialization (both join processors ask both sides)
        self.left.send_old_values(True)
        self.right.send_old_values(True)
        return True


TableSupplier = Union[TableSource, Aggregated, Derived, Suppressed, JoinedTables]


# --- the DSL objects a graph node yields ---

@dataclass(eq=False)
class KStream:
    name: str
    node: GraphNode
    repartition_required: bool
    #: ``KStreamImpl.repartitionNode``: the repartition a join made for this stream, reused
    join_repartition: Optional[GraphNode] = None


@dataclass(eq=False)
class KTable:
    name: str
    node: GraphNode
    supplier: TableSupplier
    sending_old_values: bool = False

    def getter_stores(self) -> List[str]:
        return self.supplier.getter_stores()

    def send_old_values(self, force_materialization: bool) -> bool:
        """``KTableImpl#enableSendingOldValues``: may force the upstream source's store."""
        if not self.sending_old_values:
            if not self.supplier.send_old_values(force_materialization):
                return False
            self.sending_old_values = True
        return True


@dataclass(eq=False)
class KGroupedStream:
    name: str
    node: GraphNode
    repartition_required: bool


@dataclass(eq=False)
class KGroupedTable:
    name: str
    node: GraphNode


class WindowKind(Enum):
    TIME = "time"
    SLIDING = "sliding"
    SESSION = "session"


@dataclass(eq=False)
class KWindowedStream:
    grouped: KGroupedStream
    window: WindowKind


DslObject = Union[KStream, KTable, KGroupedStream, KGroupedTable, KWindowedStream, None]


class Dsl:
    """``InternalStreamsBuilder``: the name counter, the DSL graph and its build."""

    def __init__(self):
        self.names = NameCounter()
        self.topology = TopologyBuilder()
        self.root = GraphNode("root", lambda node, builder: None)
        self._priority = itertools.count()
        self._versioned_tables = itertools.count()
        #: the graph node (index) whose DSL call is running
        self.origin: Optional[int] = None

    def add(self, parents: Sequence[GraphNode], node: GraphNode) -> GraphNode:
        """``addGraphNode``: each parent link takes a new build priority (the last one stays)."""
        node.origin = self.origin
        for parent in parents:
            if node not in parent.children:
                parent.children.append(node)
            if parent not in node.parents:
                node.parents.append(parent)
            node.priority = next(self._priority)
        return node

    def add_state_store(self, name: str, kind: StoreKind) -> None:
        """``addStateStore``: a store node under the root, connected to processors later."""
        self.add([self.root], GraphNode(name, lambda node, builder: builder.add_store(name, kind)))

    def add_internal_topic(self, name: str, kind: TopicKind) -> None:
        self.topology.current_graph_node = self.origin
        self.topology.add_internal_topic(name, kind)

    def next_versioned_store(self) -> str:
        return VERSIONED_STORE_NAME.format(next(self._versioned_tables))

    def build(self) -> TopologyBuilder:
        """``buildAndOptimizeTopology`` (no optimization): a priority queue on build priority
        from the root; a node is written once all its parents are."""
        queue: List[Tuple[int, int, GraphNode]] = []
        tie = itertools.count()  # equal priorities are the same node: any order will do
        heapq.heappush(queue, (self.root.priority, next(tie), self.root))
        while queue:
            _, _, node = heapq.heappop(queue)
            if not node.written and all(p.written for p in node.parents):
                self.topology.current_graph_node = node.origin
                node.write(node, self.topology)
                node.written = True
            for child in node.children:
                heapq.heappush(queue, (child.priority, next(tie), child))
        return self.topology

    # --- building blocks shared by several operations ---
    def processor(self, parents: Sequence[GraphNode], name: str) -> GraphNode:
        """A plain processor node (``ProcessorGraphNode``)."""
        return self.add(parents, GraphNode(name, _write_processor))

    def repartition(self, parent: GraphNode, topic_prefix: str) -> Tuple[str, GraphNode]:
        """``createRepartitionedSource`` and its repartition node under ``parent``: a filter and
        a sink into the topic, and a source reading it (the start of another sub-topology).
        Returns the source's name (the repartitioned stream's name) and the node."""
        source, node = self._repartition(topic_prefix)
        return source, self.add([parent], node)

    def repartition_for_join(self, stream: KStream) -> KStream:
        """``KStreamImpl#repartitionForJoin``: the names are always taken, but the node is made
        once per stream object and reused by the object's later joins."""
        source, node = self._repartition(stream.name)
        if stream.join_repartition is None:
            stream.join_repartition = self.add([stream.node], node)
        return KStream(source, stream.join_repartition, False)

    def _repartition(self, topic_prefix: str) -> Tuple[str, GraphNode]:
        topic = topic_prefix if topic_prefix.endswith(REPARTITION_SUFFIX) else topic_prefix + REPARTITION_SUFFIX
        sink = self.names.processor(Prefix.STREAM_SINK)
        null_key_filter = self.names.processor(Prefix.STREAM_FILTER)
        source = self.names.processor(Prefix.STREAM_SOURCE)
        if not _GENERATED_PREFIX.fullmatch(topic_prefix):  # a user-named topic names its nodes
            sink, source, null_key_filter = topic + "-sink", topic + "-source", topic + "-filter"

        def write(node: GraphNode, builder: TopologyBuilder) -> None:
            builder.add_internal_topic(topic, TopicKind.REPARTITION)
            builder.add_processor(null_key_filter, node.parent_names())
            builder.add_sink(sink, topic, (null_key_filter,))
            builder.add_source(source, (topic,))
        return source, GraphNode(source, write)


def _write_processor(node: GraphNode, builder: TopologyBuilder) -> None:
    builder.add_processor(node.name, node.parent_names())


def _write_stateful(store: str, kind: StoreKind):
    """A processor that owns a new store (an aggregation, a suppress)."""
    def write(node: GraphNode, builder: TopologyBuilder) -> None:
        builder.add_processor(node.name, node.parent_names())
        builder.add_store(store, kind, (node.name,))
    return write


def _write_with_stores(stores: Sequence[str]):
    """A processor that reads stores other nodes own (value getters, subscription stores)."""
    def write(node: GraphNode, builder: TopologyBuilder) -> None:
        builder.add_processor(node.name, node.parent_names())
        builder.connect_stores(node.name, stores)
    return write


def _write_table_source(source: TableSource):
    """A ``KTableSource`` processor: its store only if something materialized it by build time."""
    def write(node: GraphNode, builder: TopologyBuilder) -> None:
        builder.add_processor(node.name, node.parent_names())
        if source.materialized:
            builder.add_store(source.store, source.store_kind, (node.name,))
    return write


# =====================================================================================
# One function per operation
# =====================================================================================

def op_stream(dsl: Dsl, topic: str, spec: dict) -> KStream:
    name = dsl.names.processor(Prefix.STREAM_SOURCE)
    node = dsl.add([dsl.root], GraphNode(name, lambda n, b: b.add_source(n.name, (topic,))))
    return KStream(name, node, False)


def op_table(dsl: Dsl, topic: str, spec: dict) -> KTable:
    versioned = bool((spec.get("materialized") or {}).get("versioned"))
    if versioned:  # a named store supplier: no name taken from the counter
        source = TableSource(dsl.next_versioned_store(), StoreKind.VERSIONED, materialized=True)
    else:
        source = TableSource(dsl.names.store(topic + "-"), StoreKind.KEY_VALUE, materialized=False)
    source_name = dsl.names.processor(Prefix.STREAM_SOURCE)
    table_name = dsl.names.processor(Prefix.TABLE_SOURCE)

    def write(node: GraphNode, builder: TopologyBuilder) -> None:
        builder.add_source(source_name, (topic,))
        builder.add_processor(table_name, (source_name,))
        if source.materialized:
            builder.add_store(source.store, source.store_kind, (table_name,))
    node = dsl.add([dsl.root], GraphNode(table_name, write))
    return KTable(table_name, node, source)


#: stateless stream operations: (name prefix, whether the key may change)
STREAM_STATELESS = {
    "filter": (Prefix.STREAM_FILTER, False),
    "filter_not": (Prefix.STREAM_FILTER, False),
    "map_values": (Prefix.STREAM_MAPVALUES, False),
    "flat_map_values": (Prefix.STREAM_FLATMAPVALUES, False),
    "select_key": (Prefix.STREAM_KEY_SELECT, True),
    "map": (Prefix.STREAM_MAP, True),
}

#: stateless table operations: name prefix
TABLE_STATELESS = {
    "filter": Prefix.TABLE_FILTER,
    "filter_not": Prefix.TABLE_FILTER,
    "map_values": Prefix.TABLE_MAPVALUES,
}


def op_stream_stateless(dsl: Dsl, stream: KStream, operation: str) -> KStream:
    prefix, key_changing = STREAM_STATELESS[operation]
    name = dsl.names.processor(prefix)
    node = dsl.processor([stream.node], name)
    return KStream(name, node, key_changing or stream.repartition_required)


def op_table_stateless(dsl: Dsl, table: KTable, operation: str) -> KTable:
    # KTableFilter asks its parent for old values without forcing a store: no naming effect
    name = dsl.names.processor(TABLE_STATELESS[operation])
    node = dsl.processor([table.node], name)
    return KTable(name, node, Derived(table))


def op_merge(dsl: Dsl, stream: KStream, other: KStream) -> KStream:
    name = dsl.names.processor(Prefix.STREAM_MERGE)
    node = dsl.processor([stream.node, other.node], name)
    return KStream(name, node, stream.repartition_required or other.repartition_required)


def op_repartition(dsl: Dsl, stream: KStream) -> KStream:
    name = dsl.names.processor(Prefix.STREAM_REPARTITION)
    source, node = dsl.repartition(stream.node, name)
    return KStream(source, node, False)


def op_to_table(dsl: Dsl, stream: KStream) -> KTable:
    name = dsl.names.processor(Prefix.STREAM_TO_TABLE)
    source = TableSource(dsl.names.store(Prefix.STREAM_TO_TABLE), StoreKind.KEY_VALUE, materialized=False)
    parent = stream.node
    if stream.repartition_required:
        _, parent = dsl.repartition(stream.node, name)
    node = dsl.add([parent], GraphNode(name, _write_table_source(source)))
    return KTable(name, node, source)


def op_to_stream(dsl: Dsl, table: KTable) -> KStream:
    name = dsl.names.processor(Prefix.TABLE_TOSTREAM)
    return KStream(name, dsl.processor([table.node], name), False)


def op_group_by_key(dsl: Dsl, stream: KStream) -> KGroupedStream:
    return KGroupedStream(stream.name, stream.node, stream.repartition_required)


def op_stream_group_by(dsl: Dsl, stream: KStream) -> KGroupedStream:
    name = dsl.names.processor(Prefix.STREAM_KEY_SELECT)
    return KGroupedStream(name, dsl.processor([stream.node], name), True)


def op_table_group_by(dsl: Dsl, table: KTable) -> KGroupedTable:
    name = dsl.names.processor(Prefix.TABLE_SELECT)
    node = dsl.processor([table.node], name)
    table.send_old_values(True)  # the re-grouping needs old values: forces the upstream store
    return KGroupedTable(name, node)


def op_windowed_by(dsl: Dsl, grouped: KGroupedStream, window: dict) -> KWindowedStream:
    kind = next(k for k in WindowKind if k.value in window)
    return KWindowedStream(grouped, kind)


class Aggregation(Enum):
    COUNT = "count"
    REDUCE = "reduce"
    AGGREGATE = "aggregate"


#: grouped-stream aggregations: (store prefix, processor prefix)
STREAM_AGGREGATION_NAMES = {
    Aggregation.COUNT: (Prefix.STREAM_AGGREGATE, Prefix.STREAM_AGGREGATE),
    Aggregation.AGGREGATE: (Prefix.STREAM_AGGREGATE, Prefix.STREAM_AGGREGATE),
    Aggregation.REDUCE: (Prefix.STREAM_REDUCE, Prefix.STREAM_REDUCE),
}
#: grouped-table aggregations: the store is always KTABLE-AGGREGATE-STATE-STORE-
TABLE_AGGREGATION_NAMES = {
    Aggregation.COUNT: (Prefix.TABLE_AGGREGATE, Prefix.TABLE_AGGREGATE),
    Aggregation.AGGREGATE: (Prefix.TABLE_AGGREGATE, Prefix.TABLE_AGGREGATE),
    Aggregation.REDUCE: (Prefix.TABLE_AGGREGATE, Prefix.TABLE_REDUCE),
}
#: ``count(Materialized)`` (the graphs' call: aggregations always get ``Materialized.with(serdes)``)
#: takes one store name it never uses on a grouped stream and on time and session windows, a
#: leftover kept for topology compatibility; sliding windows (newer) and grouped tables do not
COUNT_BURNS_A_NAME = (None, WindowKind.TIME, WindowKind.SESSION)
WINDOW_STORE_KINDS = {
    None: StoreKind.KEY_VALUE,
    WindowKind.TIME: StoreKind.WINDOW,
    WindowKind.SLIDING: StoreKind.WINDOW,
    WindowKind.SESSION: StoreKind.SESSION,
}


def op_stream_aggregation(dsl: Dsl, grouped: Union[KGroupedStream, KWindowedStream],
                          aggregation: Aggregation) -> KTable:
    """count / reduce / aggregate on a grouped or windowed stream (``GroupedStreamAggregateBuilder``):
    store name, processor name, then the repartition (topic named after the store) if needed."""
    window = grouped.window if isinstance(grouped, KWindowedStream) else None
    if isinstance(grouped, KWindowedStream):
        grouped = grouped.grouped
    store_prefix, processor_prefix = STREAM_AGGREGATION_NAMES[aggregation]
    if aggregation is Aggregation.COUNT and window in COUNT_BURNS_A_NAME:
        dsl.names.store(Prefix.STREAM_AGGREGATE)  # taken and dropped, "for compatibility"
    store = dsl.names.store(store_prefix)
    name = dsl.names.processor(processor_prefix)
    parent = grouped.node
    if grouped.repartition_required:
        _, parent = dsl.repartition(grouped.node, store)
    node = dsl.add([parent], GraphNode(name, _write_stateful(store, WINDOW_STORE_KINDS[window])))
    return KTable(name, node, Aggregated(store))


def op_table_aggregation(dsl: Dsl, grouped: KGroupedTable, aggregation: Aggregation) -> KTable:
    """count / reduce / aggregate on a grouped table (``KGroupedTableImpl``): the select
    processor's records always go through a repartition topic named after the store."""
    store_prefix, processor_prefix = TABLE_AGGREGATION_NAMES[aggregation]
    store = dsl.names.store(store_prefix)
    sink = dsl.names.processor(Prefix.STREAM_SINK)
    source = dsl.names.processor(Prefix.STREAM_SOURCE)
    name = dsl.names.processor(processor_prefix)
    topic = store + REPARTITION_SUFFIX

    def write_repartition(node: GraphNode, builder: TopologyBuilder) -> None:
        builder.add_internal_topic(topic, TopicKind.REPARTITION)
        builder.add_sink(sink, topic, node.parent_names())
        builder.add_source(source, (topic,))
    repartition = dsl.add([grouped.node], GraphNode(source, write_repartition))
    node = dsl.add([repartition], GraphNode(name, _write_stateful(store, StoreKind.KEY_VALUE)))
    return KTable(name, node, Aggregated(store))


def op_suppress(dsl: Dsl, table: KTable) -> KTable:
    name = dsl.names.processor(Prefix.TABLE_SUPPRESS)
    store = dsl.names.store(Prefix.TABLE_SUPPRESS)
    table.send_old_values(True)  # the suppress processor needs old values: forces the upstream store
    node = dsl.add([table.node], GraphNode(name, _write_stateful(store, StoreKind.SUPPRESS_BUFFER)))
    return KTable(name, node, Suppressed(table, store))


def op_to(dsl: Dsl, stream: KStream, topic: str) -> None:
    name = dsl.names.processor(Prefix.STREAM_SINK)
    dsl.add([stream.node], GraphNode(name, lambda n, b: b.add_sink(n.name, topic, n.parent_names())))


class JoinType(Enum):
    INNER = "join"
    LEFT = "left_join"
    OUTER = "outer_join"

    @property
    def left_outer(self) -> bool:
        return self is not JoinType.INNER

    @property
    def right_outer(self) -> bool:
        return self is JoinType.OUTER


def op_stream_stream_join(dsl: Dsl, stream: KStream, other: KStream, join: JoinType, spec: dict) -> KStream:
    """``KStreamImplJoin``: a window processor per side (each owning a join-window store the
    other side's join processor reads), the two join processors and a merge."""
    this_side, other_side = stream, other
    if stream.repartition_required:
        this_side = dsl.repartition_for_join(stream)
    if other.repartition_required:
        other_side = dsl.repartition_for_join(other)
    this_window = dsl.names.processor(Prefix.STREAM_WINDOWED)
    other_window = dsl.names.processor(Prefix.STREAM_WINDOWED)
    this_prefix = Prefix.STREAM_OUTER_THIS if join.right_outer else Prefix.STREAM_JOIN_THIS
    this_join = dsl.names.processor(this_prefix)
    other_join = dsl.names.processor(Prefix.STREAM_OUTER_OTHER if join.left_outer else Prefix.STREAM_JOIN_OTHER)
    merge = dsl.names.processor(Prefix.STREAM_MERGE)
    this_store, other_store = this_join + "-store", other_join + "-store"
    # the shared store takes the index of the this-side join processor
    shared_store = Prefix.STREAM_OUTER_SHARED + this_join[len(this_prefix):] + "-store"
    # the shared store of non-joined records exists with JoinWindows' spurious-result fix, which
    # the time-difference API turns on and the legacy JoinWindows.of(...) does not
    with_shared_store = join.left_outer and spec.get("window_api", "time_difference") != "legacy"

    this_window_node = dsl.processor([this_side.node], this_window)
    other_window_node = dsl.processor([other_side.node], other_window)

    def write(node: GraphNode, builder: TopologyBuilder) -> None:
        builder.add_processor(this_join, (this_window_node.name,))
        builder.add_processor(other_join, (other_window_node.name,))
        builder.add_processor(merge, (this_join, other_join))
        builder.add_store(this_store, StoreKind.JOIN_WINDOW, (this_window, other_join))
        builder.add_store(other_store, StoreKind.JOIN_WINDOW, (other_window, this_join))
        if with_shared_store:
            builder.add_store(shared_store, StoreKind.OUTER_JOIN_SHARED, (this_join, other_join))
    node = dsl.add([this_side.node, other_side.node], GraphNode(merge, write))
    return KStream(merge, node, False)


def op_stream_table_join(dsl: Dsl, stream: KStream, table: KTable, join: JoinType, spec: dict) -> KStream:
    """``KStreamImpl#join(KTable)``: one processor reading the table's value-getter stores (and a
    buffer store with a grace period)."""
    if stream.repartition_required:
        stream = dsl.repartition_for_join(stream)
    name = dsl.names.processor(Prefix.STREAM_LEFT_JOIN if join is JoinType.LEFT else Prefix.STREAM_JOIN)
    buffer = []
    if spec.get("grace_ms") is not None:  # Joined#withGracePeriod: records wait in a buffer store
        buffer = [name + "-Buffer"]
        dsl.add_state_store(buffer[0], StoreKind.STREAM_TABLE_JOIN_BUFFER)
    stores = table.getter_stores() + buffer
    node = dsl.add([stream.node], GraphNode(name, _write_with_stores(stores)))
    return KStream(name, node, False)


def op_table_table_join(dsl: Dsl, table: KTable, other: KTable, join: JoinType, spec: dict) -> KTable:
    """``KTableImpl#doJoin``: JOINTHIS reads the other side's stores, JOINOTHER this side's, and
    a merge processor joins their outputs."""
    merge = dsl.names.processor(Prefix.TABLE_MERGE)
    if join.left_outer:
        table.send_old_values(True)
    if join.right_outer:
        other.send_old_values(True)
    # the two join processors' value getters, taken as their suppliers are made
    this_side = _store_union(table.getter_stores(), other.getter_stores())
    other_side = _store_union(other.getter_stores(), table.getter_stores())
    this_name = dsl.names.processor(Prefix.TABLE_JOIN_THIS)
    other_name = dsl.names.processor(Prefix.TABLE_JOIN_OTHER)
    this_stores, other_stores = table.getter_stores(), other.getter_stores()
    left_name, right_name = table.name, other.name

    def write(node: GraphNode, builder: TopologyBuilder) -> None:
        builder.add_processor(this_name, (left_name,))
        builder.add_processor(other_name, (right_name,))
        builder.add_processor(merge, (this_name, other_name))
        builder.connect_stores(this_name, other_stores)
        builder.connect_stores(other_name, this_stores)
    node = dsl.add([table.node, other.node], GraphNode(merge, write))
    return KTable(merge, node, JoinedTables(table, other, this_side, other_side))


def op_foreign_key_join(dsl: Dsl, table: KTable, other: KTable, join: JoinType, spec: dict) -> KTable:
    """``KTableImpl#doJoinOnForeignKey``: this side registers subscriptions (a topic to the other
    side's sub-topology), the other side answers (a response topic back), a resolver checks the
    answer against this side's current value and the output is a table source."""
    other.send_old_values(True)
    table.send_old_values(True)
    registration_topic = dsl.names.processor(Prefix.FK_REGISTRATION) + FK_TOPIC_SUFFIX
    dsl.add_internal_topic(registration_topic, TopicKind.FK_SUBSCRIPTION_REGISTRATION)
    send = dsl.processor([table.node], dsl.names.processor(Prefix.FK_REGISTRATION))
    registration_sink = dsl.add([send], _sink_node(dsl.names.processor(Prefix.TABLE_SINK), registration_topic))
    registration_source = dsl.add([registration_sink],
                                   _source_node(dsl.names.processor(Prefix.TABLE_SOURCE), registration_topic))
    subscription_store = dsl.names.processor(Prefix.FK_STATE_STORE)
    dsl.add_state_store(subscription_store, StoreKind.FK_SUBSCRIPTION)
    receive_name = dsl.names.processor(Prefix.FK_PROCESSOR)
    receive = dsl.add([registration_source], GraphNode(receive_name, _write_with_stores([subscription_store])))
    join_foreign_stores = other.getter_stores()
    join_foreign = dsl.add([receive], GraphNode(dsl.names.processor(Prefix.FK_PROCESSOR),
                                                _write_with_stores(join_foreign_stores)))
    foreign_changes = dsl.add([other.node], GraphNode(dsl.names.processor(Prefix.FK_PROCESSOR),
                                                      _write_with_stores([subscription_store])))
    response_topic = dsl.names.processor(Prefix.FK_RESPONSE) + FK_TOPIC_SUFFIX
    dsl.add_internal_topic(response_topic, TopicKind.FK_SUBSCRIPTION_RESPONSE)
    response_sink = dsl.add([join_foreign, foreign_changes],
                            _sink_node(dsl.names.processor(Prefix.TABLE_SINK), response_topic))
    response_source = dsl.add([response_sink], _source_node(dsl.names.processor(Prefix.TABLE_SOURCE), response_topic))
    primary_stores = table.getter_stores()
    resolver = dsl.add([response_source], GraphNode(dsl.names.processor(Prefix.FK_RESOLVER),
                                                    _write_with_stores(primary_stores)))
    result_name = dsl.names.processor(Prefix.FK_OUTPUT)
    result = TableSource(dsl.names.store(Prefix.FK_OUTPUT), StoreKind.KEY_VALUE, materialized=False)
    node = dsl.add([resolver], GraphNode(result_name, _write_table_source(result)))
    return KTable(result_name, node, result)


def _sink_node(name: str, topic: str) -> GraphNode:
    return GraphNode(name, lambda n, b: b.add_sink(n.name, topic, n.parent_names()))


def _source_node(name: str, topic: str) -> GraphNode:
    return GraphNode(name, lambda n, b: b.add_source(n.name, (topic,)))


# =====================================================================================
# Running a graph's DSL calls
# =====================================================================================

SOURCE_OPERATIONS = ("stream", "table")
NODE_FIELDS = ("id", "from", "materialized")


def _operation_of(spec: dict) -> str:
    return next(key for key in spec if key not in NODE_FIELDS)


def _call(dsl: Dsl, operation: str, argument, spec: dict, upstream: DslObject,
          resolve: Callable[[str], DslObject]) -> DslObject:
    """The DSL call of one graph node on its upstream's DSL object."""
    if operation == "stream":
        return op_stream(dsl, argument, spec)
    if operation == "table":
        return op_table(dsl, argument, spec)
    if isinstance(upstream, KStream):
        return _call_on_stream(dsl, operation, argument, upstream, resolve)
    if isinstance(upstream, KTable):
        return _call_on_table(dsl, operation, argument, upstream, resolve)
    if isinstance(upstream, KGroupedStream) and operation == "windowed_by":
        return op_windowed_by(dsl, upstream, argument)
    if isinstance(upstream, (KGroupedStream, KWindowedStream)):
        return op_stream_aggregation(dsl, upstream, Aggregation(operation))
    if isinstance(upstream, KGroupedTable):
        return op_table_aggregation(dsl, upstream, Aggregation(operation))
    raise ValueError(f"{operation} cannot follow {type(upstream).__name__}")


def _call_on_stream(dsl: Dsl, operation: str, argument, stream: KStream,
                    resolve: Callable[[str], DslObject]) -> DslObject:
    if operation in STREAM_STATELESS:
        return op_stream_stateless(dsl, stream, operation)
    simple = {
        "repartition": op_repartition,
        "to_table": op_to_table,
        "group_by_key": op_group_by_key,
        "group_by": op_stream_group_by,
    }
    if operation in simple:
        return simple[operation](dsl, stream)
    if operation == "merge":
        return op_merge(dsl, stream, resolve(argument))
    if operation == "to":
        return op_to(dsl, stream, argument)
    join = JoinType(operation)
    other = resolve(argument["other"])
    if isinstance(other, KStream):
        return op_stream_stream_join(dsl, stream, other, join, argument)
    return op_stream_table_join(dsl, stream, other, join, argument)


def _call_on_table(dsl: Dsl, operation: str, argument, table: KTable,
                   resolve: Callable[[str], DslObject]) -> DslObject:
    if operation in TABLE_STATELESS:
        return op_table_stateless(dsl, table, operation)
    simple = {
        "to_stream": op_to_stream,
        "group_by": op_table_group_by,
        "suppress": op_suppress,
    }
    if operation in simple:
        return simple[operation](dsl, table)
    join = JoinType(operation)
    other = resolve(argument["other"])
    if argument.get("foreign_key") is not None:
        return op_foreign_key_join(dsl, table, other, join, argument)
    return op_table_table_join(dsl, table, other, join, argument)


def build_topology(nodes: List[dict], release: str = "3.9") -> KafkaTopology:
    """The topology Kafka Streams builds for a (valid) graph's DSL program."""
    dsl = Dsl()
    results: List[DslObject] = []
    by_id: Dict[str, int] = {}

    def resolve(node_id: str) -> DslObject:
        return results[by_id[node_id]]

    for index, spec in enumerate(nodes):
        operation = _operation_of(spec)
        upstream = None
        if operation not in SOURCE_OPERATIONS:
            upstream = resolve(spec["from"]) if "from" in spec else results[index - 1]
        dsl.origin = index
        results.append(_call(dsl, operation, spec[operation], spec, upstream, resolve))
        if "id" in spec:
            by_id[spec["id"]] = index
    return _finish(dsl.build())


def describe_graph(nodes: List[dict], release: str = "3.9") -> str:
    """``Topology#describe().toString()`` for the graph's DSL program, as Kafka Streams prints it."""
    return build_topology(nodes, release).description
