"""The kssim command line, as a user runs it."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from kssim.reference.model.scenario import find_scenario_files
from kssim.tools.cli import main

from kssim_testing import CONFORMANCE, ROOT

SEEDS = os.path.join(CONFORMANCE, "seeds")
LEFT_31 = os.path.join(SEEDS, "seed-stream-stream-left-3.1.json")
TT_OUTER = os.path.join(SEEDS, "seed-table-table-outer-0.10.2.json")


def run_cli(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_run_jsonl_has_exactly_the_contract_fields(capsys):
    code, out, _ = run_cli(capsys, "run", LEFT_31, "--format", "jsonl")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(rows) == 18
    assert all(list(r) == ["topic", "partition", "key", "value", "ts", "input"] for r in rows)
    assert rows[0] == {"topic": "output", "partition": 0, "key": "k", "value": ["A", "a"], "ts": 4, "input": 3}
    # E-null is emitted while f (input 17) is processed, F-null while G (input 18) is
    assert rows[-2:] == [{"topic": "output", "partition": 0, "key": "k", "value": ["E", None], "ts": 40, "input": 17},
                         {"topic": "output", "partition": 0, "key": "k", "value": ["F", None], "ts": 60, "input": 18}]


def test_run_jsonl_names_scenario_when_several_files(capsys):
    code, out, _ = run_cli(capsys, "run", LEFT_31, TT_OUTER, "--format", "jsonl")
    names = {json.loads(line)["scenario"] for line in out.splitlines()}
    assert code == 0 and names == {"seed-stream-stream-left-3.1", "seed-table-table-outer-0.10.2"}


def test_run_table_format(capsys):
    code, out, _ = run_cli(capsys, "run", LEFT_31)
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["topic", "partition", "key", "value", "ts", "input"]
    assert len(lines) == 2 + 18


def test_explain_says_why_e_null_appears_while_f_is_processed(capsys):
    code, out, _ = run_cli(capsys, "run", LEFT_31, "--explain")
    line = next(l for l in out.splitlines() if l.startswith("#16 "))
    assert code == 0
    assert line.startswith('#16 k:["E",null]@40 while processing input 17 (right k:f@80): unjoined left E@40')
    assert "stream time 80 > 40 + before 15 + grace 5" in line
    # F-null waits for G: at f@80 it was still open (60 + 15 + 5 = 80, not < 80)
    line = next(l for l in out.splitlines() if l.startswith("#17 "))
    assert "input 18" in line and "stream time 100 > 60 + after 15 + grace 5" in line
    # drops are explained too
    assert "input 0 (left k:null@1): null_value" in out


def test_drops_lists_every_null_value_record(capsys):
    code, out, _ = run_cli(capsys, "run", LEFT_31, "--drops")
    drop_lines = [l for l in out.splitlines() if l.startswith("  input ")]
    # inputs 0, 1, 6, 7, 10, 11, 12 carry null values (KIP-77 drops them)
    assert code == 0 and [int(l.split()[1]) for l in drop_lines] == [0, 1, 6, 7, 10, 11, 12]
    assert all("null_value" in l for l in drop_lines)


def test_check_passes_and_summarises(capsys):
    code, out, _ = run_cli(capsys, "check", SEEDS, "-q")
    assert code == 0 and "0 failed" in out.splitlines()[-1]


def test_check_fails_with_first_difference_and_exit_1(capsys, tmp_path):
    doc = json.load(open(LEFT_31))
    doc["expected"][16]["ts"] = 41
    path = tmp_path / "wrong.json"
    path.write_text(json.dumps(doc))
    code, out, _ = run_cli(capsys, "check", str(path))
    assert code == 1
    assert "record #16" in out and "ts=41" in out and "input 17" in out


def test_invalid_file_exits_2_naming_file_record_and_field(capsys, tmp_path):
    doc = json.load(open(LEFT_31))
    doc["inputs"][4]["ts"] = "five"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    code, _, err = run_cli(capsys, "run", str(path))
    assert code == 2 and f"{path}: inputs[4].ts: must be an integer" in err
    code, out, _ = run_cli(capsys, "check", str(path))
    assert code == 2 and "INVALID" in out and "inputs[4].ts" in out


def test_missing_file_exits_2(capsys):
    code, _, err = run_cli(capsys, "run", "no/such/file.json")
    assert code == 2 and "no such file" in err


def test_console_script_is_installed():
    out = subprocess.run([sys.executable, "-m", "kssim.tools.cli", "check", LEFT_31, "-q"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0 and "1 passed" in out.stdout


def test_version_comes_from_the_package_metadata(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.strip() == f"kssim {version('kssim')}"


def test_run_jsonl_lines_are_compact(capsys):
    code, out, _ = run_cli(capsys, "run", LEFT_31, "--format", "jsonl", "--drops")
    assert code == 0 and out.splitlines()[0] == '{"topic":"output","partition":0,"key":"k","value":["A","a"],"ts":4,"input":3}'
    assert '{"drop":"null_value","input":0,"why":null}' in out.splitlines()


def _folder_with_one_invalid_file(tmp_path):
    (tmp_path / "a-good.json").write_text(open(LEFT_31).read())
    (tmp_path / "b-bad.json").write_text('{"format": "kssim-scenario/1", "name": "x", "name": "y"}')
    (tmp_path / "c-good.json").write_text(open(TT_OUTER).read())
    return tmp_path


def test_check_goes_on_after_an_invalid_file_and_exits_2(capsys, tmp_path):
    folder = _folder_with_one_invalid_file(tmp_path)
    code, out, _ = run_cli(capsys, "check", str(folder), str(tmp_path / "missing"))
    lines = out.splitlines()
    assert code == 2
    assert f"INVALID {folder / 'b-bad.json'}: document: duplicate key 'name'" in out
    assert f"INVALID {tmp_path / 'missing'}: no such file or folder" in out
    assert sum(l.startswith("PASS ") for l in lines) == 2
    assert lines[-1].startswith("2 passed, 0 failed, 2 invalid in ")


def test_check_reports_a_scenario_the_engine_cannot_run_and_goes_on(capsys, tmp_path, monkeypatch):
    import kssim.reference.runtime.engine as reference_runner
    from kssim.reference.model.errors import KssimError

    real = reference_runner.run_scenario

    def breaks_on_the_outer_join(scenario, explain=False):
        if scenario.name == "seed-table-table-outer-0.10.2":
            raise KssimError("a problem found while running")
        if scenario.name == "seed-stream-stream-left-3.1":
            raise RecursionError("maximum recursion depth exceeded")
        return real(scenario, explain=explain)

    monkeypatch.setattr(reference_runner, "run_scenario", breaks_on_the_outer_join)
    code, out, _ = run_cli(capsys, "check", SEEDS, "-q")
    assert code == 2
    assert "seed-table-table-outer-0.10.2.json: engine reference could not run it: a problem found while running" in out
    assert "seed-stream-stream-left-3.1.json: engine reference could not run it: RecursionError" in out
    passed = len(find_scenario_files([SEEDS])) - 2
    assert out.splitlines()[-1].startswith(f"{passed} passed, 0 failed, 2 invalid")


def test_check_pins_a_failed_batch_on_its_scenario(capsys, tmp_path, monkeypatch):
    """A batch engine (Spark runs a folder as one job) that fails as a whole: each scenario is run
    alone, so the others still get their verdict."""
    import kssim.tools.cli as cli

    real = cli.run_scenarios

    def batch_dies_on_the_outer_join(engine, scenarios, master=None, catch=None):
        if any(s.name == "seed-table-table-outer-0.10.2" for s in scenarios):
            raise RuntimeError("Py4JJavaError: job aborted")
        return real(engine, scenarios, master=master, catch=catch)

    monkeypatch.setattr(cli, "run_scenarios", batch_dies_on_the_outer_join)
    code, out, _ = run_cli(capsys, "check", LEFT_31, TT_OUTER)
    assert code == 2 and "PASS seed-stream-stream-left-3.1" in out
    assert f"INVALID {TT_OUTER}: engine reference could not run it: RuntimeError: Py4JJavaError" in out
    assert out.splitlines()[-1].startswith("1 passed, 0 failed, 1 invalid")


def test_check_skip_makes_the_exit_code_1_unless_allowed(capsys, monkeypatch):
    import kssim.reference.runtime.engine as reference_runner
    from kssim.reference.model.errors import UnsupportedOperator

    real = reference_runner.run_scenario

    def lacks_table_joins(scenario, explain=False):
        if scenario.topology.operator == "table_table_join":
            raise UnsupportedOperator("this engine does not implement operator 'table_table_join'")
        return real(scenario, explain=explain)

    monkeypatch.setattr(reference_runner, "run_scenario", lacks_table_joins)
    code, out, err = run_cli(capsys, "check", LEFT_31, TT_OUTER, "-q")
    assert code == 1 and f"SKIP seed-table-table-outer-0.10.2 ({TT_OUTER}): this engine" in out
    assert out.splitlines()[-1].startswith("1 passed, 0 failed, 0 invalid, 1 skipped")
    assert "--allow-skip" in err
    code, out, _ = run_cli(capsys, "check", LEFT_31, TT_OUTER, "-q", "--allow-skip")
    assert code == 0 and "1 skipped" in out.splitlines()[-1]


def test_patch_releases_run_and_unknown_ones_exit_2(capsys, tmp_path):
    doc = json.load(open(LEFT_31))
    for release, code_expected in (("3.1.1", 0), ("3.1.2", 0), ("3.1.9", 2), ("0.10.2.1", 2)):
        doc["semantics"] = release
        path = tmp_path / f"s-{release}.json"
        path.write_text(json.dumps(doc))
        code, out, err = run_cli(capsys, "run", str(path), "--format", "jsonl")
        assert code == code_expected, (release, err)
    assert "3.1.0, 3.1.1, 3.1.2" in run_cli(capsys, "run", str(tmp_path / "s-3.1.9.json"))[2]


def test_kafka_13721_separates_3_1_0_from_3_1_1(capsys, tmp_path):
    """3.1.1 (KAFKA-13721) exits the outer-join emission scan by the before bound: with before 100,
    after 0, B@50 no longer flushes A@0 as A-null, which 3.1.0 (and 3.1 written short) does."""
    doc = {"format": "kssim-scenario/1", "name": "k13721",
           "topology": {"operator": "stream_stream_join", "join": "left", "window_api": "time_difference",
                        "window": {"before_ms": 100, "after_ms": 0, "grace_ms": 0}},
           "inputs": [{"topic": "left", "key": "a", "value": "A", "ts": 0},
                      {"topic": "left", "key": "b", "value": "B", "ts": 50}]}
    outputs = {}
    for release in ("3.1", "3.1.0", "3.1.1", "3.1.2", "3.2"):
        path = tmp_path / f"{release}.json"
        path.write_text(json.dumps({**doc, "semantics": release}))
        code, out, _ = run_cli(capsys, "run", str(path), "--format", "jsonl")
        assert code == 0
        outputs[release] = [json.loads(line) for line in out.splitlines()]
    a_null = {"topic": "output", "partition": 0, "key": "a", "value": ["A", None], "ts": 0, "input": 1}
    assert outputs["3.1"] == outputs["3.1.0"] == [a_null]
    assert outputs["3.1.1"] == outputs["3.1.2"] == outputs["3.2"] == []
    code, out, _ = run_cli(capsys, "rules", "3.1.0", "3.1.1")
    assert code == 0 and "gained outer_scan_early_exit_before_bound (KAFKA-13721)" in out


def test_check_of_a_folder_without_scenarios_fails_the_gate(capsys, tmp_path):
    (tmp_path / "notes.txt").write_text("no scenario here")
    code, out, err = run_cli(capsys, "check", str(tmp_path))
    assert code == 2 and "no scenario files" in err and str(tmp_path) in err


def test_rules_of_one_release_lists_what_is_in_force_there(capsys):
    from kssim.reference.model.profiles import profile_for

    code, out, _ = run_cli(capsys, "rules", "3.6")
    names = [line.split()[0] for line in out.splitlines()[1:]]
    assert code == 0 and names == [r.name for r in profile_for("3.6").active_rules()]
    assert "null_key_outer_emit" not in names and "versioned_tables" in names  # KIP-962 came in 3.7


def test_errors_carry_one_kssim_prefix(capsys):
    code, _, err = run_cli(capsys, "rules", "3.6", "3.7", "3.8")
    assert code == 2 and err.startswith("kssim: ") and "kssim: kssim" not in err


def test_run_and_check_take_a_release(capsys):
    # KIP-904: at 3.5 an update that keeps its group is one record; at 3.4 the 3.5 file's expectation fails
    recipe = os.path.join(ROOT, "scenarios", "cookbook", "11-table-group-by-update-3.5.yaml")
    assert run_cli(capsys, "check", recipe, "-q")[0] == 0
    code, out, _ = run_cli(capsys, "check", recipe, "--release", "3.4", "-q")
    assert code == 1 and "[Kafka 3.4, graph]" in out
    plain = run_cli(capsys, "run", recipe, "--format", "jsonl")[1].splitlines()
    older = run_cli(capsys, "run", recipe, "--release", "3.4", "--format", "jsonl")[1].splitlines()
    assert len(older) == len(plain) + 1


def test_explore_bounds_its_schedules_and_says_what_it_does(capsys):
    code, _, err = run_cli(capsys, "explore", LEFT_31, "--schedules", str(10 ** 20))
    assert code == 2 and "--schedules must be between 1 and" in err
    with pytest.raises(SystemExit):
        main(["explore", "--help"])
    assert "interleavings" in capsys.readouterr().out


def test_check_reports_as_json_and_junit_xml_for_ci(capsys, tmp_path):
    import xml.etree.ElementTree as ET

    shutil.copy(LEFT_31, tmp_path / "good.json")
    broken = json.loads(open(LEFT_31, encoding="utf-8").read())
    broken["expected"][0]["ts"] += 1
    (tmp_path / "broken.json").write_text(json.dumps(broken))
    (tmp_path / "bad.json").write_text('{"format": "kssim-scenario/1"}')
    report = tmp_path / "report.xml"
    code, out, _ = run_cli(capsys, "check", str(tmp_path), "--format", "json", "--junit-xml", str(report))
    doc = json.loads(out)
    assert code == 1 and (doc["passed"], doc["failed"], doc["invalid"], doc["skipped"]) == (1, 1, 1, 0)
    by_file = {os.path.basename(e["path"]): e for e in doc["scenarios"]}
    assert by_file["good.json"]["status"] == "pass" and by_file["bad.json"]["status"] == "invalid"
    assert by_file["broken.json"]["status"] == "fail" and "record #0" in by_file["broken.json"]["detail"]
    suite = ET.parse(report).getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "1", "1")
    cases = {os.path.basename(c.get("file")): c for c in suite.iter("testcase")}
    assert cases["broken.json"].find("failure") is not None and cases["bad.json"].find("error") is not None
    assert cases["good.json"].find("failure") is None


def test_junit_xml_needs_an_xml_file_in_an_existing_folder(capsys, tmp_path):
    for target in (tmp_path / "report.json", tmp_path / "missing" / "report.xml"):
        code, _, err = run_cli(capsys, "check", LEFT_31, "--junit-xml", str(target))
        assert code == 2 and "--junit-xml" in err


def test_an_empty_schedule_is_refused(capsys):
    code, _, err = run_cli(capsys, "run", LEFT_31, "--schedule", " , ")
    assert code == 2 and "at least one queue choice" in err


def test_a_schedule_choice_naming_no_queue_names_the_file_and_the_step_on_both_engines(capsys, tmp_path):
    # at step 1 only the input queue is non-empty (the first input, a right-table row, wrote to no
    # internal topic): choice 5 names no queue; which queues are non-empty is only known by
    # following the schedule, which the loader does, so every command and engine says it alike
    source = os.path.join(ROOT, "scenarios", "features", "fk-inner-stale-hash-response-dropped-3.9.yaml")
    with open(source, encoding="utf-8") as f:
        text = f.read()
    assert '"schedule": [0, 0, 0]' in text
    bad = tmp_path / "bad-schedule.yaml"
    bad.write_text(text.replace('"schedule": [0, 0, 0]', '"schedule": [0, 5, 0]'), encoding="utf-8")
    where = f"{bad}: config.schedule[1]: choice 5 names no queue"
    for engine in ("reference", "spark"):
        code, out, err = run_cli(capsys, "check", str(bad), "--engine", engine)
        assert code == 2 and f"INVALID {where}" in out, (engine, out, err)
        code, _, err = run_cli(capsys, "run", str(bad), "--engine", engine)
        assert code == 2 and err.startswith(f"kssim: invalid input: {where}"), (engine, err)
    # the same choice given on the command line is named as the option
    code, _, err = run_cli(capsys, "run", source, "--schedule", "0,7")
    assert code == 2 and f"{source}: --schedule[1]: choice 7 names no queue" in err
