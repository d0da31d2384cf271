"""Determinism and metamorphic properties of the Spark backend, on variants of the conformance
scenarios (several partitions, timestamp synchronisation, both store types):

- byte-identical results whatever ``spark.sql.shuffle.partitions`` is (1, 4, 200);
- tasks are independent: a partition's output is the output of that partition's records alone;
- ``timestamp_sync`` is ``as_listed`` over the records in PartitionGroup order (brute force).
"""
from __future__ import annotations

import copy
import json
import random

import pytest
from kssim_testing import conformance_files, results_per_shuffle_partitioning
from test_spark_processing_order import simulate

from kssim.reference.model.profiles import profile_for
from kssim.reference.model.scenario import read_document, scenario_from_dict

SOURCES = conformance_files("stream_table_join")[::3] + conformance_files("table_table_join")[::3]


def variant(doc, rng, partitions, order):
    """A conformance scenario spread over ``partitions`` partitions, without its expectations."""
    doc = copy.deepcopy(doc)
    for name in ("expected", "checkpoints", "expected_failure"):
        doc.pop(name, None)
    config = doc.setdefault("config", {})
    config["order"] = order
    config["store"] = rng.choice(["rocksdb", "in_memory"])
    config["partitions"] = {"left": partitions, "right": partitions}
    for rec in doc["inputs"]:
        rec["partition"] = rng.randrange(partitions)
    doc["name"] += f"-p{partitions}-{order}"
    return doc


@pytest.fixture(scope="module")
def variants():
    rng = random.Random(99)
    docs = []
    for path in SOURCES:
        doc = read_document(path)
        docs.append(variant(doc, rng, rng.choice([2, 3]), rng.choice(["as_listed", "timestamp_sync"])))
    return docs


def test_byte_identical_for_any_shuffle_partitioning(spark, variants):  # noqa: F811
    # a job's cost grows with its tasks, not its records: a third of the variants will do
    runs = results_per_shuffle_partitioning(spark, [scenario_from_dict(d) for d in variants[::3]])
    first, *others = runs.values()
    assert all(other == first for other in others)
    assert sum(len(b) for b in first) > 5_000  # the variants do produce output


def _single_partition(doc, task):
    """``doc``'s records of partition ``task`` alone, as a one-partition scenario; also the map
    from the new input indexes to the original ones."""
    doc = copy.deepcopy(doc)
    keep = [i for i, rec in enumerate(doc["inputs"]) if rec["partition"] == task]
    doc["inputs"] = [dict(doc["inputs"][i], partition=0) for i in keep]
    doc["config"]["partitions"] = {}
    return doc, keep


def test_each_task_is_independent_of_the_others(spark, variants):  # noqa: F811
    from kssim.spark_backend.runtime.runner import run_scenarios

    batch, index_maps, owners = [], [], []
    for n, doc in enumerate(variants):
        batch.append(doc)
        owners.append((n, None))
        index_maps.append(None)
        for task in range(doc["config"]["partitions"]["left"]):
            single, keep = _single_partition(doc, task)
            if single["inputs"]:
                batch.append(single)
                owners.append((n, task))
                index_maps.append(keep)
    results = run_scenarios([scenario_from_dict(d) for d in batch], spark)
    combined = {}
    for (n, task), keep, result in zip(owners, index_maps, results):
        if task is None:
            combined[n] = result
            continue
        whole = combined[n]
        if whole.failure is not None:
            continue  # a failing task stops the others too: not independent by design
        assert result.failure is None
        mine = [(o.key, o.value, o.ts, o.input_index) for o in whole.outputs if o.partition == task]
        alone = [(o.key, o.value, o.ts, keep[o.input_index]) for o in result.outputs]
        assert mine == alone, variants[n]["name"]
        assert all(o.partition == 0 for o in result.outputs)


def test_timestamp_sync_is_as_listed_in_partition_group_order(spark, variants):  # noqa: F811
    from kssim.spark_backend.runtime.runner import run_scenarios

    synced = [d for d in variants if d["config"]["order"] == "timestamp_sync"]
    assert len(synced) > 20
    batch, orders = [], []
    for doc in synced:
        batch.append(doc)
        profile = profile_for(doc.get("semantics"))
        rule = ("raw_head" if profile.partition_choice_raw_head else
                "max_head" if profile.partition_choice_max_head else "min_tracker")
        recs = [(i, r["topic"], r["partition"], r["ts"]) for i, r in enumerate(doc["inputs"])]
        order = simulate(recs, rule)
        listed = copy.deepcopy(doc)
        listed["config"]["order"] = "as_listed"
        listed["inputs"] = [doc["inputs"][i] for i in order]
        batch.append(listed)
        orders.append(order)
    results = run_scenarios([scenario_from_dict(d) for d in batch], spark)
    for n, order in enumerate(orders):
        synced_run, listed_run = results[2 * n], results[2 * n + 1]
        remap = [(o.partition, o.key, json.dumps(o.value), o.ts, order[o.input_index]) for o in listed_run.outputs]
        assert [(o.partition, o.key, json.dumps(o.value), o.ts, o.input_index) for o in synced_run.outputs] == remap
        assert (synced_run.failure is None) == (listed_run.failure is None)
        if synced_run.failure is not None:
            assert synced_run.failure.input_index == order[listed_run.failure.input_index]
