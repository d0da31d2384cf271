"""Shared fixtures and helpers of the Spark backend tests (tests/test_spark_*.py).

One SparkSession per test run: ``spark_backend.session.get_spark`` keeps it per process, with the
test-friendly local defaults (few shuffle partitions, adaptive execution off, serial GC, C1 JIT).
The ``spark`` fixture itself lives in ``conftest.py``.
"""
from __future__ import annotations

import glob
import json
import os

import pytest

from reference.model.scenario import load_scenario, scenario_from_dict

#: the project's root (the checkout), its bundled scenarios, and the conformance corpus beside it
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUNDLED = os.path.join(ROOT, "scenarios")
CONFORMANCE = os.path.join(ROOT, "..", "shared", "conformance")


def conformance_files(operator):
    """Every conformance scenario file of ``operator``, sorted."""
    marker = f'"{operator}"'
    found = []
    for path in sorted(glob.glob(os.path.join(CONFORMANCE, "**", "*.json"), recursive=True)):
        with open(path, encoding="utf-8") as handle:
            if marker in handle.read():
                found.append(path)
    return found


def assert_conforms(scenario, result):
    """A Spark result matches the scenario's expected outputs and failure."""
    from reference.model.compare import check_failure, compare_outputs

    assert not isinstance(result, Exception), result
    mismatch = compare_outputs(scenario, result.outputs)
    assert mismatch is None, mismatch.describe()
    assert check_failure(scenario, result.failure) is None


def load_all(paths):
    return [load_scenario(p) for p in paths]


def scenario(topology, inputs, semantics="3.9", **config):
    """A scenario built in a test; ``inputs`` as (topic, key, value, ts[, partition]) tuples."""
    records = []
    for item in inputs:
        topic, key, value, ts = item[:4]
        rec = {"topic": topic, "key": key, "value": value, "ts": ts}
        if len(item) > 4:
            rec["partition"] = item[4]
        records.append(rec)
    doc = {"format": "kssim-scenario/1", "name": "test", "semantics": semantics, "topology": topology,
           "inputs": records}
    if config:
        doc["config"] = config
    return scenario_from_dict(doc)


def result_bytes(result) -> bytes:
    """A run's outputs, drops and failure as canonical bytes (for byte-identity checks)."""
    from reference.model.records import NO_OLD_VALUE

    if isinstance(result, Exception):
        return f"error {type(result).__name__}: {result}".encode()
    lines = []
    for o in result.outputs:
        old = "-" if o.old_value is NO_OLD_VALUE else json.dumps(o.old_value, sort_keys=True)
        lines.append(json.dumps([o.topic, o.partition, o.key, o.value, o.ts, o.input_index, old], sort_keys=True))
    lines += [json.dumps(["drop", d.input_index, d.reason]) for d in result.drops]
    if result.failure is not None:
        lines.append(json.dumps(["fail", result.failure.input_index, result.failure.message]))
    return "\n".join(lines).encode()
