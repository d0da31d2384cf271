"""``kssim run --pending``: what a run still holds at its end (issue 20, "why didn't it come out?"),
on the cookbook's outer join that never emits and suppress that never fires: the held record or
window, its task, and the stream time that would release it."""
import json
import os

import yaml

from kssim.tools.cli import main

from kssim_testing import ROOT

COOKBOOK = os.path.join(ROOT, "scenarios", "cookbook")
OUTER_ONE = os.path.join(COOKBOOK, "02-outer-join-never-emits-one-partition-3.9.yaml")
OUTER_TWO = os.path.join(COOKBOOK, "02-outer-join-never-emits-two-partitions-3.9.yaml")
SUPPRESS = os.path.join(COOKBOOK, "08-suppress-never-fires-3.9.yaml")
SUPPRESS_IDLE = os.path.join(COOKBOOK, "08-suppress-idle-partition-3.9.yaml")
REKEYED_MISS = os.path.join(COOKBOOK, "12-rekeyed-join-miss-3.9.yaml")
NO_STATE = os.path.join(COOKBOOK, "04-table-update-no-trigger-3.9.yaml")
LOST_WINDOWS = os.path.join(ROOT, "scenarios", "features", "window-emit-final-hopping-windows-lost-3.9.json")


def run_cli(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def held_lines(out: str):
    return [line.strip() for line in out.splitlines() if line.startswith("  task ")]


def test_outer_join_names_the_held_record_its_task_and_release_time(capsys):
    code, out, _ = run_cli(capsys, "run", "--pending", OUTER_ONE)
    assert code == 0
    assert "held in state at the end (1)" in out
    assert held_lines(out) == [
        "task 0: unmatched join record held in the outer-join store: right k4:d@100 (input 4): released when the "
        "join's stream time reaches 111 (stream time > 100 + before 10 + grace 0); it is 100 now"]


def test_outer_join_two_partitions_holds_A_in_its_quiet_task(capsys):
    code, out, _ = run_cli(capsys, "run", "--pending", OUTER_TWO)
    lines = held_lines(out)
    assert code == 0 and len(lines) == 2
    assert lines[0].startswith("task 0: unmatched join record held in the outer-join store: left k1:A@1 (input 0)")
    assert "stream time reaches 12" in lines[0] and lines[0].endswith("it is 1 now")
    assert lines[1].startswith("task 1: ") and "right k4:d@100" in lines[1]


def test_suppress_names_the_held_window_its_task_and_close_time(capsys):
    code, out, _ = run_cli(capsys, "run", "--pending", SUPPRESS)
    assert code == 0
    assert held_lines(out) == [
        "task 0: result held in the suppress buffer: window [10,20) of tick (input 3): released when the suppress "
        "processor's stream time reaches 20 (window end 20 + close delay 0 (the window's grace)); it is 10 now"]


def test_suppress_that_never_fires_before_the_tick(capsys, tmp_path):
    # the question of recipe 08: without the tick, both windows [0,10) stay buffered
    doc = yaml.safe_load(open(SUPPRESS))
    doc["inputs"] = doc["inputs"][:3]
    del doc["expected"], doc["checkpoints"]
    path = tmp_path / "no-tick.yaml"
    path.write_text(yaml.safe_dump(doc))
    code, out, _ = run_cli(capsys, "run", "--pending", str(path))
    lines = held_lines(out)
    assert code == 0 and len(lines) == 2
    assert lines[0].startswith("task 0: result held in the suppress buffer: window [0,10) of k (input 1)")
    assert lines[1].startswith("task 0: result held in the suppress buffer: window [0,10) of k2 (input 2)")
    assert all("stream time reaches 10" in line and line.endswith("it is 9 now") for line in lines)


def test_suppress_idle_partition_holds_k_in_task_1(capsys):
    code, out, _ = run_cli(capsys, "run", "--pending", SUPPRESS_IDLE)
    lines = held_lines(out)
    assert code == 0
    assert any(line.startswith("task 1: result held in the suppress buffer: window [0,10) of k (input 1)")
               and "reaches 10" in line and line.endswith("it is 5 now") for line in lines)


def test_pending_jsonl(capsys):
    code, out, _ = run_cli(capsys, "run", "--pending", "--format", "jsonl", OUTER_ONE)
    rows = [json.loads(line) for line in out.splitlines()]
    held = [r for r in rows if "pending" in r]
    assert code == 0 and len(held) == 1
    assert held[0] == {"pending": "outer_join_record", "task": 0, "what": "right k4:d@100", "key": "k4", "value": "d",
                       "ts": 100, "release_at": 111, "release_rule": "stream time > 100 + before 10 + grace 0",
                       "stream_time": 100, "clock": "the join's", "input": 4}


def test_nothing_held_says_so(capsys):
    code, out, _ = run_cli(capsys, "run", "--pending", NO_STATE)
    assert code == 0 and "held in state at the end: nothing held" in out


def test_explain_ends_with_the_held_items(capsys):
    code, out, _ = run_cli(capsys, "run", "--explain", OUTER_ONE)
    assert code == 0
    assert out.rstrip().splitlines()[-1].startswith("  task 0: unmatched join record held in the outer-join store")


def test_spark_engine_refuses_pending(capsys):
    code, out, err = run_cli(capsys, "run", "--engine", "spark", "--pending", OUTER_ONE)
    assert code == 2 and out == ""
    assert "--pending" in err and "reference engine" in err


def test_inner_join_miss_is_reported_at_its_input(capsys):
    code, out, _ = run_cli(capsys, "run", "--explain", REKEYED_MISS)
    assert code == 0
    miss = [line for line in out.splitlines() if line.startswith("  input 0 ")]
    assert len(miss) == 1 and "no_match at graph[3] join" in miss[0] and "found no table row for c1" in miss[0]
    code, out, _ = run_cli(capsys, "run", "--drops", REKEYED_MISS)
    assert "  input 0 (orders o1:{\"customer\":\"c1\",\"amount\":10}@1): no_match at graph[3] join" in out


def test_lost_windows_are_listed_as_windows_not_inputs(capsys):
    code, out, _ = run_cli(capsys, "run", "--drops", LOST_WINDOWS)
    assert code == 0
    assert "dropped or ignored inputs (0):" in out
    assert "lost windows (5):" in out
    assert "  lost window [0,10) of k: the close check of input 3 (input k:D@25) found it expired" in out
    code, out, _ = run_cli(capsys, "run", "--drops", "--format", "jsonl", LOST_WINDOWS)
    rows = [json.loads(line) for line in out.splitlines() if "drop" in line]
    assert rows[0]["lost_window"] == {"key": "k", "start": 0, "end": 10}
