"""Which outputs, and which final result tables, a topology with internal topics can reach.

A foreign-key join runs on several tasks linked by its subscription and response topics; in a
deployment the order in which a task reads its queues depends on fetch timing, so one input
sequence has many possible output sequences (``kafka-semantics-fk-windows.md`` A.10).
:func:`explore` runs a scenario ``n`` times with ``delivery: interleaved``
(:mod:`reference.runtime.delivery`), each run with its own seed drawn from one master seed, and
groups the runs by their output sequence. Each :class:`Outcome` keeps how many runs reached it,
one witness schedule (replayable: ``config.schedule``, or ``kssim run --schedule``), the final
result table (the last value per key, a tombstone deleting the key), and whether that table is
the relational join of the final input tables: what a user who reads the result as "the join of
my tables" expects, and what some interleavings of a 3.7-4.0 left join do not give.
"""
from __future__ import annotations

import random
from typing import List, Optional

import attrs

from kssim.reference.model.keys import key_identity, key_text
from kssim.reference.model.joiners import make_joiner
from kssim.reference.model.topology import OPERATOR_INPUT_TOPICS
from kssim.reference.model.topology import ExtractorError, ForeignKeyJoinSpec, extract_key
from kssim.reference.runtime.engine import processing_order, run_scenario


@attrs.frozen
class Outcome:
    """One distinct output sequence: its records (``(partition, key, value, ts, input)``, in
    output order per partition), how many explored runs produced it, the schedule of the first run
    that did, the final result table (``{key_text: (key, value)}``) and whether it equals the
    relational join of the final input tables (None where kssim has no relational reading of the
    operator)."""

    outputs: tuple
    count: int
    schedule: tuple
    final_table: dict = attrs.field(eq=False)
    matches_relational_join: Optional[bool]


@attrs.frozen
class Exploration:
    scenario_name: str
    schedules: int
    seed: int
    outcomes: tuple  # of Outcome, most frequent first, then by first appearance
    relational_join: Optional[dict] = attrs.field(eq=False, default=None)


def explore(scenario, schedules: int = 100, seed: int = 0) -> Exploration:
    """Run ``schedules`` seeded interleavings of ``scenario`` and group them by output sequence."""
    draws = random.Random(seed)
    expected = relational_join(scenario)
    found: dict = {}
    order: List[tuple] = []
    for _ in range(schedules):
        run_seed = draws.getrandbits(63)
        config = attrs.evolve(scenario.config, delivery="interleaved", seed=run_seed, schedule=None)
        result = run_scenario(attrs.evolve(scenario, config=config))
        signature = tuple((o.partition, key_text(o.key), key_text(o.value), o.ts, o.input_index)
                          for o in result.outputs)
        if signature not in found:
            found[signature] = [0, result]
            order.append(signature)
        found[signature][0] += 1
    outcomes = []
    for rank, signature in enumerate(order):
        count, result = found[signature]
        table = final_table(result.outputs)
        matches = None if expected is None else _same_table(table, expected)
        outputs = tuple((o.partition, o.key, o.value, o.ts, o.input_index) for o in result.outputs)
        outcomes.append((-count, rank, Outcome(outputs, count, tuple(result.schedule or ()), table, matches)))
    outcomes.sort(key=lambda item: item[:2])
    return Exploration(scenario.name, schedules, seed, tuple(o for _, _, o in outcomes), expected)


def final_table(outputs) -> dict:
    """The result table a reader of the output topic ends with: the last value per key (by key
    identity), a tombstone removing the key."""
    table: dict = {}
    for o in outputs:
        if o.key is None:
            continue
        if o.value is None:
            table.pop(key_text(o.key), None)
        else:
            table[key_text(o.key)] = (o.key, o.value)
    return table


def relational_join(scenario) -> Optional[dict]:
    """The join of the final input tables, as a relational database would compute it; None for
    operators without such a reading. A table's final row per key is its last update in list
    (processing) order, or for a versioned table its newest version (greatest timestamp, the later record on a
    tie); a tombstone deletes the row."""
    spec = scenario.topology
    if not isinstance(spec, ForeignKeyJoinSpec):
        return None
    inputs = list(processing_order(scenario.inputs, scenario.config, scenario.profile,
                                   OPERATOR_INPUT_TOPICS[spec.operator]))
    left = _final_rows(inputs, "left", spec.left_table.versioned)
    right = _final_rows(inputs, "right", spec.right_table.versioned)
    joiner = make_joiner(spec.joiner, spec.joiner_separator)
    table = {}
    for text, (key, value) in left.items():
        try:
            fk = extract_key(spec.foreign_key, key, value)
        except ExtractorError:
            continue
        other = None if fk is None else right.get(key_identity(fk))
        if other is None and spec.join == "inner":
            continue
        table[text] = (key, joiner(value, None if other is None else other[1]))
    return table


def _final_rows(inputs, topic, versioned) -> dict:
    rows: dict = {}
    newest: dict = {}
    by_identity: dict = {}
    for rec in inputs:
        if rec.topic != topic or rec.key is None:
            continue
        ident = key_identity(rec.key)
        if versioned and ident in newest and rec.ts < newest[ident]:
            continue  # an older version: the newest one stays the table's row
        newest[ident] = rec.ts
        if rec.value is None:
            by_identity.pop(ident, None)
        else:
            by_identity[ident] = (rec.key, rec.value)
    if topic == "right":
        return by_identity
    for key, value in by_identity.values():
        rows[key_text(key)] = (key, value)
    return rows


def _same_table(table: dict, expected: dict) -> bool:
    return set(table) == set(expected) and all(key_text(table[k][1]) == key_text(expected[k][1]) for k in table)


def outcome_json(outcome: Outcome) -> dict:
    """One outcome as the JSON object ``kssim explore --format jsonl`` prints."""
    return {
        "outputs": [{"partition": p, "key": k, "value": v, "ts": ts, "input": i} for p, k, v, ts, i in outcome.outputs],
        "final_table": [{"key": key, "value": value} for key, value in outcome.final_table.values()],
        "count": outcome.count,
        "schedule": list(outcome.schedule),
        "matches_relational_join": outcome.matches_relational_join,
    }


__all__ = ["Exploration", "Outcome", "explore", "final_table", "relational_join", "outcome_json"]
