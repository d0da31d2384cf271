"""CI's differential gate: a fixed-seed budget of generated cases per operator, run through the
reference engine and the Spark backend (batched into few Spark jobs); any divergence fails and
prints the shrunk case with both engines' view of it. Every case must run on both engines (a case
one engine refuses compares nothing)."""
import os

import pytest

from kssim.differential_tests.engines import parse_engine
from kssim.differential_tests.runner import difftest_operator

CASES = int(os.environ.get("KSSIM_DIFF_CASES", "150"))
SEED = 20261121


@pytest.mark.parametrize("operator", ["stream_stream_join", "stream_table_join", "table_table_join", "fk_join",
                                      "global_table_join", "session_aggregate", "window_aggregate",
                                      "sliding_aggregate", "windowed_table_join"])
def test_reference_and_spark_agree(operator):
    run = difftest_operator(operator, parse_engine("reference"), parse_engine("spark"), CASES, SEED)
    assert run.cases >= CASES * 0.9, "the strategy produced too few cases"
    assert run.compared == run.cases, f"only {run.compared} of {run.cases} cases ran on both engines: {run.rejected_because}"
    assert run.finding is None, "\n" + run.finding.report


def test_reference_releases_disagree_where_kip77_changed_null_handling():
    # the harness itself: the 0.10.0 -> 0.10.2 change must be found and shrunk to one input
    run = difftest_operator("table_table_join", parse_engine("reference@0.10.0"), parse_engine("reference@0.10.2"), 100, SEED)
    assert run.finding is not None
    assert len(run.finding.shrunk["inputs"]) == 1
    assert "kip77_join_semantics" in run.finding.report


def _finding_explained_by(run, rule):
    found = [f for f in run.findings if rule in f.explained_by]
    assert found, f"no finding explained by {rule}; findings: " + "\n".join(f.report for f in run.findings)
    return found[0]


def test_session_release_pair_finds_kafka_12718_shrunk_and_explained():
    # 3.0 closes a session gap + grace after its end (KAFKA-12718): a record 2.8 drops as late is
    # aggregated at 3.0; the harness must find it, shrink it to a record that sets stream time and
    # the late one, and name the rule
    run = difftest_operator("session_aggregate", parse_engine("reference@2.8"), parse_engine("reference@3.0"), 150, SEED)
    finding = _finding_explained_by(run, "session_close_includes_gap")
    assert len(finding.shrunk["inputs"]) <= 3
    assert finding.shrunk["topology"].get("emit", "on_update") == "on_update" and "suppress" not in finding.shrunk["topology"]


@pytest.mark.parametrize("operator", ["window_aggregate", "sliding_aggregate"])
def test_emit_final_retention_release_pair_is_found_shrunk_and_explained(operator):
    # 3.4 (KAFKA-12960) made window-store fetches hide what is older than the retention, so an
    # emit-on-window-close window a jump in stream time carries past size + grace is never
    # emitted; 3.3 emitted it. The harness must find it, shrink it to the window's record and the
    # jump, and name the rule (the lost window is an unemitted_window drop explained by it)
    run = difftest_operator(operator, parse_engine("reference@3.3"), parse_engine("reference@3.4"), 150, SEED)
    finding = _finding_explained_by(run, "window_fetch_hides_expired")
    assert len(finding.shrunk["inputs"]) <= 3
    assert finding.shrunk["topology"]["emit"] == "on_window_close" and "suppress" not in finding.shrunk["topology"]
    assert "unemitted_window" in finding.report and "KAFKA-12960" in finding.report


def test_sliding_release_pair_finds_kafka_13739():
    # 3.3 (KAFKA-13739): a sliding window whose end equals the close time is still updated
    run = difftest_operator("sliding_aggregate", parse_engine("reference@3.2"), parse_engine("reference@3.3"), 150, SEED)
    assert len(_finding_explained_by(run, "sliding_window_close_inclusive").shrunk["inputs"]) <= 2
