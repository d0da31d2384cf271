"""Windowed aggregations at the edge of the long range on the reference engine: the cases of
``tests/long_range_windows_cases.py`` (derived there from Kafka's code), with explanations, and
the release rules they pin (``window_bounds_checked``, ``sliding_late_check_by_window_end``)."""
import pytest
from long_range_windows_cases import CASES, MAX, drops, failure, outputs

from kssim.reference.model.profiles import profile_for
from kssim.reference.runtime.engine import run_scenario


@pytest.mark.parametrize("name", list(CASES))
def test_long_range_case(name):
    s, expected_outputs, expected_drops, expected_failure = CASES[name]
    result = run_scenario(s)
    assert outputs(result) == expected_outputs
    assert drops(result) == expected_drops
    assert failure(result) == expected_failure


def test_the_explanation_names_the_wrapped_bound():
    s = CASES["tumbling-3.9"][0]
    result = run_scenario(s, explain=True)
    why = result.failure.why.text
    assert str(MAX - 7) in why and "IllegalArgumentException" in why and "wraps past Long.MAX_VALUE" in why
    sliding = run_scenario(CASES["sliding-3.9"][0], explain=True)
    assert "wraps past Long.MAX_VALUE" in sliding.drops[0].why.text


def test_the_rules_arrive_in_their_releases():
    assert [profile_for(r).window_bounds_checked for r in ("0.10.0", "0.10.1", "0.10.2", "3.9")] == \
        [False, False, True, True]
    assert [profile_for(r).sliding_late_check_by_window_end for r in ("2.7", "3.2", "3.3", "3.9")] == \
        [False, False, True, True]
