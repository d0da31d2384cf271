"""``TopologyTestDriver``'s heap of internal queues on Spark: the order in which the task takes the
records one input wrote to two or more internal topics (``../shared/spec/topology-graphs.md``,
Processing model, point 2; the reference: ``reference/graph/queues.py``, ``engine.py``).

**Takes and their identity.** Every record read back from an internal topic is one *take* of its
input. Its order key (:mod:`spark_backend.graph.flow`) is ``[i, 1, R] + tail``: ``tail`` is where
it was written (the writing record's order key after ``[i, 0]`` or ``[i, 1, R']``, then the
forward rank of the topic's sink): it names the take whatever order the takes are in, and ``[i, 1]
+ tail`` is its **identity**. ``R`` is the take's **rank**, its place among the input's internal
takes; an arrival's ``take`` column is its take's ``[i, 1, R] + tail`` and its ``ok`` extends it,
so ``R`` decides between takes and the path after it within one. Routing writes ``R = 0``
(:data:`UNRANKED`): with one internal topic per input (the graphs that need no heap), the tails
alone are the topic's FIFO order and nothing here runs.

**The heap.** Which take comes next depends only on what the earlier takes wrote: each written
record's topic and timestamp, in write order (the order of the identities of one take's writes).
Routing reports every write (:data:`WRITE` rows of the level: ``take`` = the writing take's
identity, ``ok`` = the written record's, ``topic``, ``ts``, ``depth`` = the level that wrote it);
:func:`take_ranks` replays ``java.util.PriorityQueue`` over them per input (the reference's queue
rules, ``siftUp``/``siftDown`` included, reimplemented here: Spark code does not import the
reference's operators).

**Level by level.** Before the stages of level ``L`` run, the ranks are computed on the driver
from the writes known then (those of levels below ``L``, plus, on a later pass, the previous pass's
writes of levels ``L`` and deeper as a prediction) and written into the arrivals' ``ok`` and
``take`` (:meth:`HeapOrder.ranked`). Every take whose records reach level ``L`` was written below
``L``, so it has a rank; but writes made at ``L`` or deeper can still change the heap's choices
before them (a queue that enters the heap moves the others on ties, a record with a small timestamp
is taken first). So after the last level the final ranks (every write known) are computed, and
**checked** (:meth:`HeapOrder.finish`): every node whose result depends on the order of its
arrivals across takes (every stage but the stateless ones, :data:`ORDER_FREE`) must have seen the
takes of the topics that reach it (:func:`topics_reaching`) in the final order. If so, every node
computed what it computes in the final order, whose writes give that order again: the run is the
driver's (by induction over the takes: the same heap state picks the same next take). The events'
``ok`` then get the final ranks (outputs of different levels were written with their level's
ranks). A scenario that fails the check is run again, with this pass's writes as the prediction
(:func:`spark_backend.graph.runner.run_levels`), at most :data:`MAX_PASSES` times; then it is
refused, naming the node that saw another order.

Task stream time needs nothing: no graph processor reads it, and each processor's own stream time
is computed by its stage from its arrivals in order.

Cost: for scenarios that need the heap only: one collect of the level's writes per level, a
Python heap replay per input on the driver (O(w log q) for w writes and q topics), a broadcast
join per level and one at the end.
"""
from __future__ import annotations

from collections import deque
from typing import Dict, Iterable, List, Optional, Set, Tuple

from kssim.reference.model.graph.nodes import StreamSourceOp, SuppressOp, TableSourceOp
from kssim.reference.model.graph.plan import Plan

from kssim.spark_backend.graph import flow

#: the rank routing gives a take (see the module docstring)
UNRANKED = 0
#: the level row kind of a write to an internal topic (:mod:`spark_backend.graph.runner`'s kinds)
WRITE = 4
#: passes over a scenario before its order is given up on
MAX_PASSES = 4
#: stages whose output for an arrival depends on that arrival alone
ORDER_FREE = frozenset(("stream_source", "pass", "stream_filter", "stream_map_values", "select_key", "map",
                        "flat_map_values", "to_stream", "to", "table_filter", "table_map_values",
                        "table_group_by"))

RANK_DDL = "sid INT, idx BIGINT, ident ARRAY<BIGINT>, rank BIGINT"


# --- the plan: which graphs need the heap, which topics reach a node -------------------------------

def internal_readers(plan: Plan) -> Dict[str, List[int]]:
    """Each repartition topic's reading nodes."""
    readers: Dict[str, List[int]] = {}
    for node_plan in plan.nodes:
        for edge in node_plan.children:
            if edge.repartition is not None:
                readers.setdefault(edge.repartition, []).append(edge.child)
    return readers


def _within_take(plan: Plan, starts: Iterable[int]) -> Set[int]:
    """The nodes a record reaching ``starts`` reaches within its take (no repartition crossed)."""
    seen: Set[int] = set()
    todo = list(starts)
    while todo:
        here = todo.pop()
        if here in seen:
            continue
        seen.add(here)
        todo.extend(e.child for e in plan.nodes[here].children if e.repartition is None)
    return seen


def topics_reaching(plan: Plan) -> Dict[int, Set[str]]:
    """Per node, the repartition topics whose records reach it within their take."""
    reaching: Dict[int, Set[str]] = {n.node.index: set() for n in plan.nodes}
    for topic, readers in internal_readers(plan).items():
        for index in _within_take(plan, readers):
            reaching[index].add(topic)
    return reaching


def needs_heap(plan: Plan) -> bool:
    """Can the records of one input reach two internal topics (then the heap orders their takes)?"""
    below: Dict[int, Set[str]] = {}

    def topics_below(index: int) -> Set[str]:
        if index not in below:
            out: Set[str] = set()
            for edge in plan.nodes[index].children:
                if edge.repartition is not None:
                    out.add(edge.repartition)
                out |= topics_below(edge.child)
            below[index] = out
        return below[index]

    by_topic: Dict[str, Set[str]] = {}
    for node_plan in plan.nodes:
        op = node_plan.node.op
        if isinstance(op, (StreamSourceOp, TableSourceOp)):
            by_topic.setdefault(op.topic, set()).update(topics_below(node_plan.node.index))
    return any(len(topics) > 1 for topics in by_topic.values())


def refusal(plan: Plan) -> Optional[str]:
    """A shape whose order this module does not give exactly, or None: a ``suppress`` with a byte
    bound reached by records of two internal topics (its buffer counts the bytes of the topic's
    name the record was taken from, which a change does not carry here)."""
    reaching = topics_reaching(plan)
    for node_plan in plan.nodes:
        node = node_plan.node
        if isinstance(node.op, SuppressOp) and len(reaching[node.index]) > 1:
            buffer = getattr(node.op.spec, "buffer", None)
            if buffer is not None and getattr(buffer, "max_bytes", None) is not None:
                return (f"the Spark backend does not run graph node {node.where} ({node.name}): a suppress with "
                        "max_bytes reached by records of two internal topics (its buffer counts the name of the "
                        "topic each record was taken from) yet")
    return None


# --- the heap -------------------------------------------------------------------------------------

class _JavaPriorityQueue:
    """``java.util.PriorityQueue`` ordered by ``key(element)``: offer and poll, as Java sifts."""

    __slots__ = ("items", "key")

    def __init__(self, key):
        self.items: list = []
        self.key = key

    def offer(self, element) -> None:
        items, key = self.items, self.key
        k = len(items)
        items.append(element)
        x = key(element)
        while k > 0:
            parent = (k - 1) >> 1
            e = items[parent]
            if x >= key(e):
                break
            items[k] = e
            k = parent
        items[k] = element

    def poll(self):
        items, key = self.items, self.key
        if not items:
            return None
        result = items[0]
        last = items.pop()
        n = len(items)
        if n:
            x = key(last)
            k, half = 0, n >> 1
            while k < half:
                child = 2 * k + 1
                c = items[child]
                right = child + 1
                if right < n and key(c) > key(items[right]):
                    child = right
                    c = items[child]
                if x <= key(c):
                    break
                items[k] = c
                k = child
            items[k] = last
        return result


#: one write: the written record's identity, its topic, its timestamp
Write = Tuple[tuple, str, int]


def take_ranks(input_index: int, writes: Dict[tuple, List[Write]]) -> Dict[tuple, int]:
    """The rank (1, 2, ...) of every internal take of one input: ``writes`` maps a take's identity
    (``(i, 0)`` for the input itself) to what it wrote, in write order. The task takes the input,
    appends its writes to their topics' queues, then polls the heap of non-empty queues (keyed by
    head timestamp), takes the head, offers the queue again if not empty, appends the take's writes."""
    queues: Dict[str, deque] = {}
    heap = _JavaPriorityQueue(lambda q: q[0][2])
    ranks: Dict[tuple, int] = {}

    def commit(take: tuple) -> None:
        for write in writes.get(take, ()):
            queue = queues.get(write[1])
            if queue is None:
                queue = queues[write[1]] = deque()
            queue.append(write)
            if len(queue) == 1:
                heap.offer(queue)

    commit((input_index, flow.INPUT_TAKE))
    while heap.items:
        queue = heap.poll()
        record = queue.popleft()
        if queue:
            heap.offer(queue)
        ranks[record[0]] = len(ranks) + 1
        commit(record[0])
    return ranks


# --- the passes -----------------------------------------------------------------------------------

class HeapOrder:
    """The take ranks of one pass over a batch (see the module docstring). ``predictions``: per
    scenario, a previous pass's writes ``{identity: (parent, topic, ts, level)}``."""

    def __init__(self, batch, stage_names: Dict[Tuple[int, int], str], predictions: Optional[dict] = None):
        self.batch = batch
        self.sids = sorted(sid for sid, plan in batch.plans.items() if needs_heap(plan))
        self.stage_names = stage_names
        self.predictions = predictions or {}
        self.writes: Dict[int, dict] = {sid: {} for sid in self.sids}  # sid -> identity -> (parent, topic, ts, level)
        self.used: Dict[int, Dict[int, dict]] = {}  # level -> sid -> identity -> rank
        self.unsettled: Dict[int, str] = {}  # sid -> why (the node that saw another order)

    def __bool__(self):
        return bool(self.sids)

    # the writes
    def written(self, frame):
        """The write rows of ``frame`` (routing's writes) this pass keeps: its scenarios' only."""
        from pyspark.sql import functions as F

        if not self.sids or frame is None:
            return None
        return frame.filter(F.col("sid").isin(self.sids))

    def add_writes(self, rows, level: int) -> None:
        for r in rows:
            self.writes[r["sid"]][tuple(r["ok"])] = (tuple(r["take"]), r["topic"], r["ts"], level)

    def _ranks(self, sid: int, level: Optional[int]) -> Dict[tuple, int]:
        """Every known take's rank in scenario ``sid``: the writes of levels below ``level`` (all
        when None), and the prediction's of the others."""
        known = dict(self.predictions.get(sid, {})) if level is not None else {}
        known = {ident: w for ident, w in known.items() if w[3] >= level} if level is not None else known
        for ident, w in self.writes[sid].items():
            if level is None or w[3] < level:
                known[ident] = w
        by_input: Dict[int, Dict[tuple, List[Write]]] = {}
        for ident, (parent, topic, ts, _) in known.items():
            by_input.setdefault(ident[0], {}).setdefault(parent, []).append((ident, topic, ts))
        ranks: Dict[tuple, int] = {}
        for i, writes in by_input.items():
            for children in writes.values():
                children.sort(key=lambda w: w[0])
            ranks.update(take_ranks(i, writes))
        return ranks

    def _frame(self, ranks_by_sid: Dict[int, Dict[tuple, int]]):
        rows = [(sid, ident[0], list(ident), rank) for sid, ranks in ranks_by_sid.items()
                for ident, rank in ranks.items()]
        return self.batch.frame(rows, RANK_DDL)

    # the order keys
    def ranked(self, arrivals, level: int):
        """The arrivals of ``level`` with their takes' ranks as known before the level runs."""
        if not self.sids:
            return arrivals
        ranks = {sid: self._ranks(sid, level) for sid in self.sids}
        self.used[level] = ranks
        return _with_ranks(arrivals, self._frame(ranks), flow.ARRIVAL_COLUMNS)

    def finish(self, events):
        """The events with their takes' final ranks; scenarios whose nodes saw another order are
        put in :attr:`unsettled`."""
        if not self.sids:
            return events
        final = {sid: self._ranks(sid, None) for sid in self.sids}
        for sid in self.sids:
            why = self._check(sid, final[sid])
            if why is not None:
                self.unsettled[sid] = why
        return _with_ranks(events, self._frame(final), tuple(events.columns))

    def _check(self, sid: int, final: Dict[tuple, int]) -> Optional[str]:
        """The first order-dependent node that saw takes in another order than the final one."""
        plan = self.batch.plans[sid]
        reaching = topics_reaching(plan)
        topic_of = {ident: w[1] for ident, w in self.writes[sid].items()}
        for node_plan in plan.nodes:
            index = node_plan.node.index
            topics = reaching[index]
            if not topics or self.stage_names[(sid, index)] in ORDER_FREE:
                continue
            used = self.used.get(self.batch.depths[(sid, index)], {}).get(sid, {})
            takes = sorted((ident for ident, topic in topic_of.items() if topic in topics),
                           key=lambda ident: (ident[0], final[ident]))
            seen = [(ident[0], used.get(ident, -1)) for ident in takes]
            if seen != sorted(seen) or any(rank < 0 for _, rank in seen):
                node = node_plan.node
                return f"graph node {node.where} ({node.name})"
        return None

    def next_predictions(self) -> dict:
        """This pass's writes of the unsettled scenarios, the next pass's prediction."""
        return {sid: dict(self.writes[sid]) for sid in self.unsettled}


def _with_ranks(frame, ranks, columns):
    """``frame`` (with ``ok``, ``take``, ``sid``, ``idx``) with the rank of each internal take
    written at ``ok[2]`` and ``take[2]``; rows of other takes or scenarios unchanged."""
    from pyspark.sql import functions as F

    take = F.col("take")
    internal = take.isNotNull() & (take.getItem(1) == flow.INTERNAL_TAKE)
    ident = F.when(internal, F.concat(F.slice(take, 1, 2), F.slice(take, 4, F.size(take) - 3)))
    keyed = frame.withColumn("_ident", ident)
    joined = keyed.join(F.broadcast(ranks.withColumnRenamed("ident", "_ident").withColumnRenamed("rank", "_rank")),
                        ["sid", "idx", "_ident"], "left")
    rank = F.col("_rank")

    def ranked(column):
        col = F.col(column)
        return F.when(rank.isNotNull(), F.concat(F.slice(col, 1, 2), F.array(rank), F.slice(col, 4, F.size(col) - 3))
                      ).otherwise(col)

    return joined.select(*[ranked(c).alias(c) if c in ("ok", "take") else F.col(c) for c in columns])


def write_rows(through, dropped, level: int):
    """Routing's writes (see the module docstring) of the records ``through`` (emitted records
    joined with their repartition edges) that the null-key filter did not drop: one per record and
    topic (the topic's first reader), ``take`` the writing take's identity, ``ok`` the written
    record's, at the emitter's ``level``."""
    from pyspark.sql import functions as F

    take = F.col("take")
    parent = F.when(take.getItem(1) == flow.INTERNAL_TAKE,
                    F.concat(F.slice(take, 1, 2), F.slice(take, 4, F.size(take) - 3))).otherwise(take)
    written = through.filter(~dropped & (F.col("rrank") == 0))
    return flow.select_columns(written, "sid INT, idx BIGINT, ts BIGINT, topic STRING, take ARRAY<BIGINT>, "
                                        "ok ARRAY<BIGINT>, depth INT",
                               take=parent, ok=identity_of_write(), depth=F.lit(level))


def identity_of_write():
    """The identity ``[i, 1] + tail`` of the take a record written to a repartition topic becomes:
    ``tail`` the writing record's order key after ``[i, 0]`` or ``[i, 1, R]``, then the sink's
    forward rank (``rank``)."""
    from pyspark.sql import functions as F

    ok = F.col("ok")
    after = F.when(ok.getItem(1) == flow.INTERNAL_TAKE, F.slice(ok, 4, F.size(ok) - 3)) \
        .otherwise(F.slice(ok, 3, F.size(ok) - 2))
    return F.concat(F.array(F.col("idx"), F.lit(flow.INTERNAL_TAKE).cast("bigint")), after,
                    F.array(F.col("rank").cast("bigint")))
