"""The differential harness's parts on their own: divergence, shrinking, engine names, strategies."""
import pytest

from differential_tests.divergence import first_divergence
from differential_tests.engines import CaseResult, parse_engine
from differential_tests.runner import draw_cases
from differential_tests.shrink import shrink
from reference.model.errors import KafkaWouldFail, KssimError
from reference.model.profiles import profile_for
from reference.model.records import OutputRecord
from reference.model.scenario import scenario_from_dict


def rec(key, value, ts, at, partition=0):
    return OutputRecord("output", partition, key, value, ts, at)


def test_identical_runs_agree():
    a = CaseResult(outputs=(rec("k", "A", 1, 0), rec("k", "B", 2, 1)))
    assert first_divergence(a, a) is None


def test_first_divergence_is_the_smallest_input_index_over_partitions():
    a = CaseResult(outputs=(rec("k", "A", 1, 0, 0), rec("k", "B", 2, 5, 0), rec("j", "C", 3, 2, 1)))
    b = CaseResult(outputs=(rec("k", "A", 1, 0, 0), rec("k", "X", 2, 5, 0), rec("j", "C", 3, 3, 1)))
    div = first_divergence(a, b)
    assert (div.partition, div.position, div.input_index) == (1, 0, 2)


def test_missing_records_and_failures_diverge():
    a = CaseResult(outputs=(rec("k", "A", 1, 0),))
    assert first_divergence(a, CaseResult()).what == "missing in b"
    fail = CaseResult(outputs=(rec("k", "A", 1, 0),), failure=KafkaWouldFail(3, "NPE"))
    assert "failure" in first_divergence(a, fail).what


def test_different_drop_reasons_diverge():
    from reference.model.records import Drop

    a = CaseResult(drops=(Drop(2, "null_key"),))
    assert first_divergence(a, a) is None
    div = first_divergence(a, CaseResult(drops=(Drop(2, "null_value"),)))
    assert div.input_index == 2 and "null_key" in div.what and "null_value" in div.what
    assert "not dropped" in first_divergence(a, CaseResult()).what


def test_shrink_finds_the_minimal_pair_with_batched_predicate():
    # divergence iff a left "X" and a right "Y" are both present
    doc = {"config": {"order": "timestamp_sync", "store": "in_memory", "partitions": {"left": 2, "right": 2}},
           "inputs": [{"topic": t, "key": "k", "value": v, "ts": 10 + i, "partition": i % 2}
                      for i, (t, v) in enumerate([("left", "a"), ("left", "X"), ("right", "b"), ("right", "c"),
                                                  ("left", "d"), ("right", "Y"), ("left", "e")])]}
    batches = []

    def still_fails(docs):
        batches.append(len(docs))
        return [any(r["value"] == "X" for r in d["inputs"]) and any(r["value"] == "Y" for r in d["inputs"]) for d in docs]

    small = shrink(doc, still_fails)
    assert [r["value"] for r in small["inputs"]] == ["X", "Y"]
    assert small["config"] == {"order": "as_listed", "store": "rocksdb"}
    assert [r["ts"] for r in small["inputs"]] == [0, 4]
    assert "partition" not in small["inputs"][0]
    assert max(batches) > 1  # candidates were asked about in batches


@pytest.mark.parametrize("text, label", [("reference", "reference@3.9"), ("reference@3.6", "reference@3.6"), ("spark@0.10.2", "spark@0.10.2")])
def test_engine_names(text, label):
    assert parse_engine(text).label == label


@pytest.mark.parametrize("text", ["flink", "reference@4.2", "reference@x"])
def test_bad_engine_names(text):
    with pytest.raises(KssimError):
        parse_engine(text)


@pytest.mark.parametrize("operator", ["stream_stream_join", "stream_table_join", "table_table_join"])
def test_generated_cases_are_valid_in_both_releases_and_deterministic(operator):
    profiles = (profile_for("3.0"), profile_for("3.9"))
    cases = draw_cases(operator, profiles, 200, seed=5)
    assert len(cases) >= 100
    assert cases == draw_cases(operator, profiles, 200, seed=5)
    for doc in cases:
        for release in ("3.0", "3.9"):
            scenario_from_dict({**doc, "semantics": release})
    # the hard cases are there on purpose
    inputs = [r for d in cases for r in d["inputs"]]
    assert any(r["key"] is None for r in inputs) and any(r["value"] is None for r in inputs)
    assert any(d["inputs"][i]["ts"] < d["inputs"][i - 1]["ts"] for d in cases for i in range(1, len(d["inputs"])))
    assert any(d["config"].get("partitions") for d in cases)
