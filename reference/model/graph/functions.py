"""The named functions of topology graphs (``../shared/spec/topology-graphs.md``, "Named
functions"): aggregations, reducers, their grouped-table subtractors, and joiners.

They differ from format 1's :mod:`reference.model.aggregations` in what graphs fix: TEXT prints
objects and lists as JSON (not as Java's ``Map#toString``), ``sum`` treats anything but an integer
as 0 instead of failing, all integer arithmetic wraps as a Java ``long``, and grouped tables have
subtractors. Aggregations and reducers are built as format 1's
:class:`~reference.model.aggregations.Aggregation`, so the existing (windowed) aggregation
operators run them unchanged.

What lives here: the name lists (:data:`AGGREGATE_NAMES`, :data:`REDUCE_NAMES`,
:data:`JOINER_NAMES`); :func:`graph_aggregation`, :func:`graph_reducer`, :func:`graph_count`;
:func:`graph_subtractor`; :func:`graph_joiner`; :func:`int_value` (the spec's ``INT``);
:func:`parse_function_name`.

Costs: every function is a closure doing constant work per call, except TEXT of an object or list
aggregate (one pass over it) and ``list`` (a copy of the aggregate per call: Kafka stores a new
aggregate per update and kssim never mutates a value it has handed out).
"""
from __future__ import annotations

from typing import Callable

from kssim.reference.model.aggregations import Aggregation
from kssim.reference.model.graph.expressions import LONG_MAX, LONG_MIN, json_equal, text, wrap_long

AGGREGATE_NAMES = ("count", "sum", "string_adder", "list")
REDUCE_NAMES = ("sum", "string_reduce")
JOINER_NAMES = ("pair", "concat")
SUBTRACTOR_KINDS = ("aggregate", "reduce", "count")


def int_value(value) -> int:
    """The spec's ``INT(v)``: ``v`` if it is an integer (a JSON integer within the Java long
    range; not a bool, not a float), else 0 (null, strings, objects and lists count as 0)."""
    return value if value.__class__ is int and LONG_MIN <= value <= LONG_MAX else 0


def _txt(value) -> str:
    # TEXT, without a call for the string aggregates that string_adder/string_reduce carry
    return value if value.__class__ is str else text(value)


# --- aggregations ``(key, value, aggregate)`` and session mergers ``(key, a, b)`` -------------

def _count_add(key, value, aggregate):
    return wrap_long(aggregate + 1)


def _sum_add(key, value, aggregate):
    return wrap_long(aggregate + int_value(value))


def _long_merge(key, a, b):
    return wrap_long(a + b)


def _string_add(key, value, aggregate):
    return _txt(aggregate) + "+" + _txt(value)


def _string_merge(key, a, b):
    return _txt(a) + "+" + _txt(b)


def _list_add(key, value, aggregate):
    return list(aggregate) + [value]


def _list_merge(key, a, b):
    return list(a) + list(b)


def _new_list():
    return []


_AGGREGATIONS = {
    "count": (lambda: 0, _count_add, _long_merge),
    "sum": (lambda: 0, _sum_add, _long_merge),
    "string_adder": (lambda: "0", _string_add, _string_merge),
    "list": (_new_list, _list_add, _list_merge),
}


def graph_aggregation(name: str) -> Aggregation:
    """``aggregate: NAME`` on a grouped or windowed stream (and the adder on a grouped table):
    initializer, aggregator and session merger of the spec's table."""
    if name not in _AGGREGATIONS:
        raise ValueError(f"unknown aggregation {name!r} (known: {', '.join(AGGREGATE_NAMES)})")
    initializer, aggregator, merger = _AGGREGATIONS[name]
    return Aggregation(name, initializer, aggregator, merger)


def graph_count() -> Aggregation:
    """Kafka's ``count()``: initializer 0, ``agg + 1``, sessions merged by ``a + b``; its results
    are those of ``aggregate: "count"`` (Kafka builds it the same way, on a store of longs)."""
    return Aggregation("count", lambda: 0, _count_add, _long_merge)


# --- reducers: ``reducer(agg, v)``; the first value is the aggregate as it is ----------------

def _sum_reduce(agg, value):
    return wrap_long(int_value(agg) + int_value(value))


def _string_reduce(agg, value):
    return _txt(agg) + "+" + _txt(value)


_REDUCERS = {"sum": _sum_reduce, "string_reduce": _string_reduce}


def graph_reducer(name: str) -> Aggregation:
    """``reduce: NAME``: a reduce (no initializer, so :meth:`Aggregation.add` takes a group's
    first value as is, as Kafka's reduce does); session windows merge with the reducer itself."""
    if name not in _REDUCERS:
        raise ValueError(f"unknown reducer {name!r} (known: {', '.join(REDUCE_NAMES)})")
    reducer = _REDUCERS[name]
    return Aggregation(name, None, lambda key, value, agg: reducer(agg, value),
                       lambda key, a, b: reducer(a, b))


# --- grouped-table subtractors ``(agg, v)`` --------------------------------------------------

def _count_subtract(agg, value):
    return wrap_long(agg - 1)


def _sum_subtract(agg, value):
    return wrap_long(agg - int_value(value))


def _int_sum_subtract(agg, value):
    # a reduce's aggregate is whatever value came first, so it goes through INT too
    return wrap_long(int_value(agg) - int_value(value))


def _string_subtract(agg, value):
    return _txt(agg) + "-" + _txt(value)


def _list_subtract(agg, value):
    """``agg`` without its first element JSON-equal to ``value``; a copy either way."""
    result = list(agg)
    for index, element in enumerate(result):
        if json_equal(element, value):
            del result[index]
            break
    return result


_SUBTRACTORS = {
    ("count", "count"): _count_subtract,
    ("aggregate", "count"): _count_subtract,
    ("aggregate", "sum"): _sum_subtract,
    ("aggregate", "string_adder"): _string_subtract,
    ("aggregate", "list"): _list_subtract,
    ("reduce", "sum"): _int_sum_subtract,
    ("reduce", "string_reduce"): _string_subtract,
}


def graph_subtractor(kind: str, name) -> Callable[[object, object], object]:
    """The subtractor ``(agg, v) -> agg`` of a grouped table's ``count`` (``kind`` "count", any
    ``name``), ``aggregate: name`` or ``reduce: name``."""
    if kind not in SUBTRACTOR_KINDS:
        raise ValueError(f"unknown kind {kind!r} (known: {', '.join(SUBTRACTOR_KINDS)})")
    subtractor = _SUBTRACTORS.get(("count", "count") if kind == "count" else (kind, name))
    if subtractor is None:
        known = AGGREGATE_NAMES if kind == "aggregate" else REDUCE_NAMES
        raise ValueError(f"no {kind} named {name!r} (known: {', '.join(known)})")
    return subtractor


# --- joiners ---------------------------------------------------------------------------------

def _pair(left, right):
    return [left, right]


def graph_joiner(name: str, separator: str = "+") -> Callable[[object, object], object]:
    """The joiner ``(left, right) -> value``: ``pair`` is ``[left, right]``; ``concat`` is
    ``TEXT(left) + separator + TEXT(right)`` (a missing side prints ``null``). A Python callable
    (the Python API's joiners) is returned as is."""
    if callable(name):
        return name
    if name == "pair":
        return _pair
    if name == "concat":
        sep = separator

        def concat(left, right):
            return _txt(left) + sep + _txt(right)
        return concat
    raise ValueError(f"unknown joiner {name!r} (known: {', '.join(JOINER_NAMES)})")


def parse_function_name(obj, where: str, fail: Callable[[str, str], Exception], names) -> str:
    """``obj`` if it is one of ``names``; else ``fail(where, ...)`` naming the known names."""
    if not isinstance(obj, str):
        raise fail(where, f"must be a function name, one of: {', '.join(names)}; got {obj!r}")
    if obj not in names:
        raise fail(where, f"unknown function {obj!r} (known here: {', '.join(names)})")
    return obj


__all__ = [
    "AGGREGATE_NAMES", "REDUCE_NAMES", "JOINER_NAMES", "SUBTRACTOR_KINDS",
    "int_value", "graph_aggregation", "graph_reducer", "graph_count", "graph_subtractor", "graph_joiner",
    "parse_function_name",
]
