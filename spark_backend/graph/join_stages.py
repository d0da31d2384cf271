"""The stages of join nodes of topology graphs: stream x stream, stream x table, table x table
(foreign-key joins are not run here). A join node's left input arrives on port 0, its other side
on port 1 (a table side: the table's changes, ``value`` the new value, ``old``, ``latest``).

The reference: ``reference/graph/joins.py`` (its adapters around the format-1 operators) and
``reference/graph/engine.py::_join``.

**Stream x stream and stream x table: the format-1 Spark operators on virtual scenarios.** Each
(scenario, join node) instance becomes a scenario of its own (a *virtual* sid) whose inputs are the
node's arrivals numbered in order-key order (the virtual input index), port 0 the ``left`` topic,
port 1 the ``right`` one, one task; its settings row is format 1's (``inputs.config_row``) for the
node's format-1 spec (``NodePlan.spec``, or the stream-table spec ``_join`` builds) and the
scenario's profile, so every release rule of those operators applies by its profile name
(``kip77_join_semantics``, ``null_key_outer_emit``, ``output_ts_max``, ``time_difference_windows``,
``stream_time_advanced_by_dropped``, ``window_fetch_hides_expired``, ``versioned_tables``,
``stream_table_grace``, ...). Their events come back to the arrival that caused them (the event's
input index): an output's order key is that arrival's, extended by the output's rank in the
operator's forward order (``f1, f2, f3``); a drop comes after the outputs of its arrival (a
stream-stream join forwards its results before the window store rejects an expired put); a
failure stands at its arrival (nothing of it is forwarded). The joiner
(:func:`reference.model.graph.functions.graph_joiner`) builds the value from the operator's two
arguments.

Where graphs differ from format 1 (the reference's adapters):

- stream x table: the table is the table node upstream, read through its value getter; table
  updates trigger nothing and their drops are the table node's, never the join's. The getter's
  view at a stream record is the latest change forwarded to the join before it in order-key order:
  so out-of-order versioned updates (``latest`` false) do not count, unless the other node is a
  versioned table source itself, whose store the join reads as of the stream record's ts
  (KIP-889, ``versioned_tables``): then every forwarded put goes to the operator's versioned
  store. What the table node already skipped (KIP-557 idempotent updates,
  ``ktable_emit_on_change``; expired versioned puts) never arrives, so the operator's own
  source rules find nothing to skip (emit-on-change is off in the virtual settings);
- table x table (``KTableKTable*Join``, one processor per side, the other side read through its
  value getter), computed here directly as windows over the arrivals: a null key is dropped
  (``null_key``); an out-of-order update of a versioned parent (``latest`` false) is dropped
  (``out_of_order_versioned_update``, KIP-914, ``versioned_tables``); otherwise format 1's
  result rule (:func:`spark_backend.joins.table_table.join_result`: ``kip77_join_semantics``,
  ``output_ts_max``) on the change's new and old value (old as the upstream sent it) and the other
  side's latest change before it; the old result is sent when the node sends old values
  (``NodePlan.send_old_values``).
"""
from __future__ import annotations

import json
from typing import Callable, Dict, List, Tuple

import attrs

from kssim.reference.model.codes import DropReason
from kssim.reference.model.graph.functions import graph_joiner
from kssim.reference.model.graph.nodes import TableSourceOp
from kssim.reference.model.topology import StreamTableJoinSpec, TableSpec

from kssim.spark_backend.graph import flow
from kssim.spark_backend.graph.batch import Instance
from kssim.spark_backend.graph.mappers import value_text
from kssim.spark_backend.graph.virtual import VirtualScenario, operator_rows
from kssim.spark_backend.runtime.outputs import OLD_JOINED

#: where a drop of an arrival stands among what the arrival caused at the node: after its outputs
AFTER_OUTPUTS = 1 << 62

Joiners = Dict[Tuple[int, int], Callable]


# --- the joined value -------------------------------------------------------------------------

def _load(text):
    return None if text is None else json.loads(text)


def _joiners(instances: List[Instance]) -> Joiners:
    return {(i.sid, i.index): graph_joiner(i.node.op.joiner, i.node.op.joiner_separator) for i in instances}


def joined_value(joiners: Joiners, left: str, right: str):
    """A string column: the JSON text of the node's joiner applied to the JSON-text columns
    ``left`` and ``right`` (a missing side is null), one Arrow Python UDF for every node."""
    from pyspark.sql import functions as F

    def body(sid, node, l_text, r_text):
        return value_text(joiners[(sid, node)](_load(l_text), _load(r_text)))
    return F.udf(body, "string", useArrow=True)(F.col("sid"), F.col("node"), F.col(left), F.col(right))


# --- virtual scenarios: a node instance run by a format-1 operator ------------------------------

@attrs.frozen
class Virtual:
    """The instances of a stage as virtual scenarios: ``numbered`` (the arrivals with ``vsid`` and
    ``vidx``, the virtual input index in order-key order), their ``configs`` and ``features``."""

    numbered: object
    configs: object
    features: object

    def operator_rows(self):
        """The operator's input frame: virtual records with settings and processing order."""
        from pyspark.sql import functions as F

        from kssim.spark_backend.runtime.inputs import RECORDS_DDL

        records = flow.select_columns(self.numbered, RECORDS_DDL, sid="vsid", idx="vidx", side="port",
                                      task=F.lit(0), off="vidx")
        return operator_rows(records, self.configs, self.features)

    def events_at_arrivals(self, events):
        """The operator's events with the arrival each happened at: the real ``sid, node``, the
        arrival's ``a_ok``, ``take``, ``a_idx``, ``a_port``, and ``rank``, the event's position
        among its arrival's events in the operator's forward order."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        arrivals = self.numbered.select(F.col("vsid").alias("e_sid"), F.col("vidx").alias("e_idx"),
                                        F.col("sid").alias("a_sid"), "node", F.col("ok").alias("a_ok"), "take",
                                        F.col("idx").alias("a_idx"), F.col("port").alias("a_port"))
        on = (F.col("sid") == F.col("e_sid")) & (F.col("idx") == F.col("e_idx"))
        placed = events.join(arrivals, on).drop("e_sid", "e_idx")
        forward_order = Window.partitionBy("sid", "idx", "etype").orderBy("f1", "f2", "f3")
        return placed.select("*", (F.row_number().over(forward_order) - 1).alias("rank")) \
            .drop("sid").withColumnRenamed("a_sid", "sid")


def virtual_scenarios(arrivals, instances: List[Instance], batch, spec_of, adjust=None) -> Virtual:
    """Number each instance's arrivals in order-key order and build its settings row from
    ``spec_of(instance)`` (``adjust(row)`` may change it)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from kssim.spark_backend.runtime.inputs import Features, config_frame, config_row

    rows = []
    for vsid, inst in enumerate(instances):
        # the virtual inputs are numbered in processing order: listed order is that order
        config = attrs.evolve(inst.config, order="as_listed")
        row = config_row(vsid, VirtualScenario(spec_of(inst), inst.profile, config))
        rows.append(adjust(row) if adjust is not None else row)
    ids = batch.frame([(inst.sid, inst.index, vsid) for vsid, inst in enumerate(instances)],
                      "sid INT, node INT, vsid INT")
    in_order = Window.partitionBy("vsid").orderBy(*flow.IN_ORDER)
    numbered = arrivals.join(F.broadcast(ids), ["sid", "node"]) \
        .select("*", (F.row_number().over(in_order) - 1).cast("bigint").alias("vidx"))
    return Virtual(numbered, config_frame(batch.spark, rows), Features.of(rows))


def _results(placed, joiners: Joiners, keep_events=None) -> flow.StageResult:
    """Outputs (stream records, the joiner applied), drops and failures of placed events."""
    from pyspark.sql import functions as F

    from kssim.spark_backend.runtime.outputs import DROP, FAILURE, OUTPUT

    if keep_events is not None:
        placed = placed.filter(keep_events)
    etype = F.col("etype")
    outputs = placed.filter(etype == OUTPUT)
    outputs = outputs.select("*", F.when(~F.col("n_null"), joined_value(joiners, "n_l", "n_r")).alias("joined"))
    emitted = flow.records(outputs, ok=flow.extend(F.col("a_ok"), F.col("rank")), idx="a_idx", value="joined",
                           old=F.lit(None), latest=F.lit(None))
    drops = flow.select_columns(placed.filter(etype == DROP), flow.DROP_DDL,
                                ok=flow.extend(F.col("a_ok"), AFTER_OUTPUTS), idx="a_idx", reason="text")
    failures = flow.select_columns(placed.filter(etype == FAILURE), flow.FAILURE_DDL, ok="a_ok", idx="a_idx",
                                   code="text")
    return flow.StageResult(emitted=emitted, drops=drops, failures=failures)


# --- stream x stream ------------------------------------------------------------------------------

def stream_stream_join(arrivals, instances: List[Instance], batch) -> flow.StageResult:
    """``KStream#join/leftJoin/outerJoin(KStream, JoinWindows)``: format 1's operator on the node's
    format-1 spec (``NodePlan.spec``), both ports' records as its ``left`` and ``right`` topics."""
    from kssim.spark_backend.joins.stream_stream import stream_stream_join as operator

    virtual = virtual_scenarios(arrivals, instances, batch, lambda inst: inst.node_plan.spec)
    events = operator(virtual.operator_rows(), virtual.features)
    return _results(virtual.events_at_arrivals(events), _joiners(instances))


# --- stream x table -------------------------------------------------------------------------------

def _reads_versioned_store(inst: Instance) -> bool:
    """Does the join read the other node's versioned store as of the stream record's ts? Only a
    versioned table source has one (a filter or map_values of it answers with the latest value)."""
    op = inst.plan.nodes[inst.node.op.other].node.op
    return isinstance(op, TableSourceOp) and bool(op.versioned)


def _stream_table_spec(inst: Instance) -> StreamTableJoinSpec:
    op = inst.node.op
    table = TableSpec()
    if _reads_versioned_store(inst):
        other = inst.plan.nodes[op.other].node.op
        table = TableSpec(versioned=True, history_retention_ms=other.history_retention_ms)
    return StreamTableJoinSpec(join=op.type.format1, table=table, grace_ms=op.grace_ms)


def _table_view_settings(row: dict) -> dict:
    # the table node upstream already skipped idempotent updates [ktable_emit_on_change]: every
    # change that reaches the join is a put of the table the getter reads
    return dict(row, ktable_emit_on_change=False)


def stream_table_join(arrivals, instances: List[Instance], batch) -> flow.StageResult:
    """``KStream#join/leftJoin(KTable)``: format 1's operator, its table the changes the table node
    forwarded (see the module docstring); only stream records trigger, and only their events
    are the join's."""
    from pyspark.sql import functions as F

    from kssim.spark_backend.joins.stream_table import stream_table_join as operator

    versioned_store = batch.frame([(i.sid, i.index, _reads_versioned_store(i)) for i in instances],
                                  "sid INT, node INT, as_of BOOLEAN")
    with_store = arrivals.join(F.broadcast(versioned_store), ["sid", "node"])
    # the value getter's view: a non-versioned one ignores out-of-order versioned updates
    view = with_store.filter((F.col("port") == 0) | F.col("as_of") | F.coalesce(F.col("latest"), F.lit(True)))
    virtual = virtual_scenarios(view.drop("as_of"), instances, batch, _stream_table_spec, _table_view_settings)
    events = operator(virtual.operator_rows(), virtual.features)
    return _results(virtual.events_at_arrivals(events), _joiners(instances), keep_events=F.col("a_port") == 0)


# --- table x table --------------------------------------------------------------------------------

_TABLE_SETTINGS_DDL = ("sid INT, node INT, join STRING, drops_old_left BOOLEAN, drops_old_right BOOLEAN, "
                       "send_old BOOLEAN, kip77_join_semantics BOOLEAN, output_ts_max BOOLEAN")


def _table_settings_row(inst: Instance) -> tuple:
    op, profile = inst.node.op, inst.profile
    nodes = inst.plan.nodes
    # [versioned_tables] KIP-914: a side that descends from a versioned table ignores its
    # out-of-order updates
    left_versioned, right_versioned = nodes[inst.node.upstream].versioned, nodes[op.other].versioned
    return (inst.sid, inst.index, op.type.format1, bool(profile.versioned_tables and left_versioned),
            bool(profile.versioned_tables and right_versioned), bool(inst.node_plan.send_old_values),
            bool(profile.kip77_join_semantics), bool(profile.output_ts_max))


def _latest_change_before(port: int):
    """The (value, ts) of the last change of ``port``'s table for this key before this arrival
    that moved its value getter (out-of-order versioned updates do not); null: none."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    before = Window.partitionBy("sid", "node", "key").orderBy(*flow.IN_ORDER).rowsBetween(Window.unboundedPreceding, -1)
    moves = (F.col("port") == port) & F.coalesce(F.col("latest"), F.lit(True))
    return F.last(F.when(moves, F.struct(F.col("value").alias("v"), F.col("ts").alias("t"))),
                  ignorenulls=True).over(before)


def table_table_join(arrivals, instances: List[Instance], batch) -> flow.StageResult:
    """``KTable#join/leftJoin/outerJoin(KTable)`` (see the module docstring)."""
    from pyspark.sql import functions as F

    from kssim.spark_backend.joins.table_table import join_result

    settings = batch.frame([_table_settings_row(i) for i in instances], _TABLE_SETTINGS_DDL)
    frame = arrivals.join(F.broadcast(settings), ["sid", "node"])
    left = F.col("port") == 0
    frame = frame.select("*", F.when(left, _latest_change_before(1)).otherwise(_latest_change_before(0)).alias("other"))
    drops_old = F.when(left, F.col("drops_old_left")).otherwise(F.col("drops_old_right"))
    out_of_order = drops_old & ~F.coalesce(F.col("latest"), F.lit(True))
    reason = (F.when(F.col("key").isNull(), F.lit(DropReason.NULL_KEY.code))
              .when(out_of_order, F.lit(DropReason.OUT_OF_ORDER_VERSIONED_UPDATE.code)))
    emit, new_null, o_kind, out_ts, (n_l, n_r, o_l, o_r) = join_result(
        F.col("port"), F.col("join"), F.col("value"), F.col("old"), F.col("other.v"), F.col("other.t"), F.col("ts"))
    frame = frame.select("*", reason.alias("reason"), emit.alias("emit"), new_null.alias("new_null"),
                         o_kind.alias("o_kind"), out_ts.alias("out_ts"), n_l.alias("n_l"), n_r.alias("n_r"),
                         o_l.alias("o_l"), o_r.alias("o_r"))
    joiners = _joiners(instances)
    results = frame.filter(F.col("reason").isNull() & F.col("emit")).select(
        "*", F.when(~F.col("new_null"), joined_value(joiners, "n_l", "n_r")).alias("joined"),
        F.when(F.col("o_kind") == OLD_JOINED, joined_value(joiners, "o_l", "o_r")).alias("joined_old"))
    # one result per update: its position 0 keeps the order key's shape of every forwarding node
    emitted = flow.records(results, ok=flow.extend(F.col("ok"), 0), ts="out_ts", value="joined", old="joined_old",
                           latest=F.lit(True))
    dropped = frame.filter(F.col("reason").isNotNull())
    return flow.StageResult(emitted=emitted,
                            drops=flow.select_columns(dropped, flow.DROP_DDL, reason="reason"))


STAGES = {
    "stream_stream_join": stream_stream_join,
    "stream_table_join": stream_table_join,
    "table_table_join": table_table_join,
}
