"""The named aggregation functions of the scenario contract, and the Python API's own.

An aggregation is Kafka's triple: an ``Initializer`` (``None`` for a reduce, which has no initial
value), an ``Aggregator`` ``(key, value, aggregate) -> aggregate`` and, for session windows, a
``Merger`` ``(key, aggregate1, aggregate2) -> aggregate``. Both engines evaluate the same
functions, so a scenario means the same everywhere; what the *operators* do with them (which null
values reach the aggregator, the merge order) is each engine's own code.

Named functions (``docs/scenario-format.md``):

- ``count``: init 0, add 1 (a null value counts, as Kafka's ``count`` does); merge ``a + b``.
- ``sum``: init 0, add the value; merge ``a + b``. Values must be integers that fit a Java long
  (Kafka's tests sum ``Long`` values); sums wrap as Java ``long`` arithmetic does; a null value is
  the ``NullPointerException`` of unboxing it (:class:`AggregatorNullValue`, which the engines
  turn into a failure).
- ``string_adder``: init ``"0"``, add ``agg + "+" + value`` (Java string rules, a null value
  prints ``null``), Kafka's ``MockAggregator.TOSTRING_ADDER``; merge ``a + sep + b``.
- ``string_reduce``: a reduce: the first value as is, then ``agg + "+" + value``; merge
  ``a + sep + b``, as Kafka's reduce merger applies the reducer.
- ``list``: init ``[]``, append the value; merge ``a + b``.

A user passes :class:`Aggregation` (or :func:`aggregation_from_callables`) to the Python API.
"""
from __future__ import annotations

from typing import Callable, Optional

import attrs

from kssim.reference.model.joiners import java_str

AGGREGATION_NAMES = ("count", "sum", "string_adder", "string_reduce", "list")
#: aggregations whose values the loader checks (name -> what the value must be)
NUMERIC_AGGREGATIONS = ("sum",)


class AggregatorNullValue(Exception):
    """The ``sum`` aggregator was handed a null value: Kafka's ``Long`` unboxing throws
    ``NullPointerException`` and the application dies."""


@attrs.frozen
class Aggregation:
    """One aggregation. ``initializer`` None makes it a reduce (Kafka's ``reduce``: the first
    value is the aggregate, ``aggregate == null ? value : reducer(aggregate, value)``)."""

    name: str
    initializer: Optional[Callable[[], object]]
    aggregator: Callable[[object, object, object], object]
    merger: Callable[[object, object, object], object]

    @property
    def is_reduce(self) -> bool:
        return self.initializer is None

    def initial(self):
        """A fresh aggregate: the initializer's value, or None (no value yet) for a reduce."""
        return None if self.initializer is None else self.initializer()

    def add(self, key, value, aggregate):
        """``aggregator(key, value, aggregate)``; a reduce takes the value as is while its
        aggregate is still null (Kafka's ``aggregatorForReducer``)."""
        if self.initializer is None and aggregate is None:
            return value
        return self.aggregator(key, value, aggregate)

    def merge(self, key, aggregate1, aggregate2):
        """The session merger. A reduce's merger is its aggregator over the two aggregates
        (``aggregate1 == null ? aggregate2 : reducer(aggregate1, aggregate2)``)."""
        if self.initializer is None and aggregate1 is None:
            return aggregate2
        return self.merger(key, aggregate1, aggregate2)


def _wrap_long(value: int) -> int:
    """``value`` as a Java ``long`` computes it: 64-bit two's complement, wrapping on overflow
    (``2^62 + 2^62`` is ``-2^63``), as Kafka's ``Long`` aggregates do."""
    return ((value + (1 << 63)) & ((1 << 64) - 1)) - (1 << 63)


def _sum_add(key, value, aggregate):
    if value is None:
        raise AggregatorNullValue("sum of a null value")
    return _wrap_long(aggregate + value)


def named_aggregation(name: str, merge_separator: str = "+") -> Aggregation:
    """The named aggregation ``name`` of the scenario contract (ValueError if unknown)."""
    if name == "count":
        return Aggregation("count", lambda: 0, lambda k, v, agg: agg + 1, lambda k, a, b: _wrap_long(a + b))
    if name == "sum":
        return Aggregation("sum", lambda: 0, _sum_add, lambda k, a, b: _wrap_long(a + b))
    if name == "string_adder":
        return Aggregation("string_adder", lambda: "0", lambda k, v, agg: java_str(agg) + "+" + java_str(v),
                           lambda k, a, b: java_str(a) + merge_separator + java_str(b))
    if name == "string_reduce":
        return Aggregation("string_reduce", None, lambda k, v, agg: java_str(agg) + "+" + java_str(v),
                           lambda k, a, b: java_str(a) + merge_separator + java_str(b))
    if name == "list":
        return Aggregation("list", lambda: [], lambda k, v, agg: list(agg) + [v], lambda k, a, b: list(a) + list(b))
    raise ValueError(f"unknown aggregation {name!r} (known: {', '.join(AGGREGATION_NAMES)})")


def aggregation_from_callables(initializer=None, aggregator=None, merger=None, reducer=None,
                               name: str = "callable") -> Aggregation:
    """A user's aggregation for the Python API: ``initializer`` + ``aggregator`` (+ ``merger`` for
    session windows), or a ``reducer(aggregate, value)``."""
    if reducer is not None:
        if initializer is not None or aggregator is not None:
            raise ValueError("give either a reducer or an initializer and an aggregator, not both")
        return Aggregation(name, None, lambda k, v, agg: reducer(agg, v), lambda k, a, b: reducer(a, b))
    if initializer is None or aggregator is None:
        raise ValueError("an aggregation needs an initializer and an aggregator (or a reducer)")

    def no_merger(k, a, b):
        raise ValueError("this aggregation has no merger; session windows need one")

    return Aggregation(name, initializer, aggregator, merger or no_merger)


def aggregation_of(spec_value, merge_separator: str = "+") -> Aggregation:
    """The :class:`Aggregation` a topology spec's ``aggregation`` field stands for."""
    if isinstance(spec_value, Aggregation):
        return spec_value
    return named_aggregation(spec_value, merge_separator)


def check_aggregated_value(name, value) -> Optional[str]:
    """Why ``value`` cannot be aggregated by the named aggregation ``name`` (None if it can):
    the loader's check, so a bad value is an error naming the record, not a crash mid-run."""
    if name == "sum" and value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        return f"the sum aggregation adds integer values, got {value!r}"
    if name == "sum" and value is not None and not -(1 << 63) <= value < (1 << 63):
        return f"the sum aggregation adds Java longs (64 bits), got {value} which does not fit"
    return None
