"""The Spark backend against every stream-table and table-table conformance file (expectations
from real Kafka Streams), all run in one batched Spark job."""
from __future__ import annotations

import os

import pytest
from spark_fixtures import CONFORMANCE, assert_conforms, conformance_files, load_all, spark  # noqa: F401


FILES = conformance_files("stream_table_join") + conformance_files("table_table_join")


@pytest.fixture(scope="module")
def batch(spark):  # noqa: F811
    from spark_backend.runner import run_scenarios

    scenarios = load_all(FILES)
    return dict(zip(FILES, zip(scenarios, run_scenarios(scenarios, spark))))


def test_the_corpus_is_all_there():
    # the task: 252 stream-table and 290 table-table files
    assert len(conformance_files("stream_table_join")) == 252
    assert len(conformance_files("table_table_join")) == 290


@pytest.mark.parametrize("path", FILES, ids=[os.path.relpath(f, CONFORMANCE) for f in FILES])
def test_conformance_file(batch, path):
    assert_conforms(*batch[path])
