"""From a built topology back to words: a scenario document (format 1) and the Python code that
builds it with this API.

A spec writes out only what its scenario file would say (defaults left out), so
``parse_topology(topology_dict(spec)) == spec``. A Python callable joiner has no name in the
scenario contract, so a topology using one cannot be saved (:class:`UnsavableTopologyError`).
"""
from __future__ import annotations

import json

from reference.model.profiles import DEFAULT_RELEASE
from reference.model.records import NO_OLD_VALUE, InputRecord, OutputRecord
from reference.model.scenario import FORMAT, OUTPUT_TOPIC, scenario_from_dict
from reference.model.topology import StreamStreamJoinSpec, StreamTableJoinSpec, TableSpec, TableTableJoinSpec
from reference.api.driver import TestRecord
from reference.api.errors import IllegalArgumentError, UnsavableTopologyError

_STREAM_METHODS = {"inner": "join", "left": "left_join", "outer": "outer_join"}


# --- scenario documents ----------------------------------------------------------------------

def topology_dict(spec) -> dict:
    """The scenario file's ``topology`` object for ``spec``."""
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
    return obj


def _table_dict(table: TableSpec) -> dict:
    obj = {"versioned": table.versioned}
    if table.history_retention_ms is not None:
        obj["history_retention_ms"] = table.history_retention_ms
    return obj


def scenario_document(spec, inputs, *, name, release=None, store="rocksdb", emit_interval_ms=0, expected=None,
                      checkpoints=None, description="", source="") -> dict:
    """A scenario document (format 1) for ``spec`` and ``inputs``; see ``Topology.to_scenario``."""
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
    doc["config"] = config
    doc["inputs"] = [_input_dict(r) for r in inputs]
    if checkpoints is not None:
        doc["checkpoints"] = list(checkpoints)
    if expected is not None:
        doc["expected"] = [_expected_dict(r) for r in expected]
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


def _expected_dict(rec) -> dict:
    if isinstance(rec, dict):
        return {"topic": OUTPUT_TOPIC, **rec}
    if isinstance(rec, (tuple, list)) and len(rec) == 3:
        key, value, ts = rec
        return {"topic": OUTPUT_TOPIC, "key": key, "value": value, "ts": ts}
    if isinstance(rec, (OutputRecord, TestRecord)):
        obj = {"topic": OUTPUT_TOPIC, "key": rec.key, "value": rec.value, "ts": rec.ts}
        if rec.old_value is not NO_OLD_VALUE:
            obj["old_value"] = rec.old_value
        if rec.input_index >= 0:
            obj["after_input"] = rec.input_index
        return obj
    raise TypeError(f"an expected record is (key, value, ts), a dict or a TestRecord, got {rec!r}")


# --- Python code -----------------------------------------------------------------------------

def describe_spec(spec) -> str:
    """Python code that builds ``spec`` with :mod:`reference.api` (``b`` is a StreamsBuilder)."""
    joiner = _joiner_code(spec)
    method = _STREAM_METHODS[spec.join]
    if isinstance(spec, StreamStreamJoinSpec):
        body = f"b.stream('left').{method}(b.stream('right'), {joiner}, {_windows_code(spec)}).to('output')"
    elif isinstance(spec, StreamTableJoinSpec):
        joined = f", Joined.with_grace_period({spec.grace_ms})" if spec.grace_ms is not None else ""
        body = f"b.stream('left').{method}({_table_code('right', spec.table)}, {joiner}{joined}).to('output')"
    else:
        old = ".enable_sending_old_values()" if spec.send_old_values else ""
        body = (f"{_table_code('left', spec.left_table)}.{method}({_table_code('right', spec.right_table)}, {joiner})"
                f"{old}.to_stream().to('output')")
    return "b = StreamsBuilder()\n" + body + "\ntopology = b.build()\n"


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
