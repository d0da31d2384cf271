"""From a node's emitted records to its children's arrivals: the plan's edges as one broadcast
join, ``ProcessorNode#forward``'s order as the order key, repartition topics as a later take.

The targets a node forwards to, in order, are its plan edges, except that the edges through one
repartition topic share the topic's one sink (``KStreamImpl#repartitionForJoin``): it stands
where the first of them is. A record written to a repartition topic is read back after the take
that wrote it (``[idx, 1, rank] + production path``: the rank is the take's place in
``TopologyTestDriver``'s heap of queues, :mod:`spark_backend.graph.heap_order`, 0 until known) and
goes to every node that reads the topic, in
the order they were wired. Before the sink, the plan's null-key filter
(``repartition_keeps_null_keys_for_relaxed_joins``) drops null keys where the edge says so; the
drop names the topic, as the reference names the sink after it.
"""
from __future__ import annotations

from typing import List

from kssim.reference.model.codes import DropReason
from kssim.reference.model.graph.plan import Plan

from kssim.spark_backend.graph import flow, heap_order

EDGE_DDL = ("sid INT, node INT, child INT, cport INT, rank INT, topic STRING, drops_null BOOLEAN, rrank INT, "
            "cop STRING, cdepth INT")


def edge_rows(sid: int, plan: Plan, stage_of, depth_of) -> List[tuple]:
    """One row per (emitting node, receiving node): the forward rank at the emitter, the
    repartition topic with its null-key filter and the receiver's rank among the topic's readers."""
    readers: dict = {}  # topic -> receivers in wiring order (emitters in node order, then edge order)
    for node_plan in plan.nodes:
        for edge in node_plan.children:
            if edge.repartition is not None:
                readers.setdefault(edge.repartition, []).append(edge)
    rows = []
    for node_plan in plan.nodes:
        targets: list = []  # forward targets: a child's index, or a repartition topic's name
        for edge in node_plan.children:
            target = edge.child if edge.repartition is None else edge.repartition
            if target not in targets or edge.repartition is None:
                targets.append(target)
        for edge in node_plan.children:
            child = plan.nodes[edge.child].node
            if edge.repartition is None:
                rank, rrank, drops = targets.index(edge.child), None, None
            else:
                first = readers[edge.repartition][0]
                rank, rrank, drops = targets.index(edge.repartition), readers[edge.repartition].index(edge), \
                    first.drops_null_keys
            rows.append((sid, node_plan.node.index, edge.child, edge.port, rank, edge.repartition, drops, rrank,
                         stage_of(child), depth_of(sid, edge.child)))
    return rows


def route(emitted, edges, level=None):
    """``(rows, writes)``: ``rows``, rows of the level (:data:`flow.LEVEL_DDL`) made in one pass
    over ``emitted``: the children's arrivals, and the records the null-key filter before a
    repartition topic dropped (one drop per record, not per reader of the topic); ``writes``, the
    records written to repartition topics (:func:`heap_order.write_rows`, the writing
    ``level``'s)."""
    from pyspark.sql import functions as F

    joined = emitted.join(F.broadcast(edges), ["sid", "node"])
    through = F.col("topic").isNotNull()
    dropped = F.coalesce(through & F.col("key").isNull() & F.col("drops_null"), F.lit(False))
    # the take a written record becomes: [idx, 1, rank] + where it was written (heap_order)
    identity = heap_order.identity_of_write()
    read_back = F.concat(F.slice(identity, 1, 2), F.array(F.lit(heap_order.UNRANKED).cast("bigint")),
                         F.slice(identity, 3, F.size(identity) - 2))
    kept = joined.filter(~dropped | (F.col("rrank") == 0))

    def arriving(arrival, drop):
        return F.when(dropped, drop).otherwise(arrival)
    rows = flow.select_columns(
        kept, flow.LEVEL_DDL,
        etype=arriving(F.lit(flow.ARRIVAL), F.lit(flow.DROP)),
        node=arriving(F.col("child"), F.col("node")), port=arriving(F.col("cport"), F.lit(None)),
        op=arriving(F.col("cop"), F.lit(None)), depth=arriving(F.col("cdepth"), F.lit(None)),
        ok=arriving(F.when(through, flow.extend(read_back, F.col("rrank"))).otherwise(flow.extend(F.col("ok"),
                                                                                                  F.col("rank"))),
                    F.col("ok")),
        take=arriving(F.when(through, read_back).otherwise(F.col("take")), F.col("take")),
        # a drop names the topic (the reference names the sink after it)
        topic=F.lit(None), where=F.when(dropped, F.col("topic")),
        code=F.when(dropped, F.lit(DropReason.NULL_KEY.code)))
    return rows, heap_order.write_rows(joined.filter(through), dropped, level)
