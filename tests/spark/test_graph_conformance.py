"""Topology graphs on Spark against ``../shared/conformance-graphs`` (expectations from real Kafka
Streams 3.9), every file in one batched run, and what Spark does not run yet refused by name.

``CLAIMED``: the families every file of which the Spark backend runs; each of their files must
match its expectations (outputs per topic, failure) and the reference engine's drops. Files of the
other families must be either run exactly or refused with an ``UnsupportedOperator`` that names
what is missing (never a wrong result).
"""
from __future__ import annotations

import glob
import os

import pytest
from kssim_testing import CONFORMANCE_GRAPHS, assert_conforms, load_all

from kssim.reference.model.errors import UnsupportedOperator

FILES = sorted(glob.glob(os.path.join(CONFORMANCE_GRAPHS, "kafka-oracle", "*", "*.json")))
CLAIMED = ("stateless",)


def family(path) -> str:
    return os.path.basename(os.path.dirname(path))


@pytest.fixture(scope="module")
def batch(spark):  # noqa: F811
    from kssim.spark_backend.runtime.runner import run_scenarios

    scenarios = load_all(FILES)
    return dict(zip(FILES, zip(scenarios, run_scenarios(scenarios, spark))))


@pytest.fixture(scope="module")
def reference_drops():
    from kssim_testing import run_on

    scenarios = load_all(FILES)
    return {path: result for path, result in zip(FILES, run_on("reference", scenarios))}


def _drops(result):
    return [(d.input_index, d.reason, d.node) for d in result.drops]


CLAIMED_FILES = [f for f in FILES if family(f) in CLAIMED]


@pytest.mark.parametrize("path", CLAIMED_FILES, ids=[os.path.relpath(f, CONFORMANCE_GRAPHS) for f in CLAIMED_FILES])
def test_claimed_graph_file(batch, reference_drops, path):
    scenario, result = batch[path]
    assert not isinstance(result, Exception), result
    assert_conforms(scenario, result)
    assert _drops(result) == _drops(reference_drops[path])


def test_other_graph_files_are_exact_or_refused_by_name(batch):
    wrong, refused = [], 0
    for path in FILES:
        if family(path) in CLAIMED:
            continue
        scenario, result = batch[path]
        if isinstance(result, UnsupportedOperator):
            assert "graph" in str(result) or "caching" in str(result), result
            refused += 1
            continue
        try:
            assert_conforms(scenario, result)
        except AssertionError:
            wrong.append(os.path.relpath(path, CONFORMANCE_GRAPHS))
    assert not wrong, f"Spark ran these graph files and got them wrong: {wrong}"
