"""Record caches on Spark (``config.caching: true``): what a cached node emits is held and
forwarded at the driver's commit after the take that caused it, as Kafka's ``NamedCache`` flushes
under ``TopologyTestDriver`` (``../shared/spec/topology-graphs.md``, Config and Processing model
point 3; the reference: ``reference/graph/cache.py``).

**Which nodes are cached** (:func:`cacheable`, as the reference engine registers them): a
materialized, unversioned table source or ``to_table`` (``NodePlan.materialized``), a grouped
stream's or grouped table's aggregation, a windowed aggregation that emits on update (an
emit-on-window-close one forwards its results itself), a foreign-key join's result when it is
materialized (old values asked for: ``NodePlan.send_old_values``; each response is a take of its
own, so the cache shows only in its null changes). Not versioned stores, not join windows.

**The cache step** (:func:`flushed`, run by the runner on what a stage emitted, before routing):
per (scenario, cached node, take, key and window) the records the take made become one,

- new value, timestamp, input index: the last record's (the store's latest put);
- old value: the store's value before the take's first update of the key: the value of the key's
  last record before the take (null if none: a first update has no old value, not the
  initializer's), sent only where the node sends old values (``NodePlan.send_old_values``);
- a change whose new value and value before are both null is not forwarded
  [``record_cache_skips_null_changes``, KAFKA-7652, 2.2; before, ``Change(null, null)`` is];
- its order key: ``take + [FLUSH, node] + the last record's order key after the take``: after
  everything else the take caused (:data:`FLUSH`, larger than any reader's rank), caches in store
  creation order (the reference registers them in node order), then the keys in the order of
  their last put (``NamedCache``'s dirty keys, re-added at every put).

Every record a cached node emits is a put of its store (the store's value after it is the record's
new value), so the key's previous record holds the value before (a window store's too: the
reference forgets flushed windows past the store's retention, which take no record any more).
The flush position extends the take, so where :mod:`spark_backend.graph.heap_order` rewrites a
take's rank in ``take`` and ``ok``, the take's flushed records move with it. The driver flushes every cache
twice per commit; with caches created in node order and graphs listed in topological order, a
flush only dirties caches of later nodes, which the first pass flushes after it: a flushed record
that reaches another cached node in the same commit is that node's last put (its order key,
``take + [FLUSH, earlier node, ...]``, is after the take's other records) and is flushed after
every record of the earlier cache. The second pass finds nothing, and no cache carries dirty keys
to the next commit.

**What is refused** (:func:`unsupported`, naming the join): a table-table join (either side) or a
stream-table join (its table side) that one take can reach on one port after updating a cached
table behind the other port (within the take: no repartition crossed): Kafka's value getter reads
the store, already updated, while the Spark join stages read the changes forwarded to them, which
the cache holds back until the flush. A foreign-key join reads its getters in its own internal
takes, after the flushes; its results are counted in its input's take here (a sound
over-approximation of what one take reaches).

Cost: one shuffle of the cached nodes' emitted records by (scenario, node, key, window), one sort,
window functions; uncached nodes' records pass untouched.
"""
from __future__ import annotations

from typing import Dict, Optional, Set, Tuple

from kssim.reference.model.errors import UnsupportedOperator
from kssim.reference.model.graph.nodes import (AggregateOp, JoinOp, Kind, StreamSourceOp, TableSourceOp,
                                               ToTableOp)
from kssim.reference.model.graph.plan import Plan

from kssim.spark_backend.graph import flow

#: the order-key position of a take's flushed records: after every reader's rank (small numbers)
FLUSH = 1 << 61

SETTINGS_DDL = "sid INT, node INT, cached BOOLEAN, send_old BOOLEAN, skips_null BOOLEAN"


# --- which nodes are cached --------------------------------------------------------------------

def cacheable(plan: Plan, index: int) -> bool:
    """Does node ``index`` have a record cache when ``config.caching`` is on?"""
    node_plan = plan.nodes[index]
    node = node_plan.node
    op = node.op
    if isinstance(op, TableSourceOp):
        return node_plan.materialized and not op.versioned
    if isinstance(op, ToTableOp):
        return node_plan.materialized
    if isinstance(op, AggregateOp):
        upstream = plan.nodes[node.upstream].node.kind
        if upstream is Kind.WINDOWED_STREAM:
            return node_plan.spec.emit != "on_window_close"
        return True
    if isinstance(op, JoinOp) and op.foreign_key is not None:
        return node_plan.send_old_values  # the result's store (old values asked for downstream)
    return False


def cached_nodes(plan: Plan) -> Tuple[int, ...]:
    return tuple(n.node.index for n in plan.nodes if cacheable(plan, n.node.index))


# --- what is refused ---------------------------------------------------------------------------

def unsupported(plan: Plan) -> Optional[UnsupportedOperator]:
    """Why a graph with ``config.caching`` cannot run exactly on Spark, or None."""
    hazard = _getter_reads_ahead(plan)
    if hazard is not None:
        node = plan.nodes[hazard].node
        return UnsupportedOperator(
            f"the Spark backend does not run graph node {node.where} ({node.name}) with config.caching: one record "
            "can update a cached table this join reads and reach the join before that cache is flushed (its value "
            "getter reads the store ahead of the flushed changes)")
    return None


def _takes(plan: Plan):
    """Per way into the task (an input topic, a repartition topic): the ``(node, port)`` pairs a
    record taken from it reaches within its take (no repartition crossed), and those nodes."""
    entries: Dict[tuple, Set[tuple]] = {}
    for node_plan in plan.nodes:
        op = node_plan.node.op
        if isinstance(op, (StreamSourceOp, TableSourceOp)):
            entries.setdefault(("topic", op.topic), set()).add((node_plan.node.index, 0))
        for edge in node_plan.children:
            if edge.repartition is not None:
                entries.setdefault(("internal", edge.repartition), set()).add((edge.child, edge.port))
    out = []
    for first in entries.values():
        received, todo, reached = set(first), [n for n, _ in first], set()
        while todo:
            here = todo.pop()
            if here in reached:
                continue
            reached.add(here)
            for edge in plan.nodes[here].children:
                if edge.repartition is None:
                    received.add((edge.child, edge.port))
                    todo.append(edge.child)
        out.append((received, reached))
    return out


def _feeding(plan: Plan, index: int, port: int) -> Set[int]:
    """The nodes whose records reach ``index`` at ``port`` within one take (no repartition crossed)."""
    parents: Dict[int, list] = {}
    for node_plan in plan.nodes:
        for edge in node_plan.children:
            if edge.repartition is None:
                parents.setdefault(edge.child, []).append((node_plan.node.index, edge.port))
    todo = [p for p, at in parents.get(index, ()) if at == port]
    seen: Set[int] = set()
    while todo:
        here = todo.pop()
        if here not in seen:
            seen.add(here)
            todo.extend(p for p, _ in parents.get(here, ()))
    return seen


def _getter_reads_ahead(plan: Plan) -> Optional[int]:
    """A join that can read a cached table's getter in a take that updated the table before the
    flush (a table-table join reads the other side at either side's change, a stream-table join
    the table at a stream record), or None."""
    cached = set(cached_nodes(plan))
    if not cached:
        return None
    takes = _takes(plan)
    nodes = plan.nodes
    for node_plan in nodes:
        node = node_plan.node
        op = node.op
        if not isinstance(op, JoinOp) or nodes[op.other].node.kind is not Kind.TABLE:
            continue
        if op.foreign_key is not None:
            continue  # its getters are read in its own internal takes, after the flushes
        reads = ((0, 1), (1, 0)) if node.kind is Kind.TABLE else ((0, 1),)  # (triggering port, port read)
        for port, other in reads:
            behind = _feeding(plan, node.index, other) & cached
            if not behind:
                continue
            for received, reached in takes:
                if (node.index, port) in received and behind & reached:
                    return node.index
    return None


# --- the cache step ----------------------------------------------------------------------------

def _settings(instances):
    """One row per cached instance (caching on, a cached node), or an empty list."""
    rows = []
    for inst in instances:
        if inst.config.caching and cacheable(inst.plan, inst.index):
            rows.append((inst.sid, inst.index, True, bool(inst.node_plan.send_old_values),
                         bool(inst.profile.record_cache_skips_null_changes)))
    return rows


def flushed(result: flow.StageResult, instances, batch) -> flow.StageResult:
    """``result`` with what its cached instances emitted replaced by what their caches flush at
    the commit of each take (see the module docstring); others' records untouched."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    rows = _settings(instances)
    if not rows or result.emitted is None:
        return result
    settings = batch.frame(rows, SETTINGS_DDL)
    marked = result.emitted.join(F.broadcast(settings), ["sid", "node"], "left")
    passed = flow.records(marked.filter(F.col("cached").isNull()))
    held = marked.filter(F.col("cached").isNotNull())

    by_key = Window.partitionBy("sid", "node", "key", "wstart", "wend").orderBy(*flow.IN_ORDER)
    take = F.col("take")
    prior_take, next_take = F.lag("take").over(by_key), F.lead("take").over(by_key)
    stepped = held.select(
        "*", F.lag("value").over(by_key).alias("before"),
        (prior_take.isNull() | (prior_take != take)).alias("first"),
        (next_take.isNull() | (next_take != take)).alias("last"))
    # the value before the take's first update, carried to the take's last record (a struct, so
    # that a null value before is kept apart from "not this take's first record")
    running = by_key.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    generation = F.last(F.when(F.col("first"), F.struct(F.col("before").alias("v"))), ignorenulls=True).over(running)
    lasts = stepped.select("*", generation.getField("v").alias("old_before")).filter(F.col("last"))
    # [record_cache_skips_null_changes] KAFKA-7652 (2.2): Change(null, null) is not forwarded
    null_change = F.col("value").isNull() & F.col("old_before").isNull() & F.col("skips_null")
    kept = lasts.filter(~null_change)
    size_take = F.size(take)
    ok = F.concat(take, F.array(F.lit(FLUSH).cast("bigint"), F.col("node").cast("bigint")),
                  F.slice(F.col("ok"), size_take + 1, F.size(F.col("ok")) - size_take))
    flushed_records = flow.records(kept, ok=ok, old=F.when(F.col("send_old"), F.col("old_before")),
                                   latest=F.lit(True))
    return flow.StageResult(emitted=flow.union_all([passed, flushed_records]), outputs=result.outputs,
                            drops=result.drops, failures=result.failures)
