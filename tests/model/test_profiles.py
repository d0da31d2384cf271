"""Semantics profiles: releases, rule boundaries, errors."""
import pytest

from kssim.reference.model.errors import KssimError
from kssim.reference.model.profiles import RELEASE_LINES, RULES, profile_for, rule_changes


@pytest.mark.parametrize("rule, last_without, first_with", [
    ("kip77_join_semantics", "0.10.1", "0.10.2"),
    ("join_window_grace", "2.0", "2.1"),
    ("output_ts_max", "2.2", "2.3"),
    ("time_difference_windows", "3.0", "3.1"),
    ("window_fetch_hides_expired", "3.3", "3.4"),
    ("stream_time_tracker_per_task", "3.4.0", "3.4.1"),
    ("versioned_tables", "3.4", "3.5"),
    ("stream_table_grace", "3.5", "3.6"),
    ("null_key_outer_emit", "3.6", "3.7"),
    ("outer_scan_per_side_lookback", "3.7", "3.8"),
    ("partition_choice_raw_head", "2.3", "2.4"),
])
def test_rule_arrives_in_its_release(rule, last_without, first_with):
    assert getattr(profile_for(last_without), rule) is False
    assert getattr(profile_for(first_with), rule) is True
    assert getattr(profile_for("3.9"), rule) is True


def test_rules_that_came_and_went():
    assert [profile_for(r).ktable_emit_on_change for r in ("2.5", "2.6", "2.6.1", "2.6.2", "2.7", "2.7.1", "2.8")] == \
        [False, True, True, False, True, False, False]
    # KAFKA-13721 was backported to 3.1.1
    assert [profile_for(r).outer_scan_early_exit_before_bound for r in ("3.1", "3.1.1", "3.2", "3.7", "3.8")] == [False, True, True, True, False]
    assert [profile_for(r).partition_choice_max_head for r in ("2.0", "2.1", "2.3", "2.4")] == [False, True, True, False]


def test_release_between_modelled_ones_takes_the_older_rules():
    assert profile_for("3.3") == profile_for("3.3.2")
    # 3.2 and 3.3 differ only in FK response routing (KAFKA-13769), emit-final (KIP-825) and the
    # windowed aggregations that came with it: the classic joins behave alike
    changed = {r.name for r in rule_changes(profile_for("3.2"), profile_for("3.3"))}
    assert {"emit_on_window_close", "fk_response_to_primary_partition", "sliding_window_close_inclusive"} <= changed
    assert not any("join" in name and "fk" not in name for name in changed)
    assert [r.name for r in rule_changes(profile_for("4.1"), profile_for("4.3.0"))] == []


def test_default_is_the_newest_modelled_release():
    assert profile_for(None).release == RELEASE_LINES[-1] == "4.3"


def test_4x_changes_only_fk_and_global_table_joins_and_the_window_builders():
    changed = {r.name for r in rule_changes(profile_for("3.9"), profile_for("4.3"))}
    assert changed == {"fk_extractor_with_key", "fk_left_unsubscribe_no_propagate", "fk_inner_null_fk_transitions",
                       "global_left_join_null_mapped_key", "legacy_window_builders_removed"}


@pytest.mark.parametrize("release", ["4.4", "5.0", "3.10", "0.10.3", "0.9.0", "0.10", "x.y", "", "3"])
def test_unknown_or_future_release_is_an_error(release):
    with pytest.raises(KssimError):
        profile_for(release)


def test_every_rule_names_its_source_and_a_valid_release():
    for rule in RULES:
        assert rule.ref and rule.doc
        profile_for(rule.since)


def test_rule_changes_between_releases():
    # (3.6 means 3.6.0, which still leaked emit-final iterators: fixed in 3.6.1 and 3.7.0)
    assert [r.name for r in rule_changes(profile_for("3.6"), profile_for("3.7"))] == [
        "null_key_outer_emit", "stream_time_advanced_by_dropped", "fk_left_join_null_foreign_key",
        "session_emit_final_iterator_leak", "repartition_keeps_null_keys_for_relaxed_joins"]
    old_to_new = [r.name for r in rule_changes(profile_for("0.10.0"), profile_for("0.10.2"))]
    assert "kip77_join_semantics" in old_to_new and "output_ts_max" not in old_to_new
    assert rule_changes(profile_for("3.9"), profile_for("3.9.0")) == []


def test_unknown_rule_name_is_an_error():
    with pytest.raises(AttributeError):
        profile_for("3.9").no_such_rule
