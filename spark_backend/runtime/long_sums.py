"""Running sums of Java ``long`` values on Spark, wrapping as Java's ``long`` arithmetic wraps,
with ``bigint`` window sums only.

Kafka's ``count``/``sum`` aggregates are Java longs: ``Long.MAX_VALUE + 1`` is ``Long.MIN_VALUE``,
so a total is the exact sum modulo 2^64, in two's complement. Spark's ``sum`` of a ``bigint``
fails on overflow (ANSI mode), and a ``DECIMAL(38, 0)`` sum is exact but slow (every addition a
``BigDecimal`` past 18 digits). Here a value is carried as two **parts**, its high and low 32
bits, each in ``[0, 2^32)``: ``v = hi * 2^32 + lo (mod 2^64)``. A sum of parts over fewer than
2^31 rows cannot overflow a long, and the total modulo 2^64 is rebuilt from the two sums with
masks and shifts (:func:`as_long`), which never overflow either.

Every function builds Spark columns; each costs O(1) per row (a window sum adds the window's).
"""
from __future__ import annotations

import attrs

_LOW_32 = (1 << 32) - 1


@attrs.frozen
class Parts:
    """A long column as its high and low 32 bits (``bigint`` columns), or a sum of such."""

    hi: object
    lo: object


def parts(value) -> Parts:
    """``value`` (a column cast to ``bigint``, null as 0) as :class:`Parts`, both in ``[0, 2^32)``."""
    from pyspark.sql import functions as F

    value = F.coalesce(value.cast("bigint"), F.lit(0).cast("bigint"))
    return Parts(F.shiftright(value, 32).bitwiseAND(_LOW_32), value.bitwiseAND(_LOW_32))


def chosen(condition, if_true: Parts, otherwise: Parts) -> Parts:
    """The parts of ``if_true`` where ``condition`` holds, else of ``otherwise``."""
    from pyspark.sql import functions as F

    return Parts(F.when(condition, if_true.hi).otherwise(otherwise.hi),
                 F.when(condition, if_true.lo).otherwise(otherwise.lo))


def negated(value: Parts) -> Parts:
    """``-v`` modulo 2^64 (``-Long.MIN_VALUE`` is ``Long.MIN_VALUE``, as in Java)."""
    return normalized(Parts(-value.hi, -value.lo))


def plus(a: Parts, b: Parts) -> Parts:
    """``a + b`` modulo 2^64, normalized."""
    return normalized(Parts(a.hi + b.hi, a.lo + b.lo))


def normalized(value: Parts) -> Parts:
    """The same value modulo 2^64 with both parts back in ``[0, 2^32)`` (the low part's carry,
    negative too: an arithmetic shift floors, moved into the high part)."""
    from pyspark.sql import functions as F

    carry = F.shiftright(value.lo, 32)
    return Parts((value.hi + carry).bitwiseAND(_LOW_32), value.lo.bitwiseAND(_LOW_32))


def summed(value: Parts, frame) -> Parts:
    """The sums of ``value``'s parts over the window ``frame`` (0 when it is empty); exact while
    the frame holds fewer than 2^31 rows."""
    from pyspark.sql import functions as F

    zero = F.lit(0).cast("bigint")
    return Parts(F.coalesce(F.sum(value.hi).over(frame), zero), F.coalesce(F.sum(value.lo).over(frame), zero))


def minus_own(total: Parts, own: Parts) -> Parts:
    """A running total without the row's own contribution (the total before it), both sums of
    non-negative parts, so no overflow."""
    return Parts(total.hi - own.hi, total.lo - own.lo)


def as_long(value: Parts):
    """The ``bigint`` a Java long holds for ``value`` (sums of parts), wrapped: normalized, its
    high part shifted up (a shift never overflows) over its low part."""
    from pyspark.sql import functions as F

    whole = normalized(value)
    return F.shiftleft(whole.hi, 32).bitwiseOR(whole.lo)
