"""Windowed aggregations and joins at the edge of the long range on the reference engine: the cases of
``tests/long_range_windows_cases.py`` (derived there from Kafka's code), with explanations, and
the release rules they pin (``window_bounds_checked``, ``sliding_late_check_by_window_end``)."""
import attrs
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


def _why(result):
    return [o.why.text for o in result.outputs], result.failure.why.text if result.failure else None


def test_the_join_explanations_name_the_wrapped_bound():
    outputs_why, failure_why = _why(run_scenario(CASES["join-inner-3.3"][0], explain=True))
    assert "wraps past Long.MAX_VALUE" in failure_why and "fromKey > toKey" in failure_why
    outputs_why, _ = _why(run_scenario(CASES["join-left-scan-3.9"][0], explain=True))
    # the early flush names the close sum that wrapped, the immediate B-null its wrapped range
    assert f"{MAX - 20} + after 10 + grace 100 wraps past Long.MAX_VALUE" in outputs_why[0]
    assert "wrapped past Long.MAX_VALUE" in outputs_why[1] and f"[{MAX - 15}, 0]" in outputs_why[1]


def test_the_sliding_and_shift_failures_are_explained():
    _, sliding = _why(run_scenario(CASES["sliding-zero-3.9"][0], explain=True))
    assert "new TimeWindow(5, 5)" in sliding and "Window endMs must be greater than window startMs" in sliding
    _, shifted = _why(run_scenario(CASES["windowed-join-shift-3.9"][0], explain=True))
    assert f"end {MAX - 17} + shift 20 wraps past Long.MAX_VALUE" in shifted


def test_a_held_record_whose_close_sum_wraps_is_released_by_the_next_scan():
    s = CASES["join-left-scan-3.9"][0]
    held = run_scenario(attrs.evolve(s, inputs=s.inputs[:1]), pending=True).pending
    assert len(held) == 1 and held[0].ts == MAX - 20
    # the window (MAX-20 + after 10 + grace 100) never closes in exact arithmetic; in Java longs
    # the sum is negative, so a record at the stream time flushes it
    assert held[0].release_at == MAX - 20 and "wraps past Long.MAX_VALUE" in held[0].release_rule
