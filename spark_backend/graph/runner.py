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

from kssim.spark_backend.graph import cache_stage, flow, heap_order, routing
from kssim.spark_backend.graph.batch import GraphBatch
from kssim.spark_backend.graph.flow import ARRIVAL, DROP, FAILURE, LEVEL_DDL, OUTPUT  # noqa: F401 (the level's rows)
from kssim.spark_backend.graph.mappers import value_text
from kssim.spark_backend.graph.stages import STAGES, stage_of
from kssim.spark_backend.session import session_conf


def unsupported(plan: Plan, config) -> Optional[UnsupportedOperator]:
    """Why the Spark backend cannot run this plan yet, or None."""
    nodes = plan.graph.nodes
    for node_plan in plan.nodes:
        node = node_plan.node
        stage = stage_of(node, nodes)
        if stage not in STAGES:
            return UnsupportedOperator(f"the Spark backend does not run graph node {node.where} "
                                       f"({node.name}: {stage.replace('_', ' ')}) yet")
    heap_refusal = heap_order.refusal(plan)  # TopologyTestDriver's heap of internal queues
    if heap_refusal is not None:
        return UnsupportedOperator(heap_refusal)
    from kssim.reference.model.graph.nodes import FilterOp, JoinOp, Kind, MapValuesOp, SuppressOp

    # A suppressed table's value getter answers a buffered key with the buffer's prior value at
    # timestamp -1 (KTableSuppressProcessorSupplier#view); the join stages read a table side as
    # the latest change it forwarded (the last eviction, at its timestamp): a table-table join's
    # result timestamp, max(record, other side's), differs, and a stream-table join differs once
    # a versioned table behind the suppress takes an out-of-order update (forwarded as latest
    # after the buffer; the getter reads the parent's latest row).
    for node_plan in plan.nodes:
        node = node_plan.node
        if not isinstance(node.op, JoinOp) or node.op.foreign_key is not None:
            continue
        sides = [node.op.other] + ([node.upstream] if node.kind is Kind.TABLE else [])
        for side in sides:
            here = nodes[side]
            while isinstance(here.op, (FilterOp, MapValuesOp)) and here.kind is Kind.TABLE:
                here = nodes[here.upstream]
            if not isinstance(here.op, SuppressOp):
                continue
            above = nodes[here.upstream]
            while isinstance(above.op, (FilterOp, MapValuesOp, SuppressOp)) and above.kind is Kind.TABLE:
                above = nodes[above.upstream]
            if node.kind is Kind.STREAM and not plan.nodes[above.index].versioned:
                continue
            return UnsupportedOperator(f"the Spark backend does not run graph node {node.where} ({node.name}) "
                                       f"reading the suppressed table {here.where} through its value getter "
                                       "(the buffer's prior value) yet")
    from kssim.spark_backend.graph.foreign_key_stages import refusal  # the FK join's shapes run exactly

    fk_refusal = refusal(plan)
    if fk_refusal is not None:
        return UnsupportedOperator(fk_refusal)
    if config.caching:  # record caches: the shapes cache_stage runs exactly, else why not
        return cache_stage.unsupported(plan)
    return None


def heap_free(plan: Plan) -> bool:
    """Can the records one input causes be on one internal topic at most? Then the task takes them
    in the order they were written (one FIFO queue); else :mod:`spark_backend.graph.heap_order`
    orders them as ``TopologyTestDriver``'s heap of queues does."""
    return not heap_order.needs_heap(plan)


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
    for start in range(0, len(runnable), GRAPH_BATCH):
        results.update(_run_batch(spark, runnable[start:start + GRAPH_BATCH], plans[start:start + GRAPH_BATCH]))
    return results


#: scenarios run together: a batch's plans, and what Spark keeps for them until the batch ends
#: (broadcast relations, checkpointed levels), grow with its scenarios; the whole graph corpus
#: (375) in one batch filled a 2 GB heap (most of the run in full GCs)
GRAPH_BATCH = 64


def _run_batch(spark, runnable: Sequence[tuple], plans: Sequence[Plan]) -> Dict[int, object]:
    """``{sid: RunResult or UnsupportedOperator}`` of the ``(sid, scenario)`` pairs ``runnable``."""
    batch = GraphBatch(spark, [s for _, s in runnable], [sid for sid, _ in runnable], plans)
    refused: Dict[int, UnsupportedOperator] = {}
    events = run_levels(batch, refused=refused)  # one Spark job per level, then this collect
    results: Dict[int, object] = dict(refused)
    by_sid: Dict[int, list] = {sid: [] for sid, _ in runnable if sid not in refused}
    for row in events.coalesce(1).collect():
        by_sid[row["sid"]].append(row)
    for sid, rows in by_sid.items():
        results[sid] = _result(batch, sid, rows)
    return results


def run_levels(batch: GraphBatch, sources=None, refused: Optional[dict] = None):
    """Every output, drop and failure of the batch (rows of :data:`LEVEL_DDL`, in no order):
    one Spark job per level. ``sources``: the arrivals at the source nodes (default: the
    scenarios' inputs, :func:`_source_arrivals`; a replay passes its scanned records,
    :func:`arrivals_of_records`).

    Scenarios whose takes ``TopologyTestDriver``'s heap of internal queues orders are checked
    after the pass and run again where a node saw another order (:mod:`spark_backend.graph.heap_order`);
    those that never settle are left out and put in ``refused`` (sid -> UnsupportedOperator), or,
    without ``refused``, raised."""
    from pyspark.sql import functions as F

    stage_names = {(sid, n.node.index): stage_of(n.node, plan.graph.nodes)
                   for sid, plan in batch.plans.items() for n in plan.nodes}
    results, predictions = [], None
    for _ in range(heap_order.MAX_PASSES):
        heap = heap_order.HeapOrder(batch, stage_names, predictions)
        events = _run_pass(batch, sources, heap, stage_names)
        if not heap.unsettled:
            results.append(events)
            break
        unsettled = sorted(heap.unsettled)
        results.append(events.filter(~F.col("sid").isin(unsettled)))
        predictions = heap.next_predictions()
        batch = GraphBatch(batch.spark, [batch.scenarios[sid] for sid in unsettled], unsettled,
                           [batch.plans[sid] for sid in unsettled], batch.scanned_numbers)
        sources = None if sources is None else sources.filter(F.col("sid").isin(unsettled))
    else:
        for sid, where in heap.unsettled.items():
            refusal = UnsupportedOperator(f"the Spark backend does not run {where} here: the order "
                                          "TopologyTestDriver's heap of internal queues gives its arrivals did not "
                                          f"settle in {heap_order.MAX_PASSES} passes")
            if refused is None:
                raise refusal
            refused[sid] = refusal
    return flow.union_all(results)


def node_levels(batch: GraphBatch, stage_names) -> Dict[tuple, int]:
    """Each node's *level*: the step of the run whose rows are checkpointed together.

    A node whose output for a record depends on that record alone (``heap_order.ORDER_FREE``:
    filters, mappers, a table's group_by, sinks) runs in the level of its deepest input, on what
    the level's earlier nodes emitted: a chain of such nodes costs no checkpoint, shuffle or job
    of its own. Every other node (a store, a join, a window) runs one level after its deepest
    input, once all its arrivals are known. Scenarios whose takes ``TopologyTestDriver``'s heap
    orders keep one level per node depth: :mod:`heap_order` ranks takes level by level."""
    levels: Dict[tuple, int] = {}
    for sid, plan in batch.plans.items():
        fuses = not heap_order.needs_heap(plan)
        for node_plan in plan.nodes:
            here = (sid, node_plan.node.index)
            inputs = [levels[(sid, i)] for i in node_plan.node.inputs if i is not None]
            if not inputs:
                levels[here] = 0
            elif fuses and stage_names[here] in heap_order.ORDER_FREE:
                levels[here] = max(inputs)
            else:
                levels[here] = 1 + max(inputs)
    return levels


def _run_pass(batch: GraphBatch, sources, heap, stage_names):
    """One pass over the levels (see :func:`run_levels`). Spark's ``Union#rewriteConstraints``
    fails (``key not found``) on the unions of a level that takes what its own stages emitted
    (``node_levels``); the filters it would infer are of no use to these plans (turning it off
    changed none of their JVM CPU seconds). Planning happens as each level is checkpointed, so
    the setting is off only while the levels run."""
    with session_conf(batch.spark, "spark.sql.constraintPropagation.enabled", "false"):
        return _levels_of_pass(batch, sources, heap, stage_names)


def _levels_of_pass(batch: GraphBatch, sources, heap, stage_names):
    from pyspark.sql import functions as F

    stage_names = {key: name for key, name in stage_names.items() if key[0] in batch.plans}
    levels = node_levels(batch, stage_names)
    edge_rows = []
    for sid, plan in batch.plans.items():
        edge_rows += routing.edge_rows(sid, plan, lambda node, s=sid: stage_names[(s, node.index)],
                                       lambda s, i: levels[(s, i)])
    edges = batch.frame(edge_rows, routing.EDGE_DDL)
    out_edges: Dict[tuple, list] = {}
    for row in edge_rows:
        out_edges.setdefault(row[:2], []).append(row)
    width = int(batch.spark.conf.get("spark.sql.shuffle.partitions"))
    from_before, feeding = _earlier_inputs(batch, levels)
    if sources is None:
        sources = _source_arrivals(batch, stage_names)
    done = []  # each level's rows, computed once (checkpointed)
    for level in range(max(levels.values(), default=-1) + 1):
        # a filter of checkpointed frames: coalescing its partitions is free (no sort runs in it),
        # and every stage of the level then runs ``width`` tasks, not one per earlier partition.
        # The sources (a scan of the captures, whose records are all at depth 0) only at level 0
        earlier = [done[d].filter((F.col("etype") == ARRIVAL) & (F.col("depth") == level))
                   for d in sorted(feeding.get(level, ()))]
        arrivals = flow.select_columns(flow.union_all(earlier + ([sources] if level == 0 else [])), flow.ARRIVAL_DDL)
        # the takes' heap ranks as known now; kept once computed (every stage of the level, and
        # each stage's branches, read it: without, each read scans the captures or several
        # earlier levels again). One earlier level's checkpoint, unranked, is read as it is
        arrivals = heap.ranked(arrivals.coalesce(width), level)
        if level == 0 or heap or len(earlier) > 1:
            arrivals = arrivals.localCheckpoint(eager=False)
        parts = []
        # node depth orders the level's nodes: a node that runs in its input's level (node_levels)
        # takes what its inputs emitted here, so it comes after them
        groups = _stage_groups({key: name for key, name in stage_names.items() if levels[key] == level}, batch.depths)
        pending = []  # (level rows of a stage's routing, the level's nodes they reach)
        for name, keys in groups:
            # a stage whose nodes take only what this level's earlier stages emit skips the scan
            fed = [arrivals] if any(key in from_before for key in keys) else []
            inputs = fed + [flow.select_columns(rows.filter(_STAYS(level)), flow.ARRIVAL_DDL)
                            for rows, reached in pending if reached & set(keys)]
            taken = flow.union_all(inputs).filter(F.col("op") == name)
            if len(keys) < sum(len(k) for n, k in groups if n == name):  # the stage's other nodes in the level
                taken = taken.join(F.broadcast(batch.frame(keys, "sid INT, node INT")), ["sid", "node"], "left_semi")
            instances = [batch.instance(sid, index) for sid, index in keys]
            result = STAGES[name](taken, instances, batch)
            result = cache_stage.flushed(result, instances, batch)  # record caches (config.caching)
            parts += [_rows(result.outputs, OUTPUT), _rows(result.drops, DROP), _rows(result.failures, FAILURE)]
            if result.emitted is None:
                continue
            routed, writes = routing.route(result.emitted, edges, level)
            parts.append(_rows(heap.written(writes), heap_order.WRITE))
            edges_out = [row for key in keys for row in out_edges.get(key, ())]
            later, reached = _destinations(edges_out, level)
            readers = [n for n, k in groups if reached & set(k)]
            if later + len(readers) > 1 or any(n not in _READ_ONCE for n in readers):
                # the stage's work done once, and the plans after it stay small (a chain of stages
                # that read their input twice would compute its start 2^n times)
                routed = routed.localCheckpoint(eager=False)
            if later:
                parts.append(routed.filter(~_STAYS(level)) if reached else routed)
            if reached:
                pending.append((routed, reached))
        parts = [p for p in parts if p is not None]
        if parts:
            # one job per level. Unions add up their partitions; each is computed by a task of its
            # own (a coalesce before the checkpoint would run every part's sorts in one task, whose
            # sort memory is held until the task ends), and the next level coalesces what it reads
            done.append(flow.union_all(parts).localCheckpoint())
            if heap:
                heap.add_writes(done[-1].filter(F.col("etype") == heap_order.WRITE).collect(), level)
    events = flow.union_all([d.filter(F.col("etype").isin(OUTPUT, DROP, FAILURE)) for d in done])
    return heap.finish(events)


def _earlier_inputs(batch: GraphBatch, levels: Dict[tuple, int]):
    """``(fed, feeding)``: the nodes ``(sid, node)`` whose arrivals can come from their level's
    arrivals frame (sources, at level 0, and nodes with an input in an earlier level); for each
    level, the earlier levels whose rows hold arrivals at it."""
    fed, feeding = set(), {}
    for sid, plan in batch.plans.items():
        for node_plan in plan.nodes:
            here = (sid, node_plan.node.index)
            inputs = [levels[(sid, i)] for i in node_plan.node.inputs if i is not None]
            earlier = {level for level in inputs if level < levels[here]}
            if earlier or not inputs:
                fed.add(here)
            feeding.setdefault(levels[here], set()).update(earlier)
    return fed, feeding


#: stages that read their arrivals once, in a projection (what they take from their level's
#: earlier stages needs no checkpoint)
_READ_ONCE = frozenset(("pass", "to_stream", "to"))


def _stage_groups(here: Dict[tuple, str], depths) -> list:
    """The stage calls of a level, in the order they run: ``(stage name, [(sid, node), ...])`` by
    node depth, then name (a node runs after the level's nodes it takes records from)."""
    groups = []
    for depth in sorted({depths[key] for key in here}):
        at_depth = {key: name for key, name in here.items() if depths[key] == depth}
        for name in sorted(set(at_depth.values())):
            groups.append((name, sorted(key for key, n in at_depth.items() if n == name)))
    return groups


def _STAYS(level: int):
    """The level rows that are arrivals at a node of this same level."""
    from pyspark.sql import functions as F

    return (F.col("etype") == ARRIVAL) & (F.col("depth") == level)


def _destinations(out_edges, level: int):
    """(later, reached): do a stage's emitted records (through its ``out_edges``, rows of
    :data:`routing.EDGE_DDL`) make rows for the level's checkpoint (arrivals of later levels, or
    drops before a repartition topic)? Which nodes of this level do they reach (``(sid, node)``)?"""
    fields = routing.EDGE_DDL.split(", ")
    topic, drops_null, child, child_level = (fields.index(f) for f in ("topic STRING", "drops_null BOOLEAN",
                                                                       "child INT", "cdepth INT"))
    later = any(row[child_level] > level or (row[topic] is not None and row[drops_null]) for row in out_edges)
    return later, {(row[0], row[child]) for row in out_edges if row[child_level] == level}


def _rows(frame, etype: int):
    """A stage's frame of one kind as rows of a level (:data:`LEVEL_DDL`), or None."""
    from pyspark.sql import functions as F

    if frame is None:
        return None
    code = {DROP: F.col("reason"), FAILURE: F.col("code")}.get(etype)
    return flow.select_columns(frame, LEVEL_DDL, etype=F.lit(etype), code=code)


def source_readers(plan: Plan) -> Dict[str, list]:
    """Each source topic's reading nodes, in graph order (the order an input reaches them)."""
    readers: Dict[str, list] = {}
    for node_plan in plan.nodes:
        op = node_plan.node.op
        if isinstance(op, (StreamSourceOp, TableSourceOp)):
            readers.setdefault(op.topic, []).append(node_plan.node.index)
    return readers


def arrivals_of_records(batch: GraphBatch, sid: int, records):
    """The arrivals at the source nodes of scenario ``sid`` for a frame of its input records
    (``idx, ts, key, value, topic``: a scanned capture, ``runtime.record_files``): one per record
    and node reading its topic, as :func:`_source_arrivals` builds them on the driver."""
    from pyspark.sql import functions as F

    plan = batch.plans[sid]
    readers = [(topic, index, rank, stage_of(plan.nodes[index].node, plan.graph.nodes))
               for topic, indexes in source_readers(plan).items() for rank, index in enumerate(indexes)]
    nodes = batch.frame(readers, "topic STRING, node INT, rank INT, op STRING")
    take = F.array(F.col("idx"), F.lit(flow.INPUT_TAKE).cast("bigint"))
    joined = records.join(F.broadcast(nodes), "topic")
    return flow.select_columns(joined, flow.ARRIVAL_DDL, sid=F.lit(sid), port=F.lit(0), depth=F.lit(0),
                               ok=F.concat(take, F.array(F.col("rank").cast("bigint"))), take=take)


def _source_arrivals(batch: GraphBatch, stage_names):
    rows = []
    for sid, scenario in batch.scenarios.items():
        readers = source_readers(batch.plans[sid])
        for rec in scenario.inputs:
            for rank, index in enumerate(readers.get(rec.topic, ())):
                rows.append((sid, index, 0, stage_names[(sid, index)], 0, [rec.index, flow.INPUT_TAKE, rank],
                             [rec.index, flow.INPUT_TAKE], rec.index, rec.ts, key_text(rec.key),
                             value_text(rec.value), None, None, None, None))
    return batch.frame(rows, flow.ARRIVAL_DDL)


def output_record(row) -> OutputRecord:
    """An output row of a level (:data:`LEVEL_DDL`) as the record a sink topic holds."""
    key = None if row["key"] is None else json.loads(row["key"])
    if row["wstart"] is not None:
        key = windowed_key(key, row["wstart"], row["wend"])
    value = None if row["value"] is None else json.loads(row["value"])
    return OutputRecord(row["topic"], 0, key, value, row["ts"], row["idx"], NO_OLD_VALUE)


def _result(batch: GraphBatch, sid: int, rows) -> RunResult:
    rows = sorted(rows, key=lambda r: (list(r["ok"]), r["etype"]))
    failure = next((r for r in rows if r["etype"] == FAILURE), None)
    if failure is not None:  # Kafka Streams dies there: what came before it is kept
        rows = [r for r in rows if list(r["ok"]) < list(failure["ok"])]
    outputs, drops = [], []
    for r in rows:
        if r["etype"] == OUTPUT:
            outputs.append(output_record(r))
        elif r["etype"] == DROP:
            where = r["where"] if r["where"] is not None else batch.instance(sid, r["node"]).label
            drops.append(Drop(r["idx"], DropReason.from_code(r["code"]), None, where))
    return RunResult(outputs=tuple(outputs), drops=tuple(drops),
                     failure=None if failure is None else KafkaWouldFail(failure["idx"],
                                                                         FailureCode.from_code(failure["code"])))

