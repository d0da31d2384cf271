"""How a foreign-key join's internal topics are partitioned (the sinks' partitioners).

- Subscription topic (key: FK): the producer's default partitioner, murmur2 over the serialized
  FK modulo the partition count, which is the foreign (right) table's: the topic is
  co-partitioned with it, so a FK's subscriptions meet its RHS row in the same task. A null FK
  (only the 3.7+ left join sends one) gets the producer's "sticky" choice of partition; kssim
  takes the sending task's partition modulo the count. Where it lands does not matter: the
  receiver stores nothing for it and the response is routed by ``primary_partition``.
- Response topic (key: LHS PK), co-partitioned with the primary (left) table:
  [``fk_response_to_primary_partition``, 3.3, KAFKA-13769] the partition the LHS record was read
  from (``SubscriptionWrapper.primaryPartition``); before 3.3 the default partitioner over the
  serialized PK, which is the LHS record's own partition only when the LHS topic was itself
  partitioned by murmur2 over the PK. Otherwise the response reaches a task that does not hold
  the row, whose hash check then fails (or, for a delete, passes against the absent row).
"""
from __future__ import annotations

from kssim.reference.model.keys import partition_for


class Routing:
    """The partitioners of one FK join: ``left_partitions`` (= the response topic's),
    ``right_partitions`` (= the subscription topic's)."""

    __slots__ = ("left_partitions", "right_partitions", "to_primary_partition")

    def __init__(self, left_partitions: int, right_partitions: int, to_primary_partition: bool):
        self.left_partitions = left_partitions
        self.right_partitions = right_partitions
        self.to_primary_partition = to_primary_partition

    def subscription_partition(self, fk, task_id: int) -> int:
        """The subscription topic partition of a subscription keyed by ``fk``."""
        if self.right_partitions == 1:
            return 0
        if fk is None:
            return task_id % self.right_partitions
        return partition_for(fk, self.right_partitions)

    def response_partition(self, pk, primary_partition: int) -> int:
        """The response topic partition of a response keyed by ``pk``."""
        if self.to_primary_partition:
            return primary_partition
        if self.left_partitions == 1:
            return 0
        return partition_for(pk, self.left_partitions)

    def describe_response(self, partition: int) -> str:
        """How the response partition was chosen, for explanations."""
        if self.to_primary_partition:
            return f"response partition {partition} (primaryPartition, KAFKA-13769)"
        return f"response partition {partition} (murmur2 over the PK, before KAFKA-13769)"
