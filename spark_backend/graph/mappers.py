"""Mappers and predicates of graph nodes as Spark columns.

Each node instance's expression is compiled once by the shared model
(:func:`reference.model.graph.expressions.compile_expr` / ``compile_pred``: the language is part of
the model, as the spec defines it for every engine; the Python API's callables are already such
functions) and looked up by ``(sid, node)`` inside one Arrow-batched Python UDF per use, so a
batch of many scenarios needs one UDF whatever its number of expressions.

Values cross as JSON text: the UDF reads ``key``/``value`` (a windowed key is
``{"key": K, "start": S, "end": E}``, as the spec's ``$key`` shows it) and writes the result's text
(keys as :func:`reference.model.keys.key_text`, values as compact JSON in document order).

Native columns (:mod:`spark_backend.graph.columns`) replace the UDF where every instance's form
has one: ``native_expression`` / ``native_predicate`` / ``native_elements`` make one SQL
``CASE`` over the instances' forms (given as :class:`Form`), and :func:`with_columns` adds the
columns to a frame, natively on the rows where they are exact and by the UDF on the others (rows
whose JSON may hold floats, which Spark's JSON writer re-spells: none for a scenario whose inputs
and constants hold plain numbers, :func:`numbers`).
"""
from __future__ import annotations

import enum
import json
import weakref
from typing import Callable, Dict, Optional, Tuple

import attrs

from kssim.reference.model.graph import expressions as ex
from kssim.reference.model.keys import key_text
from kssim.spark_backend.graph import columns
from kssim.spark_backend.graph.columns import NativeSql

Functions = Dict[Tuple[int, int], Callable]


def _load(text):
    return None if text is None else json.loads(text)


def value_text(value):
    return None if value is None else json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def seen_key(key, wstart, wend):
    """The key a mapper sees: the inner key, or the windowed key's object."""
    inner = _load(key)
    return inner if wstart is None else {"key": inner, "start": wstart, "end": wend}


def _udf(body, return_type):
    from pyspark.sql import functions as F

    return F.udf(body, return_type, useArrow=True)


def _arguments(key="key", value="value"):
    from pyspark.sql import functions as F

    return F.col("sid"), F.col("node"), F.col(key), F.col(value), F.col("wstart"), F.col("wend")


def expression(functions: Functions, as_key: bool = False, value: str = "value"):
    """A string column: each row's ``functions[(sid, node)](key, value)`` as JSON text."""
    dump = key_text if as_key else value_text

    def body(sid, node, k, v, a, b):
        return dump(functions[(sid, node)](seen_key(k, a, b), _load(v)))
    return _udf(body, "string")(*_arguments(value=value))


def predicate(functions: Functions, value: str = "value"):
    """A boolean column: each row's predicate ``functions[(sid, node)](key, value)``."""
    def body(sid, node, k, v, a, b):
        return bool(functions[(sid, node)](seen_key(k, a, b), _load(v)))
    return _udf(body, "boolean")(*_arguments(value=value))


def elements(functions: Functions):
    """``flat_map_values``: an ``array<string>`` column, the JSON text of each element the mapper's
    result gives (a list: its elements; null: null, no record; anything else: itself)."""
    def body(sid, node, k, v, a, b):
        result = functions[(sid, node)](seen_key(k, a, b), _load(v))
        if result is None:
            return None
        return [value_text(e) for e in (result if isinstance(result, list) else (result,))]
    return _udf(body, "array<string>")(*_arguments())


# --- native columns --------------------------------------------------------------------------------

@attrs.frozen
class Form:
    """One instance's column as its UDF function computes it: the parsed EXPR or PRED ``form``
    (None: always null, or false), the predicate's opposite (``negate``: ``filter_not``), only
    for a non-null value (``non_null``: a table's mappers and predicates are never called with
    null: null, or false, without a call); ``numbers``: what numbers its scenario's records
    can hold (:func:`numbers`): plain ones need no guard, NaN or Infinity no native column."""

    form: object
    negate: bool = False
    non_null: bool = False
    numbers: str = columns.INEXACT


Forms = Dict[Tuple[int, int], Form]


def form(batch, inst, expr, negate: bool = False, non_null: bool = False) -> Form:
    """The :class:`Form` of ``expr`` on instance ``inst`` of ``batch``."""
    return Form(expr, negate, non_null, numbers(batch, inst.sid))


_NUMBERS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # batch -> {sid: numbers}


def numbers(batch, sid: int) -> str:
    """What numbers scenario ``sid``'s records can hold (``columns.numbers_in``): those of its
    inputs and of its graph's constants (named functions and joiners make no float). A graph
    with a Python function (the Python API) could make any number; a scenario without inputs is
    a replay whose records Spark scans: what the scan found (``batch.scanned_numbers``), else
    any but NaN and Infinity (whose texts the guard sends to the UDF). Checked once per
    scenario of a batch."""
    known = _NUMBERS.setdefault(batch, {})
    if sid not in known:
        scenario = batch.scenarios[sid]
        found = {_graph_numbers(batch.plans[sid].graph.nodes)}
        found.update(columns.numbers_in([r.key, r.value]) for r in scenario.inputs)
        if not scenario.inputs:
            found.add(batch.scanned_numbers.get(sid, columns.INEXACT))
        known[sid] = columns.worst(found)
    return known[sid]


def _graph_numbers(obj) -> str:
    """The numbers of the graph's constants; a Python function anywhere: NaN could come."""
    if isinstance(obj, ex.Const):
        return columns.numbers_in(obj.value)
    if obj is None or isinstance(obj, (bool, int, float, str, enum.Enum)):
        return columns.PLAIN
    if isinstance(obj, dict):
        obj = list(obj.values())
    if isinstance(obj, (tuple, list)):
        return columns.worst({_graph_numbers(o) for o in obj})
    if attrs.has(obj.__class__):
        return _graph_numbers([getattr(obj, f.name) for f in attrs.fields(obj.__class__)])
    return columns.NON_FINITE


def _instances_case(compiled: Dict[Tuple[int, int], NativeSql]) -> Optional[NativeSql]:
    """One column over the instances: ``CASE`` on ``(sid, node)``, instances with the same SQL
    sharing a branch; every row belongs to one of the instances (the stage's arrivals), so the
    last branch is the ``ELSE``."""
    if any(n is None for n in compiled.values()):
        return None
    groups: Dict[NativeSql, list] = {}
    for instance, native in sorted(compiled.items()):
        groups.setdefault(native, []).append(instance)
    if len(groups) == 1:
        return next(iter(groups))
    branches, guards = [], []
    for native, instances in list(groups.items())[:-1]:
        by_node: Dict[int, list] = {}
        for sid, node in instances:
            by_node.setdefault(node, []).append(str(sid))
        test = " OR ".join(f"(node = {node} AND sid IN ({', '.join(sids)}))" for node, sids in by_node.items())
        branches.append(f"WHEN {test} THEN {native.sql}")
        guards.append(f"WHEN {test} THEN {native.guard or 'true'}")
    last = list(groups)[-1]
    sql = f"CASE {' '.join(branches)} ELSE {last.sql} END"
    if all(n.guard is None for n in groups):
        return NativeSql(sql)
    return NativeSql(sql, f"CASE {' '.join(guards)} ELSE {last.guard or 'true'} END")


def _inputs(value: str) -> columns.Inputs:
    return columns.Inputs(value=f"`{value}`")


def native_expression(forms: Forms, as_key: bool = False, value: str = "value") -> Optional[NativeSql]:
    """:func:`expression` natively, or None when some instance's form has no native column."""
    def one(f: Form):
        if f.form is None:
            return NativeSql("CAST(NULL AS STRING)")
        native = columns.expr_sql(f.form, _inputs(value), as_key)
        if native is None or not f.non_null:
            return native
        return NativeSql(f"CASE WHEN `{value}` IS NOT NULL THEN {native.sql} END", native.guard)
    return _instances_case({i: _trusted(one(f), f) for i, f in forms.items()})


def _trusted(native: Optional[NativeSql], f: Form) -> Optional[NativeSql]:
    """``native`` for the numbers of the instance's records: no guard for plain ones, none at all
    when NaN or Infinity may come (Spark's JSON reader refuses the whole text)."""
    if native is None or f.numbers == columns.NON_FINITE:
        return None
    return NativeSql(native.sql) if f.numbers == columns.PLAIN else native


def native_predicate(forms: Forms, value: str = "value") -> Optional[NativeSql]:
    """:func:`predicate` natively (its ``functions`` apply ``negate`` and ``non_null``)."""
    def one(f: Form):
        if f.form is None:
            return NativeSql("false")
        native = columns.pred_sql(f.form, _inputs(value))
        if native is None:
            return None
        sql = f"(NOT {native.sql})" if f.negate else native.sql
        return NativeSql(f"(`{value}` IS NOT NULL AND {sql})" if f.non_null else sql, native.guard)
    return _instances_case({i: _trusted(one(f), f) for i, f in forms.items()})


def native_elements(forms: Forms) -> Optional[NativeSql]:
    """:func:`elements` natively."""
    return _instances_case({i: _trusted(columns.elements_sql(f.form, _inputs("value")), f) for i, f in forms.items()})


def with_columns(frame, **named: Tuple[Optional[NativeSql], Callable]):
    """``frame`` with the named columns added, each given as ``(native, udf)``: its native SQL
    (None: none) and a function making its UDF column. Natively where every column is native, on
    the rows where all are exact; the UDF on the others (a union of the two parts)."""
    from pyspark.sql import functions as F

    natives = {name: native for name, (native, _) in named.items()}

    def udfs():
        return [make().alias(name) for name, (_, make) in named.items()]
    if any(n is None for n in natives.values()):
        return frame.select("*", *udfs())
    native_columns = [F.expr(n.sql).alias(name) for name, n in natives.items()]
    guards = [n.guard for n in natives.values() if n.guard is not None]
    if not guards:
        return frame.select("*", *native_columns)
    exact = F.expr(" AND ".join(f"({g})" for g in guards))
    return frame.filter(exact).select("*", *native_columns).unionByName(frame.filter(~exact).select("*", *udfs()))
