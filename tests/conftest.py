"""Fixtures every test area shares (tests/model, tests/reference, tests/spark, tests/difftest,
tests/cli). Helpers that are plain functions live in ``kssim_testing`` (this folder is on the
import path because this conftest is here)."""
from __future__ import annotations

import pytest

import kssim_testing


@pytest.fixture(scope="session")
def spark():
    """The one SparkSession of the test run (``spark_backend.session.get_spark`` keeps it per
    process, with test-friendly local defaults: few shuffle partitions, serial GC, C1 JIT)."""
    from kssim.spark_backend.session import get_spark

    return get_spark()


@pytest.fixture(scope="session")
def run_on():
    """``run_on(engine, scenarios, **options)``: one result (a RunResult, or the exception that
    stopped it) per scenario, through the engine table (``reference.model.engines``)."""
    return kssim_testing.run_on


@pytest.fixture(scope="session")
def assert_scenario_passes():
    """``assert_scenario_passes(scenario, engine="reference")``: run the scenario on the engine
    and fail the test, with the first difference, unless it passes as ``kssim check`` judges it
    (``reference.model.compare.judge``: expected outputs and expected failure). Returns the run."""
    return kssim_testing.assert_scenario_passes
