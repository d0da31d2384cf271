"""Run topology graphs on Spark: a batch of graph scenarios, one stage per plan node, level by level.

Every scenario's graph is compiled by the shared model (:func:`reference.model.graph.plan.compile_graph`,
the same plan the reference engine builds from). A node's *level* is the longest path from a
source to it; the batch is run level by level: the arrivals of every node of level ``L`` in every
scenario (one frame, checkpointed so that each level is computed once) go to the stage of their
node's kind (:mod:`spark_backend.graph.stages`), and what the stages emit is routed along the
plan's edges (:mod:`spark_backend.graph.routing`) to nodes of deeper levels. A batch of hundreds
of different graphs is thus a handful of Spark jobs, one per level, plus the final collect.

The outputs, drops and failures of every stage are collected at the end and put in order on the
driver by their order key (:mod:`spark_backend.graph.flow`), so the result is byte-identical
whatever the partitioning. Kafka Streams dies at the first failure in processing order: what was
emitted or dropped before it is kept, nothing after it.
"""
from __future__ import annotations

import json
from typing import Dict, Optional, Sequence

from kssim.reference.model.codes import DropReason, FailureCode
from kssim.reference.model.errors import KafkaWouldFail, UnsupportedOperator
from kssim.reference.model.graph.nodes import StreamSourceOp, TableSourceOp
from kssim.reference.model.graph.plan import Plan, compile_graph
from kssim.reference.model.keys import key_text
from kssim.reference.model.records import NO_OLD_VALUE, Drop, OutputRecord, RunResult, windowed_key

from kssim.spark_backend.graph import flow, routing
from kssim.spark_backend.graph.batch import GraphBatch
from kssim.spark_backend.graph.mappers import value_text
from kssim.spark_backend.graph.stages import STAGES, stage_of

#: the kinds of rows a level leaves: records on their way to a deeper node, and events
ARRIVAL, OUTPUT, DROP, FAILURE = 3, 0, 1, 2
#: every row a level leaves: an arrival's columns, and an event's (an output's topic; a drop's or
#: a failure's place and code)
LEVEL_DDL = "etype INT, " + flow.ARRIVAL_DDL + ", topic STRING, where STRING, code STRING"


def unsupported(plan: Plan, config) -> Optional[UnsupportedOperator]:
    """Why the Spark backend cannot run this plan yet, or None."""
    if config.caching:
        return UnsupportedOperator("the Spark backend does not run graphs with config.caching yet")
    nodes = plan.graph.nodes
    for node_plan in plan.nodes:
        node = node_plan.node
        stage = stage_of(node, nodes)
        if stage not in STAGES:
            return UnsupportedOperator(f"the Spark backend does not run graph node {node.where} "
                                       f"({node.name}: {stage.replace('_', ' ')}) yet")
    if not heap_free(plan):
        return UnsupportedOperator("the Spark backend does not run a graph in which one input can reach two "
                                   "internal topics (TopologyTestDriver's heap of internal queues) yet")
    return None


def heap_free(plan: Plan) -> bool:
    """Can the records one input causes be on one internal topic at most? Then the task takes them
    in the order they were written (one FIFO queue), which the order key encodes; with two
    topics, ``TopologyTestDriver``'s heap of queues decides (not modelled here yet). An input
    enters through the source nodes of its topic: what matters is the repartition topics
    reachable downstream of each topic's sources."""
    reachable: Dict[str, set] = {}
    for node_plan in plan.nodes:
        op = node_plan.node.op
        if isinstance(op, (StreamSourceOp, TableSourceOp)):
            reachable.setdefault(op.topic, set()).update(_topics_below(plan, node_plan.node.index))
    return all(len(topics) <= 1 for topics in reachable.values())


def _topics_below(plan: Plan, index: int) -> set:
    topics, seen, todo = set(), set(), [index]
    while todo:
        here = todo.pop()
        if here in seen:
            continue
        seen.add(here)
        for edge in plan.nodes[here].children:
            if edge.repartition is not None:
                topics.add(edge.repartition)
            todo.append(edge.child)
    return topics


def run_graphs(scenarios: Sequence, sids: Sequence[int], spark) -> Dict[int, object]:
    """Run graph scenarios as one batch: ``{sid: RunResult or UnsupportedOperator}``."""
    results: Dict[int, object] = {}
    runnable, plans = [], []
    for sid, scenario in zip(sids, scenarios):
        plan = compile_graph(scenario.topology, scenario.profile, scenario.config.store)
        refusal = unsupported(plan, scenario.config)
        if refusal is not None:
            results[sid] = refusal
        else:
            runnable.append((sid, scenario))
            plans.append(plan)
    if not runnable:
        return results
    batch = GraphBatch(spark, [s for _, s in runnable], [sid for sid, _ in runnable], plans)
    events = _run_levels(batch)  # one Spark job per level, then this collect
    by_sid: Dict[int, list] = {sid: [] for sid, _ in runnable}
    for row in events.collect():
        by_sid[row["sid"]].append(row)
    for sid, rows in by_sid.items():
        results[sid] = _result(batch, sid, rows)
    return results


def _run_levels(batch: GraphBatch):
    from pyspark.sql import functions as F

    stage_names = {(sid, n.node.index): stage_of(n.node, plan.graph.nodes)
                   for sid, plan in batch.plans.items() for n in plan.nodes}
    edge_rows = []
    for sid, plan in batch.plans.items():
        edge_rows += routing.edge_rows(sid, plan, lambda node, s=sid: stage_names[(s, node.index)],
                                       lambda s, i: batch.depths[(s, i)])
    edges = batch.frame(edge_rows, routing.EDGE_DDL)
    width = int(batch.spark.conf.get("spark.sql.shuffle.partitions"))
    done = [_rows(_source_arrivals(batch, stage_names), ARRIVAL)]  # each level's rows, computed once
    for level in range(batch.max_depth + 1):
        # a filter of checkpointed frames: coalescing its partitions is free (no sort runs in it),
        # and every stage of the level then runs ``width`` tasks, not one per earlier partition
        arrivals = flow.select_columns(flow.union_all(
            [d.filter((F.col("etype") == ARRIVAL) & (F.col("depth") == level)) for d in done]), flow.ARRIVAL_DDL)
        arrivals = arrivals.coalesce(width)
        parts = []
        present = sorted({name for (sid, index), name in stage_names.items() if batch.depths[(sid, index)] == level})
        for name in present:
            instances = [batch.instance(sid, index) for (sid, index), n in sorted(stage_names.items())
                         if n == name and batch.depths[(sid, index)] == level]
            result = STAGES[name](arrivals.filter(F.col("op") == name), instances, batch)
            parts += [_rows(result.outputs, OUTPUT), _rows(result.drops, DROP), _rows(result.failures, FAILURE)]
            if result.emitted is not None:
                routed, dropped = routing.route(result.emitted, edges)
                parts += [_rows(routed, ARRIVAL), _rows(dropped, DROP)]
        parts = [p for p in parts if p is not None]
        if parts:
            # one job per level. Unions add up their partitions, so they are merged into ``width``:
            # by a shuffle, not a coalesce, which would run every part's sorts in one task (whose
            # sort memory is held until the task ends: out of memory on a large batch)
            done.append(flow.union_all(parts).repartition(width).localCheckpoint())
    return flow.union_all([d.filter(F.col("etype") != ARRIVAL) for d in done]).coalesce(1)


def _rows(frame, etype: int):
    """A stage's frame of one kind as rows of a level (:data:`LEVEL_DDL`), or None."""
    from pyspark.sql import functions as F

    if frame is None:
        return None
    code = {DROP: F.col("reason"), FAILURE: F.col("code")}.get(etype)
    return flow.select_columns(frame, LEVEL_DDL, etype=F.lit(etype), code=code)


def _source_arrivals(batch: GraphBatch, stage_names):
    rows = []
    for sid, scenario in batch.scenarios.items():
        plan = batch.plans[sid]
        readers: Dict[str, list] = {}
        for node_plan in plan.nodes:
            op = node_plan.node.op
            if isinstance(op, (StreamSourceOp, TableSourceOp)):
                readers.setdefault(op.topic, []).append(node_plan.node.index)
        for rec in scenario.inputs:
            for rank, index in enumerate(readers.get(rec.topic, ())):
                rows.append((sid, index, 0, stage_names[(sid, index)], 0, [rec.index, flow.INPUT_TAKE, rank],
                             [rec.index, flow.INPUT_TAKE], rec.index, rec.ts, key_text(rec.key),
                             value_text(rec.value), None, None, None, None))
    return batch.frame(rows, flow.ARRIVAL_DDL)


def _shown_key(row):
    key = None if row["key"] is None else json.loads(row["key"])
    return key if row["wstart"] is None else windowed_key(key, row["wstart"], row["wend"])


def _result(batch: GraphBatch, sid: int, rows) -> RunResult:
    rows = sorted(rows, key=lambda r: (list(r["ok"]), r["etype"]))
    failure = next((r for r in rows if r["etype"] == FAILURE), None)
    if failure is not None:  # Kafka Streams dies there: what came before it is kept
        rows = [r for r in rows if list(r["ok"]) < list(failure["ok"])]
    outputs, drops = [], []
    for r in rows:
        if r["etype"] == OUTPUT:
            value = None if r["value"] is None else json.loads(r["value"])
            outputs.append(OutputRecord(r["topic"], 0, _shown_key(r), value, r["ts"], r["idx"], NO_OLD_VALUE))
        elif r["etype"] == DROP:
            where = r["where"] if r["where"] is not None else batch.instance(sid, r["node"]).label
            drops.append(Drop(r["idx"], DropReason.from_code(r["code"]), None, where))
    return RunResult(outputs=tuple(outputs), drops=tuple(drops),
                     failure=None if failure is None else KafkaWouldFail(failure["idx"],
                                                                         FailureCode.from_code(failure["code"])))

