"""The Spark backend's windowed-table join (seed 003's "WTable"): every conformance file
(expectations from real Kafka Streams 3.9) in one batched job, and the rules no conformance file
pins. Each expected output is derived in the comments from Kafka's code (class named)."""
from __future__ import annotations

import os

import pytest
from kssim_testing import CONFORMANCE, assert_conforms, conformance_files, load_all, scenario

FILES = conformance_files("windowed_table_join")


@pytest.fixture(scope="module")
def batch(spark):  # noqa: F811
    from kssim.spark_backend.runtime.runner import run_scenarios

    scenarios = load_all(FILES)
    return dict(zip(FILES, zip(scenarios, run_scenarios(scenarios, spark))))


def test_the_corpus_is_all_there():
    # inner / left / outer x tumbling / hopping x with / without shift, 7 cases each
    assert len(FILES) == 84


@pytest.mark.parametrize("path", FILES, ids=[os.path.relpath(f, CONFORMANCE) for f in FILES])
def test_conformance_file(batch, path):
    assert_conforms(*batch[path])


def wjoin(join, size=10, grace=0, shift=0, **more):
    topology = {"operator": "windowed_table_join", "join": join, "window": {"size_ms": size, "grace_ms": grace},
                "joiner": "concat", "joiner_separator": "-", "shift_ms": shift}
    topology.update(more)
    return topology


def wk(key, start, end):
    return {"key": key, "start": start, "end": end}


CASES = {
    # KTableKTableInnerJoin: no result while the other window is absent; the result carries
    # max(update ts, the other window's stored ts)
    "inner": scenario(wjoin("inner"), [("left", "k", "a", 1), ("right", "k", "x", 3), ("left", "k", "b", 2)]),
    # LeftJoin: the left update joins a missing right as null; RightJoin needs the left window
    "left": scenario(wjoin("left"), [("left", "k", "a", 1), ("right", "k", "x", 3), ("right", "j", "y", 4)]),
    "outer": scenario(wjoin("outer"), [("right", "k", "x", 3), ("left", "k", "a", 1)]),
    # send_old_values: an aggregation's old value is the initializer's (count 0) for a new window
    "old-values": scenario(wjoin("left", send_old_values=True), [("left", "k", "a", 1), ("right", "k", "x", 2)]),
    # shift 10: the right window [0,10) is joined as [10,20) (R2, a key-value table)
    "shift-inner": scenario(wjoin("inner", shift=10), [("right", "k", "x", 3), ("left", "k", "a", 15)]),
    "shift-outer": scenario(wjoin("outer", shift=10), [("right", "k", "x", 3), ("left", "k", "a", 15)]),
    # the left store's newest window start is 20: [0,10) is hidden from the right side's lookup
    # since KAFKA-12960 (3.4) and in memory (start > 20 - retention 10 fails); 3.3's RocksDB still
    # has its segment
    "hidden-3.9": scenario(wjoin("inner"), [("left", "k", "a", 1), ("left", "k", "b", 25), ("right", "k", "x", 5)]),
    "hidden-3.3": scenario(wjoin("inner"), [("left", "k", "a", 1), ("left", "k", "b", 25), ("right", "k", "x", 5)],
                           semantics="3.3"),
    "hidden-3.3-memory": scenario(wjoin("inner"), [("left", "k", "a", 1), ("left", "k", "b", 25),
                                                   ("right", "k", "x", 5)], semantics="3.3", store="in_memory"),
}


@pytest.fixture(scope="module")
def results(spark):  # noqa: F811
    from kssim.spark_backend.runtime.runner import run_scenarios

    return dict(zip(CASES, run_scenarios(list(CASES.values()), spark)))


def outs(result):
    return [(o.key, o.value, o.ts, o.input_index) for o in result.outputs]


def test_inner_join_of_two_windowed_tables(results):
    assert outs(results["inner"]) == [(wk("k", 0, 10), "1-1", 3, 1), (wk("k", 0, 10), "2-1", 3, 2)]


def test_left_and_outer_joins(results):
    assert outs(results["left"]) == [(wk("k", 0, 10), "1-null", 1, 0), (wk("k", 0, 10), "1-1", 3, 1)]
    assert outs(results["outer"]) == [(wk("k", 0, 10), "null-1", 3, 0), (wk("k", 0, 10), "1-1", 3, 1)]


def test_old_values_of_windowed_tables_start_from_the_initializer(results):
    # left: joiner(old 0, no right) = "0-null"; right (RightJoin): joiner(left 1, old 0) = "1-0"
    assert [(o.value, o.old_value) for o in results["old-values"].outputs] == [("1-null", "0-null"), ("1-1", "1-0")]


def test_shifted_right_windows(results):
    assert outs(results["shift-inner"]) == [(wk("k", 10, 20), "1-1", 15, 1)]
    assert outs(results["shift-outer"]) == [(wk("k", 10, 20), "null-1", 3, 0), (wk("k", 10, 20), "1-1", 15, 1)]


def test_expired_windows_are_hidden_from_the_other_side(results):
    assert outs(results["hidden-3.9"]) == []
    assert outs(results["hidden-3.3"]) == [(wk("k", 0, 10), "1-1", 5, 2)]
    assert outs(results["hidden-3.3-memory"]) == []
