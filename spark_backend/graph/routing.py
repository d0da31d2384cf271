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
    """``(arrivals, drops, writes)``: the children's arrivals of ``emitted`` records, the records
    the null-key filter before a repartition topic dropped, and the records written to repartition
    topics (:func:`heap_order.write_rows`, the writing ``level``'s)."""
    from pyspark.sql import functions as F

    joined = emitted.join(F.broadcast(edges), ["sid", "node"])
    direct = joined.filter(F.col("topic").isNull())
    through = joined.filter(F.col("topic").isNotNull())
    dropped = F.col("key").isNull() & F.col("drops_null")
    # the take a written record becomes: [idx, 1, rank] + where it was written (heap_order)
    identity = heap_order.identity_of_write()
    read_back = F.concat(F.slice(identity, 1, 2), F.array(F.lit(heap_order.UNRANKED).cast("bigint")),
                         F.slice(identity, 3, F.size(identity) - 2))
    arrivals = flow.select_columns(direct, flow.ARRIVAL_DDL, node="child", port="cport", op="cop", depth="cdepth",
                                   ok=flow.extend(F.col("ok"), F.col("rank"))).unionByName(
        flow.select_columns(through.filter(~dropped), flow.ARRIVAL_DDL, node="child", port="cport", op="cop",
                            depth="cdepth", take=read_back, ok=flow.extend(read_back, F.col("rrank"))))
    # one drop per record, not per reader of a shared topic
    drops = flow.drops(through.filter(dropped & (F.col("rrank") == 0)), DropReason.NULL_KEY.code,
                       where=F.col("topic"))
    return arrivals, drops, heap_order.write_rows(through, dropped, level)
