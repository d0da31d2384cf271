"""Every shrunk divergence kept in ``scenarios/regressions/`` (found by ``kssim difftest``, fixed,
kept so it cannot come back) on the Spark backend, in one batch: each file's expected outputs and
failure, and the reference engine's drops. The reference runs the same files as bundled scenarios
(``tests/reference/test_conformance.py``), so every regression is held on both engines."""
from __future__ import annotations

import os

import pytest
from kssim_testing import BUNDLED, assert_conforms, reference_results, spark_batch

from kssim.reference.model.scenario import find_scenario_files

REGRESSIONS = os.path.join(BUNDLED, "regressions")
FILES = find_scenario_files([REGRESSIONS])


@pytest.fixture(scope="module")
def batch(spark):  # noqa: F811
    return spark_batch(FILES, spark)


@pytest.fixture(scope="module")
def reference():
    return reference_results(FILES)


def _drops(result):
    return [(d.input_index, d.reason, d.node) for d in result.drops]


def test_the_graph_regressions_are_there():
    # the divergences of random topology graphs (kssim difftest --graphs): a graph suppress's
    # byte bound and eviction order (graphs' JSON serde), and value getters of key-aware
    # map_values read by FK and stream-table joins
    names = {os.path.basename(f) for f in FILES}
    assert {"graph-suppress-time-limit-byte-bound-json-serde.json",
            "graph-suppress-eviction-order-json-key-bytes.json",
            "graph-fk-join-getters-apply-key-aware-mappers.json",
            "graph-stream-table-join-getter-applies-key-aware-mapper.json"} <= names


@pytest.mark.parametrize("path", FILES, ids=[os.path.relpath(f, REGRESSIONS) for f in FILES])
def test_regression_file(batch, reference, path):
    scenario, result = batch[path]
    assert not isinstance(result, Exception), result
    assert_conforms(scenario, result)
    assert _drops(result) == _drops(reference[path])
