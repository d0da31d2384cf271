"""The kssim command line, as a user runs it."""
import json
import os
import subprocess
import sys

import pytest

from tools.cli import main

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
    out = subprocess.run([sys.executable, "-m", "tools.cli", "check", LEFT_31, "-q"], capture_output=True, text=True, cwd=ROOT)
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
