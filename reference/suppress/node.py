"""Where suppress sits: downstream of a table-result operator, inside the same task.

Kafka forwards depth-first: when the operator forwards a ``Change`` of its result table, the
suppress processor runs at once, inside that forward, and what it evicts goes on to the sink
before the operator continues (a session merge's tombstones and its new session reach suppress
one by one, each possibly evicting older results). :class:`SuppressedTask` reproduces this by
handing the operator a :class:`ForwardingContext` whose ``emit`` is the suppress processor's
``process``; everything else (``drop``, ``fail``, ``send``, ``input_index``, ``explain``) is the
task's own context, so suppressed outputs are attributed to the input being processed.
"""
from __future__ import annotations

from kssim.reference.model.pending import pending_of
from kssim.reference.model.records import NO_OLD_VALUE
from kssim.reference.model.scenario import OUTPUT_TOPIC


class ForwardingContext:
    """The task context as the operator sees it: its result forwards go to the suppress processor."""

    __slots__ = ("_ctx", "_suppress", "_topic")

    def __init__(self, ctx, suppress):
        self._ctx = ctx
        self._suppress = suppress
        self._topic = ""

    def __getattr__(self, name):
        # only names not defined here reach this: everything but emit is the task's context
        return getattr(self._ctx, name)

    def emit(self, key, value, ts, why=None, old_value=NO_OLD_VALUE, topic=OUTPUT_TOPIC):
        if topic != OUTPUT_TOPIC:
            self._ctx.emit(key, value, ts, why, old_value, topic)
            return
        self._suppress.process(key, value, old_value, ts, why, self._topic, self._ctx)


class SuppressedTask:
    """An operator's task processor followed by its suppress processor (one per task)."""

    __slots__ = ("upstream", "suppress", "_contexts", "_task_stream_time")

    def __init__(self, upstream, suppress):
        self.upstream = upstream
        self.suppress = suppress
        self._contexts = {}
        # 2.1: the suppress processor reads the task's stream time, advanced by every record
        self._task_stream_time = not suppress.plan.observed_stream_time

    def pending(self, task: int) -> tuple:
        """What the operator holds (an emit-final window store, a join's outer store), then the
        suppress buffer."""
        return pending_of(self.upstream, task) + self.suppress.pending(task)

    def process(self, topic, key, value, ts, ctx):
        if self._task_stream_time:
            self.suppress.observe_task_record(ts)
        forwarding = self._contexts.get(id(ctx))
        if forwarding is None or forwarding._ctx is not ctx:
            forwarding = self._contexts[id(ctx)] = ForwardingContext(ctx, self.suppress)
        forwarding._topic = topic
        self.upstream.process(topic, key, value, ts, forwarding)
