"""The named joiner functions of the scenario contract, and Java's string rules for them.

``pair`` returns ``[left, right]``; ``concat`` returns ``str(left) + sep + str(right)`` the way
Java's string concatenation prints values (``null`` for a missing side, ``true``/``false``,
Java's ``Double.toString`` for non-integral numbers). A user callable is used as given.
"""
from __future__ import annotations

import math


def java_str(value) -> str:
    """``String.valueOf(value)`` for the JSON values a scenario carries."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _java_double(value)
    if isinstance(value, list):  # java.util.List#toString
        return "[" + ", ".join(java_str(v) for v in value) + "]"
    if isinstance(value, dict):  # java.util.Map#toString
        return "{" + ", ".join(f"{java_str(k)}={java_str(v)}" for k, v in value.items()) + "}"
    return str(value)


def _java_double(x: float) -> str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == int(x) and abs(x) < 1e7:
        return f"{int(x)}.0" if x != 0 or math.copysign(1, x) > 0 else "-0.0"
    text = repr(x)
    if "e" in text or abs(x) >= 1e7 or abs(x) < 1e-3:
        mantissa, _, exp = f"{x:.17g}".partition("e") if "e" in f"{x:.17g}" else (repr(x), "", "0")
        m = float(mantissa)
        e = int(exp)
        while abs(m) >= 10:
            m /= 10
            e += 1
        while 0 < abs(m) < 1:
            m *= 10
            e -= 1
        ms = repr(m)
        return f"{ms if '.' in ms else ms + '.0'}E{e}"
    return text


def make_joiner(joiner, separator: str = "+"):
    """A two-argument function ``(left_value, right_value) -> result``."""
    if callable(joiner):
        return joiner
    if joiner == "pair":
        return lambda left, right: [left, right]
    if joiner == "concat":
        sep = separator

        def concat(left, right):
            # strings are by far the common case: skip java_str for them
            return ((left if left.__class__ is str else java_str(left)) + sep
                    + (right if right.__class__ is str else java_str(right)))

        return concat
    raise ValueError(f"unknown joiner {joiner!r}")
