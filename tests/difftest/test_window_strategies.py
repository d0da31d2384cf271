"""The windowed operators' strategies: valid for the releases asked, deterministic, and on the edges
on purpose (window ends, end + grace, session gaps from both sides, bridges, late records)."""
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, find, settings

from kssim.differential_tests.runner import draw_cases
from kssim.differential_tests.strategies import missing_in, scenarios
from kssim.differential_tests.window_strategies import effective_grace, suppress_spec
from kssim.reference.model.errors import KssimError
from kssim.reference.model.keys import key_text
from kssim.reference.model.profiles import profile_for
from kssim.reference.model.scenario import scenario_from_dict

WINDOWED = ("session_aggregate", "window_aggregate", "sliding_aggregate", "windowed_table_join")


def _profiles(*releases):
    return tuple(profile_for(r) for r in releases)


@lru_cache(maxsize=None)
def _cases(operator, releases=("3.7", "3.8"), count=300, seed=3, suppress=False):
    return draw_cases(operator, _profiles(*releases), count, seed, suppress)


def _same_key_pairs(doc):
    """(earlier, later) input pairs of one key and topic, in input order."""
    inputs = [r for r in doc["inputs"] if r["key"] is not None]
    for j, later in enumerate(inputs):
        for earlier in inputs[:j]:
            if key_text(earlier["key"]) == key_text(later["key"]) and earlier["topic"] == later["topic"]:
                yield earlier, later


def _stream_times(doc):
    """Stream time (max ts so far, over all records: one partition) after each input."""
    out, high = [], -1
    for r in doc["inputs"]:
        high = max(high, r["ts"])
        out.append(high)
    return out


def _one_partition(doc):
    return not doc["config"].get("partitions")


@pytest.mark.parametrize("operator", WINDOWED)
@pytest.mark.parametrize("releases", [("3.7", "3.8"), ("2.8", "3.0"), ("4.0", "4.3")])
def test_cases_are_valid_in_every_release_asked_and_deterministic(operator, releases):
    cases = _cases(operator, releases, count=150, suppress=True)
    assert len(cases) == 150 and cases == _cases(operator, releases, count=150, suppress=True)
    for doc in cases:
        for release in releases:
            scenario_from_dict({**doc, "semantics": release})


@pytest.mark.parametrize("operator", WINDOWED)
def test_the_common_hard_cases_are_there(operator):
    cases = _cases(operator)
    inputs = [r for d in cases for r in d["inputs"]]
    assert any(r["key"] is None for r in inputs) and any(r["value"] is None for r in inputs)
    assert sum(any(a["ts"] == b["ts"] for a, b in _same_key_pairs(d)) for d in cases) >= 30  # ties
    assert sum(any(d["inputs"][i]["ts"] < d["inputs"][i - 1]["ts"] for i in range(1, len(d["inputs"])))
               for d in cases) >= 60  # out of order
    configs = [d["config"] for d in cases]
    assert {c["store"] for c in configs} == {"rocksdb", "in_memory"}
    assert {c["order"] for c in configs} == {"as_listed", "timestamp_sync"}
    # several partitions, some idle (configured but without a record)
    idle = [d for d in cases if d["config"].get("partitions")
            and len({r.get("partition", 0) for r in d["inputs"]}) < max(d["config"]["partitions"].values())]
    assert len(idle) >= 20
    topologies = [d["topology"] for d in cases]
    assert {t.get("emit", "on_update") for t in topologies} >= ({"on_update", "on_window_close"}
                                                                if operator != "windowed_table_join" else {"on_update"})
    assert any(t.get("send_old_values") for t in topologies)
    kinds = {type(r["key"]).__name__ for r in inputs}
    assert {"str", "int", "float", "bool", "dict", "list"} <= kinds


def test_session_cases_sit_on_the_gap_edges_from_both_sides_and_bridge_sessions():
    cases = [d for d in _cases("session_aggregate", count=300) if _one_partition(d)]
    on_gap_after = on_gap_before = just_outside = bridges = 0
    for doc in cases:
        gap = doc["topology"]["gap_ms"]
        pairs = list(_same_key_pairs(doc))
        on_gap_after += any(b["ts"] - a["ts"] == gap for a, b in pairs)
        on_gap_before += any(a["ts"] - b["ts"] == gap for a, b in pairs)  # out of order: merges from the left
        just_outside += any(abs(b["ts"] - a["ts"]) == gap + 1 for a, b in pairs)
        bridges += _bridges(doc, gap)
    assert on_gap_after >= 20 and on_gap_before >= 10 and just_outside >= 20
    assert bridges >= 10


def _bridges(doc, gap) -> bool:
    """Does a record fall between two earlier records of its key that are more than a gap apart
    (two sessions) and within a gap of both (it merges them)?"""
    inputs = [r for r in doc["inputs"] if r["key"] is not None]
    for j, r in enumerate(inputs):
        earlier = [e["ts"] for e in inputs[:j] if key_text(e["key"]) == key_text(r["key"])]
        below = [t for t in earlier if r["ts"] - gap <= t < r["ts"]]
        above = [t for t in earlier if r["ts"] < t <= r["ts"] + gap]
        if below and above and min(above) - max(below) > gap:
            return True
    return False


def test_session_cases_sit_on_the_close_time_with_and_without_the_gap():
    # KAFKA-12718 moved the close time from stream time - grace to stream time - grace - gap
    exactly, one_beyond, between = 0, 0, 0
    for doc in filter(_one_partition, _cases("session_aggregate", ("2.8", "3.0"), count=300)):
        t = doc["topology"]
        close = t["gap_ms"] + effective_grace(t["grace_ms"], t["gap_ms"])
        before = [-1] + _stream_times(doc)[:-1]
        lateness = [before[i] - r["ts"] for i, r in enumerate(doc["inputs"])]
        exactly += close in lateness
        one_beyond += close + 1 in lateness
        between += any(close - t["gap_ms"] < late <= close for late in lateness)
    assert exactly >= 15 and one_beyond >= 15 and between >= 40


def test_time_window_cases_sit_on_window_ends_and_on_end_plus_grace():
    at_end = at_close = just_open = hopping = 0
    for doc in filter(_one_partition, _cases("window_aggregate", count=300)):
        t = doc["topology"]
        size, advance = t["size_ms"], t["advance_ms"]
        grace = effective_grace(t["grace_ms"], size)
        hopping += advance < size
        at_end += any(b["ts"] - (a["ts"] - a["ts"] % advance) == size for a, b in _same_key_pairs(doc))
        times = _stream_times(doc)
        for i, r in enumerate(doc["inputs"]):
            starts = range(max(0, r["ts"] - size + advance) // advance * advance, r["ts"] + 1, advance)
            at_close += any(s + size + grace == times[i] for s in starts)  # dropped exactly at the boundary
            just_open += any(s + size + grace == times[i] + 1 for s in starts)
    assert hopping >= 40 and at_end >= 40 and at_close >= 40 and just_open >= 40


def test_sliding_cases_sit_on_both_inclusive_ends_and_on_grace():
    on_end = one_past = late_edge = early = 0
    for doc in filter(_one_partition, _cases("sliding_aggregate", count=300)):
        d, grace = doc["topology"]["time_difference_ms"], doc["topology"]["grace_ms"]
        pairs = list(_same_key_pairs(doc))
        on_end += any(abs(b["ts"] - a["ts"]) == d for a, b in pairs)
        one_past += any(abs(b["ts"] - a["ts"]) == d + 1 for a, b in pairs)
        early += any(r["ts"] < d for r in doc["inputs"])
        times = _stream_times(doc)
        late_edge += any(r["ts"] + d + grace in (times[i], times[i] - 1) for i, r in enumerate(doc["inputs"]) if i)
    assert on_end >= 40 and one_past >= 40 and late_edge >= 30 and early >= 40


def test_emit_final_cases_jump_past_retention():
    # 3.8's emit-final loses windows that retention expires before the close check reaches them
    jumps = 0
    for doc in _cases("window_aggregate", count=300):
        t = doc["topology"]
        if t.get("emit") != "on_window_close" or t["grace_ms"] is None:
            continue
        retention = t.get("retention_ms", t["size_ms"] + t["grace_ms"])
        ts = [r["ts"] for r in doc["inputs"]]
        jumps += any(ts[i] - max(ts[:i]) > retention + t["size_ms"] for i in range(1, len(ts)))
    assert jumps >= 20


def test_release_capabilities_are_respected():
    before_3_3 = _cases("window_aggregate", ("2.8", "3.0"), count=200)
    assert all(d["topology"].get("emit", "on_update") == "on_update" for d in before_3_3)
    assert any(d["topology"]["grace_ms"] is None for d in before_3_3)  # the legacy builders' default
    for release in ("4.0", "4.3"):
        assert all(d["topology"]["grace_ms"] is not None
                   for d in _cases("session_aggregate", (release,), count=100))
    assert all(d["topology"]["grace_ms"] is None for d in _cases("session_aggregate", ("1.1",), count=100))
    assert all("suppress" not in d["topology"] for d in _cases("window_aggregate", ("2.0", "2.1"), count=100,
                                                              suppress=True))
    assert missing_in("sliding_aggregate", _profiles("2.6", "2.7")) == ["2.6"]
    with pytest.raises(KssimError, match="sliding_aggregate does not exist in Kafka 2.6"):
        draw_cases("sliding_aggregate", _profiles("2.6", "2.7"), 10, seed=0)


#: a search, not a count: whether a strategy can draw something must not depend on how many
#: times one Hypothesis version happens to draw it in a fixed number of cases
SEARCH = settings(database=None, max_examples=5000, deadline=None, suppress_health_check=list(HealthCheck))

SUPPRESS_FLAVOURS = {
    "until window close": lambda s: s["until"] == "window_close",
    "until a time limit": lambda s: s["until"] == "time_limit",
    "unbounded buffer": lambda s: "buffer" not in s,
    "bounded by records": lambda s: "max_records" in s.get("buffer", {}),
    "bounded by bytes": lambda s: "max_bytes" in s.get("buffer", {}),
    "shut down when full": lambda s: s.get("buffer", {}).get("when_full") == "shut_down",
    "emit early when full": lambda s: s.get("buffer", {}).get("when_full") == "emit_early",
}


@pytest.mark.parametrize("operator", WINDOWED)
def test_suppress_is_drawn_only_when_asked(operator):
    assert all("suppress" not in d["topology"] for d in _cases(operator, count=100))
    asked = scenarios(operator, _profiles("3.7", "3.8"), suppress=True)
    assert "suppress" in find(asked, lambda d: "suppress" in d["topology"], settings=SEARCH)["topology"]


@pytest.mark.parametrize("flavour", sorted(SUPPRESS_FLAVOURS))
def test_every_flavour_of_suppress_can_be_drawn(flavour):
    spec = find(suppress_spec(windowed=True), SUPPRESS_FLAVOURS[flavour], settings=SEARCH)
    assert SUPPRESS_FLAVOURS[flavour](spec)
    if spec["until"] == "window_close":
        assert spec.get("buffer", {}).get("when_full", "shut_down") == "shut_down"  # a strict buffer


@pytest.mark.parametrize("operator", ["table_table_join", "fk_join"])
def test_table_joins_draw_time_limit_suppress_when_asked(operator):
    asked = scenarios(operator, _profiles("3.9"), suppress=True)
    found = find(asked, lambda d: "suppress" in d["topology"], settings=SEARCH)
    assert found["topology"]["suppress"]["until"] == "time_limit"
    specs = [d["topology"]["suppress"] for d in draw_cases(operator, _profiles("3.9"), 100, 3, suppress=True)
             if "suppress" in d["topology"]]
    assert {s["until"] for s in specs} <= {"time_limit"}  # a plain table has no window to close


def test_windowed_table_join_cases_use_both_sides_shifts_and_every_join():
    cases = _cases("windowed_table_join", count=300)
    assert {d["topology"]["join"] for d in cases} == {"inner", "left", "outer"}
    assert sum("shift_ms" in d["topology"] for d in cases) >= 100
    assert sum(len({r["topic"] for r in d["inputs"]}) == 2 for d in cases) >= 200
    sums = [d for d in cases if "sum" in (d["topology"]["left_aggregation"], d["topology"]["right_aggregation"])]
    assert sums and all(isinstance(r["value"], int) for d in sums for r in d["inputs"]
                        if r["value"] is not None and d["topology"][f"{r['topic']}_aggregation"] == "sum")
