"""Internal topics as ``TopologyTestDriver`` reads them back: one FIFO queue per topic (one
partition each), and the task's choice among the non-empty ones, ``PartitionGroup``'s
``nonEmptyQueuesByTime``: a ``java.util.PriorityQueue`` of queues keyed by their head record's
timestamp.

Java's binary heap is reproduced exactly (``siftUp`` stops at a parent that is not larger,
``siftDown`` takes the smaller child, the right one only when strictly smaller), because equal
timestamps are left in heap order, which is not first-in-first-out in general. A queue enters the
heap when a record makes it non-empty; the task polls the heap, takes the queue's head record and
offers the queue again if it still holds records.

Costs: :meth:`InternalQueues.append` O(log q) when the queue was empty, else O(1);
:meth:`InternalQueues.take` O(log q), q the number of non-empty queues.
"""
from __future__ import annotations

from collections import deque
from typing import Optional


class JavaPriorityQueue:
    """``java.util.PriorityQueue`` with a comparator on ``key(element)``: offer and poll only."""

    __slots__ = ("items", "key")

    def __init__(self, key):
        self.items: list = []
        self.key = key

    def __len__(self):
        return len(self.items)

    def offer(self, element) -> None:
        items, key = self.items, self.key
        k = len(items)
        items.append(element)
        x = key(element)
        while k > 0:
            parent = (k - 1) >> 1
            e = items[parent]
            if x >= key(e):
                break
            items[k] = e
            k = parent
        items[k] = element

    def poll(self):
        items, key = self.items, self.key
        if not items:
            return None
        result = items[0]
        last = items.pop()
        n = len(items)
        if n:
            x = key(last)
            k, half = 0, n >> 1
            while k < half:
                child = 2 * k + 1
                c = items[child]
                right = child + 1
                if right < n and key(c) > key(items[right]):
                    child = right
                    c = items[child]
                if x <= key(c):
                    break
                items[k] = c
                k = child
            items[k] = last
        return result


class InternalQueues:
    """The internal topics' partition queues of the task and the heap that picks the next one."""

    __slots__ = ("queues", "heap")

    def __init__(self):
        self.queues: dict = {}
        self.heap = JavaPriorityQueue(lambda q: q[0][3])  # a queue's head record's timestamp

    def append(self, record: tuple) -> None:
        """Enqueue ``(topic, key, value, ts, why)`` on its topic's queue (``enqueueTaskRecord``)."""
        queue = self.queues.get(record[0])
        if queue is None:
            queue = self.queues[record[0]] = deque()
        queue.append(record)
        if len(queue) == 1:
            self.heap.offer(queue)

    def take(self) -> Optional[tuple]:
        """The next record the task processes (``PartitionGroup#nextRecord``), or None."""
        queue = self.heap.poll()
        if queue is None:
            return None
        record = queue.popleft()
        if queue:
            self.heap.offer(queue)
        return record

    def __bool__(self):
        return bool(self.heap)
