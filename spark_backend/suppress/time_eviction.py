"""Stage 2 (set-based): which buffered entries an unbounded buffer evicts by time, and when.

An unbounded buffer is never over capacity, so an entry leaves only by time: after change ``j``
is buffered, every entry whose buffer time is ``<= st_j - wait`` (the expiry ``x_j``) is evicted, in
buffer order (buffer time, then key bytes). With a wait in ``[0, Long.MAX_VALUE]`` the subtraction
never overflows and ``x_j`` never decreases (``settings`` routes the other scenarios to the
sequential pass), so an entry with buffer time ``b`` put at change ``s`` is evicted at the first
change ``j >= s`` whose expiry reaches ``b``: ``max(s, J(b))``, where ``J(b)`` = the first change of
the task with ``x_j >= b`` (null: never, the entry is still buffered at the end).

``J`` for every change at once: the expiries and the wanted buffer times of one task, in one
column, sorted by value descending (an expiry before a wanted time it equals); the smallest change
number among the expiries before a wanted time ``b`` is ``J(b)``, a running min (one window).

Episodes: a key enters the buffer with a change when it is not buffered, and stays in its place
(non-resetting put) until evicted; every later change of it replaces only the record. So the
changes of one key fall into *episodes*, each evicted once, at its end ``e``, emitting the
episode's latest change (a change is emitted iff the key's next change comes after ``e``):

- untilWindowCloses: the buffer time is the window end, the same for every change of the key, so
  every episode ends at ``max(r, J(end))``: the changes up to ``J(end)`` form one episode, every
  later change (a record the upstream still forwards after the window closed) is its own;
- untilTimeLimit: the buffer time is the ts of the change that opened the episode, so where one
  episode ends depends on where it began: a fold per key (``episodes``) chains them.

An evicted entry is forwarded while the task processes change ``e``: attributed to e's input
(``idx``, ``g1..g4``), ordered by ``f1`` = e's place among its input's events (``q``) and then its
place in the buffer (``f3``), with the
timestamp, value and old value of its latest change. A tombstone is not forwarded when it is safe
to drop (untilWindowCloses).
"""
from __future__ import annotations

from pyspark.sql import Window
from pyspark.sql import functions as F

from kssim.spark_backend.suppress.changes import buffer_key_bytes, key_type, window_end

EXPIRY, WANTED = 1, 0


def with_first_expiry(changes, wanted):
    """The changes (with ``st``) -> adds ``first_at``: ``J(wanted)``, the first change of the task
    whose expiry reaches the ``wanted`` buffer time (null: none)."""
    expiry = F.col("st") - F.col("sup_wait")
    both = changes.select("*", F.explode(F.array(
        F.struct(expiry.alias("v"), F.lit(EXPIRY).alias("kind")),
        F.struct(wanted.alias("v"), F.lit(WANTED).alias("kind")))).alias("_x"))
    before = Window.partitionBy("sid", "task").orderBy(F.col("_x.v").desc(), F.col("_x.kind").desc()) \
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    first = F.min(F.when(F.col("_x.kind") == EXPIRY, F.col("r"))).over(before)
    return both.select("*", first.alias("first_at")).filter(F.col("_x.kind") == WANTED).drop("_x")


def window_end_episodes(changes):
    """untilWindowCloses changes -> adds ``bt`` (the window end) and ``e`` (the change their
    episode is evicted at, null: never)."""
    end = window_end(F.col("key"))
    found = with_first_expiry(changes.select("*", end.alias("bt")), F.col("bt"))
    evicted_at = F.when(F.col("first_at").isNotNull(), F.greatest(F.col("r"), F.col("first_at")))
    return found.select(*[c for c in found.columns if c != "first_at"], evicted_at.alias("e"))


def time_limit_candidates(changes):
    """untilTimeLimit changes -> adds ``c``: where an episode opened by this change would end
    (``max(r, J(ts))``; null: never), the input of the per-key fold."""
    found = with_first_expiry(changes, F.col("ts"))
    ends = F.when(F.col("first_at").isNotNull(), F.greatest(F.col("r"), F.col("first_at")))
    return found.select(*[c for c in found.columns if c != "first_at"], ends.alias("c"))


def evicted(episodes):
    """Changes with ``bt`` and ``e`` -> the ones forwarded at ``e`` (the last of their episode),
    with ``f3``: their place among the entries evicted at ``e`` (buffer time, key bytes)."""
    next_change = F.lead("r").over(Window.partitionBy("sid", "task", "key").orderBy("r"))
    rows = episodes.select("*", next_change.alias("_next"))
    last = F.col("e").isNotNull() & (F.col("_next").isNull() | (F.col("_next") > F.col("e")))
    rows = rows.filter(last).drop("_next")
    kind = F.col("sup_key_kind")
    at_step = Window.partitionBy("sid", "task", "e").orderBy(
        "bt", buffer_key_bytes(F.col("key"), kind, F.col("sup_json_serde")), key_type(F.col("key"), kind))
    return rows.select("*", F.row_number().over(at_step).cast("bigint").alias("f3"))
