"""The Spark backend's time-windowed aggregations (``window_aggregate``): every conformance file
(expectations from real Kafka Streams) in one batched job, and the release rules no conformance
file pins, at their boundaries. Each expected output below is derived in the comments from
Kafka's code (class named), record by record; all rule cases run in one batched job."""
from __future__ import annotations

import os

import pytest
from kssim_testing import CONFORMANCE, assert_conforms, conformance_files, load_all, scenario

from kssim.reference.model.codes import DropReason, FailureCode
from kssim.reference.model.records import NO_OLD_VALUE

#: every time-window conformance file (the sliding ones in kafka-tests/window are another operator)
FILES = conformance_files("window_aggregate")


@pytest.fixture(scope="module")
def batch(spark):  # noqa: F811
    from kssim.spark_backend.runtime.runner import run_scenarios

    scenarios = load_all(FILES)
    return dict(zip(FILES, zip(scenarios, run_scenarios(scenarios, spark))))


def test_the_corpus_is_all_there():
    # 140 randomized oracle cases (3.9, both stores, both emit strategies) + 4 from Kafka's tests
    assert len(FILES) == 144
    assert sum("kafka-tests" in f for f in FILES) == 4


@pytest.mark.parametrize("path", FILES, ids=[os.path.relpath(f, CONFORMANCE) for f in FILES])
def test_conformance_file(batch, path):
    assert_conforms(*batch[path])


def window(size, advance=None, grace=0, aggregation="count", **more):
    topology = {"operator": "window_aggregate", "size_ms": size, "advance_ms": advance or size, "grace_ms": grace,
                "aggregation": aggregation}
    topology.update(more)
    return topology


def records(*items):
    """(key, value, ts) triples on topic ``input``."""
    return [("input",) + item for item in items]


def wk(key, start, end):
    return {"key": key, "start": start, "end": end}


CASES = {
    # the digest's verified run (C.1): size 10, advance 5, grace 3; KStreamWindowAggregate skips
    # each window whose end <= streamTime - grace, the record's other windows are still updated
    "digest": scenario(window(10, 5, 3), records(
        ("k", "a", 3),    # 0 [0,10)=1
        ("k", "b", 7),    # 1 [0,10)=2, [5,15)=1
        ("k", "c", 12),   # 2 [5,15)=2, [10,20)=1
        ("k", "d", 25),   # 3 [20,30)=1, [25,35)=1 (stream time 25, close 22)
        ("k", "e", 14),   # 4 [5,15) and [10,20) end <= 22: two drops
        ("k", "f", 9),    # 5 [0,10) and [5,15): two drops
        ("k", "g", 30),   # 6 [25,35)=2, [30,40)=1 (close 27)
        ("k", "h", 2),    # 7 [0,10): one drop
    )),
    # a hopping record late for one window only: the other is updated, at the window's max ts
    "partly-late": scenario(window(10, 5, 0), records(("k", "a", 20), ("k", "b", 16))),
    # a null key is dropped; a null value is aggregated (count counts it)
    "nulls": scenario(window(10), records((None, "v", 1), ("k", None, 2))),
    # sum of a null: the aggregator throws on the first live window; the expired one before it was
    # skipped first (its drop stays), nothing after the failing input is processed
    "sum-null": scenario(window(10, 5, 1, "sum"), records(("k", 5, 30), ("k", None, 24), ("k", 1, 31))),
    # send_old_values: the old value is the stored aggregate, or the initializer's (0) for a new window
    "old-values": scenario(window(10, send_old_values=True), records(("k", "a", 1), ("k", "b", 2))),
    # a reduce whose first value is null stores null: the window is deleted (a tombstone is
    # forwarded) and the next value starts it over, with that value's own ts
    "reduce-null": scenario(window(10, aggregation="string_reduce"), records(("k", None, 5), ("k", "b", 3))),
    # emit on window close: Kafka's probe (x-notes of the oracle files): size 11, grace 10; the
    # RocksDB time-ordered store clips the fetch at (newest window start) - retention 21
    "final-21": scenario(window(11, grace=10, emit="on_window_close"), records(("A", "x", 0), ("A", "y", 21))),
    "final-22": scenario(window(11, grace=10, emit="on_window_close"), records(("A", "x", 0), ("A", "y", 22))),
    # at the clip bound itself RocksDB's time-first schema still shows the window (start >= newest
    # start - retention), the in-memory store does not (start > ...)
    "final-edge-rocksdb": scenario(window(10, emit="on_window_close"), records(("A", "x", 0), ("A", "y", 10))),
    "final-edge-memory": scenario(window(10, emit="on_window_close"), records(("A", "x", 0), ("A", "y", 10)),
                                  store="in_memory"),
    # several tasks: each closes windows by its own stream time only (an idle one never)
    "final-tasks": scenario(window(10, emit="on_window_close"),
                            [("input", "A", "x", 0, 0), ("input", "B", "y", 1, 1), ("input", "A", "z", 12, 0)],
                            partitions={"input": 2}),
    # 2.1 closes windows by the task's stream time, which a null-key record advances; 2.2
    # (KAFKA-7895) by the processor's own
    "task-clock-2.1": scenario(window(10), records((None, "v", 20), ("k", "a", 5)), semantics="2.1"),
    "task-clock-2.2": scenario(window(10), records((None, "v", 20), ("k", "a", 5)), semantics="2.2"),
    # before 2.3 (KAFKA-6455) an update carries its record's ts, since the window's max ts
    "ts-2.2": scenario(window(10), records(("k", "a", 5), ("k", "b", 3)), semantics="2.2"),
    "ts-2.3": scenario(window(10), records(("k", "a", 5), ("k", "b", 3)), semantics="2.3"),
    # before 2.0 (KAFKA-6560 / KAFKA-6486): the windows the store has first, then the new ones in
    # HashMap order; 2.0 in start order
    "order-1.1": scenario(window(10, 5, None), records(("A", "x", 12), ("A", "y", 7)), semantics="1.1"),
    "order-2.0": scenario(window(10, 5, None), records(("A", "x", 12), ("A", "y", 7)), semantics="2.0"),
    # starts 14, 15, 16 in a 16-bucket HashMap: buckets 14, 15, 0
    "hashmap-1.1": scenario(window(3, 1, None), records(("A", "x", 16)), semantics="1.1"),
    # 0.10.0's windowsFor (before KAFKA-3784): size 10 / advance 3 at ts 14 also yields [3,13)
    "windows-for-0.10.0": scenario(window(10, 3, None), records(("A", "x", 14)), semantics="0.10.0"),
    "windows-for-0.10.1": scenario(window(10, 3, None), records(("A", "x", 14)), semantics="0.10.1"),
    # before 2.1 no grace: the RocksDB store (maintainMs 1 day, 12-hour segments, the three newest
    # live) forgets [0,10) once a put reaches segment 3 (36 h); the late record starts it over
    "store-expiry-2.0": scenario(window(10, grace=None), records(("k", "a", 0), ("k", "b", 129_600_000),
                                                                  ("k", "c", 5)), semantics="2.0"),
    # 2.1: the default grace (1 day - size) closes it instead
    "store-expiry-2.1": scenario(window(10, grace=None), records(("k", "a", 0), ("k", "b", 129_600_000),
                                                                  ("k", "c", 5)), semantics="2.1"),
}


def _with_callable_aggregation():
    # the Python API's aggregations are callables: the fold applies them as they are
    import attrs

    from kssim.reference.model.aggregations import aggregation_from_callables

    base = scenario(window(10), records(("k", 3, 1), ("k", 4, 2)))
    product = aggregation_from_callables(initializer=lambda: 100, aggregator=lambda key, value, agg: agg * value)
    return attrs.evolve(base, topology=attrs.evolve(base.topology, aggregation=product))


CASES["callable"] = _with_callable_aggregation()


@pytest.fixture(scope="module")
def results(spark):  # noqa: F811
    from kssim.spark_backend.runtime.runner import run_scenarios

    return dict(zip(CASES, run_scenarios(list(CASES.values()), spark)))


def outs(result):
    return [(o.key, o.value, o.ts, o.input_index) for o in result.outputs]


def drops(result):
    return [(d.input_index, d.reason) for d in result.drops]


def test_windows_late_per_window_as_in_the_digest(results):
    r = results["digest"]
    assert outs(r) == [
        (wk("k", 0, 10), 1, 3, 0),
        (wk("k", 0, 10), 2, 7, 1), (wk("k", 5, 15), 1, 7, 1),
        (wk("k", 5, 15), 2, 12, 2), (wk("k", 10, 20), 1, 12, 2),
        (wk("k", 20, 30), 1, 25, 3), (wk("k", 25, 35), 1, 25, 3),
        (wk("k", 25, 35), 2, 30, 6), (wk("k", 30, 40), 1, 30, 6),
    ]
    expired = DropReason.EXPIRED_WINDOW
    assert drops(r) == [(4, expired), (4, expired), (5, expired), (5, expired), (7, expired)]


def test_a_hopping_record_late_for_one_window_updates_the_other(results):
    # close 20: [10,20) is skipped; [15,25) already holds ts 20, so the update carries 20
    assert outs(results["partly-late"]) == [(wk("k", 15, 25), 1, 20, 0), (wk("k", 20, 30), 1, 20, 0),
                                            (wk("k", 15, 25), 2, 20, 1)]
    assert drops(results["partly-late"]) == [(1, DropReason.EXPIRED_WINDOW)]


def test_null_key_dropped_null_value_counted(results):
    assert outs(results["nulls"]) == [(wk("k", 0, 10), 1, 2, 1)]
    assert drops(results["nulls"]) == [(0, DropReason.NULL_KEY)]


def test_sum_of_a_null_fails_after_skipping_the_expired_window(results):
    r = results["sum-null"]
    assert outs(r) == [(wk("k", 25, 35), 5, 30, 0), (wk("k", 30, 40), 5, 30, 0)]
    assert drops(r) == [(1, DropReason.EXPIRED_WINDOW)]  # [15,25) ends before close 29
    assert r.failure.input_index == 1 and r.failure.code is FailureCode.AGGREGATOR_NULL_VALUE


def test_old_values_start_from_the_initializer(results):
    assert [(o.value, o.old_value) for o in results["old-values"].outputs] == [(1, 0), (2, 1)]
    assert all(o.old_value is NO_OLD_VALUE for o in results["digest"].outputs)


def test_a_reduce_null_deletes_the_window(results):
    assert outs(results["reduce-null"]) == [(wk("k", 0, 10), None, 5, 0), (wk("k", 0, 10), "b", 3, 1)]


def test_emit_final_loses_windows_the_store_clipped(results):
    assert outs(results["final-21"]) == [(wk("A", 0, 11), 1, 0, 1)]
    assert drops(results["final-21"]) == []
    assert outs(results["final-22"]) == []
    assert drops(results["final-22"]) == [(1, DropReason.UNEMITTED_WINDOW)]


def test_emit_final_clip_bound_differs_by_store(results):
    assert outs(results["final-edge-rocksdb"]) == [(wk("A", 0, 10), 1, 0, 1)]
    assert outs(results["final-edge-memory"]) == []
    assert drops(results["final-edge-memory"]) == [(1, DropReason.UNEMITTED_WINDOW)]


def test_emit_final_closes_by_each_tasks_own_stream_time(results):
    # task 0 reaches 12 >= 0 + 10 + 0: A's [0,10) closes; task 1 (stream time 1) closes nothing
    r = results["final-tasks"]
    assert [(o.partition,) + t for o, t in zip(r.outputs, outs(r))] == [(0, wk("A", 0, 10), 1, 0, 2)]


def test_2_1_closes_by_the_tasks_stream_time(results):
    assert outs(results["task-clock-2.1"]) == []
    assert drops(results["task-clock-2.1"]) == [(0, DropReason.NULL_KEY), (1, DropReason.EXPIRED_WINDOW)]
    assert outs(results["task-clock-2.2"]) == [(wk("k", 0, 10), 1, 5, 1)]


def test_output_ts_is_the_windows_max_since_2_3(results):
    assert [o.ts for o in results["ts-2.2"].outputs] == [5, 3]
    assert [o.ts for o in results["ts-2.3"].outputs] == [5, 5]


def test_update_order_before_and_since_2_0(results):
    # 1.1: [5,15) exists (fetched first), [0,10) is new; 2.0 updates in start order
    assert outs(results["order-1.1"])[2:] == [(wk("A", 5, 15), 2, 7, 1), (wk("A", 0, 10), 1, 7, 1)]
    assert outs(results["order-2.0"])[2:] == [(wk("A", 0, 10), 1, 7, 1), (wk("A", 5, 15), 2, 7, 1)]
    assert [o.key["start"] for o in results["hashmap-1.1"].outputs] == [16, 14, 15]


def test_python_api_aggregations_are_applied(results):
    assert outs(results["callable"]) == [(wk("k", 0, 10), 300, 1, 0), (wk("k", 0, 10), 1200, 2, 1)]


def test_windows_for_before_kafka_3784(results):
    assert [o.key["start"] for o in results["windows-for-0.10.0"].outputs] == [3, 6, 9, 12]
    assert [o.key["start"] for o in results["windows-for-0.10.1"].outputs] == [6, 9, 12]


def test_before_2_1_the_store_forgets_windows_by_segments(results):
    r = results["store-expiry-2.0"]
    assert outs(r) == [(wk("k", 0, 10), 1, 0, 0), (wk("k", 129_600_000, 129_600_010), 1, 129_600_000, 1),
                       (wk("k", 0, 10), 1, 5, 2)]  # started over: count 1, not 2
    assert drops(r) == [(2, DropReason.EXPIRED_WINDOW_PUT)]
    assert outs(results["store-expiry-2.1"])[2:] == []
    assert drops(results["store-expiry-2.1"]) == [(2, DropReason.EXPIRED_WINDOW)]


def _single_pass_batch(scenarios) -> bool:
    from kssim.spark_backend.runtime.inputs import Features, config_row
    from kssim.spark_backend.windows.time_window import single_pass

    return single_pass(Features.of([config_row(i, s) for i, s in enumerate(scenarios)]).windows)


def test_the_single_pass_gives_the_general_plans_results(spark, batch, results):  # noqa: F811
    """A batch of count / sum aggregations emitting on update, 2.2+, is computed in one pass
    (``time_window.single_pass``: no local checkpoint, one event per window row); the fixtures'
    batches hold emit-final and Python-fold scenarios, so they took the general plan. Run alone,
    the eligible ones give the same bytes, with one window per task and with the task scans in
    blocks of two positions (``prefix_scan``, as a large replay computes them), and the tumbling
    ones alone (a batch without hopping windows takes each record's one window without an
    array to explode)."""
    from kssim_testing import result_bytes

    from kssim.spark_backend.runtime.runner import run_scenarios

    general = [(path, *batch[path]) for path in FILES] + [(name, CASES[name], results[name]) for name in CASES]
    assert not _single_pass_batch([s for _, s, _ in general])
    eligible = [(name, s, r) for name, s, r in general if _single_pass_batch([s])]
    # late windows, null keys and values, a failing sum, old values, several partitions and orders
    assert len(eligible) >= 30
    assert {"digest", "partly-late", "nulls", "sum-null", "old-values"} <= {name for name, _, _ in eligible}
    expected = [result_bytes(r) for _, _, r in eligible]
    scenarios = [s for _, s, _ in eligible]
    assert [result_bytes(r) for r in run_scenarios(scenarios, spark)] == expected
    listed = [i for i, s in enumerate(scenarios) if s.config.order == "as_listed"]
    in_blocks = run_scenarios([scenarios[i] for i in listed], spark, scan_block=2)
    assert [result_bytes(r) for r in in_blocks] == [expected[i] for i in listed]
    tumbling = [i for i, s in enumerate(scenarios) if s.topology.window.size_ms == s.topology.window.advance_ms]
    assert len(tumbling) >= 10 and len(tumbling) < len(scenarios)
    alone = run_scenarios([scenarios[i] for i in tumbling], spark)
    assert [result_bytes(r) for r in alone] == [expected[i] for i in tumbling]


def _variant(doc, rng):
    """A conformance scenario spread over 2-3 partitions, in either processing order and store,
    without its expectations."""
    import copy

    doc = copy.deepcopy(doc)
    for name in ("expected", "checkpoints", "expected_failure"):
        doc.pop(name, None)
    partitions = rng.choice([2, 3])
    config = doc.setdefault("config", {})
    config["order"] = rng.choice(["as_listed", "timestamp_sync"])
    config["store"] = rng.choice(["rocksdb", "in_memory"])
    config["partitions"] = {topic: partitions for topic in {rec["topic"] for rec in doc["inputs"]}}
    for rec in doc["inputs"]:
        rec["partition"] = rng.randrange(partitions)
    doc["name"] += f"-p{partitions}"
    return doc


def test_byte_identical_whatever_the_shuffle_partitioning(spark):  # noqa: F811
    """Both windowed operators (emit on update and on close, shifted joins routed across tasks)
    give the same bytes with 1 and 7 shuffle partitions."""
    import random

    from kssim_testing import result_bytes

    from kssim.reference.model.scenario import read_document, scenario_from_dict
    from kssim.spark_backend.runtime.runner import run_scenarios

    rng = random.Random(7)
    sources = FILES[::6] + conformance_files("windowed_table_join")[::4]
    scenarios = [scenario_from_dict(_variant(read_document(path), rng)) for path in sources]
    before = spark.conf.get("spark.sql.shuffle.partitions")
    runs = {}
    try:
        for partitions in ("1", "7"):
            spark.conf.set("spark.sql.shuffle.partitions", partitions)
            runs[partitions] = [result_bytes(r) for r in run_scenarios(scenarios, spark)]
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)
    assert runs["1"] == runs["7"]
    assert sum(len(b) for b in runs["1"]) > 5_000  # the variants do produce output
