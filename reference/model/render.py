"""How kssim renders records: JSON values in messages, tables and explanations, and output
records as JSON objects and JSONL lines (every engine, every command).

- :func:`show`: a compact, stable rendering of a JSON value for messages;
- :func:`output_as_json` / :func:`json_line`: an output record as the JSON object of
  ``kssim run --format jsonl`` and ``kssim replay`` (fields :data:`OUTPUT_FIELDS`, plus
  ``old_value`` when the topology sends old values), written as one compact line: the bytes the
  Spark backend writes (``spark_backend.runtime.outputs.jsonl_line``) for the same record;
- :func:`table`, :func:`describe_input`: the text of ``kssim run``'s table and messages.
"""
from __future__ import annotations

import json

from kssim.reference.model.records import NO_OLD_VALUE

#: the fields of an output record as JSON, in this order (``old_value`` follows where sent)
OUTPUT_FIELDS = ("topic", "partition", "key", "value", "ts", "input")


def show(value) -> str:
    """A compact rendering of a JSON value for messages, objects in their own field order (a
    windowed key reads {"key","start","end"}; Kafka tells reordered objects apart, so do we)."""
    if value is None:
        return "null"
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"))


def sends_old_values(scenario) -> bool:
    """Whether the scenario's topology reports old values (``old_value`` in outputs)."""
    return bool(getattr(scenario.topology, "send_old_values", False))


def output_as_json(rec, old_values: bool = False, scenario_name=None) -> dict:
    """An output record as the JSON object of ``kssim run --format jsonl`` and ``kssim replay``:
    ``topic, partition, key, value, ts, input``, then ``old_value`` when ``old_values`` (a
    null old value and no old value both read ``null``), led by ``scenario`` when given."""
    obj = {"topic": rec.topic, "partition": rec.partition, "key": rec.key, "value": rec.value,
           "ts": rec.ts, "input": rec.input_index}
    if old_values:
        obj["old_value"] = None if rec.old_value is NO_OLD_VALUE else rec.old_value
    if scenario_name is not None:
        obj = {"scenario": scenario_name, **obj}
    return obj


def json_line(obj) -> str:
    """One JSONL line (no newline): compact, in document order, non-ASCII as is; what a JSON
    serde writes and what the Spark backend writes."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def table(rows, headers) -> str:
    """A plain text table: ``headers``, a rule, then ``rows`` (lists of strings), left-aligned."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    out = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip(), "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(out)


def describe_input(scenario, index) -> str:
    """``input 3 (left k:A@5)`` (the partition too when the scenario has several tasks)."""
    rec = scenario.inputs[index]
    part = f"[{rec.partition}]" if scenario.config.task_count > 1 else ""
    return f"input {index} ({rec.topic}{part} {show(rec.key)}:{show(rec.value)}@{rec.ts})"
