"""The Spark backend against every stream-table and table-table conformance file (expectations
from real Kafka Streams), all run in one batched Spark job."""
from __future__ import annotations

import os

import pytest
from kssim_testing import CONFORMANCE, assert_conforms, conformance_files, load_all


FILES = conformance_files("stream_table_join") + conformance_files("table_table_join")


@pytest.fixture(scope="module")
def batch(spark):  # noqa: F811
    from kssim.spark_backend.runtime.runner import run_scenarios

    scenarios = load_all(FILES)
    return dict(zip(FILES, zip(scenarios, run_scenarios(scenarios, spark))))


def test_the_corpus_is_all_there():
    # the task: 252 stream-table and 290 table-table files
    assert len(conformance_files("stream_table_join")) == 252
    assert len(conformance_files("table_table_join")) == 290


@pytest.mark.parametrize("path", FILES, ids=[os.path.relpath(f, CONFORMANCE) for f in FILES])
def test_conformance_file(batch, path):
    assert_conforms(*batch[path])


#: every 25th file of each operator (all releases, both orders, both stores, grace, versioned)
ALONE = [f for op in ("stream_stream_join", "stream_table_join", "table_table_join")
         for f in conformance_files(op)[::25]]


@pytest.mark.parametrize("path", ALONE, ids=[os.path.relpath(f, CONFORMANCE) for f in ALONE])
def test_a_scenario_run_alone_conforms(spark, path):  # noqa: F811
    """A one-scenario batch (a replay, ``kssim run`` of one file) takes another plan: its settings
    are literals the optimizer folds, and without per-task rules it is clustered by key."""
    from kssim.spark_backend.runtime.inputs import Features, config_row
    from kssim.spark_backend.runtime.runner import run_scenarios

    scenario, = load_all([path])
    assert Features.of([config_row(0, scenario)]).constants  # the literal plan
    assert_conforms(scenario, run_scenarios([scenario], spark)[0])
