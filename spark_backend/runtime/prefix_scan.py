"""Running aggregates over a task's processing order, computed in parallel blocks.

A window over a whole task (a store's clock, the task's stream time) puts every record of the
task into one partition: one core does the whole sort and scan. In ``as_listed`` order a record's
position is its input index (``g1``), so the order splits into blocks of consecutive indexes, and
an associative running aggregate before position q is the combination of

- the *carry*: the aggregate of every earlier block (one total per block from an aggregation,
  then a window over one row per block: a few rows), joined back by block (broadcast), and
- the *local* part: a window over q's own block (partitioned by block, so in parallel).

Two aggregates are needed: ``MAX`` (a clock: max ts so far; ``greatest`` of carry and local, both
ignoring nulls) and ``FIRST`` (the first non-null value in order, e.g. a store's first put: the
carry's if an earlier block has one, else the local one). Without a block size (timestamp_sync
order, small batches) the same columns come from plain windows over the task.
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

import attrs
from pyspark.sql import Window
from pyspark.sql import functions as F

MAX, FIRST = "max", "first"
BEFORE = (Window.unboundedPreceding, -1)
UP_TO = (Window.unboundedPreceding, Window.currentRow)
_BLOCK = "_scan_block"


@attrs.frozen
class Running:
    """Column ``name``: the ``kind`` aggregate of ``expr`` over the task's rows before this one
    (``inclusive``: up to and including it) in processing order."""

    name: str
    kind: str
    expr: object
    inclusive: bool = False


def _window_agg(kind, expr, window):
    return F.max(expr).over(window) if kind == MAX else F.first(expr, ignorenulls=True).over(window)


def running(frame, specs: Sequence[Running], order: Tuple[str, ...], block_size: Optional[int]):
    """``frame`` plus one column per spec. ``block_size``: positions per block (``g1 div
    block_size``, valid only when ``g1`` is the position, i.e. ``as_listed``), or None for one
    window per task."""
    if block_size is None:
        in_task = Window.partitionBy("sid", "task").orderBy(*order)
        return frame.select("*", *[
            _window_agg(s.kind, s.expr, in_task.rowsBetween(*(UP_TO if s.inclusive else BEFORE))).alias(s.name)
            for s in specs])
    frame = frame.select("*", F.expr(f"g1 div {int(block_size)}").alias(_BLOCK))
    scope = ("sid", "task", _BLOCK)
    in_block = Window.partitionBy(*scope).orderBy(*order)
    local = frame.select("*", *[
        _window_agg(s.kind, s.expr, in_block.rowsBetween(*(UP_TO if s.inclusive else BEFORE))).alias("_l_" + s.name)
        for s in specs])
    position = F.struct(*[F.col(c) for c in order])
    totals = frame.groupBy(*scope).agg(*[
        (F.max(s.expr) if s.kind == MAX else F.min_by(s.expr, F.when(s.expr.isNotNull(), position))).alias("_t_" + s.name)
        for s in specs])
    earlier = Window.partitionBy("sid", "task").orderBy(_BLOCK).rowsBetween(*BEFORE)
    carry = totals.select(*scope, *[_window_agg(s.kind, F.col("_t_" + s.name), earlier).alias("_c_" + s.name)
                                    for s in specs])
    joined = local.join(F.broadcast(carry), list(scope), "left")
    combined = [(F.greatest(F.col("_c_" + s.name), F.col("_l_" + s.name)) if s.kind == MAX
                 else F.coalesce(F.col("_c_" + s.name), F.col("_l_" + s.name))).alias(s.name) for s in specs]
    return joined.select(*frame.columns, *combined).drop(_BLOCK)
