"""Record types shared by every engine: input records, output records, drops, and the result of a run.

Input and output records are immutable ``NamedTuple``s rather than frozen ``attrs`` classes: an
engine creates one per input and one per output, and a tuple is built about ten times faster than
a frozen attrs instance (which sets each field through ``object.__setattr__``). They carry no
behaviour. ``Drop`` is rarer and stays a frozen attrs class.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

import attrs

#: Marker for "no old value reported" (distinct from a ``None`` old value, which is a null).
NO_OLD_VALUE = type("NoOldValue", (), {"__repr__": lambda self: "NO_OLD_VALUE", "__bool__": lambda self: False})()


class InputRecord(NamedTuple):
    """One record of an input topic partition. ``index`` is its position in the scenario's inputs."""

    topic: str
    key: object
    value: object
    ts: int
    partition: int = 0
    index: int = -1


class OutputRecord(NamedTuple):
    """One record written to an output topic.

    ``input_index`` is the index of the input whose processing emitted it; ``why`` explains it
    (a :class:`reference.runtime.explain.Why`, or None when explanations were not asked for). Two records
    are equal when everything but ``why`` is.
    """

    topic: str
    partition: int
    key: object
    value: object
    ts: int
    input_index: int
    old_value: object = NO_OLD_VALUE
    why: object = None

    def __eq__(self, other):
        return isinstance(other, OutputRecord) and self[:7] == other[:7]

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(self[:7])


@attrs.frozen(slots=True)
class Drop:
    """An input record that was dropped or ignored (entirely or in part), and why.

    ``reason`` is a :class:`reference.model.codes.DropReason` (its ``code``, ``null_key``,
    ``expired_window_put`` ..., is what users filter on); ``why`` is the engine's explanation
    with its numbers (the reference's ``Why``; None when not asked for, or from engines that do
    not explain).
    """

    input_index: int
    reason: object
    why: object = attrs.field(default=None, eq=False)
    #: the graph node that dropped it (``graph[3] join``); None for a single-operator topology
    node: object = attrs.field(default=None, eq=False)
    #: ``(key, start, end)`` of the window an ``unemitted_window`` drop lost (its inputs were
    #: aggregated: the window's final result is what never comes out); () for other drops
    window: tuple = attrs.field(default=(), eq=False)


@attrs.frozen
class RunResult:
    """What one engine made of one scenario (every engine returns this type).

    ``outputs``: output records in output order; ``drops``: in input order; ``failure``: the
    :class:`reference.model.errors.KafkaWouldFail` that stopped the run (what was emitted before
    it is kept), or None; ``processed``: input records processed (-1 where the engine does not
    count them); ``schedule`` and ``schedule_options``: for a run with ``delivery: interleaved``
    (``reference.runtime.delivery``), the queue chosen at each step and how many queues were
    non-empty there (``schedule`` given back as ``config.schedule`` replays the run), else None;
    ``pending``: what the tasks still hold at the end (:class:`reference.model.pending.Pending`,
    task by task) when the run was asked for it, else None."""

    outputs: tuple
    drops: tuple
    failure: Optional[object] = None
    processed: int = -1
    schedule: Optional[tuple] = None
    schedule_options: Optional[tuple] = None
    pending: Optional[tuple] = None


def windowed_key(key, start: int, end: int) -> dict:
    """A windowed aggregation's output key, as the scenario format writes ``Windowed<K>``:
    ``{"key": K, "start": S, "end": E}`` in that order (keys compare by their JSON text). Time
    windows: ``end`` exclusive (start + size); session and sliding windows: ``end`` inclusive."""
    return {"key": key, "start": start, "end": end}
