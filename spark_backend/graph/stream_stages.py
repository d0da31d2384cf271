"""The stages of stateless stream nodes: each a function of its arrivals alone, row by row.

- ``stream`` (a source): every record as it is;
- ``filter`` / ``filter_not`` (``KStreamFilter``): the predicate on every record, null key and
  value included; a record that fails is dropped (``filtered``);
- ``map_values``, ``select_key``, ``map``, and ``KStream#group_by`` (its key selection): the mappers
  on every record; a key mapper's result is a plain key (the window of a windowed key is gone);
- ``flat_map_values`` (``KStreamFlatMapValues``): a list gives a record per element, in order (the
  element's position extends the order key), null gives none (dropped, ``filtered``), anything
  else one record;
- ``merge``, ``group_by_key``, ``windowed_by``, ``repartition``: records go on as they are (the
  repartition itself is an edge of the plan, :mod:`spark_backend.graph.routing`; the operation
  exists since 2.6, ``kstream_repartition``, which the plan checks);
- ``to_stream`` (``KTableImpl#toStream``): a table change's new value;
- ``to`` (a sink): an output record of the topic.
"""
from __future__ import annotations

from typing import List

from kssim.reference.model.codes import DropReason
from kssim.reference.model.graph import expressions as ex
from kssim.reference.model.graph.nodes import FilterOp, FlatMapValuesOp, GroupByOp, MapOp, SelectKeyOp

from kssim.spark_backend.graph import flow, mappers
from kssim.spark_backend.graph.batch import Instance


def pass_through(arrivals, instances: List[Instance], batch) -> flow.StageResult:
    return flow.StageResult(emitted=flow.records(arrivals))


def to_stream(arrivals, instances, batch) -> flow.StageResult:
    return flow.StageResult(emitted=flow.records(arrivals, old=None, latest=None))


def stream_filter(arrivals, instances, batch) -> flow.StageResult:
    from pyspark.sql import functions as F

    functions, forms = {}, {}
    for inst in instances:
        op: FilterOp = inst.node.op
        test = ex.compile_pred(op.predicate)
        functions[(inst.sid, inst.index)] = (lambda t, negate: lambda k, v: bool(t(k, v)) is not negate)(test, op.negate)
        forms[(inst.sid, inst.index)] = mappers.form(batch, inst, op.predicate, negate=op.negate)
    tested = mappers.with_columns(arrivals, passes=(mappers.native_predicate(forms),
                                                    lambda: mappers.predicate(functions)))
    return flow.StageResult(
        emitted=flow.records(tested.filter(F.col("passes"))),
        drops=flow.drops(tested.filter(~F.col("passes")), DropReason.FILTERED.code))


def _compiled(instances, field: str):
    return {(inst.sid, inst.index): ex.compile_expr(getattr(inst.node.op, field)) for inst in instances}


def _forms(instances, field: str, batch):
    return {(inst.sid, inst.index): mappers.form(batch, inst, getattr(inst.node.op, field)) for inst in instances}


def stream_map_values(arrivals, instances, batch) -> flow.StageResult:
    mapped = mappers.with_columns(arrivals, new_value=(mappers.native_expression(_forms(instances, "mapper", batch)),
                                                       lambda: mappers.expression(_compiled(instances, "mapper"))))
    return flow.StageResult(emitted=flow.records(mapped, value="new_value"))


def select_key(arrivals, instances, batch) -> flow.StageResult:
    """``select_key`` and ``KStream#group_by``: a new plain key, the same value."""
    from pyspark.sql import functions as F

    field = {SelectKeyOp: "mapper", GroupByOp: "key"}
    functions, forms = {}, {}
    for inst in instances:
        functions[(inst.sid, inst.index)] = ex.compile_expr(getattr(inst.node.op, field[type(inst.node.op)]))
        forms[(inst.sid, inst.index)] = mappers.form(batch, inst, getattr(inst.node.op, field[type(inst.node.op)]))
    keyed = mappers.with_columns(arrivals, new_key=(mappers.native_expression(forms, as_key=True),
                                                    lambda: mappers.expression(functions, as_key=True)))
    return flow.StageResult(emitted=flow.records(keyed, key="new_key", wstart=F.lit(None), wend=F.lit(None)))


def stream_map(arrivals, instances, batch) -> flow.StageResult:
    from pyspark.sql import functions as F

    keys = {(i.sid, i.index): ex.compile_expr(i.node.op.key) for i in instances if isinstance(i.node.op, MapOp)}
    key_forms = {(i.sid, i.index): mappers.form(batch, i, i.node.op.key)
                 for i in instances if isinstance(i.node.op, MapOp)}
    mapped = mappers.with_columns(
        arrivals,
        new_key=(mappers.native_expression(key_forms, as_key=True), lambda: mappers.expression(keys, as_key=True)),
        new_value=(mappers.native_expression(_forms(instances, "value", batch)),
                   lambda: mappers.expression(_compiled(instances, "value"))))
    return flow.StageResult(emitted=flow.records(mapped, key="new_key", value="new_value",
                                                 wstart=F.lit(None), wend=F.lit(None)))


def flat_map_values(arrivals, instances, batch) -> flow.StageResult:
    from pyspark.sql import functions as F

    assert all(isinstance(i.node.op, FlatMapValuesOp) for i in instances)
    listed = mappers.with_columns(arrivals,
                                  elements=(mappers.native_elements(_forms(instances, "mapper", batch)),
                                            lambda: mappers.elements(_compiled(instances, "mapper"))))
    exploded = listed.filter(F.col("elements").isNotNull()).select("*", F.posexplode("elements").alias("pos", "element"))
    return flow.StageResult(
        emitted=flow.records(exploded, value="element", ok=flow.extend(F.col("ok"), F.col("pos"))),
        drops=flow.drops(listed.filter(F.col("elements").isNull()), DropReason.FILTERED.code))


def sink(arrivals, instances, batch) -> flow.StageResult:
    from pyspark.sql import functions as F

    topics = batch.frame([(i.sid, i.index, i.node.op.topic) for i in instances], "sid INT, node INT, topic STRING")
    written = arrivals.join(F.broadcast(topics), ["sid", "node"])
    return flow.StageResult(outputs=flow.select_columns(written, flow.OUTPUT_DDL))

