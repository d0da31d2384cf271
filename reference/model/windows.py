"""Which time windows a timestamp belongs to (``TimeWindows#windowsFor``): shared by the reference
engine's time-window aggregation and ``kssim timeline``, which draws the same windows. (The Spark
backend computes its windows on its own, to stay an independent implementation.)"""
from __future__ import annotations


def window_starts(ts: int, size: int, advance: int, fixed: bool = True) -> range:
    """``TimeWindows#windowsFor``: the starts of the windows ``ts`` belongs to, ascending (empty
    for a negative ``ts``). Cost: O(size / advance).

    ``fixed=False`` is 0.10.0's [time_windows_for_fixed, 0.10.1, KAFKA-3784]: the first start is
    ``max(0, ts - ts % advance - (size - 1) // advance * advance)``, one window too early (a window
    that does not contain ``ts``) when the size is no multiple of the advance."""
    if ts < 0:
        return range(0)
    if fixed:
        first = ts - size + advance
        first = (first // advance) * advance if first > 0 else 0
    else:
        first = max(0, ts - ts % advance - (size - 1) // advance * advance)
    return range(first, ts + 1, advance)
