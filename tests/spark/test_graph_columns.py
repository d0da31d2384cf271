"""Native Spark columns of the EXPR / PRED language (``spark_backend.graph.columns``) against the
shared model's compilation, as the UDF path writes it (``spark_backend.graph.mappers``).

Hypothesis generates the forms and the records (keys, windowed keys, values with the edges: Java
long limits, negative divisors, control and non-ASCII characters, supplementary characters
against U+E000-U+FFFF, member order, nulls, integers beyond long, missing members, non-objects,
a few floats); every form is then evaluated natively on every record in one Spark job and
compared, row by row, with ``compile_expr`` / ``compile_pred`` on the rows its guard calls exact.
"""
from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kssim.reference.model.graph.expressions import (LONG_MAX, LONG_MIN, compile_expr, compile_pred, parse_expr,
                                                     parse_pred)
from kssim.reference.model.keys import key_text
from kssim.spark_backend.graph import columns, mappers



def fail(where, message):
    return ValueError(f"{where}: {message}")


NAMES = ["a", "b", "n", "user", "é", "x y", "a.b", "[0]", "\x1f"]
ODD_NAMES = ["", "*", "it's", " a", "\tb"]  # Spark's JSON path cannot spell them: the UDF
CHARS = list("abzAZ09 \"\\{}[]:,.eu/") + ["\n", "\t", "\x00", "\x0b", "\x1f", "\x7f", "é", "\u2028", "\ue000",
                                         "\uffff", "\U0001F600", "\U0010FFFF", "\\u001f", "1.5", "NaN"]
INTS = [0, 1, -1, 2, -2, 7, -7, 100, LONG_MAX, LONG_MIN, LONG_MAX - 1, LONG_MIN + 1, 1 << 62, LONG_MAX + 1,
        LONG_MIN - 1, 10 ** 20, -(10 ** 25), 10 ** 40]
FLOATS = [1.5, 1e16, -0.0, 0.0, 1e-05, 12345678.0, 0.001]
DIVISORS = [1, -1, 2, -2, 3, -3, 7, -7, LONG_MAX, LONG_MIN, 1 << 62, -(1 << 62), -(1 << 62) - 1]

strings = st.lists(st.sampled_from(CHARS), max_size=5).map("".join)
ints = st.sampled_from(INTS) | st.integers(-50, 50) | st.integers(LONG_MIN, LONG_MAX)
scalars = st.none() | st.booleans() | ints | strings | st.sampled_from(FLOATS).filter(lambda _: True)
names = st.sampled_from(NAMES)
json_values = st.recursive(
    st.none() | st.booleans() | ints | strings,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(names, children, max_size=4),
    max_leaves=8)
#: floats now and then: the guard must send their rows to the UDF
with_floats = st.recursive(
    scalars, lambda children: st.lists(children, max_size=3) | st.dictionaries(names, children, max_size=4),
    max_leaves=6)
values = st.one_of(st.dictionaries(names, json_values, max_size=5), json_values, with_floats)
keys = st.one_of(strings, ints, st.none(), st.dictionaries(names, json_values, max_size=3), json_values)
windows = st.one_of(st.just((None, None)), st.tuples(st.integers(0, 100), st.integers(100, 200)))

leaves = st.one_of(
    st.sampled_from(["$key", "$value"]),
    st.sampled_from(NAMES * 8 + ODD_NAMES).map(lambda n: {"field": n}),
    st.sampled_from(NAMES[:4] + ["key", "start", "end"]).map(lambda n: {"key_field": n}),
    (json_values | st.sampled_from(FLOATS)).map(lambda v: {"const": v}))
exprs = st.recursive(leaves, lambda e: st.one_of(
    st.lists(e, max_size=3).map(lambda p: {"concat": p}),
    st.dictionaries(names, e, max_size=3).map(lambda m: {"object": m}),
    st.lists(e, max_size=3).map(lambda p: {"list": p}),
    st.tuples(e, e).map(lambda ab: {"add": list(ab)}),
    st.tuples(e, st.sampled_from(DIVISORS)).map(lambda xd: {"mod": list(xd)})), max_leaves=5)
ops = st.sampled_from(["==", "!=", "<", "<=", ">", ">="])
preds = st.recursive(
    st.one_of(st.tuples(exprs, ops, exprs).map(lambda c: {"cmp": list(c)}), exprs.map(lambda e: {"is_null": e})),
    lambda p: st.one_of(p.map(lambda q: {"not": q}), st.lists(p, max_size=3).map(lambda qs: {"and": qs}),
                        st.lists(p, max_size=3).map(lambda qs: {"or": qs})), max_leaves=4)


#: records and forms written out: JSON-equal key and value in another member order, UTF-16 order,
#: long overflow, negative mod, escapes, windowed keys
EDGE_RECORDS = [
    ({"b": 1, "a": {"y": [1, {"q": 2, "p": 1}], "x": None}}, {"a": {"x": None, "y": [1, {"p": 1, "q": 2}]}, "b": 1},
     (None, None)),
    ("k", {"a": "\U0001F600", "b": "\ue000", "n": LONG_MAX, "user": -7}, (None, None)),
    ({"a": "\ue000"}, {"a": "\U0001F600x", "b": "\U0001F600", "n": LONG_MIN, "user": 7}, (5, 10)),
    ("k", {"a": "x\x1f\x0b\"\\u001f", "b": ["\x1f", {"z": "\x0b"}], "n": 10 ** 20}, (None, None)),
    ({"user": "x", "n": 3}, {"a": [1, "s", None, [2], {"b": "\x1e", "a": None}], "n": "5"}, (0, 7)),
    # a member's name inside another's, a nested namesake, escapes in a string member, not an object
    ("k", {"x\"a": 1, "b": {"a": "in"}, "a": "q\"", "user": "x\\y", "n": "\x1f"}, (None, None)),
    ("k", {"x\"a": "s", "b": {"a": 2}}, (None, None)),
    ("k", [{"a": 1, "n": 2}], (None, None)),
    ("k", {"b": {"a": "in"}, "n": {"n": 1}}, (None, None)),
]
EDGE_EXPRS = [
    {"concat": ["$key", {"const": "|"}, {"field": "a"}, {"field": "b"}, "$value"]},
    {"add": [{"field": "n"}, {"const": 1}]}, {"add": [{"field": "n"}, {"field": "n"}]},
    {"mod": [{"field": "user"}, -3]}, {"mod": [{"field": "user"}, 3]}, {"mod": [{"field": "n"}, LONG_MIN]},
    {"object": {"k": "$key", "s": {"key_field": "start"}, "a": {"field": "a"}}}, {"list": [{"field": "b"}, "$key"]},
    {"field": "a"}, {"key_field": "key"}, {"key_field": "user"},
]
EDGE_PREDS = [
    {"cmp": ["$key", "==", "$value"]}, {"cmp": ["$key", "!=", "$value"]},
    {"cmp": [{"field": "a"}, "==", {"const": {"y": [1, {"p": 1, "q": 2}], "x": None}}]},
    {"cmp": [{"field": "a"}, "<", {"field": "b"}]}, {"cmp": [{"field": "a"}, ">", {"key_field": "a"}]},
    {"cmp": [{"field": "a"}, "==", {"field": "b"}]}, {"cmp": [{"field": "n"}, ">=", {"const": LONG_MAX}]},
    {"cmp": [{"add": [{"field": "n"}, {"const": 1}]}, "<", {"const": 0}]},
]


def _collect(strategy, count):
    """``count`` examples of ``strategy``, generated by Hypothesis (derandomized: the same every
    run), gathered to be evaluated together in one Spark job."""
    found = []

    @settings(max_examples=count, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def gather(example):
        found.append(example)
    gather()
    return found[:count]


def _row_texts(record):
    key, value, (wstart, wend) = record
    return key_text(key), mappers.value_text(value), wstart, wend


def _truth(fn, record, dump):
    key_t, value_t, wstart, wend = _row_texts(record)
    return dump(fn(mappers.seen_key(key_t, wstart, wend), mappers._load(value_t)))


@pytest.fixture(scope="module")
def evaluated(spark):
    return evaluate(spark)


def evaluate(spark):
    """Every generated form natively on every generated record (one job): the forms, the
    records, and per form its SQL (None: not native) and per row (result, exact)."""
    from pyspark.sql import functions as F

    records = EDGE_RECORDS + _collect(st.tuples(keys, values, windows), 300)
    forms = ([("expr", e) for e in EDGE_EXPRS + _collect(exprs, 160)] + [("key", e) for e in _collect(exprs, 40)]
             + [("pred", p) for p in EDGE_PREDS + _collect(preds, 160)]
             + [("elements", e) for e in EDGE_EXPRS + _collect(exprs, 40)])
    compiled = []
    for kind, form in forms:
        if kind == "pred":
            compiled.append(columns.pred_sql(parse_pred(form, "p", fail)))
        elif kind == "elements":
            compiled.append(columns.elements_sql(parse_expr(form, "e", fail)))
        else:
            compiled.append(columns.expr_sql(parse_expr(form, "e", fail), as_key=kind == "key"))
    rows = [(i,) + _row_texts(r) for i, r in enumerate(records)]
    frame = spark.createDataFrame(rows, "id INT, key STRING, value STRING, wstart BIGINT, wend BIGINT")
    picked = [F.col("id")]
    for i, native in enumerate(compiled):
        if native is not None:
            picked += [F.expr(native.sql).alias(f"c{i}"), F.expr(native.guard or "true").alias(f"g{i}")]
    result = {row["id"]: row for row in frame.select(*picked).collect()}
    return forms, records, compiled, [result[i] for i in range(len(records))]


def _expected(kind, form, record):
    if kind == "pred":
        return bool(compile_pred(parse_pred(form, "p", fail))(*_seen(record)))
    fn = compile_expr(parse_expr(form, "e", fail))
    if kind == "elements":
        result = fn(*_seen(record))
        if result is None:
            return None
        return [mappers.value_text(e) for e in (result if isinstance(result, list) else (result,))]
    return _truth(fn, record, key_text if kind == "key" else mappers.value_text)


def _seen(record):
    key_t, value_t, wstart, wend = _row_texts(record)
    return mappers.seen_key(key_t, wstart, wend), mappers._load(value_t)


def differences(evaluated):
    """Every (kind, form, record, expected, native result) that differs on a row called exact."""
    forms, records, compiled, results = evaluated
    wrong = []
    for i, ((kind, form), native) in enumerate(zip(forms, compiled)):
        if native is None:
            continue
        for record, row in zip(records, results):
            if not row[f"g{i}"]:
                continue
            expected, got = _expected(kind, form, record), row[f"c{i}"]
            if got != expected:
                wrong.append((kind, form, record, expected, got))
    return wrong


def test_native_columns_equal_the_model_on_exact_rows(evaluated):
    wrong = differences(evaluated)
    assert not wrong, f"{len(wrong)} differences, the first: {wrong[:3]}"


def test_almost_every_form_is_native_and_guards_only_float_like_rows(evaluated):
    forms, records, compiled, results = evaluated
    odd = {repr(n) for n in ODD_NAMES}
    for (kind, form), native in zip(forms, compiled):
        if native is None:  # only odd member names and huge or float constants in equality
            assert any(n in repr(form) for n in odd) or re.search(r"\d\.\d|e[+-]|\d{39}", repr(form)), form
    assert sum(n is not None for n in compiled) >= 0.8 * len(compiled)
    risky = re.compile(columns.RISKY + "|" + columns.HUGE)
    for i, native in enumerate(compiled):
        if native is None or native.guard is None:
            continue
        for record, row in zip(records, results):
            key_t, value_t, _, _ = _row_texts(record)
            if not risky.search(key_t or "") and not risky.search(value_t or ""):
                assert row[f"g{i}"], (forms[i], record)


def test_forms_that_never_depend_on_a_number_spelling_need_no_guard():
    for form in ({"cmp": [{"field": "amount"}, ">", {"const": 100}]}, {"is_null": {"field": "a"}},
                 {"cmp": [{"field": "user"}, "<", {"const": "m"}]},
                 {"cmp": [{"add": [{"field": "n"}, {"const": 1}]}, "==", {"mod": ["$value", -3]}]}):
        assert columns.pred_sql(parse_pred(form, "p", fail)).guard is None, form
    assert columns.expr_sql(parse_expr("$value", "e", fail)).guard is None
    assert columns.expr_sql(parse_expr({"field": "user"}, "e", fail)).guard is not None


def test_with_columns_mixes_instances_and_sends_float_rows_to_the_udf(spark):
    """The stages' path: one CASE over instances (sid, node), the guarded rows by the UDF."""
    instances = {(0, 1): {"cmp": [{"field": "n"}, ">", {"const": 2}]}, (1, 1): {"not": {"is_null": "$key"}},
                 (2, 3): {"cmp": [{"field": "u"}, "<", {"const": "\ue000"}]},
                 (3, 1): {"cmp": [{"field": "u"}, "==", {"const": {"x": 1}}]}}
    exprs_ = {(0, 1): {"field": "u"}, (1, 1): {"concat": ["$key", {"const": "-"}, {"field": "n"}]},
              (2, 3): {"object": {"b": {"field": "u"}, "a": "$key"}}, (3, 1): {"list": [{"field": "n"}, "$value"]}}
    values_ = [{"n": 3, "u": {"x": 1}}, {"n": 1, "u": {"x": 1.5}}, {"u": 1e16}, None, {"n": LONG_MAX, "u": "é\x1f"}]
    rows = [(sid, node, key_text(k), mappers.value_text(v), None, None)
            for sid, node in instances for k in ("k", None, {"b": 1}) for v in values_]
    frame = spark.createDataFrame(rows, "sid INT, node INT, key STRING, value STRING, wstart BIGINT, wend BIGINT")
    preds_ = {i: parse_pred(p, "p", fail) for i, p in instances.items()}
    mapped = {i: parse_expr(e, "e", fail) for i, e in exprs_.items()}
    pred_forms = {i: mappers.Form(p, negate=i == (1, 1)) for i, p in preds_.items()}
    pred_functions = {i: (lambda t, neg: lambda k, v: bool(t(k, v)) is not neg)(compile_pred(p), i == (1, 1))
                      for i, p in preds_.items()}
    expr_functions = {i: compile_expr(e) for i, e in mapped.items()}
    natives = dict(passes=(mappers.native_predicate(pred_forms), lambda: mappers.predicate(pred_functions)),
                   out=(mappers.native_expression({i: mappers.Form(e) for i, e in mapped.items()}),
                        lambda: mappers.expression(expr_functions)))
    assert all(n is not None for n, _ in natives.values())
    both = mappers.with_columns(frame, **natives).select("sid", "node", "key", "value", "passes", "out")
    udf_only = frame.select("sid", "node", "key", "value", mappers.predicate(pred_functions).alias("passes"),
                            mappers.expression(expr_functions).alias("out"))
    assert sorted(map(tuple, both.collect()), key=repr) == sorted(map(tuple, udf_only.collect()), key=repr)


class _Batch:
    """What ``mappers.numbers`` reads of a GraphBatch (scenarios' inputs, plans' graph nodes, and
    what a scan found its records can hold)."""

    def __init__(self, inputs, ops, scanned_numbers=None):
        from types import SimpleNamespace

        self.scenarios = {0: SimpleNamespace(inputs=tuple(SimpleNamespace(key=k, value=v) for k, v in inputs))}
        self.plans = {0: SimpleNamespace(graph=SimpleNamespace(nodes=list(ops)))}
        self.scanned_numbers = scanned_numbers or {}


def test_the_numbers_a_scenario_can_hold_decide_the_guard():
    from kssim.reference.model.graph.nodes import FilterOp

    plain = FilterOp(parse_pred({"cmp": [{"field": "a"}, ">", {"const": 1}]}, "p", fail))
    with_float = FilterOp(parse_pred({"cmp": [{"field": "a"}, ">", {"const": 1.5}]}, "p", fail))
    assert mappers.numbers(_Batch([("k", {"a": [1, LONG_MAX]})], [plain]), 0) == columns.PLAIN
    assert mappers.numbers(_Batch([("k", {"a": 0.5})], [plain]), 0) == columns.INEXACT
    assert mappers.numbers(_Batch([("k", {"a": 10 ** 40})], [plain]), 0) == columns.INEXACT
    assert mappers.numbers(_Batch([("k", 1)], [with_float]), 0) == columns.INEXACT
    assert mappers.numbers(_Batch([], [plain]), 0) == columns.INEXACT  # a scanned replay: unknown records
    # ... unless the scan found no float in them (``RecordStats.float_like``); the graph's still count
    assert mappers.numbers(_Batch([], [plain], {0: columns.PLAIN}), 0) == columns.PLAIN
    assert mappers.numbers(_Batch([], [with_float], {0: columns.PLAIN}), 0) == columns.INEXACT
    assert mappers.numbers(_Batch([(float("nan"), 1)], [plain]), 0) == columns.NON_FINITE
    assert mappers.numbers(_Batch([("k", 1)], [FilterOp(lambda k, v: True)]), 0) == columns.NON_FINITE
    form = parse_pred({"cmp": [{"field": "a"}, "==", {"const": "x"}]}, "p", fail)
    guarded = parse_expr({"field": "a"}, "e", fail)
    assert mappers.native_expression({(0, 1): mappers.Form(guarded, numbers=columns.PLAIN)}).guard is None
    assert mappers.native_expression({(0, 1): mappers.Form(guarded)}).guard is not None
    assert mappers.native_predicate({(0, 1): mappers.Form(form, numbers=columns.NON_FINITE)}) is None
