"""Processing order: which record each task processes next, computed set-based.

Each task (partition N) reads partition N of ``left`` and of ``right``. The order is a sort key per
record, so the whole order is one window function per task instead of a simulated loop:

- ``as_listed`` (TopologyTestDriver: each piped record is processed at once): the input index.
- ``timestamp_sync`` (``PartitionGroup`` over fully buffered partitions; ties to ``left``, then the
  lower partition, as the scenario contract says): every partition is a FIFO in offset order, and
  a task repeatedly takes the head of the partition with the smallest priority key.

  * 2.1-2.3 (KIP-353, ``partition_choice_max_head``) the key is the monotone max of the heads
    seen so far, i.e. the running max of ``ts`` in offset order: non-decreasing per partition, so
    the greedy choice is a sorted merge on (running max, topic rank, offset).
  * 2.4+ (``partition_choice_raw_head``) the key is the raw head timestamp. With two partitions
    per task this gives the same order: when a head ``h`` wins, every later record of its
    partition that is smaller than ``h`` is also smaller than (or, losing ties, not better than)
    the other partition's head, so it is taken right after ``h``; such a record's running max is
    ``h``. Records at or above the running max have their raw ts as key. (Tested against a
    brute-force heap simulation.)
  * before 2.1 (neither rule) the key is the partition time of ``RecordQueue``: the monotone max of
    ``MinTimestampTracker``'s minimum over the still-buffered records, i.e. the minimum of ``ts``
    over the record and everything after it in offset order (a suffix minimum, non-decreasing).

Columns added: ``g1..g4``, the global order key of a record within its scenario (as_listed:
``(idx, 0, 0, 0)``; timestamp_sync: ``(key, task, side, off)``, which also interleaves the tasks the
way one PartitionGroup over all partitions would), and ``seq``, the record's position in its
task's processing order (the input index for as_listed). Every later rule orders by ``seq``; outputs are sorted by
``g1..g4`` and, within one input, by the order the operator forwarded them.

All windows here are partitioned by (scenario, task), like every window after them, so a batch
is shuffled once (``by_task``).
"""
from __future__ import annotations

from pyspark.sql import Window
from pyspark.sql import functions as F

ORDER_KEY = ("g1", "g2", "g3", "g4")


def by_task(frame, features):
    """Cluster a batch by (scenario, task): every later window partitions by a superset of these
    columns, so this is the batch's only shuffle before the final sort. A one-scenario batch
    (a replay) is clustered by task only if some rule needs a window over the whole task (the
    processing order of timestamp_sync, a clock); otherwise every window is per key and Spark
    clusters by key, which spreads one task over all cores."""
    if not features.constants:
        return frame.repartition("sid", "task")
    return frame.repartition("task") if features.per_task_windows else frame


def with_processing_order(records, features):
    """``records`` with the configs' ``ts_sync`` and ``partition_choice_*`` columns -> adds ``g1..g4``, ``seq``.
    A batch without timestamp_sync scenarios needs no window: ``seq`` is the input index."""
    if not features.ts_sync:
        zero = F.lit(0).cast("bigint")
        return records.select("*", F.col("idx").alias("g1"), zero.alias("g2"), zero.alias("g3"), zero.alias("g4"),
                              F.col("idx").alias("seq"))
    up_to = (Window.unboundedPreceding, Window.currentRow)
    forward = Window.partitionBy("sid", "task").orderBy("side", "off").rowsBetween(*up_to)
    # a suffix over the offsets is a prefix in reverse order (a frame ending at unbounded
    # following would be re-aggregated per row)
    backward = Window.partitionBy("sid", "task").orderBy(F.col("side").desc(), F.col("off").desc()).rowsBetween(*up_to)
    side = F.col("side")

    def own_partition(agg, frame):
        # both topics share the frame: mask the other topic so it sees this partition only
        return F.when(side == 0, agg(F.when(side == 0, F.col("ts"))).over(frame)) \
            .otherwise(agg(F.when(side == 1, F.col("ts"))).over(frame))

    # [partition_choice_max_head] [partition_choice_raw_head]: both merge on the running max of
    # each partition's timestamps; before 2.1 on MinTimestampTracker's partition time (suffix min)
    prefix_max = F.col("partition_choice_max_head") | F.col("partition_choice_raw_head")
    priority = F.when(prefix_max, own_partition(F.max, forward)).otherwise(own_partition(F.min, backward))
    sync = F.col("ts_sync")
    with_key = records.select(
        "*",
        F.when(sync, priority).otherwise(F.col("idx")).alias("g1"),
        F.when(sync, F.col("task")).otherwise(F.lit(0)).cast("bigint").alias("g2"),
        F.when(sync, side).otherwise(F.lit(0)).cast("bigint").alias("g3"),
        F.when(sync, F.col("off")).otherwise(F.lit(0)).cast("bigint").alias("g4"),
    )
    order = Window.partitionBy("sid", "task").orderBy("g1", "g3", "g4")
    return with_key.select("*", (F.row_number().over(order) - 1).cast("bigint").alias("seq"))
