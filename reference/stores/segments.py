"""The segment clock of Kafka's RocksDB segmented stores (``Segments``, ``KeyValueSegments``,
``SessionSegments``), shared by the window and session stores that are built on them.

A segmented store keeps its records in segments of ``segment_interval_ms`` (one bucket each in our
stores); a put goes to segment ``ts // interval``, and segments older than the live ones are
deleted. Which segments live is a release rule: before KAFKA-7072 (2.1) the newest
``live_segments`` (3); since, every segment that can still hold a record younger than the
retention, by the store's observed time. In 2.1 that clock is the task's stream time, fed through
:meth:`observe`; since 2.2 each store keeps its own.

The host class provides ``bucket_ms`` (the segment interval), ``observed_ms`` (the clock),
``retention_ms``, and the attributes ``live_segments``, ``task_clock`` and ``max_segment``.
"""
from __future__ import annotations


class SegmentClock:
    """A mixin: the segment arithmetic of a RocksDB segmented store (see the module docstring)."""

    __slots__ = ()

    @property
    def segment_interval_ms(self) -> int:
        """The segment interval (one bucket per segment). Cost: O(1)."""
        return self.bucket_ms

    def segment_id(self, ts: int) -> int:
        """The segment ``ts`` falls in (``Segments#segmentId``); a session store passes the
        session's end. Cost: O(1)."""
        return ts // self.bucket_ms

    def min_live_segment(self) -> int:
        """The oldest segment id a put may still go to (older segments are deleted). Cost: O(1)."""
        if self.live_segments is not None:  # Segments before KAFKA-7072: the newest N segments
            return self.max_segment - self.live_segments + 1
        low = self.observed_ms - self.retention_ms
        # Java's division truncates: a clock still below the retention gives segment 0: nothing expired
        return low // self.bucket_ms if low > 0 else 0

    def observe(self, ts: int) -> None:
        """2.1: the task's stream time moved (every record of the task, before it is processed);
        since 2.2 the store keeps its own clock and ignores this. Cost: O(1)."""
        if self.task_clock and ts > self.observed_ms:
            self.observed_ms = ts
