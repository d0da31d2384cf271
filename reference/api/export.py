"""From a built topology back to words: a scenario document (format 1) and the Python code that
builds it with this API.

A spec writes out what its scenario file would say (most defaults left out), so
``parse_topology(topology_dict(spec)) == spec``. A Python callable joiner or aggregation has no
name in the scenario contract, so a topology using one cannot be saved
(:class:`UnsavableTopologyError`).
"""
from __future__ import annotations

import json

import attrs

from kssim.reference.model.aggregations import named_aggregation
from kssim.reference.model.profiles import DEFAULT_RELEASE
from kssim.reference.model.records import NO_OLD_VALUE, InputRecord, OutputRecord
from kssim.reference.model.scenario import FORMAT, OUTPUT_TOPIC, scenario_from_dict
from kssim.reference.model.topology import (
    SessionAggregateSpec, SlidingAggregateSpec, StreamStreamJoinSpec, StreamTableJoinSpec, SuppressBufferSpec,
    TableSpec, TableTableJoinSpec, WindowAggregateSpec, WindowedTableJoinSpec,
)
from kssim.reference.model.aggregations import Aggregation
from kssim.reference.model.graph.nodes import GraphTopology
from kssim.reference.api.driver import TestRecord, Windowed
from kssim.reference.api.errors import IllegalArgumentError, UnsavableTopologyError

_STREAM_METHODS = {"inner": "join", "left": "left_join", "outer": "outer_join"}


# --- scenario documents ----------------------------------------------------------------------

def topology_dict(spec) -> dict:
    """The scenario file's ``topology`` object for ``spec``."""
    if isinstance(spec, GraphTopology):
        return graph_dict(spec)
    if isinstance(spec, (SessionAggregateSpec, WindowAggregateSpec, SlidingAggregateSpec)):
        return _aggregate_dict(spec)
    if callable(spec.joiner):
        raise UnsavableTopologyError(
            f"the joiner is a Python callable ({_callable_name(spec.joiner)}); a scenario file can only name "
            "the joiners 'pair' or 'concat' (use ValueJoiner.pair() / ValueJoiner.concat(separator) to save it)")
    obj = {"operator": spec.operator, "join": spec.join, "joiner": spec.joiner}
    if spec.joiner_separator != "+":
        obj["joiner_separator"] = spec.joiner_separator
    if isinstance(spec, StreamStreamJoinSpec):
        w = spec.window
        obj["window_api"] = spec.window_api
        obj["window"] = {"before_ms": w.before_ms, "after_ms": w.after_ms, "grace_ms": w.grace_ms}
    elif isinstance(spec, StreamTableJoinSpec):
        if spec.grace_ms is not None:
            obj["grace_ms"] = spec.grace_ms
        if spec.table != TableSpec():
            obj["table"] = _table_dict(spec.table)
    elif isinstance(spec, TableTableJoinSpec):
        for name in ("left_table", "right_table"):
            table = getattr(spec, name)
            if table != TableSpec():
                obj[name] = _table_dict(table)
        if spec.send_old_values:
            obj["send_old_values"] = True
        _add_suppress(obj, spec)
    elif isinstance(spec, WindowedTableJoinSpec):
        obj["window"] = _time_window_dict(spec.window)
        obj["left_aggregation"] = _aggregation_name(spec.left_aggregation, "left_aggregation")
        obj["right_aggregation"] = _aggregation_name(spec.right_aggregation, "right_aggregation")
        if spec.shift_ms:
            obj["shift_ms"] = spec.shift_ms
        _add_table_result_fields(obj, spec)
    return obj


def graph_dict(graph: GraphTopology) -> dict:
    """A topology graph's ``topology`` object: ``{"graph": [...]}``, the node list as written;
    :class:`UnsavableTopologyError` naming the first Python callable a node holds."""
    for node in graph.nodes:
        for field in attrs.fields(type(node.op)):
            value = getattr(node.op, field.name)
            if isinstance(value, Aggregation) or callable(value):
                what = value.name if isinstance(value, Aggregation) else _callable_name(value)
                raise UnsavableTopologyError(
                    f"graph node {node.index} ({node.name}): its {field.name} is a Python callable ({what}); a "
                    "scenario file holds the graph spec's JSON expressions, predicates and named functions only")
    return {"graph": [dict(node) for node in graph.source]}


def _aggregate_dict(spec) -> dict:
    obj = {"operator": spec.operator}
    if isinstance(spec, SessionAggregateSpec):
        obj.update(gap_ms=spec.gap_ms, grace_ms=spec.grace_ms)
    elif isinstance(spec, WindowAggregateSpec):
        obj.update(_time_window_dict(spec.window))
    else:
        obj.update(time_difference_ms=spec.time_difference_ms, grace_ms=spec.grace_ms)
    obj["aggregation"] = _aggregation_name(spec.aggregation, "aggregation")
    obj["emit"] = spec.emit
    if spec.retention_ms is not None:
        obj["retention_ms"] = spec.retention_ms
    _add_table_result_fields(obj, spec)
    return obj


def _time_window_dict(window) -> dict:
    # grace_ms is always written: null is the legacy builder's release default, not "no grace"
    return {"size_ms": window.size_ms, "advance_ms": window.advance_ms, "grace_ms": window.grace_ms}


def _aggregation_name(aggregation, field: str) -> str:
    if not isinstance(aggregation, str):
        raise UnsavableTopologyError(
            f"the {field} is made of Python callables ({aggregation.name}); a scenario file can only name the "
            "aggregations count, sum, string_adder, string_reduce and list (count(), aggregate('sum'), "
            "reduce('string_reduce'), ...)")
    return aggregation


def _add_table_result_fields(obj: dict, spec) -> None:
    if spec.merge_separator != "+":
        obj["merge_separator"] = spec.merge_separator
    if spec.send_old_values:
        obj["send_old_values"] = True
    _add_suppress(obj, spec)


def _add_suppress(obj: dict, spec) -> None:
    suppress = spec.suppress
    if suppress is None:
        return
    out = {"until": suppress.until}
    if suppress.time_limit_ms is not None:
        out["time_limit_ms"] = suppress.time_limit_ms
    if suppress.buffer != SuppressBufferSpec():
        buffer = {}
        for name in ("max_records", "max_bytes"):
            if getattr(suppress.buffer, name) is not None:
                buffer[name] = getattr(suppress.buffer, name)
        buffer["when_full"] = suppress.buffer.when_full
        out["buffer"] = buffer
    obj["suppress"] = out


def _table_dict(table: TableSpec) -> dict:
    obj = {"versioned": table.versioned}
    if table.history_retention_ms is not None:
        obj["history_retention_ms"] = table.history_retention_ms
    return obj


def scenario_document(spec, inputs, *, name, release=None, store="rocksdb", emit_interval_ms=0, expected=None,
                      checkpoints=None, description="", source="", caching=False) -> dict:
    """A scenario document for ``spec`` and ``inputs``; see ``Topology.to_scenario``."""
    doc = {"format": FORMAT, "name": name}
    if description:
        doc["description"] = description
    if source:
        doc["source"] = source
    doc["semantics"] = release if release is not None else DEFAULT_RELEASE
    doc["topology"] = topology_dict(spec)
    config = {"order": "as_listed", "store": store}
    if emit_interval_ms:
        config["emit_interval_ms"] = emit_interval_ms
    if caching:
        config["caching"] = True
    doc["config"] = config
    doc["inputs"] = [_input_dict(r) for r in inputs]
    if checkpoints is not None:
        doc["checkpoints"] = list(checkpoints)
    if expected is not None:
        topics = spec.sink_topics if isinstance(spec, GraphTopology) else (OUTPUT_TOPIC,)
        doc["expected"] = [_expected_dict(r, topics) for r in expected]
    try:
        json.dumps(doc)
    except (TypeError, ValueError) as exc:
        raise IllegalArgumentError(f"a scenario file holds JSON values only: {exc}") from None
    scenario_from_dict(doc, path=f"<scenario {name!r}>")  # raises ScenarioError naming the bad field
    return doc


def _input_dict(rec) -> dict:
    if isinstance(rec, InputRecord):
        obj = {"topic": rec.topic, "key": rec.key, "value": rec.value, "ts": rec.ts}
        if rec.partition:
            obj["partition"] = rec.partition
        return obj
    if isinstance(rec, dict):
        return dict(rec)
    if isinstance(rec, (tuple, list)) and len(rec) == 4:
        topic, key, value, ts = rec
        return {"topic": topic, "key": key, "value": value, "ts": ts}
    raise TypeError(f"an input record is (topic, key, value, ts), a dict or an InputRecord, got {rec!r}")


def _expected_dict(rec, topics=(OUTPUT_TOPIC,)) -> dict:
    """An expected record; its topic is the record's own (a graph's ``TestRecord``, a 4-tuple, a
    dict's ``topic``) or, when the topology writes one topic, that topic."""
    only = topics[0] if len(topics) == 1 else None
    if isinstance(rec, dict):
        return {"topic": only, **rec} if only is not None else dict(rec)
    if isinstance(rec, (tuple, list)) and len(rec) in (3, 4):
        if len(rec) == 4:
            topic, key, value, ts = rec
        elif only is not None:
            topic, (key, value, ts) = only, rec
        else:
            raise TypeError(f"this topology writes {', '.join(topics)}: an expected record is (topic, key, value, ts), "
                            f"got {rec!r}")
        if isinstance(key, Windowed):
            key = key.as_dict()
        return {"topic": topic, "key": key, "value": value, "ts": ts}
    if isinstance(rec, (OutputRecord, TestRecord)):
        key = rec.key.as_dict() if isinstance(rec.key, Windowed) else rec.key
        topic = getattr(rec, "topic", None) or only
        obj = {"topic": topic, "key": key, "value": rec.value, "ts": rec.ts}
        if rec.old_value is not NO_OLD_VALUE:
            obj["old_value"] = rec.old_value
        if rec.input_index >= 0:
            obj["after_input"] = rec.input_index
        return obj
    raise TypeError(f"an expected record is (key, value, ts), (topic, key, value, ts), a dict or a TestRecord, "
                    f"got {rec!r}")


# --- Python code -----------------------------------------------------------------------------

def describe_spec(spec) -> str:
    """Python code that builds ``spec`` with :mod:`reference.api` (``b`` is a StreamsBuilder)."""
    if isinstance(spec, (SessionAggregateSpec, WindowAggregateSpec, SlidingAggregateSpec)):
        body = (f"b.stream('input').group_by_key().windowed_by({_aggregate_windows_code(spec)})"
                f"{_emit_code(spec.emit)}.{_aggregation_code(spec.aggregation, spec.merge_separator, spec.retention_ms)}"
                f"{_table_result_code(spec)}.to_stream().to('output')")
        return "b = StreamsBuilder()\n" + body + "\ntopology = b.build()\n"
    if isinstance(spec, WindowedTableJoinSpec):
        return _windowed_table_join_code(spec)
    joiner = _joiner_code(spec)
    method = _STREAM_METHODS[spec.join]
    if isinstance(spec, StreamStreamJoinSpec):
        body = f"b.stream('left').{method}(b.stream('right'), {joiner}, {_windows_code(spec)}).to('output')"
    elif isinstance(spec, StreamTableJoinSpec):
        joined = f", Joined.with_grace_period({spec.grace_ms})" if spec.grace_ms is not None else ""
        body = f"b.stream('left').{method}({_table_code('right', spec.table)}, {joiner}{joined}).to('output')"
    else:
        body = (f"{_table_code('left', spec.left_table)}.{method}({_table_code('right', spec.right_table)}, {joiner})"
                f"{_table_result_code(spec)}.to_stream().to('output')")
    return "b = StreamsBuilder()\n" + body + "\ntopology = b.build()\n"


def _windowed_table_join_code(spec) -> str:
    lines = ["b = StreamsBuilder()", f"windows = {_time_windows_code(spec.window)}"]
    for side, aggregation in (("left", spec.left_aggregation), ("right", spec.right_aggregation)):
        lines.append(f"{side} = b.stream('{side}').group_by_key().windowed_by(windows)."
                     f"{_aggregation_code(aggregation, spec.merge_separator, None)}")
    if spec.shift_ms:
        lines.append(f"right = right.to_stream().map(KeyValueMapper.shift_window({spec.shift_ms})).to_table()")
    lines.append(f"left.{_STREAM_METHODS[spec.join]}(right, {_joiner_code(spec)}){_table_result_code(spec)}"
                 ".to_stream().to('output')")
    lines.append("topology = b.build()")
    return "\n".join(lines) + "\n"


def _aggregate_windows_code(spec) -> str:
    if isinstance(spec, SessionAggregateSpec):
        if spec.grace_ms is None:
            return f"SessionWindows.with_({spec.gap_ms})"
        if spec.grace_ms == 0:
            return f"SessionWindows.of_inactivity_gap_with_no_grace({spec.gap_ms})"
        return f"SessionWindows.of_inactivity_gap_and_grace({spec.gap_ms}, {spec.grace_ms})"
    if isinstance(spec, SlidingAggregateSpec):
        if spec.grace_ms == 0:
            return f"SlidingWindows.of_time_difference_with_no_grace({spec.time_difference_ms})"
        return f"SlidingWindows.of_time_difference_and_grace({spec.time_difference_ms}, {spec.grace_ms})"
    return _time_windows_code(spec.window)


def _time_windows_code(window) -> str:
    if window.grace_ms is None:
        code = f"TimeWindows.of({window.size_ms})"
    elif window.grace_ms == 0:
        code = f"TimeWindows.of_size_with_no_grace({window.size_ms})"
    else:
        code = f"TimeWindows.of_size_and_grace({window.size_ms}, {window.grace_ms})"
    if window.advance_ms != window.size_ms:
        code += f".advance_by({window.advance_ms})"
    return code


def _emit_code(emit: str) -> str:
    return ".emit_strategy(EmitStrategy.on_window_close())" if emit == "on_window_close" else ""


def _aggregation_code(aggregation, merge_separator: str, retention_ms) -> str:
    """``count()`` / ``aggregate('sum')`` / ``reduce('string_reduce')`` with their options."""
    options = []
    if merge_separator != "+":
        options.append(f"merge_separator={merge_separator!r}")
    if retention_ms is not None:
        options.append(f"materialized=Materialized.with_retention({retention_ms})")
    if not isinstance(aggregation, str):
        method = "reduce" if aggregation.is_reduce else "aggregate"
        return f"{method}(<callable aggregation {aggregation.name}>)"
    if aggregation == "count" and merge_separator == "+":
        return f"count({', '.join(options)})"
    method = "reduce" if named_aggregation(aggregation).is_reduce else "aggregate"
    return f"{method}({', '.join([repr(aggregation)] + options)})"


def _table_result_code(spec) -> str:
    """``.enable_sending_old_values()`` and ``.suppress(...)`` of a table result."""
    code = ".enable_sending_old_values()" if spec.send_old_values else ""
    suppress = spec.suppress
    if suppress is None:
        return code
    buffer = _buffer_code(suppress.buffer)
    if suppress.until == "window_close":
        return code + f".suppress(Suppressed.until_window_closes({buffer}))"
    return code + f".suppress(Suppressed.until_time_limit({suppress.time_limit_ms}, {buffer}))"


def _buffer_code(buffer: SuppressBufferSpec) -> str:
    if buffer.max_records is not None:
        code, default_when_full = f"BufferConfig.max_records({buffer.max_records})", "emit_early"
        if buffer.max_bytes is not None:
            code += f".with_max_bytes({buffer.max_bytes})"
    elif buffer.max_bytes is not None:
        code, default_when_full = f"BufferConfig.max_bytes({buffer.max_bytes})", "emit_early"
    else:
        code, default_when_full = "BufferConfig.unbounded()", "shut_down"
    if buffer.when_full != default_when_full:
        code += ".shut_down_when_full()" if buffer.when_full == "shut_down" else ".emit_early_when_full()"
    return code


def _joiner_code(spec) -> str:
    if callable(spec.joiner):
        return f"<callable {_callable_name(spec.joiner)}>"
    if spec.joiner_separator != "+":
        return f"ValueJoiner.{spec.joiner}({spec.joiner_separator!r})"
    return repr(spec.joiner)


def _windows_code(spec) -> str:
    w = spec.window
    # start from the larger bound so every intermediate JoinWindows is valid (size >= 0)
    base = max(w.before_ms, w.after_ms)
    if spec.window_api == "time_difference":
        code = (f"JoinWindows.of_time_difference_with_no_grace({base})" if w.grace_ms == 0
                else f"JoinWindows.of_time_difference_and_grace({base}, {w.grace_ms})")
    else:
        code = f"JoinWindows.of({base})"
    if w.before_ms != base:
        code += f".before({w.before_ms})"
    if w.after_ms != base:
        code += f".after({w.after_ms})"
    if spec.window_api == "legacy" and w.grace_ms is not None:
        code += f".grace({w.grace_ms})"
    return code


def _table_code(topic: str, table: TableSpec) -> str:
    if table.versioned:
        store = f"Stores.persistent_versioned_key_value_store('{topic}-store', {table.history_retention_ms})"
        return f"b.table('{topic}', Materialized.as_({store}))"
    return f"b.table('{topic}')"


def _callable_name(func) -> str:
    return getattr(func, "__qualname__", None) or repr(func)
