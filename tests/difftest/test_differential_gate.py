"""CI's differential gate: a fixed-seed budget of generated cases per operator, run through the
reference engine and the Spark backend (batched into few Spark jobs); any divergence fails and
prints the shrunk case with both engines' view of it. Every case must run on both engines (a case
one engine refuses compares nothing)."""
import os

import pytest

from differential_tests.engines import parse_engine
from differential_tests.runner import difftest_operator

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
