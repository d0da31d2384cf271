"""A batch of graph scenarios as the stages see it: the plans (the shared model's compile step),
each node's settings per (scenario, node), and the helpers that turn settings into small
broadcast frames.

Settings live per (scenario, node) instance, never in one wide row per scenario: a stage reads
only the instances of its operation (:meth:`GraphBatch.instances`), and a Python function the
stage needs (a compiled mapper) is looked up by ``(sid, node)``.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import attrs

from kssim.reference.model.graph.plan import Plan

from kssim.spark_backend.runtime.local_frames import local_frame


@attrs.frozen
class Instance:
    """One node of one scenario: its plan, and the scenario's release profile and config."""

    sid: int
    plan: Plan
    node_plan: object
    profile: object
    config: object

    @property
    def node(self):
        return self.node_plan.node

    @property
    def index(self) -> int:
        return self.node_plan.node.index

    @property
    def label(self) -> str:
        """How drops name the node (the reference's processor name)."""
        return f"graph[{self.index}] {self.node.name}"


class GraphBatch:
    """The scenarios of one job (``sids[i]`` the id of ``scenarios[i]``) and their plans.
    ``scanned_numbers``: for a replay whose records Spark scans (a scenario without inputs), what
    numbers the scan found they can hold (``graph.columns.PLAIN`` or ``INEXACT``; see
    ``graph.mappers.numbers``)."""

    def __init__(self, spark, scenarios: Sequence, sids: Sequence[int], plans: Sequence[Plan],
                 scanned_numbers: Optional[Dict[int, str]] = None):
        self.spark = spark
        self.scanned_numbers = dict(scanned_numbers or {})
        self.scenarios = {sid: s for sid, s in zip(sids, scenarios)}
        self.plans: Dict[int, Plan] = {sid: p for sid, p in zip(sids, plans)}
        self.depths: Dict[Tuple[int, int], int] = {}
        for sid, plan in self.plans.items():
            for index, depth in enumerate(node_depths(plan)):
                self.depths[(sid, index)] = depth

    @property
    def max_depth(self) -> int:
        return max(self.depths.values(), default=-1)

    def instance(self, sid: int, index: int) -> Instance:
        scenario, plan = self.scenarios[sid], self.plans[sid]
        return Instance(sid, plan, plan.nodes[index], scenario.profile, scenario.config)

    def instances(self, op_classes, depth=None) -> List[Instance]:
        """Every node instance whose operation is one of ``op_classes`` (at ``depth`` if given)."""
        out = []
        for sid, plan in self.plans.items():
            for node_plan in plan.nodes:
                index = node_plan.node.index
                if isinstance(node_plan.node.op, op_classes) and (depth is None or self.depths[(sid, index)] == depth):
                    out.append(self.instance(sid, index))
        return out

    def frame(self, rows: List[tuple], ddl: str):
        """A small frame of settings rows (to broadcast-join on ``sid, node``), held on the driver
        (:func:`spark_backend.runtime.local_frames.local_frame`: broadcasting it runs no job)."""
        return local_frame(self.spark, rows, ddl)

    def settled(self, frame, rows: List[tuple], ddl: str):
        """The rows of ``frame`` (with ``sid, node``) of the instances in ``rows`` (settings rows
        of ``ddl``, whose first columns are ``sid INT, node INT``), each with its instance's settings.

        Where every instance has the same settings (a replay has one scenario) they are literal
        columns, not a join's: Spark folds the expressions that read them, and no shuffle or sort
        after carries them (a join's columns ride along in every row). Else a broadcast join."""
        from pyspark.sql import functions as F

        columns = [tuple(part.split(None, 1)) for part in ddl.split(", ")]
        assert [name for name, _ in columns[:2]] == ["sid", "node"], ddl
        shared = {row[2:] for row in rows}
        if len(shared) != 1:
            return frame.join(F.broadcast(self.frame(rows, ddl)), ["sid", "node"])
        if len(rows) == 1:
            kept = frame.filter((F.col("sid") == rows[0][0]) & (F.col("node") == rows[0][1]))
        else:
            kept = frame.join(F.broadcast(self.frame([row[:2] for row in rows], "sid INT, node INT")),
                              ["sid", "node"], "left_semi")
        values = next(iter(shared))
        return kept.select("*", *[F.lit(value).cast(kind).alias(name)
                                  for value, (name, kind) in zip(values, columns[2:])])


def node_depths(plan: Plan) -> List[int]:
    """Each node's level: 0 for sources, else one more than its deepest input. Nodes are listed
    after their inputs (the graph's order), so one pass settles them."""
    depths: List[int] = []
    for node_plan in plan.nodes:
        inputs = [i for i in node_plan.node.inputs if i is not None]
        depths.append(0 if not inputs else 1 + max(depths[i] for i in inputs))
    return depths
