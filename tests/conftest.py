"""Fixtures every test area shares (tests/model, tests/reference, tests/spark, tests/difftest,
tests/cli). Helpers that are plain functions live in ``kssim_testing`` (this folder is on the
import path because this conftest is here)."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    """The one SparkSession of the test run (``spark_backend.session.get_spark`` keeps it per
    process, with test-friendly local defaults: few shuffle partitions, serial GC, C1 JIT)."""
    from spark_backend.session import get_spark

    return get_spark()
