"""Column sets the stages of the FK join share, and the one union helper.

- ``ORDER``: a row's input position (``g1..g4``: the processing-order key of the input that caused
  it); every as-of lookup orders by it.
- ``ROUTING``: the settings that route subscriptions and responses to tasks (``fk_tasks``,
  ``fk_response_to_primary_partition``); ``CARRIED``: the settings the result needs (``join``,
  ``send_old``, ``ktable_emit_on_change``).
"""
from __future__ import annotations

from pyspark.sql import functions as F

ORDER = ("g1", "g2", "g3", "g4")
ROUTING = ("fk_tasks", "fk_response_to_primary_partition")
CARRIED = ("join", "send_old", "ktable_emit_on_change")
#: a response: the causing input, the task it is routed to, key, hash, foreign value, ts, its
#: order within the input (``f1``, ``f2``) and ``CARRIED``
RESPONSE_COLUMNS = ("sid", "idx") + ORDER + ("r", "pk", "hash", "fv", "ts", "f1", "f2") + CARRIED


def few(frame):
    """``frame`` in at most one partition per core (``coalesce``: no shuffle). Before a union that
    feeds an exchange, and before the final union: each task of a stage costs milliseconds even
    when its partition is empty, and with many shuffle partitions most are (a union of three
    frames of 200 partitions is a stage of 600 tasks). Never a question of correctness: every
    window and join shuffles by its own keys, and the runner sorts the events."""
    return frame.coalesce(max(1, frame.sparkSession.sparkContext.defaultParallelism))


def aligned(rows, like):
    """``rows`` with the columns of ``like`` (typed nulls for those it lacks), for a union."""
    types = dict(like.dtypes)
    present = set(rows.columns)
    return rows.select(*[(F.col(c) if c in present else F.lit(None).cast(types[c])).alias(c) for c in like.columns])
