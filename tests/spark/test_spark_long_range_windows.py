"""Windowed aggregations and joins at the edge of the long range on Spark: every case of
``tests/long_range_windows_cases.py`` (outputs, drops and failure derived there from Kafka's code)
in one batched job, byte-identical to the reference engine."""
from __future__ import annotations

import pytest
from kssim_testing import result_bytes, run_on
from long_range_windows_cases import CASES, drops, failure, outputs


@pytest.fixture(scope="module")
def results(spark):  # noqa: F811
    from kssim.spark_backend.runtime.runner import run_scenarios

    names = list(CASES)
    return dict(zip(names, run_scenarios([CASES[n][0] for n in names], spark)))


@pytest.mark.parametrize("name", list(CASES))
def test_long_range_case(results, name):
    _, expected_outputs, expected_drops, expected_failure = CASES[name]
    result = results[name]
    assert not isinstance(result, Exception), result
    assert outputs(result) == expected_outputs
    assert drops(result) == expected_drops
    assert failure(result) == expected_failure


def test_same_bytes_as_the_reference(results):
    names = list(CASES)
    reference = run_on("reference", [CASES[n][0] for n in names])
    assert [result_bytes(results[n]) for n in names] == [result_bytes(r) for r in reference]
