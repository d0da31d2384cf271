"""Mappers and predicates of graph nodes as Spark columns.

Each node instance's expression is compiled once by the shared model
(:func:`reference.model.graph.expressions.compile_expr` / ``compile_pred``: the language is part of
the model, as the spec defines it for every engine; the Python API's callables are already such
functions) and looked up by ``(sid, node)`` inside one Arrow-batched Python UDF per use, so a
batch of many scenarios needs one UDF whatever its number of expressions.

Values cross as JSON text: the UDF reads ``key``/``value`` (a windowed key is
``{"key": K, "start": S, "end": E}``, as the spec's ``$key`` shows it) and writes the result's text
(keys as :func:`reference.model.keys.key_text`, values as compact JSON in document order).
"""
from __future__ import annotations

import json
from typing import Callable, Dict, Tuple

from kssim.reference.model.keys import key_text

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
