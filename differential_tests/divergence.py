"""The first divergence between two runs of the same scenario.

Two runs agree when, on every output partition, they emit the same records (key, value, ts,
old value) in the same order while processing the same inputs, drop the same inputs for the same
reasons (by :class:`~reference.model.codes.DropReason` code), and fail (or not) at the same input
with the same :class:`~reference.model.codes.FailureCode`. Keys are compared as Kafka compares
them (:func:`~reference.model.keys.key_text`: ``1``, ``1.0``, ``true`` and ``"1"`` are different
keys, and so are objects with reordered fields); values as JSON. The first divergence is the
difference with the smallest input index.
"""
from __future__ import annotations

from typing import Optional

import attrs

from kssim.reference.model.compare import canonical
from kssim.reference.model.keys import key_text
from kssim.reference.model.records import NO_OLD_VALUE


@attrs.frozen
class Divergence:
    partition: int
    position: int
    input_index: int
    record_a: object  # OutputRecord or None
    record_b: object
    what: str


def _sig(rec):
    old = None if rec.old_value is NO_OLD_VALUE else canonical(rec.old_value)
    return (key_text(rec.key), canonical(rec.value), rec.ts, rec.input_index, old)


def code_of(reason) -> str:
    """The stable code of a ``DropReason`` or ``FailureCode`` member (every engine reports these)."""
    return reason.code


def message_of(reason) -> str:
    """The one-sentence message of a ``DropReason`` or ``FailureCode`` member."""
    return reason.message


def failure_code(failure):
    """A ``KafkaWouldFail``'s code, or None for no failure."""
    return None if failure is None else failure.code.code


def describe_failure(failure) -> str:
    """``code: message`` of a ``KafkaWouldFail``."""
    if failure is None:
        return "no failure"
    return f"{failure_code(failure)}: {failure.message}"


def _describe_drops(drops, idx):
    found = sorted((d for d in drops if d.input_index == idx), key=lambda d: code_of(d.reason))
    if not found:
        return "not dropped"
    parts = []
    for d in found:
        code, message = code_of(d.reason), message_of(d.reason)
        parts.append(f"{code} ({message})")
    return ", ".join(parts)


def first_divergence(a, b) -> Optional[Divergence]:
    """Compare two CaseResults; None when they agree."""
    if a.error or b.error:
        if a.error == b.error:
            return None
        return Divergence(0, -1, -1, None, None, f"error: a={a.error!r} b={b.error!r}")
    candidates = []
    parts_a, parts_b = _by_partition(a.outputs), _by_partition(b.outputs)
    for p in sorted(set(parts_a) | set(parts_b)):
        ra, rb = parts_a.get(p, []), parts_b.get(p, [])
        for i in range(max(len(ra), len(rb))):
            x = ra[i] if i < len(ra) else None
            y = rb[i] if i < len(rb) else None
            if x is None or y is None or _sig(x) != _sig(y):
                idx = min(r.input_index for r in (x, y) if r is not None)
                what = "missing in b" if y is None else "missing in a" if x is None else "records differ"
                candidates.append(Divergence(p, i, idx, x, y, what))
                break
    drops_a = {(d.input_index, code_of(d.reason)) for d in a.drops}
    drops_b = {(d.input_index, code_of(d.reason)) for d in b.drops}
    if drops_a != drops_b:
        idx, _ = min(drops_a ^ drops_b)
        candidates.append(Divergence(0, -1, idx, None, None,
                                     f"drops: input {idx}: a {_describe_drops(a.drops, idx)}; "
                                     f"b {_describe_drops(b.drops, idx)}"))
    fa = None if a.failure is None else (a.failure.input_index, failure_code(a.failure))
    fb = None if b.failure is None else (b.failure.input_index, failure_code(b.failure))
    if fa != fb:
        idx = min(f[0] for f in (fa, fb) if f is not None)
        at = lambda f, failure: "does not fail" if f is None else f"fails at input {f[0]} ({describe_failure(failure)})"  # noqa: E731
        candidates.append(Divergence(0, -1, idx, None, None,
                                     f"failure: a {at(fa, a.failure)}; b {at(fb, b.failure)}"))
    return min(candidates, key=lambda d: d.input_index) if candidates else None


def _by_partition(outputs):
    parts = {}
    for r in outputs:
        parts.setdefault(r.partition, []).append(r)
    return parts
