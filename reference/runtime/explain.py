"""Explanations: why an output record was emitted, or why an input record was dropped.

Operators build a :class:`Why` only when the run asked for explanations (``ctx.explain``), so
the hot path pays nothing for them otherwise. ``text`` states the rule with its numbers, e.g.
``"unjoined left E@40 flushed: stream time 80 > 40 + after 15 + grace 5"``.
"""
from __future__ import annotations

import attrs

from kssim.reference.model.render import show


@attrs.frozen(slots=True)
class Stored:
    """A stored record a result was built from: which side, its key, value, ts and input index."""

    side: str
    key: object
    value: object
    ts: int
    input_index: int = -1

    def describe(self) -> str:
        where = f" (input {self.input_index})" if self.input_index >= 0 else ""
        return f"{self.side} {show(self.key)}:{show(self.value)}@{self.ts}{where}"


@attrs.frozen(slots=True)
class Why:
    """The rule that produced an output (or a drop), with its numbers, and the stored records used.

    ``rule`` is a short stable name (``inner_match``, ``outer_flush``, ``null_key``); ``text`` is the
    rule stated with this record's numbers; ``ref`` names the Kafka class or KIP.
    """

    rule: str
    text: str
    joined: tuple = ()
    ref: str = ""
    #: ``(key, start, end)`` of the window an ``unemitted_window`` drop is about (the window a
    #: picture marks as never emitted); () for every other explanation
    window: tuple = ()

    def describe(self) -> str:
        parts = [self.text]
        if self.joined:
            parts.append("joined " + ", ".join(s.describe() for s in self.joined))
        if self.ref:
            parts.append(f"[{self.ref}]")
        return "; ".join(parts)
