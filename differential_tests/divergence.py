"""The first divergence between two runs of the same scenario.

Two runs agree when, on every output partition, they emit the same records (key, value, ts,
old value) in the same order while processing the same inputs, drop the same inputs for the same
reasons, and fail (or not) at the same input. The first divergence is the difference with the
smallest input index.
"""
from __future__ import annotations

from typing import Optional

import attrs

from reference.model.compare import canonical
from reference.model.records import NO_OLD_VALUE


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
    return (canonical(rec.key), canonical(rec.value), rec.ts, rec.input_index, old)


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
    drops_a = {(d.input_index, d.reason) for d in a.drops}
    drops_b = {(d.input_index, d.reason) for d in b.drops}
    if drops_a != drops_b:
        idx, _ = min(drops_a ^ drops_b)
        reasons = lambda drops: sorted(r for i, r in drops if i == idx) or ["not dropped"]  # noqa: E731
        candidates.append(Divergence(0, -1, idx, None, None,
                                     f"drops: input {idx}: a {', '.join(reasons(drops_a))}; b {', '.join(reasons(drops_b))}"))
    fa = getattr(a.failure, "input_index", None)
    fb = getattr(b.failure, "input_index", None)
    if fa != fb:
        idx = min(i for i in (fa, fb) if i is not None)
        candidates.append(Divergence(0, -1, idx, None, None, f"failure: a fails at {fa}, b at {fb}"))
    return min(candidates, key=lambda d: d.input_index) if candidates else None


def _by_partition(outputs):
    parts = {}
    for r in outputs:
        parts.setdefault(r.partition, []).append(r)
    return parts
