"""Java long arithmetic on Spark (``spark_backend.runtime.long_sums``): running sums, the sum
before a row, negation and addition wrap as Java's ``long`` does, for any longs, Long.MIN and
Long.MAX among them."""
from __future__ import annotations

import random

import pytest

LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1
EDGES = (LONG_MAX, LONG_MIN, 0, 1, -1, LONG_MAX - 1, LONG_MIN + 1, (1 << 32) - 1, 1 << 32, -(1 << 32), None)


def java(n: int) -> int:
    return (n - LONG_MIN) % (1 << 64) + LONG_MIN


def _groups(seed: int):
    rng = random.Random(seed)
    return [(group, position, rng.choice(EDGES + (rng.randint(LONG_MIN, LONG_MAX),)))
            for group in range(40) for position in range(rng.randint(1, 12))]


@pytest.mark.parametrize("seed", [1, 2])
def test_running_sums_wrap_as_java_longs(spark, seed):  # noqa: F811
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from kssim.spark_backend.runtime import long_sums

    rows = _groups(seed)
    frame = spark.createDataFrame(rows, "g INT, i INT, v BIGINT")
    upto = Window.partitionBy("g").orderBy("i").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    own = long_sums.parts(F.col("v"))
    total = long_sums.summed(own, upto)
    minus = long_sums.negated(own)
    got = frame.select("g", "i", long_sums.as_long(total).alias("total"),
                       long_sums.as_long(long_sums.minus_own(total, own)).alias("before"),
                       long_sums.as_long(minus).alias("negated"),
                       long_sums.as_long(long_sums.plus(own, own)).alias("doubled"),
                       long_sums.as_long(long_sums.plus(own, minus)).alias("zero"),
                       long_sums.as_long(long_sums.chosen(F.col("i") % 2 == 0, own, minus)).alias("chosen"),
                       ).orderBy("g", "i").collect()
    totals = {}
    assert len(got) == len(rows)
    for (g, i, v), row in zip(sorted(rows), got):
        v = v or 0  # a null counts as 0
        before = totals.get(g, 0)
        totals[g] = java(before + v)
        assert (row["g"], row["i"]) == (g, i)
        assert row.asDict() == {"g": g, "i": i, "total": totals[g], "before": before, "negated": java(-v),
                                "doubled": java(2 * v), "zero": 0, "chosen": v if i % 2 == 0 else java(-v)}
