"""Topology graphs on Spark against ``../shared/conformance-graphs`` (expectations from real Kafka
Streams 3.9) in one batched run, and what Spark does not run yet refused by name.

``CLAIMED``: the families every file of which the Spark backend runs (all 375 files pass: ``kssim
check --engine spark ../shared/conformance-graphs``, several minutes on 2 cores); the suite runs
every ``SAMPLE``-th file of each (the first of each family included), which must match its
expectations (outputs per topic, failure) and the reference engine's drops. Every file of the other families must be refused with
an ``UnsupportedOperator`` that names what is missing (never a wrong result).
"""
from __future__ import annotations

import glob
import os

import pytest
from kssim_testing import CONFORMANCE_GRAPHS, assert_conforms, reference_results, spark_batch

from kssim.reference.model.errors import UnsupportedOperator

ALL_FILES = sorted(glob.glob(os.path.join(CONFORMANCE_GRAPHS, "kafka-oracle", "*", "*.json")))
CLAIMED = ("stateless", "table-stateless", "rekey-join", "stream-aggregate", "table-aggregate", "windowed-aggregate",
           "join-then-window", "agg-join", "merge-flatmap", "suppress", "fk-join", "caching")
#: the suite's share of each claimed family (the whole corpus on Spark takes minutes)
SAMPLE = 20


def family(path) -> str:
    return os.path.basename(os.path.dirname(path))


FILES = [f for f in ALL_FILES if family(f) not in CLAIMED] + [
    f for name in CLAIMED for f in [g for g in ALL_FILES if family(g) == name][::SAMPLE]]


@pytest.fixture(scope="module")
def batch(spark):  # noqa: F811
    return spark_batch(FILES, spark)


@pytest.fixture(scope="module")
def reference_drops():
    return reference_results(FILES)


def _drops(result):
    return [(d.input_index, d.reason, d.node) for d in result.drops]


CLAIMED_FILES = [f for f in FILES if family(f) in CLAIMED]


@pytest.mark.parametrize("path", CLAIMED_FILES, ids=[os.path.relpath(f, CONFORMANCE_GRAPHS) for f in CLAIMED_FILES])
def test_claimed_graph_file(batch, reference_drops, path):
    scenario, result = batch[path]
    assert not isinstance(result, Exception), result
    assert_conforms(scenario, result)
    assert _drops(result) == _drops(reference_drops[path])


def test_every_family_is_claimed_or_refused_by_name(batch):
    refusals = {}
    for path in FILES:
        if family(path) in CLAIMED:
            continue
        result = batch[path][1]
        assert isinstance(result, UnsupportedOperator), (path, result)
        refusals.setdefault(family(path), set()).add(str(result).split(" (")[0].split("[")[0])
    # what is not built yet, said as a user reads it (every family is claimed now)
    assert refusals == {}, refusals
