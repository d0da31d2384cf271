"""The stages of windowed aggregations and of ``KTable#suppress`` in topology graphs: the format-1
Spark operators run on a node's arrivals, each (scenario, node) instance as a *virtual scenario*.

A time-windowed ``count`` or ``sum`` emitting on update runs natively in 2.2+
(:mod:`spark_backend.graph.window_totals`: running totals, no Python). Any other windowed
aggregation node (``count``/``reduce``/``aggregate`` after ``windowed_by``) runs the
very operator a format-1 ``window_aggregate`` / ``session_aggregate`` / ``sliding_aggregate``
scenario runs (:mod:`spark_backend.windows`), and ``suppress`` runs format 1's suppress stage
(:mod:`spark_backend.suppress`), so every release rule those read by name applies here unchanged:
``windowed_grace``, ``windowed_agg_own_stream_time``, ``window_store_own_clock``,
``time_window_output_ts_max``, ``window_fetch_hides_expired``, ``rocksdb_segments_by_retention``,
``time_windows_in_start_order``, ``time_windows_for_fixed``, ``rocksdb_fetch_from_first_segment``,
``session_own_stream_time``, ``session_late_before_close``, ``session_output_ts_window_end``,
``session_fetch_end_bounded``, ``session_emit_final_iterator_leak``,
``zero_cache_strips_caching_layer``, ``session_cache_finds_previous``,
``sliding_window_close_inclusive``, ``suppress_observed_stream_time``,
``suppress_enables_old_values``, ``suppress_buffer_compact_values``,
``suppress_session_close_includes_gap``.

How an instance becomes a virtual scenario (its own ``sid``, one task, ``as_listed``):

- its arrivals, numbered in order-key order, are the scenario's input records (``idx`` = that
  number), so the operator processes them in the task's processing order;
- its config row is format 1's (``runtime.inputs.config_row``) of the node's operator spec: the
  plan's ``NodePlan.spec`` with ``send_old_values`` the node's (the reference's
  ``WindowedAggregate`` does the same), whose aggregation is the graph's named function (an
  :class:`~reference.model.aggregations.Aggregation`, which the operators fold with as they fold
  a Python API aggregation); suppress's is the spec of the windowed aggregation above it, or a
  plain-key stand-in (a table-table join spec), with the node's ``suppress``;
- the operator's events come back to the arrival they are attributed to: its order key extended
  by the event's place among that arrival's events (``f1..f3``, ranked), its ``idx`` and ``take``.
  An output is a table change: key = the inner key, ``wstart``/``wend`` = the window, value = the
  new aggregate, ``old`` = the old one when the operator reports it.

Suppress's buffer measures a record with the topic the task was processing
(``KTableSuppressProcessor`` in the graph: the context's topic, an input topic or the one
repartition topic above the node): each virtual scenario lists its topics, and each change says
which by its ``side``. Its 2.1 stream time is the task's, which the graph's suppress never sees
advance (the reference graph engine does not feed it input records): it stays -1.
"""
from __future__ import annotations

from typing import List, Sequence

import attrs

from kssim.reference.model.graph.nodes import AggregateOp
from kssim.reference.model.graph.plan import windowed_spec_above
from kssim.reference.model.topology import TableTableJoinSpec

from kssim.spark_backend.graph import flow, window_totals
from kssim.spark_backend.graph.batch import Instance
from kssim.spark_backend.graph.virtual import VirtualScenario, operator_rows

#: the virtual scenarios' columns that lead back to an instance and its arrivals
VIRTUAL_DDL = "vsid INT, sid INT, node INT, windowed BOOLEAN"
#: the stand-in operator spec of suppress on plain keys: a plain key's serde (as the reference's)
PLAIN_KEYS = TableTableJoinSpec(join="inner")
#: the 2.1 task stream time of a graph's suppress (see the module docstring)
NO_TIMESTAMP = -1


def _one_task(config):
    """The run config of a virtual scenario: one task, its records in the order they are listed."""
    return attrs.evolve(config, order="as_listed", partitions={})


# --- arrivals <-> virtual scenarios -----------------------------------------------------------------

def _virtual_frame(batch, instances: List[Instance], windowed: Sequence[bool]):
    """``(vsid, sid, node, windowed)`` per instance: its virtual scenario's id is its position;
    ``windowed``: do its results have windowed keys (to be split into key and window)?"""
    rows = [(v, inst.sid, inst.index, w) for v, (inst, w) in enumerate(zip(instances, windowed))]
    return batch.frame(rows, VIRTUAL_DDL)


def _numbered(arrivals, virtual):
    """The arrivals with ``vsid`` and ``vidx``: their position in their instance's processing
    order (the order key), the input index of the virtual scenario."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    in_order = Window.partitionBy("sid", "node").orderBy(*flow.IN_ORDER)
    joined = arrivals.join(F.broadcast(virtual), ["sid", "node"])
    return joined.select("*", (F.row_number().over(in_order) - 1).cast("bigint").alias("vidx"))


def _configs(batch, scenarios: List[VirtualScenario], overrides: Sequence[dict] = ()):
    """``(configs frame, features)`` of the virtual scenarios (format 1's config rows, each updated
    by its ``overrides`` entry if given)."""
    from kssim.spark_backend.runtime import inputs

    rows = []
    for vsid, scenario in enumerate(scenarios):
        row = inputs.config_row(vsid, scenario)
        if overrides:
            row.update(overrides[vsid])
        rows.append(row)
    return inputs.config_frame(batch.spark, rows), inputs.Features.of(rows)


def _records(numbered, side=None, ts=None):
    """The virtual scenarios' input records (``runtime.inputs.RECORDS_DDL``) from the arrivals."""
    from pyspark.sql import functions as F

    from kssim.spark_backend.runtime.inputs import RECORDS_DDL

    return flow.select_columns(numbered, RECORDS_DDL, sid="vsid", idx="vidx", side=F.lit(0) if side is None else side,
                               task=F.lit(0), off="vidx", ts="ts" if ts is None else ts)


def _placed(events, numbered):
    """Events of the virtual scenarios at their arrival: ``ok`` extended by the event's place among
    that arrival's events (the operator's forward order ``f1..f3``; ``etype`` and ``key`` only make
    ties deterministic), ``idx``/``take`` the arrival's, ``sid``/``node`` the instance's. Outputs,
    drops and failures share one ranking, so what an arrival forwarded before the operator threw
    stays before the failure, where the runner cuts (format 1's ``before_failure``)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    in_arrival = Window.partitionBy("sid", "idx").orderBy("f1", "f2", "f3", "etype", "key")
    ranked = events.select(*[F.col(c).alias("e_" + c) for c in events.columns],
                           F.row_number().over(in_arrival).alias("place"))
    at = numbered.select("vsid", "vidx", "sid", "node", "windowed", "ok", "take", "idx")
    joined = ranked.join(at, (F.col("e_sid") == F.col("vsid")) & (F.col("e_idx") == F.col("vidx")))
    return joined.select("*", flow.extend(F.col("ok"), F.col("place")).alias("placed_ok"))


def _results(events, numbered) -> flow.StageResult:
    """The virtual scenarios' events as the stage's emitted table changes, drops and failures."""
    from pyspark.sql import functions as F

    from kssim.spark_backend.runtime.outputs import DROP, FAILURE, OLD_JOINED, OUTPUT
    from kssim.spark_backend.suppress.changes import WINDOWED_KEY

    placed = _placed(events, numbered).localCheckpoint(eager=False)
    key = F.col("e_key")
    windowed = F.col("windowed") & key.rlike(WINDOWED_KEY)

    def part(n):
        return F.when(windowed, F.regexp_extract(key, WINDOWED_KEY, n))

    outputs = placed.filter(F.col("e_etype") == OUTPUT)
    emitted = flow.records(
        outputs, ok="placed_ok", ts="e_ts", key=F.when(windowed, part(1)).otherwise(key),
        wstart=part(2).cast("bigint"), wend=part(3).cast("bigint"),
        value=F.when(~F.col("e_n_null"), F.col("e_n_l")),
        old=F.when(F.col("e_o_kind") == OLD_JOINED, F.col("e_o_l")), latest=F.lit(True))
    dropped = placed.filter(F.col("e_etype") == DROP)
    failed = placed.filter(F.col("e_etype") == FAILURE)
    return flow.StageResult(
        emitted=emitted,
        drops=flow.select_columns(dropped, flow.DROP_DDL, ok="placed_ok", reason="e_text"),
        failures=flow.select_columns(failed, flow.FAILURE_DDL, ok="placed_ok", code="e_text"))


# --- windowed aggregations --------------------------------------------------------------------------

def _aggregation_scenario(inst: Instance) -> VirtualScenario:
    """The node's format-1 operator spec, old values as the plan says (as the reference's
    ``WindowedAggregate`` builds its operator)."""
    spec = attrs.evolve(inst.node_plan.spec, send_old_values=inst.node_plan.send_old_values)
    return VirtualScenario(spec, inst.profile, _one_task(inst.config))


def _operators():
    """Format 1's windowed operators by operator name (imported late: they are Spark modules)."""
    from kssim.spark_backend.windows.session import session_aggregate
    from kssim.spark_backend.windows.sliding import sliding_aggregate
    from kssim.spark_backend.windows.time_window import time_window_aggregate

    return {"window_aggregate": time_window_aggregate, "session_aggregate": session_aggregate,
            "sliding_aggregate": sliding_aggregate}


def windowed_aggregate(arrivals, instances: List[Instance], batch) -> flow.StageResult:
    """A windowed aggregation's table changes, drops and failures (see the module docstring)."""
    from pyspark.sql import functions as F

    assert all(isinstance(i.node.op, AggregateOp) and i.node_plan.spec is not None for i in instances)
    natives = [window_totals.settings(inst) for inst in instances]
    native_rows = [row for row in natives if row is not None]
    if not native_rows:
        return _operated(arrivals, instances, batch)
    native = window_totals.windowed_totals(arrivals, native_rows, batch)
    others = [inst for inst, row in zip(instances, natives) if row is None]
    if not others:
        return native
    settled = batch.frame([row[:2] for row in native_rows], "sid INT, node INT")
    return flow.merged([native, _operated(arrivals.join(F.broadcast(settled), ["sid", "node"], "left_anti"),
                                          others, batch)])


def _operated(arrivals, instances: List[Instance], batch) -> flow.StageResult:
    """The instances run by format 1's operators as virtual scenarios."""
    from pyspark.sql import functions as F

    scenarios = [_aggregation_scenario(inst) for inst in instances]
    virtual = _virtual_frame(batch, instances, [True] * len(instances))
    # read by the operator and by the mapping back: computed once
    numbered = _numbered(arrivals, virtual).localCheckpoint(eager=False)
    configs, features = _configs(batch, scenarios)
    rows = operator_rows(_records(numbered), configs, features)
    # only the operators the level has: every branch is planned and run even when it is empty
    events = flow.union_all([run(rows.filter(F.col("op") == op), features)
                             for op, run in _operators().items() if op in features.operators])
    return _results(events, numbered)


# --- suppress --------------------------------------------------------------------------------------

def topics_above(plan, index: int) -> tuple:
    """The repartition topics written on the way to node ``index`` (the graphs Spark runs have one
    at most: ``runner.heap_free``)."""
    ancestors, pending = set(), [index]
    while pending:
        i = pending.pop()
        if i is not None and i not in ancestors:
            ancestors.add(i)
            pending.extend(plan.nodes[i].node.inputs)
    topics = []
    for node_plan in plan.nodes:
        for edge in node_plan.children:
            if edge.repartition is not None and edge.child in ancestors and edge.repartition not in topics:
                topics.append(edge.repartition)
    return tuple(topics)


def record_topics(batch, inst: Instance) -> tuple:
    """The topics a change can reach suppress under (the context's topic, which the buffer's size
    estimate counts): the scenario's input topics (sorted), then the repartition topic whose takes
    reach the node (``heap_order.topics_reaching``; with two, a byte bound is refused,
    ``heap_order.refusal``)."""
    from kssim.spark_backend.graph.heap_order import topics_reaching

    inputs = sorted({rec.topic for rec in batch.scenarios[inst.sid].inputs})
    return tuple(inputs) + tuple(sorted(topics_reaching(inst.plan)[inst.index]))[:1]


def _suppress_scenario(inst: Instance, above) -> VirtualScenario:
    """The reference's ``_suppress_processor``: the windowed spec ``above`` (its key serde, its
    window's close delay) or the plain-key stand-in, with the node's suppress, reporting old
    values as the plan says."""
    spec = attrs.evolve(above or PLAIN_KEYS, suppress=inst.node.op.spec,
                        send_old_values=inst.node_plan.send_old_values)
    return VirtualScenario(spec, inst.profile, _one_task(inst.config))


def _suppress_overrides(topics: tuple) -> dict:
    """What a graph's suppress config row says unlike format 1's: the topics of its changes and no
    joiner (read by a bounded buffer's sequential pass, whose size estimate counts key and value
    bytes: a change's value is the node's value as it is, ``_changes``' ``n_l``; the plain-key
    stand-in's joiner ``pair`` would measure ``[value, null]``); and graphs' one JSON serde
    (``sup_json_serde``, read by both paths: the bytes that measure a record and order the keys
    evicted together; a string key ``"k"`` is 3 bytes, not format 1's 1; an integer its decimal
    text, not 8 bytes, so 10 comes before 9)."""
    from kssim.spark_backend.suppress import settings

    return {settings.TOPICS_KEY: topics, settings.JOINER_KEY: (None, None), "sup_json_serde": True}


def _topic_sides(batch, instances: List[Instance], topics: List[tuple], numbered):
    """A ``side`` column: the index of the topic each change reached suppress under in its
    instance's topics (a read-back record: the repartition topic; else its input's topic)."""
    from pyspark.sql import functions as F

    rows = []
    for vsid, (inst, names) in enumerate(zip(instances, topics)):
        for rec in batch.scenarios[inst.sid].inputs:
            rows.append((vsid, rec.index, names.index(rec.topic), len(names) - 1))
    sides = batch.frame(rows, "vsid INT, idx BIGINT, input_side INT, internal_side INT")
    with_sides = numbered.join(F.broadcast(sides), ["vsid", "idx"], "left")
    read_back = F.col("take").getItem(1) == flow.INTERNAL_TAKE
    side = F.when(read_back, F.col("internal_side")).otherwise(F.col("input_side"))
    return with_sides.select(*numbered.columns, F.coalesce(side, F.lit(0)).alias("topic_side"))


def _changes(numbered):
    """The changes reaching suppress as format 1's OUTPUT events of its operator (one per virtual
    input, so each change is its own input's only event), keys as key text (windowed: the
    ``{"key","start","end"}`` object's)."""
    from pyspark.sql import functions as F

    from kssim.spark_backend.runtime.outputs import OLD_JOINED, OLD_NULL, OUTPUT, events

    zero = F.lit(0)
    windowed_key = F.concat(F.lit('{"key":'), F.col("key"), F.lit(',"start":'), F.col("wstart").cast("string"),
                            F.lit(',"end":'), F.col("wend").cast("string"), F.lit("}"))
    return events(numbered, etype=F.lit(OUTPUT), sid="vsid", task=zero, idx="vidx", g1="vidx", g2=zero, g3=zero,
                  g4=zero, f1=zero, f2=F.lit(b""), f3=zero,
                  key=F.when(F.col("wstart").isNotNull(), windowed_key).otherwise(F.col("key")),
                  n_null=F.col("value").isNull(), n_l="value",
                  o_kind=F.when(F.col("old").isNull(), F.lit(OLD_NULL)).otherwise(F.lit(OLD_JOINED)), o_l="old")


def suppress(arrivals, instances: List[Instance], batch) -> flow.StageResult:
    """What ``KTable#suppress`` forwards, and its buffer-full failures (see the module docstring)."""
    from pyspark.sql import functions as F

    from kssim.spark_backend.suppress import settings
    from kssim.spark_backend.suppress.stage import suppressed

    above = [windowed_spec_above(inst.plan, inst.node.upstream) for inst in instances]
    scenarios = [_suppress_scenario(inst, spec) for inst, spec in zip(instances, above)]
    topics = [record_topics(batch, inst) for inst in instances]
    numbered = _numbered(arrivals, _virtual_frame(batch, instances, [spec is not None for spec in above]))
    # read by the suppress stage (changes, rows) and by the mapping back: computed once
    numbered = _topic_sides(batch, instances, topics, numbered).localCheckpoint(eager=False)
    configs, features = _configs(batch, scenarios, [_suppress_overrides(t) for t in topics])
    rows = operator_rows(_records(numbered, side=F.col("topic_side"), ts=F.lit(NO_TIMESTAMP)), configs, features)
    return _results(suppressed(_changes(numbered), rows, configs, features), numbered)


STAGES = {
    "windowed_aggregate": windowed_aggregate,
    "suppress": suppress,
}
