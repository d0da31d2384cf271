"""Record types shared by every engine: input records, output records, drops.

Input and output records are immutable ``NamedTuple``s rather than frozen ``attrs`` classes: an
engine creates one per input and one per output, and a tuple is built about ten times faster than
a frozen attrs instance (which sets each field through ``object.__setattr__``). They carry no
behaviour. ``Drop`` is rarer and stays a frozen attrs class.
"""
from __future__ import annotations

from typing import NamedTuple

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
    (a :class:`reference.explain.Why`, or None when explanations were not asked for). Two records
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

    ``reason`` is a stable code a user can filter on (``null_key``, ``null_value``,
    ``expired_window_put`` ...); ``why`` is the explanation with its numbers.
    """

    input_index: int
    reason: str
    why: object = attrs.field(default=None, eq=False)
