"""`kssim explore`: seeded interleavings of an FK join grouped by outcome (reference.runtime.explore)."""
from __future__ import annotations

import json
import os

import attrs

from kssim_testing import ROOT
from kssim.reference.model.scenario import load_scenario
from kssim.reference.runtime.engine import run_scenario
from kssim.reference.runtime.explore import explore, final_table, outcome_json, relational_join
from kssim.tools.cli import main

FEATURES = os.path.join(ROOT, "scenarios", "features")
RACE = os.path.join(FEATURES, "fk-left-fk-change-race-two-partitions-{}.yaml")


def test_the_3_9_left_join_race_reaches_a_wrong_final_row():
    found = explore(load_scenario(RACE.format("3.9")), schedules=60, seed=1)
    assert len(found.outcomes) >= 2
    assert sum(o.count for o in found.outcomes) == 60
    verdicts = {o.matches_relational_join for o in found.outcomes}
    assert verdicts == {True, False}
    wrong = next(o for o in found.outcomes if not o.matches_relational_join)
    assert [v for _, v in wrong.final_table.values()] == [[{"fk": "d", "v": 2}, None]]
    assert [v for _, v in found.relational_join.values()] == [[{"fk": "d", "v": 2}, "rd"]]


def test_releases_without_the_double_emission_never_end_wrong():
    for release in ("3.6", "4.1"):
        found = explore(load_scenario(RACE.format(release)), schedules=60, seed=1)
        assert found.outcomes and all(o.matches_relational_join for o in found.outcomes), release


def test_the_same_seed_explores_the_same_schedules_and_a_witness_replays_its_outcome():
    scenario = load_scenario(RACE.format("3.9"))
    first, again = explore(scenario, 30, seed=7), explore(scenario, 30, seed=7)
    assert first.outcomes == again.outcomes
    for outcome in first.outcomes:
        config = attrs.evolve(scenario.config, delivery="interleaved", schedule=outcome.schedule)
        replayed = run_scenario(attrs.evolve(scenario, config=config))
        assert tuple((o.partition, o.key, o.value, o.ts, o.input_index) for o in replayed.outputs) == outcome.outputs


def test_final_table_and_relational_join_follow_tombstones_and_versions():
    scenario = load_scenario(RACE.format("3.9"))
    outputs = run_scenario(scenario).outputs
    assert [v for _, v in final_table(outputs).values()] == [[{"fk": "d", "v": 2}, "rd"]]
    k1_deleted = scenario.inputs[-1]._replace(value=None, index=len(scenario.inputs))
    assert relational_join(attrs.evolve(scenario, inputs=scenario.inputs + (k1_deleted,))) == {}
    d_deleted = scenario.inputs[1]._replace(value=None, index=len(scenario.inputs))
    assert [v for _, v in relational_join(attrs.evolve(scenario, inputs=scenario.inputs + (d_deleted,))).values()] == \
        [[{"fk": "d", "v": 2}, None]]


def test_cli_explore_prints_outcomes_as_table_and_jsonl(capsys):
    assert main(["explore", RACE.format("3.9"), "--schedules", "40", "--seed", "3"]) == 0
    text = capsys.readouterr().out
    assert "DIFFERS from the relational join" in text and "witness: kssim run" in text
    assert main(["explore", RACE.format("3.9"), "--schedules", "40", "--seed", "3", "--format", "jsonl"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert all(set(r) == {"outputs", "final_table", "count", "schedule", "matches_relational_join"} for r in rows)
    assert sum(r["count"] for r in rows) == 40 and {r["matches_relational_join"] for r in rows} == {True, False}
    witness = next(r for r in rows if r["matches_relational_join"] is False)
    assert main(["run", RACE.format("3.9"), "--format", "jsonl", "--schedule", ",".join(map(str, witness["schedule"]))]) == 0
    replayed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["key"], r["value"], r["ts"]) for r in replayed] == [(o["key"], o["value"], o["ts"]) for o in witness["outputs"]]


def test_outcome_json_is_plain_json():
    found = explore(load_scenario(RACE.format("4.1")), 10, seed=0)
    json.dumps([outcome_json(o) for o in found.outcomes])
