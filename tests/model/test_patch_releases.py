"""Releases with a patch number: the X.Y profile plus the rules whose since is a patch release up
to it; only the bug-fix releases kssim knows (Kafka's release tags) are accepted."""
import pytest

from kssim.reference.model.errors import KssimError
from kssim.reference.model.profiles import NEWEST_PATCH, RELEASE_LINES, RULES, profile_for, rule_changes


@pytest.mark.parametrize("line", [r for r in RELEASE_LINES if not r.startswith("0.")])
def test_a_line_and_its_dot_zero_are_the_same_release(line):
    assert profile_for(line) == profile_for(line + ".0")


def test_every_known_patch_release_loads_and_the_next_one_does_not():
    for line, newest in NEWEST_PATCH.items():
        for patch in range(newest + 1):
            assert profile_for(f"{line}.{patch}").release == f"{line}.{patch}"
        with pytest.raises(KssimError) as info:
            profile_for(f"{line}.{newest + 1}")
        known = ", ".join(f"{line}.{p}" for p in range(newest + 1))
        assert f"knows {known}" in str(info.value)


@pytest.mark.parametrize("release, words", [
    ("3.1.9", ["'3.1.9'", "3.1.0, 3.1.1, 3.1.2"]),
    ("3.9.1", ["'3.9.1'", "knows 3.9.0", '"3.9" is 3.9.0']),
    ("4.3.1", ["'4.3.1'", "knows 4.3.0"]),
    ("0.10.2.1", ["0.x lines", '"0.10.2"']),
    ("3.1.1.1", ["not a version like"]),
])
def test_unknown_patch_releases_are_rejected_naming_the_known_ones(release, words):
    with pytest.raises(KssimError) as info:
        profile_for(release)
    assert all(w in str(info.value) for w in words), str(info.value)


def test_a_rule_since_a_patch_release_holds_from_it_and_in_every_later_line():
    assert [profile_for(r).outer_scan_early_exit_before_bound
            for r in ("3.1", "3.1.0", "3.1.1", "3.1.2", "3.2", "3.2.3", "3.7.1", "3.8")] == \
        [False, False, True, True, True, True, True, False]
    assert [r.name for r in rule_changes(profile_for("3.1.0"), profile_for("3.1.1"))] == \
        ["outer_scan_early_exit_before_bound"]


def test_a_fix_backported_to_an_older_line_is_a_rule_interval():
    # the HOTFIX of PR #14624 landed in 3.5.2, 3.6.1 and 3.7.0: 3.6.0 still leaks, 3.5.2 does not
    leak = [profile_for(r).session_emit_final_iterator_leak for r in ("3.5.1", "3.5.2", "3.6.0", "3.6.1", "3.7")]
    assert leak == [True, False, True, False, False]


def test_every_patch_release_a_rule_names_is_a_known_release():
    for rule in RULES:
        for release in (rule.since, rule.until) + tuple(x for pair in rule.also for x in pair):
            if release is not None:
                profile_for(release)  # raises for a release kssim does not know
