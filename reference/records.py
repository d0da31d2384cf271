"""Record types shared by every engine: input records, output records, drops.

Frozen ``attrs`` classes with slots; engines create one per input and one per output, so they
carry no behaviour.
"""
from __future__ import annotations

import attrs

#: Marker for "no old value reported" (distinct from a ``None`` old value, which is a null).
NO_OLD_VALUE = type("NoOldValue", (), {"__repr__": lambda self: "NO_OLD_VALUE", "__bool__": lambda self: False})()


@attrs.frozen(slots=True)
class InputRecord:
    """One record of an input topic partition. ``index`` is its position in the scenario's inputs."""

    topic: str
    key: object
    value: object
    ts: int
    partition: int = 0
    index: int = -1


@attrs.frozen(slots=True)
class OutputRecord:
    """One record written to an output topic.

    ``input_index`` is the index of the input whose processing emitted it; ``why`` explains it
    (a :class:`reference.explain.Why`, or None when explanations were not asked for).
    """

    topic: str
    partition: int
    key: object
    value: object
    ts: int
    input_index: int
    old_value: object = NO_OLD_VALUE
    why: object = attrs.field(default=None, eq=False)


@attrs.frozen(slots=True)
class Drop:
    """An input record that was dropped or ignored (entirely or in part), and why.

    ``reason`` is a stable code a user can filter on (``null_key``, ``null_value``,
    ``expired_window_put`` ...); ``why`` is the explanation with its numbers.
    """

    input_index: int
    reason: str
    why: object = attrs.field(default=None, eq=False)
