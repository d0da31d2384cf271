"""Running aggregates in parallel blocks (``spark_backend.runtime.prefix_scan``): the same columns as one
window per task, and the stream-stream conformance corpus with its clocks computed in blocks."""
from __future__ import annotations

import os
import random

import pytest
from kssim_testing import CONFORMANCE, assert_conforms, conformance_files, load_all

_FILES = conformance_files("stream_stream_join")
AS_LISTED = [f for f, s in zip(_FILES, load_all(_FILES)) if s.config.order == "as_listed"]


def _frame(spark, seed):  # noqa: F811
    """Two scenarios of two tasks each, positions 0..n-1 per task (``g1``), a nullable ``x``."""
    rng = random.Random(seed)
    rows = []
    for sid in (0, 1):
        for task in (0, 1):
            for pos in range(rng.randint(0, 30)):
                rows.append((sid, task, pos, 0, 0, rng.choice([None, rng.randint(-5, 50)])))
    return spark.createDataFrame(rows, "sid INT, task INT, g1 BIGINT, g3 BIGINT, g4 BIGINT, x BIGINT")


@pytest.mark.parametrize("block_size", [1, 2, 7, 100])
def test_blocks_give_the_columns_of_one_window_per_task(spark, block_size):  # noqa: F811
    from pyspark.sql import functions as F

    from kssim.spark_backend.runtime.prefix_scan import FIRST, MAX, Running, running

    specs = [Running("max_before", MAX, F.col("x")), Running("max_up_to", MAX, F.col("x"), inclusive=True),
             Running("first_before", FIRST, F.col("x")), Running("first_up_to", FIRST, F.col("x"), inclusive=True),
             Running("first_even", FIRST, F.when(F.col("x") % 2 == 0, F.col("g1")))]
    order = ("g1", "g3", "g4")
    for seed in range(3):
        frame = _frame(spark, seed)
        whole = sorted(running(frame, specs, order, None).collect())
        blocked = running(frame, specs, order, block_size)
        assert blocked.columns == frame.columns + [s.name for s in specs]
        assert sorted(blocked.collect()) == whole
        # and the plain windows are what the names say
        for row in whole:
            earlier = [r["x"] for r in whole if (r["sid"], r["task"]) == (row["sid"], row["task"]) and r["g1"] < row["g1"]]
            present = [x for x in earlier if x is not None]
            assert row["max_before"] == (max(present) if present else None)
            assert row["first_before"] == (present[0] if present else None)


@pytest.fixture(scope="module")
def blocked_results(spark):  # noqa: F811
    from kssim.spark_backend.runtime.runner import run_scenarios

    scenarios = load_all(AS_LISTED)
    return dict(zip(AS_LISTED, zip(scenarios, run_scenarios(scenarios, spark, scan_block=2))))


def test_the_corpus_has_as_listed_stream_stream_files():
    assert len(AS_LISTED) > 300


@pytest.mark.parametrize("path", AS_LISTED, ids=[os.path.relpath(f, CONFORMANCE) for f in AS_LISTED])
def test_stream_stream_conforms_with_clocks_in_blocks(blocked_results, path):
    assert_conforms(*blocked_results[path])
