"""Plain helpers every test area shares (the fixtures are in ``conftest.py``).

Running a scenario and judging the run: :func:`run_on` (the engine table), :func:`assert_passes`
(the verdict of ``kssim check``), :func:`assert_scenario_passes` (both; the
``assert_scenario_passes`` fixture) and :func:`assert_conforms` (a Spark batch's result). One
SparkSession per test run: ``spark_backend.session.get_spark`` keeps it per process, with the
test-friendly local defaults (few shuffle partitions, adaptive execution off, serial GC, C1 JIT);
the ``spark`` fixture lives in ``conftest.py``.
"""
from __future__ import annotations

import glob
import json
import os

import pytest

from kssim.reference.model.scenario import load_scenario, scenario_from_dict

#: the project's root (the checkout), its bundled scenarios, and the conformance corpus beside it
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUNDLED = os.path.join(ROOT, "scenarios")
CONFORMANCE = os.path.join(ROOT, "..", "shared", "conformance")
#: topology graphs with expectations from real Kafka Streams 3.9 (``../shared/conformance-graphs``)
CONFORMANCE_GRAPHS = os.path.join(ROOT, "..", "shared", "conformance-graphs")


def conformance_files(operator):
    """Every conformance scenario file of ``operator``, sorted."""
    marker = f'"{operator}"'
    found = []
    for path in sorted(glob.glob(os.path.join(CONFORMANCE, "**", "*.json"), recursive=True)):
        with open(path, encoding="utf-8") as handle:
            if marker in handle.read():
                found.append(path)
    return found


def run_on(engine, scenarios, **options):
    """Run ``scenarios`` on ``engine`` ("reference" or "spark") through the engine table
    (:func:`reference.model.engines.run_scenarios`): one RunResult, or the exception that stopped
    that scenario, per scenario."""
    from kssim.reference.model.engines import run_scenarios

    return run_scenarios(engine, list(scenarios), **options)


def assert_passes(scenario, result, engine="reference"):
    """The one check of a scenario's run, the verdict ``kssim check`` gives
    (:func:`reference.model.compare.judge`): the run did not raise, its outputs satisfy
    ``expected`` and it fails (or not) as ``expected_failure`` says. ``result`` is a RunResult
    or the exception that stopped the run."""
    from kssim.reference.model.compare import Status, judge

    verdict = judge(scenario, result)
    assert verdict.status is Status.PASS, \
        f"{scenario.name} (Kafka {scenario.release}, {engine}): {verdict.status.value}: {verdict.detail}"


def assert_scenario_passes(scenario, engine="reference"):
    """Run one scenario on ``engine`` and :func:`assert_passes` it; returns the result. What the
    ``assert_scenario_passes`` fixture (conftest.py) hands to tests."""
    result, = run_on(engine, [scenario])
    assert_passes(scenario, result, engine)
    return result


def assert_conforms(scenario, result):
    """A Spark result (from a batch already run) matches the scenario's expected outputs and failure."""
    assert_passes(scenario, result, engine="spark")


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
    from kssim.reference.model.records import NO_OLD_VALUE

    if isinstance(result, Exception):
        return f"error {type(result).__name__}: {result}".encode()
    lines = []
    for o in result.outputs:
        old = "-" if o.old_value is NO_OLD_VALUE else json.dumps(o.old_value, sort_keys=True)
        lines.append(json.dumps([o.topic, o.partition, o.key, o.value, o.ts, o.input_index, old], sort_keys=True))
    # drop reasons and failure codes by their stable code (a DropReason / FailureCode member, or a plain string)
    lines += [json.dumps(["drop", d.input_index, str(getattr(d.reason, "code", d.reason))]) for d in result.drops]
    if result.failure is not None:
        code = getattr(result.failure, "code", None)
        lines.append(json.dumps(["fail", result.failure.input_index, None if code is None else str(getattr(code, "code", code)),
                                 result.failure.message]))
    return "\n".join(lines).encode()


#: shuffle partition counts a byte-identity test runs a batch at: one, a few, and many odd-sized
#: ones (37: each key group lands elsewhere than at 1 or 4; a job's cost grows per task, so not 200)
SHUFFLE_PARTITION_COUNTS = ("1", "4", "37")


def results_per_shuffle_partitioning(spark, scenarios, counts=SHUFFLE_PARTITION_COUNTS) -> dict:
    """``{count: [result_bytes per scenario]}``: the Spark batch of ``scenarios`` run once per
    ``spark.sql.shuffle.partitions`` value in ``counts`` (the session's setting restored after)."""

    before = spark.conf.get("spark.sql.shuffle.partitions")
    runs = {}
    try:
        for partitions in counts:
            spark.conf.set("spark.sql.shuffle.partitions", partitions)
            runs[partitions] = [result_bytes(r) for r in run_on("spark", scenarios)]
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)
    return runs


def readme_example(section: str):
    """The Python block of the README section titled ``section`` (``### ...``): what it prints
    when run, and what its ``# `` comment lines promise it prints."""
    import contextlib
    import io
    import re

    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as handle:
        text = handle.read()
    body = re.split(r"\n##+ ", text.split(f"### {section}", 1)[1], maxsplit=1)[0]
    code = re.search(r"```python\n(.*?)```", body, re.S).group(1)
    promised = [line[2:] for line in code.splitlines() if line.startswith("# ")]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(code, {})
    return printed.getvalue().splitlines(), promised


class FakeTerminal:
    """A standard error that says it is a terminal and keeps what is written (progress bars)."""

    def __init__(self):
        self.text = ""

    def isatty(self):
        return True

    def write(self, text):
        self.text += text

    def flush(self):
        pass


def spark_batch(files, spark) -> dict:
    """``{path: (scenario, Spark result)}`` of scenario files run as one Spark batch."""
    from kssim.spark_backend.runtime.runner import run_scenarios

    scenarios = load_all(files)
    return dict(zip(files, zip(scenarios, run_scenarios(scenarios, spark))))


def reference_results(files) -> dict:
    """``{path: reference engine result}`` of scenario files."""
    return dict(zip(files, run_on("reference", load_all(files))))
