"""Per-scenario settings of ``KTable#suppress``, as ``configs`` columns (driver side, no Spark).

``config_fields(scenario)`` turns a scenario's ``suppress`` into plain columns through the shared
model's :func:`reference.model.suppression.suppression_plan` (``SuppressedInternal`` as
``KTableImpl#buildSuppress`` builds it: buffer time, wait, tombstones, buffer bounds; the close
delay of untilWindowCloses as ``GraphGraceSearchUtil`` finds it, gap + grace for sessions from
2.2.1 [``suppress_session_close_includes_gap``]). Every column is prefixed ``sup_``, except the
release rules the Spark code reads by column, named as the rule. Scenarios without suppress get
nulls (``sup`` false). ``CONFIG_DDL`` is appended to ``spark_backend.runtime.inputs.CONFIG_DDL``.

Two ways to compute a suppression (``sup_sequential``):

- set-based (``time_eviction``, ``episodes``): an unbounded buffer (no ``max_records`` nor
  ``max_bytes``: ``Long.MAX_VALUE``, never exceeded) with a wait in ``[0, Long.MAX_VALUE]``, so
  the expiry time (stream time - wait) never overflows and never decreases;
- a per-task sequential pass (``bounded``): a bounded buffer (its capacity check depends on every
  key buffered at the time), or a negative wait (Kafka checks no number: stream time - wait may
  wrap around as a Java ``long``).

Besides the columns, a config row carries (as keys that are no column) what the sequential pass
needs on the executors: the plan itself, the topic name of each input side (the record context's
topic, part of the byte-size estimate) and the scenario's joiner (a name or a Python API callable),
and whether one input's results can reach suppress in several tasks (an FK join's responses go
to the tasks of their primary keys; a windowed-table join's shifted right windows are joined in
the task of their repartition topic's partition), read by :meth:`Features.of`.
"""
from __future__ import annotations

import attrs

from kssim.reference.model.suppression import JAVA_LONG_MAX, suppression_plan
from kssim.spark_backend.runtime.config_columns import config_columns

#: name, Spark type, and what the column means (a release rule's column is named as the rule)
_COLUMNS = (
    ("sup", "BOOLEAN", "the result is suppressed (KTable#suppress, KIP-328; suppress_operator: the loader "
                       "rejects it before 2.1)"),
    ("sup_window_end", "BOOLEAN", "buffer time = the window end (untilWindowCloses); else the record ts"),
    ("sup_wait", "BIGINT", "suppressDurationMillis: the time limit or the window close delay (0 when it is "
                           "negative or no Java long, where the sequential pass reads the plan, and without "
                           "suppress: never null, so the pandas column stays int64, exact up to Long.MAX_VALUE)"),
    ("sup_drop_tombstones", "BOOLEAN", "safeToDropTombstones (untilWindowCloses)"),
    ("sup_sequential", "BOOLEAN", "computed by the per-task sequential pass (bounded buffer or negative wait)"),
    ("sup_report_old", "BOOLEAN", "the scenario's output reports old values (send_old_values)"),
    ("sup_key_kind", "STRING", "how the buffer serializes the result key (reference.model.suppression.KEY_KINDS)"),
    ("sup_json_serde", "BOOLEAN", "keys and values are written by topology graphs' one JSON serde "
                                  "(reference.model.keys.json_key_serde), whose bytes the buffer orders keys and "
                                  "measures records by; else by format 1's per-type serdes"),
    ("suppress_observed_stream_time", "BOOLEAN", "KAFKA-7895"),
    ("suppress_enables_old_values", "BOOLEAN", "KAFKA-8199"),
)
#: the DDL, the column names, and the release-rule columns (read from the profile by their own name)
CONFIG_DDL, CONFIG_COLUMNS, RULE_COLUMNS = config_columns(_COLUMNS, first_rule="suppress_observed_stream_time")
#: keys of a config row that are no column (see the module docstring)
PLAN_KEY, TOPICS_KEY, JOINER_KEY, CROSS_TASK_KEY = "_sup_plan", "_sup_topics", "_sup_joiner", "_sup_cross_task"

#: the FK join's results reach suppress while its task processes the subscription response topic
#: (``reference.foreign_key.instructions.RESPONSE_TOPIC``; a test keeps the two equal)
FK_RESPONSE_TOPIC = "fk-subscription-response"
#: a windowed-table join with ``shift_ms`` joins the right windows after ``toStream().map()
#: .toTable()``, which reads them back from a repartition topic: the right side's results reach
#: suppress while that topic is processed (``reference.windows.windowed_table_join
#: .SHIFTED_RIGHT_TOPIC``; a test keeps the two equal)
SHIFTED_RIGHT_TOPIC = "right-shifted-repartition"
#: an aggregation reads the topic ``input`` (side 0)
AGGREGATIONS = ("session_aggregate", "window_aggregate", "sliding_aggregate")


def record_topics(spec) -> tuple:
    """The record context's topic name per input side (0, 1) when a result of ``spec``'s operator
    reaches suppress: the byte-size estimate counts its length."""
    if spec.operator == "fk_join":
        return FK_RESPONSE_TOPIC, FK_RESPONSE_TOPIC
    if spec.operator in AGGREGATIONS:
        return "input", "input"
    if spec.operator == "windowed_table_join" and spec.shift_ms:
        return "left", SHIFTED_RIGHT_TOPIC
    return "left", "right"


def is_sequential(plan) -> bool:
    """Does the plan need the per-task sequential pass (see the module docstring)?"""
    bounded = plan.max_records < JAVA_LONG_MAX or plan.max_bytes < JAVA_LONG_MAX
    return bounded or not 0 <= plan.duration_ms <= JAVA_LONG_MAX


def config_fields(scenario) -> dict:
    """The suppress columns of one scenario (``sup`` false and nulls without suppress), plus the
    non-column keys of the module docstring."""
    spec, profile = scenario.topology, scenario.profile
    if getattr(spec, "suppress", None) is None:
        fields = {name: None for name in CONFIG_COLUMNS}
        fields.update(sup=False, sup_wait=0)
        return fields
    plan = suppression_plan(spec, profile)
    sequential = is_sequential(plan)
    fields = {
        "sup": True, "sup_window_end": plan.time_definition == "window_end",
        "sup_wait": plan.duration_ms if 0 <= plan.duration_ms <= JAVA_LONG_MAX else 0,
        "sup_drop_tombstones": plan.safe_to_drop_tombstones, "sup_sequential": sequential,
        "sup_report_old": bool(spec.send_old_values), "sup_key_kind": plan.key_kind, "sup_json_serde": False,
    }
    fields.update((rule, getattr(profile, rule)) for rule in RULE_COLUMNS)
    fields[CROSS_TASK_KEY] = scenario.config.task_count > 1 and (
        spec.operator == "fk_join" or (spec.operator == "windowed_table_join" and bool(spec.shift_ms)))
    if sequential:
        fields[PLAN_KEY] = plan
        fields[TOPICS_KEY] = record_topics(spec)
        fields[JOINER_KEY] = (getattr(spec, "joiner", None), getattr(spec, "joiner_separator", None))
    return fields


@attrs.frozen
class SequentialScenario:
    """What the sequential pass needs of one scenario: its plan, the record topic per input side,
    its joiner (name or callable; None for an aggregation) with the separator, and whether its
    serde is graphs' JSON serde (``sup_json_serde``: the bytes the buffer measures and orders by)."""

    sid: int
    plan: object
    topics: tuple
    joiner: object
    separator: object
    json_serde: bool = False


@attrs.frozen
class Features:
    """Which parts of suppress a batch needs (read on the driver from the config rows)."""

    #: the suppressed scenarios (their ids)
    sids: tuple = ()
    #: every scenario of the batch is suppressed (a replay always is, or is not)
    everything: bool = False
    #: some set-based scenario waits for its window's end (untilWindowCloses)
    window_end: bool = True
    #: some set-based scenario waits a time limit (its per-key episodes: ``episodes``)
    time_limit: bool = True
    #: some scenario reads the task's stream time (2.1, before suppress_observed_stream_time)
    task_stream_time: bool = True
    #: the scenarios of the sequential pass
    sequential: tuple = ()
    #: some FK join is suppressed and so asked for old values (suppress_enables_old_values)
    fk_old_values: bool = True
    #: some scenario's input can make several tasks forward (see the module docstring)
    cross_task: bool = True

    @property
    def active(self) -> bool:
        """Is some scenario of the batch suppressed?"""
        return bool(self.sids)

    @classmethod
    def of(cls, config_rows):
        config_rows = list(config_rows)
        rows = [r for r in config_rows if r.get("sup")]
        set_based = [r for r in rows if not r["sup_sequential"]]
        sequential = tuple(SequentialScenario(r["sid"], r[PLAN_KEY], r[TOPICS_KEY], *r[JOINER_KEY],
                                              json_serde=r["sup_json_serde"])
                           for r in rows if r["sup_sequential"])
        return cls(sids=tuple(r["sid"] for r in rows), everything=len(rows) == len(config_rows),
                   window_end=any(r["sup_window_end"] for r in set_based),
                   time_limit=any(not r["sup_window_end"] for r in set_based),
                   task_stream_time=any(not r["suppress_observed_stream_time"] for r in rows),
                   sequential=sequential,
                   fk_old_values=any(r["op"] == "fk_join" and r["suppress_enables_old_values"] for r in rows),
                   cross_task=any(r[CROSS_TASK_KEY] for r in rows))
