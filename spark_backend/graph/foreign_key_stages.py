"""The stage of foreign-key joins in topology graphs (``KTable#join/leftJoin(other,
foreignKeyExtractor, joiner)``, KIP-213): format 1's Spark FK join (:mod:`spark_backend.foreign_key`)
run on *virtual scenarios* (:mod:`spark_backend.graph.virtual`), one per (scenario, node).

The reference: ``reference/graph/joins.py::ForeignKeyJoin`` and ``reference/graph/engine.py::_join``.
Port 0 brings the changes of the primary (left) table node, port 1 those of the foreign (right)
table node; both already went through their tables' own rules (``null_key``, KIP-557's
``idempotent_update``, ``expired_versioned_put``) and the left one carries its old value (the
plan makes the left table send old values). So the virtual scenario's tables are the arrivals
themselves, handed to the join processors of format 1 (``foreign_key.join.changes_joined``, not
its table sources):

- a null key is ignored, no drop (the reference returns at once; the table nodes upstream never
  forward one);
- an out-of-order update of a versioned lineage (``latest`` false) is dropped by the node
  (``out_of_order_versioned_update``, KIP-914, ``versioned_tables``): on the left
  ``SubscriptionSendProcessorSupplier``, on the right ``ForeignTableJoinProcessorSupplier``. It
  never moved the tables' value getters (they answer the latest version), so it is no change;
- every other arrival is a change that moves its table's value getter: the response join reads the
  left value as of the response, the subscription join the right row (value, ts) as of the
  subscription (the latest change forwarded to the node before it, in order-key order);
- the left change's ``Change#oldValue`` is the one the upstream sent (``old``); the foreign keys of
  the new and the old value are the graph's extractor expression (``key_text``, the identity
  format 1's FKs have), compiled by the shared model and looked up by (scenario, node);
- the release's rules by profile name, from format 1's settings row of a ``ForeignKeyJoinSpec``
  (``foreign_key_joins``, ``fk_result_old_values``, ``fk_left_join_null_foreign_key``,
  ``fk_left_unsubscribe_no_propagate``, ``fk_inner_null_fk_transitions``,
  ``ktable_emit_on_change`` for the result table, ``fk_response_to_primary_partition``); the
  result is materialized with old values where the plan says (``NodePlan.send_old_values``), and
  its KIP-557 check compares the graph joiner's values (``result_key``);
- the result value is the graph's named joiner (``functions.graph_joiner``) of the two arguments.

**Order.** The subscription and response topics are internal topics of the task
(``TopologyTestDriver``: processed after the input's first take, ``../shared/spec/topology-graphs.md``,
Processing model). The graphs run here (:func:`refusal`) have, per input, either one left change
at the node or right changes only, and no other internal topic, so the node's internal records of
an input are taken in the order they were written, whatever the heap does: a response is written
when its subscription is taken, subscriptions in the order they were sent. A result (or a
response's drop: ``stale_fk_response``, ``idempotent_update``) therefore stands at
``[i, 1] + the arrival's path after [i, 0] + [rank]``: after everything the input's first take
did, in arrival order, then ``rank``, its response's place among the arrival's: a left change's
subscriptions in the order sent (``f1``: the old FK's first), a right change's prefix scan in the
subscription store's key order (:func:`scan_order`). The drops of the first take
(``null_foreign_key``, ``out_of_order_versioned_update``) stand at their arrival.

**Refused** (:func:`refusal`, named by the node): an input that reaches both sides of the join, or
changes its left table more than once (the response join would read the left table between them:
Kafka reads it after the whole first take), or reaches another internal topic too (a repartition
topic, another FK join: ``TopologyTestDriver``'s heap of queues decides their order); a side that
is a suppressed table (its value getter answers a buffered key with the buffer's prior value, not
the last change it forwarded); a ``suppress`` downstream (its buffer measures a result by the
response topic it was read from).
(Joins on windowed keys are errors of the graph itself.)
"""
from __future__ import annotations

import json
from typing import Dict, List, Optional

from kssim.reference.model.codes import DropReason
from kssim.reference.model.graph import expressions as ex
from kssim.reference.model.graph.functions import graph_joiner
from kssim.reference.model.graph.nodes import (AggregateOp, FilterOp, FlatMapValuesOp, GroupByOp, JoinOp, Kind,
                                               MapValuesOp, StreamSourceOp, SuppressOp, TableSourceOp)
from kssim.reference.model.graph.plan import Plan
from kssim.reference.model.keys import key_text
from kssim.reference.model.topology import ForeignKeyJoinSpec, KeyExtractorSpec

from kssim.spark_backend.graph import flow
from kssim.spark_backend.graph.batch import Instance
from kssim.spark_backend.graph.join_stages import joined_value, virtual_scenarios
from kssim.spark_backend.graph.mappers import value_text

_SETTINGS_DDL = "sid INT, node INT, drops_old_left BOOLEAN, drops_old_right BOOLEAN"
#: the subscription store's mark of a PK that is not a string: 0xFF and its JSON type's letter
#: (the reference's ``subscription_store``): such PKs sort after every string, grouped by type
_TYPE_LETTERS = {bool: b"b", int: b"i", float: b"f", list: b"l", dict: b"d"}


def _load(text):
    return None if text is None else json.loads(text)


def is_foreign_key_join(node) -> bool:
    return isinstance(node.op, JoinOp) and node.op.foreign_key is not None


# --- what is refused -------------------------------------------------------------------------------

def _multiplies(node, nodes) -> bool:
    """Can one arrival make the node emit several records? (a stream-stream join's matches, a
    windowed aggregation's windows, suppress's evictions, a table group_by's subtract and add,
    flat_map_values, an FK join's responses)"""
    op = node.op
    if isinstance(op, (FlatMapValuesOp, SuppressOp)) or is_foreign_key_join(node):
        return True
    if isinstance(op, GroupByOp):
        return node.kind is Kind.GROUPED_TABLE
    if isinstance(op, AggregateOp):
        return nodes[node.upstream].kind is Kind.WINDOWED_STREAM
    if isinstance(op, JoinOp):
        return node.kind is Kind.STREAM and nodes[op.other].kind is Kind.STREAM
    return False


def records_per_input(plan: Plan) -> List[Dict[str, bool]]:
    """Per node, the input topics whose records reach what it emits: ``{topic: several}``,
    ``several`` true where one input can make it emit more than one record."""
    nodes = plan.graph.nodes
    out: List[Dict[str, bool]] = []
    for node in nodes:
        op = node.op
        if isinstance(op, (StreamSourceOp, TableSourceOp)):
            out.append({op.topic: False})
            continue
        ports = [out[node.upstream]]
        other = getattr(op, "other", None)
        # a stream-table join's table side triggers nothing
        if other is not None and not (isinstance(op, JoinOp) and node.kind is Kind.STREAM
                                      and nodes[other].kind is not Kind.STREAM):
            ports.append(out[other])
        emitted: Dict[str, bool] = {}
        for port in ports:
            for topic, several in port.items():
                # a topic on both ports: one input reaches the node twice
                emitted[topic] = several or topic in emitted
        many = _multiplies(node, nodes)
        out.append({topic: several or many for topic, several in emitted.items()})
    return out


def _internal_queues(plan: Plan, index: int) -> set:
    """The internal topics a record of node ``index`` can lead to: the repartition topics and the
    FK joins (their subscription and response topics) downstream of it, itself included."""
    found, seen, todo = set(), set(), [index]
    while todo:
        here = todo.pop()
        if here in seen:
            continue
        seen.add(here)
        if is_foreign_key_join(plan.nodes[here].node):
            found.add(("fk", here))
        for edge in plan.nodes[here].children:
            if edge.repartition is not None:
                found.add(("repartition", edge.repartition))
            todo.append(edge.child)
    return found


def _below(plan: Plan, index: int):
    """The nodes downstream of node ``index``."""
    seen, todo = set(), [e.child for e in plan.nodes[index].children]
    while todo:
        here = todo.pop()
        if here not in seen:
            seen.add(here)
            todo.extend(e.child for e in plan.nodes[here].children)
    return [plan.nodes[i].node for i in sorted(seen)]


def _reads_suppressed(nodes, index: int) -> bool:
    """Is table node ``index`` a suppress, or a table filter / map_values of one? Its value getter
    then answers a buffered key with the buffer's prior value at timestamp -1
    (``KTableSuppressProcessorSupplier#view``), not as the latest change it forwarded."""
    node = nodes[index]
    while isinstance(node.op, (FilterOp, MapValuesOp)) and node.kind is Kind.TABLE:
        node = nodes[node.upstream]
    return isinstance(node.op, SuppressOp)


def refusal(plan: Plan) -> Optional[str]:
    """Why an FK join of the plan cannot be run exactly here (naming the node), or None. See the
    module docstring."""
    nodes = plan.graph.nodes
    fk_nodes = [n for n in nodes if is_foreign_key_join(n)]
    if not fk_nodes:
        return None
    per_input = records_per_input(plan)
    sources = {n.op.topic: n.index for n in nodes if isinstance(n.op, (StreamSourceOp, TableSourceOp))}
    for node in fk_nodes:
        left, right = per_input[node.upstream], per_input[node.op.other]
        why = None
        if set(left) & set(right):
            why = "one input reaches both of its sides"
        elif any(left.values()):
            why = "one input can change its left table more than once"
        elif any(len(_internal_queues(plan, sources[t])) > 1 for t in set(left) | set(right)):
            why = "an input that reaches it also reaches another internal topic"
        elif _reads_suppressed(nodes, node.upstream) or _reads_suppressed(nodes, node.op.other):
            why = "a side is a suppressed table (read through the buffer's prior value)"
        elif any(isinstance(n.op, SuppressOp) for n in _below(plan, node.index)):
            why = "a suppress reads its results"
        if why is not None:
            return (f"the Spark backend does not run graph node {node.where} ({node.name}: foreign-key join) "
                    f"when {why} yet")
    return None


# --- the stage -----------------------------------------------------------------------------------

def _spec(inst: Instance) -> ForeignKeyJoinSpec:
    """The format-1 spec whose settings row the virtual scenario has: the join type and old values
    (the tables and the extractor are the stage's own, see the module docstring)."""
    return ForeignKeyJoinSpec(join=inst.node.op.type.format1, foreign_key=KeyExtractorSpec(),
                              send_old_values=bool(inst.node_plan.send_old_values))


def _settings_row(inst: Instance) -> tuple:
    # [versioned_tables] KIP-914: a side that descends from a versioned table drops its
    # out-of-order updates
    nodes = inst.plan.nodes
    versioned = inst.profile.versioned_tables
    return (inst.sid, inst.index, bool(versioned and nodes[inst.node.upstream].versioned),
            bool(versioned and nodes[inst.node.op.other].versioned))


def _foreign_key(instances: List[Instance]):
    """``fk(column)``: the ``key_text`` of the node's extractor applied to a left arrival's
    JSON-text ``column`` (null for a null value and on the right side), one Arrow UDF for all."""
    from pyspark.sql import functions as F

    extractors = {(i.sid, i.index): ex.compile_expr(i.node.op.foreign_key) for i in instances}

    def body(sid, node, port, key, text):
        if port != 0 or text is None:  # the UDF sees every row, whatever the when() around it
            return None
        return key_text(extractors[(sid, node)](_load(key), json.loads(text)))
    udf = F.udf(body, "string", useArrow=True)
    return lambda column: udf(F.col("sid"), F.col("node"), F.col("port"), F.col("key"), F.col(column))


def _result_key(instances: List[Instance]):
    """``result_key(n_l, n_r)`` of the virtual scenarios (their ``sid`` is the position in
    ``instances``): the serialized text of the node's joiner applied to the two arguments, which
    KIP-557's check of the result table compares (the reference's ``TableSource``)."""
    from pyspark.sql import functions as F

    joiners = [graph_joiner(i.node.op.joiner, i.node.op.joiner_separator) for i in instances]

    def body(vsid, left, right):
        if left is None:  # no left row: a tombstone, never compared by value
            return None
        return value_text(joiners[vsid](json.loads(left), _load(right)))
    udf = F.udf(body, "string", useArrow=True)
    return lambda left, right: udf(F.col("sid"), left, right)


def scan_order(key):
    """A binary column: the order in which a prefix scan of the subscription store visits the
    subscribers (PK ``key``, ``key_text``) of one FK, as the reference's store sorts a graph's
    keys: a string PK by its UTF-8 bytes; any other by ``0xFF``, its type letter and the graph
    serde's bytes (``expressions.serialize``)."""
    from pyspark.sql import functions as F

    def body(text):
        if text is None:
            return None
        pk = json.loads(text)
        if pk.__class__ is str:
            return pk.encode("utf-8", "replace")
        return b"\xff" + _TYPE_LETTERS.get(pk.__class__, b"o") + ex.serialize(pk)
    return F.udf(body, "binary", useArrow=True)(key)


def _tables(numbered, instances: List[Instance]):
    """Format 1's table rows (``foreign_key.join.changes_joined``) of the virtual scenarios: every
    kept arrival is a change of its side's table at its virtual input (``g1`` = ``vidx``), the
    left ones with their FK and their old value's."""
    from pyspark.sql import functions as F

    fk = _foreign_key(instances)
    zero = F.lit(0).cast("bigint")
    old = F.when((F.col("port") == 0) & F.col("old").isNotNull(),
                 F.struct(F.col("old").alias("v"), fk("old").alias("fk")))
    return numbered.select(
        F.col("vsid").alias("sid"), F.col("vidx").alias("idx"), F.col("vidx").alias("g1"), zero.alias("g2"),
        zero.alias("g3"), zero.alias("g4"), F.lit(0).alias("task"), F.col("port").alias("side"), "key", "value",
        "ts", F.lit(True).alias("change"), fk("value").alias("fk"), old.alias("old"))


def _placed(events, numbered):
    """The join's events at their arrival (the real ``sid``, ``node``, ``idx``, ``a_ok``), each
    with ``first_take`` (a drop of the arrival itself) or else ``pos``, its response's order key
    (see the module docstring)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from kssim.spark_backend.runtime.outputs import DROP

    at = numbered.select("vsid", "vidx", "sid", "node", "idx", F.col("ok").alias("a_ok"))
    placed = events.withColumnRenamed("sid", "vsid").withColumnRenamed("idx", "vidx").join(at, ["vsid", "vidx"])
    first_take = (F.col("etype") == DROP) & (F.col("text") == DropReason.NULL_FOREIGN_KEY.code)
    in_arrival = Window.partitionBy("vsid", "vidx").orderBy("f1", scan_order(F.col("key")))
    responses = placed.filter(~first_take)
    rank = (F.row_number().over(in_arrival) - 1).cast("bigint")
    pos = F.concat(F.array(F.col("idx"), F.lit(flow.INTERNAL_TAKE).cast("bigint")),
                   F.slice(F.col("a_ok"), 3, F.size(F.col("a_ok"))), F.array(rank))
    return placed.filter(first_take), responses.select("*", pos.alias("pos"))


def fk_join(arrivals, instances: List[Instance], batch) -> flow.StageResult:
    """``KTable#join/leftJoin(other, foreignKeyExtractor, joiner)`` (see the module docstring)."""
    from pyspark.sql import functions as F

    from kssim.spark_backend.foreign_key.join import changes_joined
    from kssim.spark_backend.runtime.inputs import with_configs
    from kssim.spark_backend.runtime.outputs import DROP, OLD_JOINED, OUTPUT

    settings = batch.frame([_settings_row(i) for i in instances], _SETTINGS_DDL)
    frame = arrivals.filter(F.col("key").isNotNull()).join(F.broadcast(settings), ["sid", "node"])
    drops_old = F.when(F.col("port") == 0, F.col("drops_old_left")).otherwise(F.col("drops_old_right"))
    out_of_order = drops_old & ~F.coalesce(F.col("latest"), F.lit(True))
    kept = frame.filter(~out_of_order).drop("drops_old_left", "drops_old_right")
    virtual = virtual_scenarios(kept, instances, batch, _spec)
    # read by the join and by the mapping back: computed once
    numbered = virtual.numbered.localCheckpoint(eager=False)
    # computed once (the FK UDF), and a fresh lineage: the join's self-joins of the tables need one
    tables = with_configs(_tables(numbered, instances), virtual.configs, virtual.features).localCheckpoint(eager=False)
    events = changes_joined(tables, virtual.features, _result_key(instances))
    first_take, responses = _placed(events, numbered)

    joiners = {(i.sid, i.index): graph_joiner(i.node.op.joiner, i.node.op.joiner_separator) for i in instances}
    outputs = responses.filter(F.col("etype") == OUTPUT).select(
        "*", F.when(~F.col("n_null"), joined_value(joiners, "n_l", "n_r")).alias("joined"),
        F.when(F.col("o_kind") == OLD_JOINED, joined_value(joiners, "o_l", "o_r")).alias("joined_old"))
    emitted = flow.records(outputs, ok="pos", take="pos", value="joined", old="joined_old", latest=F.lit(True))
    drops = flow.union_all([
        flow.drops(frame.filter(out_of_order), DropReason.OUT_OF_ORDER_VERSIONED_UPDATE.code),
        flow.select_columns(first_take, flow.DROP_DDL, ok="a_ok", reason="text"),
        flow.select_columns(responses.filter(F.col("etype") == DROP), flow.DROP_DDL, ok="pos", reason="text")])
    return flow.StageResult(emitted=emitted, drops=drops)


STAGES = {
    "fk_join": fk_join,
}
