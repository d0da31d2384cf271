"""The engine table of the shared model, and the rendering of output records."""
import subprocess
import sys

import pytest

from kssim.reference.model.engines import ENGINES, run_scenarios
from kssim.reference.model.errors import KssimError, UnsupportedOperator
from kssim.reference.model.records import NO_OLD_VALUE, OutputRecord, RunResult
from kssim.reference.model.render import json_line, output_as_json
from kssim.reference.model.scenario import scenario_from_dict

from kssim_testing import ROOT


def doc(operator="table_table_join", **topology):
    return {"format": "kssim-scenario/1", "name": "t", "semantics": "3.9",
            "topology": {"operator": operator, "join": "inner", **topology},
            "inputs": [{"topic": "left", "key": "k", "value": 1, "ts": 1},
                       {"topic": "right", "key": "k", "value": 2, "ts": 2}]}


def test_the_reference_gives_one_result_per_scenario():
    scenarios = [scenario_from_dict(doc()), scenario_from_dict(doc(joiner="concat"))]
    a, b = run_scenarios("reference", scenarios)
    assert isinstance(a, RunResult) and [o.value for o in a.outputs] == [[1, 2]]
    assert [o.value for o in b.outputs] == ["1+2"]


def test_an_unimplemented_operator_is_that_scenario_s_result(monkeypatch):
    # an engine without the operator (as the reference was before windows landed)
    from kssim.reference.runtime import operators

    monkeypatch.delitem(operators._MODULES, "session_aggregate", raising=False)
    session = {"format": "kssim-scenario/1", "name": "session", "semantics": "3.9",
               "topology": {"operator": "session_aggregate", "gap_ms": 10, "grace_ms": 0, "aggregation": "count"},
               "inputs": [{"topic": "input", "key": "k", "value": 1, "ts": 1}]}
    scenario = scenario_from_dict(session)
    result, ok = run_scenarios("reference", [scenario, scenario_from_dict(doc())])
    assert isinstance(result, UnsupportedOperator) and isinstance(ok, RunResult)


def test_unknown_engine():
    assert ENGINES == ("reference", "spark")
    with pytest.raises(KssimError, match="unknown engine 'flink'"):
        run_scenarios("flink", [])


def test_the_model_imports_no_engine():
    code = ("import sys, kssim.reference.model.engines, kssim.reference.model.record_files, "
            "kssim.reference.model.compare; "
            "print(sorted(m for m in sys.modules if m.startswith(('kssim.spark_backend', 'pyspark', "
            "'kssim.reference.runtime', 'kssim.reference.joins', 'kssim.reference.stores', 'spark_backend', "
            "'reference'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"


def test_output_records_as_json_objects_and_lines():
    rec = OutputRecord("output", 1, {"b": 1, "a": "é"}, None, 5, 3, NO_OLD_VALUE)
    assert list(output_as_json(rec)) == ["topic", "partition", "key", "value", "ts", "input"]
    assert output_as_json(rec, old_values=True)["old_value"] is None
    assert list(output_as_json(rec, scenario_name="s"))[0] == "scenario"
    # compact, document order, non-ASCII as is: what the Spark backend writes
    assert json_line(output_as_json(rec)) == \
        '{"topic":"output","partition":1,"key":{"b":1,"a":"é"},"value":null,"ts":5,"input":3}'
