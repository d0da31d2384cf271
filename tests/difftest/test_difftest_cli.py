"""``kssim difftest`` on the windowed operators, reference against reference (Spark's side is the gate's)."""
import json
import os

import pytest

from kssim.tools.cli import DIFFTEST_OPERATORS, main


@pytest.mark.parametrize("operator", ["session_aggregate", "window_aggregate", "sliding_aggregate",
                                      "windowed_table_join"])
def test_the_cli_runs_every_windowed_operator(operator, capsys, tmp_path):
    assert operator in DIFFTEST_OPERATORS
    assert main(["difftest", "--a", "reference@3.9", "--b", "reference@3.9", "--operator", operator,
                 "--cases", "40", "--out", str(tmp_path)]) == 0
    assert f"{operator}: 40 cases, no divergence between reference@3.9 and reference@3.9" in capsys.readouterr().out


def test_a_session_release_pair_is_shrunk_explained_and_written_as_a_checkable_scenario(capsys, tmp_path):
    status = main(["difftest", "--a", "reference@2.8", "--b", "reference@3.0", "--operator", "session_aggregate",
                   "--cases", "100", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert status == 1 and "explained by: session_close_includes_gap" in out
    written, = tmp_path.iterdir()
    doc = json.loads(written.read_text())
    assert doc["semantics"] == "2.8" and len(doc["inputs"]) <= 3
    # the file expects engine A's (2.8's) outputs: it passes there and fails at 3.0
    assert main(["check", str(written)]) == 0
    doc["semantics"] = "3.0"
    at_3_0 = tmp_path / "at-3.0.json"
    at_3_0.write_text(json.dumps(doc))
    assert main(["check", str(at_3_0)]) == 1


def test_an_operator_the_release_lacks_is_bad_input(capsys, tmp_path):
    assert main(["difftest", "--a", "reference@2.6", "--b", "reference@2.7", "--operator", "sliding_aggregate",
                 "--cases", "10", "--out", str(tmp_path)]) == 2
    assert "sliding_aggregate does not exist in Kafka 2.6" in capsys.readouterr().err


@pytest.mark.parametrize("option, value", [("--cases", "-5"), ("--cases", "0"), ("--findings", "0")])
def test_a_count_that_cannot_be_meant_is_bad_input_not_a_traceback(capsys, tmp_path, option, value):
    args = ["difftest", "--a", "reference@3.8", "--b", "reference@3.9", "--operator", "stream_table_join",
            "--out", str(tmp_path), "--cases", "5", option, value]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"kssim: {option} must be at least 1, got {value}" in err and "Traceback" not in err
    assert os.listdir(tmp_path) == []


def test_a_release_pair_no_scenario_fits_is_bad_input(capsys, tmp_path):
    # a window's grace: before 2.1 only the legacy builders' default, from 4.0 only an explicit one
    assert main(["difftest", "--a", "reference@2.0", "--b", "reference@4.0", "--operator", "window_aggregate",
                 "--cases", "10", "--out", str(tmp_path)]) == 2
    assert "no window_aggregate scenario is valid in both Kafka 2.0 and 4.0" in capsys.readouterr().err


@pytest.mark.parametrize("a, b, note", [
    # Kafka changed nothing on the emit-final path from 3.7.0 to 3.8.0: the retention losses came
    # with 3.4 (KAFKA-12960, window_fetch_hides_expired); a clean run names what did change
    ("3.7", "3.8", "rules that change between 3.7 and 3.8 (kssim rules 3.7 3.8): outer_scan_early_exit_before_bound"),
    ("3.8", "3.9", "kssim models no rule change between 3.8 and 3.9"),
])
def test_no_divergence_between_releases_says_which_rules_change(a, b, note, capsys, tmp_path):
    assert main(["difftest", "--a", f"reference@{a}", "--b", f"reference@{b}", "--operator", "window_aggregate",
                 "--cases", "20", "--out", str(tmp_path)]) == 0
    assert note in capsys.readouterr().out
