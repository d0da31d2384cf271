"""The one table of graph stages on Spark: which stage runs a node, by the node's operation and the
kinds around it (:func:`stage_of`), and the function that runs it (:data:`STAGES`).

A stage is ``(arrivals, instances, batch) -> flow.StageResult``: it gets the arrivals of every
instance of its kind at one level of the batch (:mod:`spark_backend.graph.runner`), with the
instances' settings (:class:`spark_backend.graph.batch.Instance`). A node whose stage is not in
the table makes its scenario unsupported on Spark, with a message naming the node.
"""
from __future__ import annotations

from kssim.reference.model.graph.nodes import (AggregateOp, FilterOp, FlatMapValuesOp, GroupByKeyOp, GroupByOp, JoinOp,
                                               Kind, MapOp, MapValuesOp, MergeOp, RepartitionOp, SelectKeyOp,
                                               StreamSourceOp, SuppressOp, TableSourceOp, ToOp, ToStreamOp,
                                               ToTableOp, WindowedByOp)

from kssim.spark_backend.graph import (aggregate_stages, foreign_key_stages, join_stages, stream_stages as ss,
                                       table_stages, window_stages)

_PASS = (MergeOp, GroupByKeyOp, WindowedByOp, RepartitionOp)


def stage_of(node, nodes) -> str:
    """The stage name of a graph node (``nodes``: the graph's nodes, for the kinds around it)."""
    op = node.op
    table = node.kind is Kind.TABLE
    if isinstance(op, StreamSourceOp):
        return "stream_source"
    if isinstance(op, TableSourceOp):
        return "table_source"
    if isinstance(op, _PASS):
        return "pass"
    if isinstance(op, FilterOp):
        return "table_filter" if table else "stream_filter"
    if isinstance(op, MapValuesOp):
        return "table_map_values" if table else "stream_map_values"
    if isinstance(op, SelectKeyOp):
        return "select_key"
    if isinstance(op, GroupByOp):
        return "table_group_by" if node.kind is Kind.GROUPED_TABLE else "select_key"
    if isinstance(op, MapOp):
        return "map"
    if isinstance(op, FlatMapValuesOp):
        return "flat_map_values"
    if isinstance(op, ToStreamOp):
        return "to_stream"
    if isinstance(op, ToTableOp):
        return "to_table"
    if isinstance(op, ToOp):
        return "to"
    if isinstance(op, SuppressOp):
        return "suppress"
    if isinstance(op, AggregateOp):
        upstream = nodes[node.upstream].kind
        return {Kind.GROUPED_STREAM: "stream_aggregate", Kind.GROUPED_TABLE: "table_aggregate",
                Kind.WINDOWED_STREAM: "windowed_aggregate"}[upstream]
    if isinstance(op, JoinOp):
        if op.foreign_key is not None:
            return "fk_join"
        other = nodes[op.other].kind
        if node.kind is Kind.STREAM:
            return "stream_stream_join" if other is Kind.STREAM else "stream_table_join"
        return "table_table_join"
    raise AssertionError(f"no stage for {node.name}")


STAGES = {
    "stream_source": ss.pass_through,
    "pass": ss.pass_through,
    "stream_filter": ss.stream_filter,
    "stream_map_values": ss.stream_map_values,
    "select_key": ss.select_key,
    "map": ss.stream_map,
    "flat_map_values": ss.flat_map_values,
    "to_stream": ss.to_stream,
    "to": ss.sink,
}
# each family's module lists its own stages
for _family in (table_stages, aggregate_stages, join_stages, window_stages, foreign_key_stages):
    STAGES.update(_family.STAGES)
