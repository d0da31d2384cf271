"""Comparison of outputs with expectations: every compare mode, checkpoints and timing."""
import pytest

from kssim.reference.model.compare import compare_outputs
from kssim.reference.model.records import NO_OLD_VALUE, OutputRecord
from kssim.reference.model.scenario import scenario_from_dict


def scenario(expected, compare="exact", checkpoints=None, n_inputs=6):
    doc = {
        "format": "kssim-scenario/1", "name": "t",
        "topology": {"operator": "table_table_join", "join": "inner"},
        "inputs": [{"topic": "left", "key": "k", "value": i, "ts": i} for i in range(n_inputs)],
        "expected": expected, "compare": compare,
    }
    if checkpoints is not None:
        doc["checkpoints"] = checkpoints
    return scenario_from_dict(doc)


def out(key, value, ts, at, partition=0, old=NO_OLD_VALUE):
    return OutputRecord("output", partition, key, value, ts, at, old)


def exp(key, value, ts, after=None, **kw):
    rec = {"topic": "output", "key": key, "value": value, "ts": ts, **kw}
    if after is not None:
        rec["after_input"] = after
    return rec


def test_exact_match_passes():
    s = scenario([exp("a", 1, 1, 1), exp("b", 2, 2, 3)])
    assert compare_outputs(s, [out("a", 1, 1, 1), out("b", 2, 2, 2)]) is None


def test_exact_reports_first_difference_with_input():
    s = scenario([exp("a", 1, 1, 1), exp("b", 2, 2, 3)])
    m = compare_outputs(s, [out("a", 1, 1, 1), out("b", 3, 2, 2)])
    assert m.position == 1 and m.input_index == 2 and "expected key=b value=2" in m.message


def test_missing_and_extra_records():
    s = scenario([exp("a", 1, 1)])
    assert "missing" in compare_outputs(s, []).message
    assert "extra" in compare_outputs(s, [out("a", 1, 1, 0), out("a", 1, 1, 0)]).message


def test_record_emitted_too_late_or_too_early_fails():
    s = scenario([exp("a", 1, 1, 2)], checkpoints=[0, 2, 4])
    assert compare_outputs(s, [out("a", 1, 1, 1)]) is None      # within (0, 2]
    assert compare_outputs(s, [out("a", 1, 1, 2)]) is None      # at the checkpoint itself
    assert "no later than input 2" in compare_outputs(s, [out("a", 1, 1, 3)]).message
    assert "after input 0" in compare_outputs(s, [out("a", 1, 1, 0)]).message


def test_records_after_last_checkpoint_are_not_compared():
    s = scenario([exp("a", 1, 1, 2)], checkpoints=[2])
    assert compare_outputs(s, [out("a", 1, 1, 2), out("z", 9, 9, 3)]) is None


def test_values_compare_as_json():
    s = scenario([exp("a", 1, 1)])
    assert compare_outputs(s, [out("a", True, 1, 0)]) is not None
    assert compare_outputs(s, [out("a", "1", 1, 0)]) is not None
    assert compare_outputs(scenario([exp("a", ["A", None], 1)]), [out("a", ["A", None], 1, 0)]) is None


def test_old_value_compared_only_where_expected():
    s = scenario([exp("a", 1, 1, old_value=None), exp("b", 2, 2)])
    assert compare_outputs(s, [out("a", 1, 1, 0, old=None), out("b", 2, 2, 0, old=7)]) is None
    assert compare_outputs(s, [out("a", 1, 1, 0, old=5), out("b", 2, 2, 0)]) is not None
    assert compare_outputs(s, [out("a", 1, 1, 0), out("b", 2, 2, 0)]) is not None


def test_partitions_compared_separately():
    s = scenario([exp("a", 1, 1), exp("b", 2, 2)])
    doc_two = [out("b", 2, 2, 0), out("a", 1, 1, 1)]
    assert compare_outputs(s, doc_two) is not None  # order matters within one partition


def test_distinct_set_ignores_order_and_duplicates():
    s = scenario([exp("a", 1, 1), exp("b", 2, 2)], compare="distinct_set")
    assert compare_outputs(s, [out("b", 2, 2, 3), out("a", 1, 1, 0), out("a", 1, 1, 4)]) is None
    assert "1 missing" in compare_outputs(s, [out("a", 1, 1, 0)]).message


def test_latest_value_per_key_per_checkpoint_group():
    s = scenario([exp("a", 2, 5, 1), exp("a", None, 7, 3)], compare="latest_value_per_key", checkpoints=[1, 3])
    assert compare_outputs(s, [out("a", 1, 1, 0), out("a", 2, 9, 1), out("a", None, 7, 2)]) is None
    # the null in the second group must be there as a null entry
    assert compare_outputs(s, [out("a", 2, 5, 0)]) is not None
    # a value arriving in the wrong group fails
    assert compare_outputs(s, [out("a", 2, 5, 0), out("a", 3, 5, 1), out("a", None, 7, 2)]) is not None


def test_sorted_by_key_and_window_start():
    def wk(k, start):
        return {"key": k, "start": start, "end": start + 10}
    s = scenario([exp(wk("a", 0), 1, 1), exp(wk("a", 10), 2, 2), exp(wk("b", 0), 3, 3)], compare="sorted_by_key_and_window_start")
    assert compare_outputs(s, [out(wk("b", 0), 3, 3, 0), out(wk("a", 10), 2, 2, 1), out(wk("a", 0), 1, 1, 2)]) is None
    assert compare_outputs(s, [out(wk("b", 0), 3, 3, 0), out(wk("a", 10), 1, 2, 1), out(wk("a", 0), 2, 1, 2)]) is not None


def test_no_expected_always_passes():
    doc = scenario([]).__class__
    s = scenario_from_dict({"format": "kssim-scenario/1", "name": "t", "topology": {"operator": "table_table_join", "join": "inner"}, "inputs": []})
    assert compare_outputs(s, [out("a", 1, 1, 0)]) is None


def test_judge_passes_fails_and_skips():
    from kssim.reference.model.compare import Judgement, Status, judge
    from kssim.reference.model.errors import KafkaWouldFail, UnsupportedOperator
    from kssim.reference.model.records import RunResult

    s = scenario([exp("a", 1, 1, 1)])
    assert judge(s, RunResult(outputs=(out("a", 1, 1, 1),), drops=())) == Judgement(Status.PASS, "")
    verdict = judge(s, RunResult(outputs=(out("a", 2, 1, 1),), drops=()))
    assert verdict.status is Status.FAIL and "expected key=a value=1" in verdict.detail
    assert "at input 1 (left k:1@1)" in verdict.detail  # the input whose processing emitted it
    from kssim.reference.model.codes import FailureCode

    failure = KafkaWouldFail(3, next(iter(FailureCode)))
    verdict = judge(s, RunResult(outputs=(out("a", 1, 1, 1),), drops=(), failure=failure))
    assert verdict.status is Status.FAIL and "input 3" in verdict.detail
    assert judge(s, UnsupportedOperator("no fk_join")) == Judgement(Status.UNSUPPORTED, "no fk_join")
    assert judge(s, ValueError("bad")) == Judgement(Status.FAIL, "ValueError: bad")
