"""The Spark backend's set-based processing order against a brute-force simulation of Kafka's
PartitionGroup (a priority queue over partition queues, one record per step) for every rule:

- 2.4+: the queue key is the head record's raw timestamp;
- 2.1-2.3: the monotone max of the head timestamps seen (RecordQueue#partitionTime);
- before 2.1: RecordQueue#partitionTime, raised to MinTimestampTracker's minimum over the
  buffered records when records are added and after each poll.

Ties go to ``left`` before ``right``, then the lower partition (the scenario contract), and the
tasks are interleaved as one PartitionGroup over all partitions would (same tie rule)."""
from __future__ import annotations

import random

from kssim_testing import scenario

TOPICS = ("left", "right")


def simulate(records, rule):
    """``records``: (index, topic, partition, ts) in list (offset) order -> indexes in processing order."""
    queues = {}
    for rec in records:
        queues.setdefault((rec[2], TOPICS.index(rec[1])), []).append(rec)
    heads = {q: 0 for q in queues}
    partition_time = {}
    for q, recs in queues.items():  # all records were added before the first poll
        partition_time[q] = min(r[3] for r in recs) if rule == "min_tracker" else -1

    def key(q):
        head_ts = queues[q][heads[q]][3]
        if rule == "raw_head":
            return head_ts
        if rule == "max_head":
            return max(partition_time[q], head_ts)
        return partition_time[q]

    order = []
    while True:
        live = [q for q in queues if heads[q] < len(queues[q])]
        if not live:
            return order
        best = min(live, key=lambda q: (key(q), q[0], q[1]))  # ties: lower partition, then left
        if rule == "max_head":
            partition_time[best] = key(best)
        order.append(queues[best][heads[best]][0])
        heads[best] += 1
        if rule == "min_tracker" and heads[best] < len(queues[best]):
            remaining = min(r[3] for r in queues[best][heads[best]:])
            partition_time[best] = max(partition_time[best], remaining)


RULES = {"3.9": "raw_head", "2.4": "raw_head", "2.3": "max_head", "2.1": "max_head", "2.0": "min_tracker",
         "1.1": "min_tracker", "0.10.2": "min_tracker"}


def random_inputs(rng):
    partitions = rng.choice([1, 1, 2, 3])
    n = rng.randrange(1, 14)
    span = rng.choice([3, 6, 20])
    records = [(rng.choice(TOPICS), "k", "v", rng.randrange(span), rng.randrange(partitions)) for _ in range(n)]
    return records, partitions


def test_set_based_order_equals_the_priority_queue_simulation(spark):  # noqa: F811
    from pyspark.sql import functions as F

    from kssim.spark_backend.runtime.inputs import scenarios_to_frames
    from kssim.spark_backend.runtime.processing_order import by_task, with_processing_order

    rng = random.Random(20240611)
    cases = []
    for release, rule in RULES.items():
        for _ in range(60):
            inputs, partitions = random_inputs(rng)
            sc = scenario({"operator": "table_table_join", "join": "inner"}, inputs, semantics=release,
                          order="timestamp_sync", partitions={"left": partitions, "right": partitions})
            cases.append((sc, rule))
    records, configs, features = scenarios_to_frames(spark, [c[0] for c in cases], list(range(len(cases))))
    ordered = with_processing_order(by_task(records, features).join(F.broadcast(configs), "sid"), features)
    rows = ordered.select("sid", "idx", "task", "seq", "g1", "g2", "g3", "g4").collect()
    by_sid = {}
    for r in rows:
        by_sid.setdefault(r["sid"], []).append(r)
    for sid, (sc, rule) in enumerate(cases):
        mine = by_sid[sid]
        recs = [(r.index, r.topic, r.partition, r.ts) for r in sc.inputs]
        expected = simulate(recs, rule)
        got = [r["idx"] for r in sorted(mine, key=lambda r: (r["g1"], r["g2"], r["g3"], r["g4"]))]
        assert got == expected, (sc.release, rule, recs)
        # seq is each task's own order, consistent with the global one
        for task in {r["task"] for r in mine}:
            in_task = [r["idx"] for r in sorted((r for r in mine if r["task"] == task), key=lambda r: r["seq"])]
            assert in_task == [i for i in expected if sc.inputs[i].partition == task]


def test_as_listed_is_list_order_in_every_task(spark):  # noqa: F811
    from pyspark.sql import functions as F

    from kssim.spark_backend.runtime.inputs import Features, scenarios_to_frames
    from kssim.spark_backend.runtime.processing_order import by_task, with_processing_order

    inputs = [("right", "k", "v", 9, 1), ("left", "k", "v", 1, 0), ("left", "k", "v", 0, 1), ("right", "k", "v", 5, 0)]
    sc = scenario({"operator": "table_table_join", "join": "inner"}, inputs, partitions={"left": 2, "right": 2})
    records, configs, _ = scenarios_to_frames(spark, [sc], [0])
    for features in (Features(ts_sync=False), Features(ts_sync=True)):  # both plans give list order
        rows = with_processing_order(by_task(records, features).join(F.broadcast(configs), "sid"), features) \
            .select("idx", "task", "seq").collect()
        for task in (0, 1):
            in_task = [r["idx"] for r in sorted((r for r in rows if r["task"] == task), key=lambda r: r["seq"])]
            assert in_task == [i for i, rec in enumerate(inputs) if rec[4] == task]


def test_the_simulation_itself_distinguishes_the_rules():
    # left: 5 then 1; right: 3. Raw head: right 3 (3 < 5), then left 5, left 1.
    # MinTimestampTracker: left's partition time is min(5, 1) = 1 < 3, so left goes first.
    recs = [(0, "left", 0, 5), (1, "left", 0, 1), (2, "right", 0, 3)]
    assert simulate(recs, "raw_head") == [2, 0, 1]
    assert simulate(recs, "max_head") == [2, 0, 1]
    assert simulate(recs, "min_tracker") == [0, 1, 2]
