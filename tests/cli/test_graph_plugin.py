"""The pytest plugin (``tools/pytest_plugin.py``) on topology graphs: graph scenario files collected
and judged as ``kssim check`` judges them (several sink topics, YAML, invalid nodes, releases), and
the ``kssim`` fixture's driver and ``assert_outputs`` on a graph with two sink topics. Fresh
projects made by ``pytester``, run in this process, as ``test_pytest_plugin.py`` does."""
from __future__ import annotations

import json
import os

import pytest

# imported before pytester's inline runs (see test_pytest_plugin.py: each run forgets the modules
# first imported during it)
import hypothesis  # noqa: F401
import yaml

import kssim.reference.api  # noqa: F401
import kssim.reference.graph.engine  # noqa: F401
import kssim.reference.model.scenario  # noqa: F401
import kssim.reference.runtime.engine  # noqa: F401
import kssim.tools.pytest_plugin  # noqa: F401
from kssim.tools.cli import main

from kssim_testing import CONFORMANCE_GRAPHS

pytest_plugins = ["pytester"]

ORACLE = os.path.join(CONFORMANCE_GRAPHS, "kafka-oracle")
#: stream("s1") ; select_key ; table("t1") (versioned) ; join ; map_values ; to("out")
REKEY_JOIN = os.path.join(ORACLE, "rekey-join", "graph-rekey-join-142.json")
#: two sources, two sink topics (out, out2)
TWO_SINKS = os.path.join(ORACLE, "stateless", "graph-stateless-2.json")
FK_JOIN = os.path.join(ORACLE, "fk-join", "graph-fk-join-562.json")


def read(path) -> dict:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def project(pytester, docs: dict, ini="kssim_scenarios = specs\n"):
    """A fresh project: ``docs`` ({file name: scenario document}) written into ``specs/`` (YAML
    for a ``.yaml`` name), and a pytest.ini with ``ini``."""
    specs = pytester.path / "specs"
    specs.mkdir()
    for name, doc in docs.items():
        text = yaml.safe_dump(doc, sort_keys=False) if name.endswith(".yaml") else json.dumps(doc, indent=1)
        (specs / name).write_text(text, encoding="utf-8")
    pytester.makeini("[pytest]\n" + ini)


def check_output(capsys, path) -> str:
    capsys.readouterr()
    main(["check", "-q", path])
    return capsys.readouterr().out


def test_graph_files_run_as_tests_named_after_their_scenario(pytester):
    project(pytester, {"rekey.json": read(REKEY_JOIN), "two-sinks.yaml": read(TWO_SINKS), "fk.json": read(FK_JOIN)})
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines_random(["specs/rekey.json::graph-rekey-join-142 PASSED*",
                                        "specs/two-sinks.yaml::graph-stateless-2 PASSED*",
                                        "specs/fk.json::graph-fk-join-562 PASSED*"])


def test_a_broken_expectation_on_the_second_sink_topic_fails_as_check_says(pytester, capsys):
    doc = read(TWO_SINKS)
    wrong = [e for e in doc["expected"] if e["topic"] == "out2"][1]
    assert (wrong["key"], wrong["ts"]) == ("b-1", 26)
    wrong["value"]["n"] = 13
    project(pytester, {"two-sinks.json": doc, "rekey.json": read(REKEY_JOIN)})
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    check = check_output(capsys, "specs/two-sinks.json").splitlines()
    assert check[0].startswith("FAIL graph-stateless-2 (specs/two-sinks.json)")
    detail = check[1:check.index(next(line for line in check if " passed, " in line))]
    assert detail[0].strip().startswith("topic out2 partition 0, record #1: expected key=b-1 "
                                        'value={"g":"b","n":13,"fk":"z"} ts=26 (expected by input 9), got key=b-1 '
                                        'value={"g":"b","n":12,"fk":"z"} ts=26 (emitted at input 9)')
    result.stdout.fnmatch_lines(
        ["FAIL graph-stateless-2 (specs/two-sinks.json) [[]Kafka 3.9, graph, engine reference[]]"]
        + [line.replace("[", "[[]") for line in detail]
        # then the --explain lines of the input at the difference: both sinks' records of input 9
        + ['why, at input 9 (s2 k1:{"g":"b","n":1,"fk":"z"}@26):',
           '  #15 b-1:{"g":"b","n":12,"fk":"z"}@26 while processing input 9 *'])
    assert "Traceback" not in result.stdout.str()


def test_an_invalid_graph_fails_naming_its_file_node_and_field(pytester, capsys):
    text = json.dumps(read(REKEY_JOIN), indent=1)
    assert text.count('"joiner": "concat"') == 1
    project(pytester, {"bad.json": json.loads(text.replace('"joiner": "concat"', '"joiner": "glue"'))})
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    invalid = [line for line in check_output(capsys, "specs").splitlines() if line.startswith("INVALID")]
    assert invalid == ["INVALID specs/bad.json: topology.graph[3].join.joiner: must be one of pair, concat, got 'glue'"]
    result.stdout.fnmatch_lines(["*_ kssim scenario bad _*", invalid[0]])
    assert "Traceback" not in result.stdout.str()


def test_a_graph_a_release_lacks_is_skipped_there(pytester):
    # the re-keyed join reads a versioned table (KIP-889, 3.5+); the stateless graph runs at 3.4
    project(pytester, {"rekey.json": read(REKEY_JOIN), "two-sinks.json": read(TWO_SINKS)})
    result = pytester.runpytest("--kssim-release", "3.4", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] specs/rekey.json: not valid at Kafka 3.4 (--kssim-release): "
                                 "topology.graph[[]2[]].materialized.versioned: versioned tables (KIP-889) do not "
                                 "exist before Kafka 3.5*"])


# --- the kssim fixture on a graph ------------------------------------------------------------------

FIXTURE_GRAPH_TESTS = '''
import pytest

#: stream("s1") to "out" as is, and re-keyed by its field g to "out2"
GRAPH = [{"stream": "s1", "id": "src"}, {"to": "out"},
         {"from": "src", "select_key": {"field": "g"}}, {"to": "out2"}]


def pipe(kssim, graph=GRAPH):
    driver = kssim.driver(graph)
    s1 = driver.create_input_topic("s1")
    s1.pipe_input("k1", {"g": "a"}, ts=5)
    s1.pipe_input("k2", {"g": "b"}, ts=7)
    return driver


def test_both_topics(kssim):
    kssim.assert_outputs(pipe(kssim), {"out": [("k1", {"g": "a"}, 5), ("k2", {"g": "b"}, 7)],
                                       "out2": [("a", {"g": "a"}, 5), ("b", {"g": "b"}, 7)]})


def test_one_topic_by_name_or_by_its_output_topic(kssim):
    driver = pipe(kssim)
    kssim.assert_outputs(driver, [("a", {"g": "a"}, 5), ("b", {"g": "b"}, 7)], topic_name="out2")
    kssim.assert_outputs(driver.create_output_topic("out"), [("k1", {"g": "a"}, 5), ("k2", {"g": "b"}, 7)])


def test_the_graph_document_form(kssim):
    driver = pipe(kssim, {"graph": GRAPH})
    assert driver.output_topics == ("out", "out2")
    kssim.assert_outputs(driver, {"out2": [("a", {"g": "a"}, 5), ("b", {"g": "b"}, 7)]})


def test_one_topic_of_the_graph_s_sole_sink(kssim):
    driver = pipe(kssim, GRAPH[:2])
    kssim.assert_outputs(driver, [("k1", {"g": "a"}, 5), ("k2", {"g": "b"}, 7)])


def test_wrong_key_on_out2(kssim):
    kssim.assert_outputs(pipe(kssim), {"out": [("k1", {"g": "a"}, 5), ("k2", {"g": "b"}, 7)],
                                       "out2": [("a", {"g": "a"}, 5), ("c", {"g": "b"}, 7)]})


def test_both_topics_wrong(kssim):
    kssim.assert_outputs(pipe(kssim), {"out": [("k1", {"g": "a"}, 5)], "out2": []})


def test_which_topic(kssim):
    kssim.assert_outputs(pipe(kssim), [])


def test_a_bad_node(kssim):
    kssim.driver([{"stream": "s1"}, {"to": ""}])
'''


def test_the_fixture_drives_a_graph_and_asserts_several_output_topics(pytester):
    pytester.makepyfile(test_kssim_graph_fixture=FIXTURE_GRAPH_TESTS)
    result = pytester.runpytest()
    result.assert_outcomes(passed=4, failed=4)
    result.stdout.fnmatch_lines([
        "*_ test_wrong_key_on_out2 _*",
        "E *AssertionError: output topic out2 partition 0, record #1: expected key=c value={\"g\":\"b\"} ts=7, "
        "got key=b value={\"g\":\"b\"} ts=7 (emitted at input 1)",
        "E *why #1: graph[[]0[]] stream k2:{\"g\":\"b\"}@7 -> graph[[]2[]] select_key: key -> b*",
        "*_ test_both_topics_wrong _*",
        "E *AssertionError: output topic out partition 0, record #1: unexpected extra output key=k2 *",
        "E *output topic out2 partition 0, record #0: unexpected extra output key=a *",
        "*_ test_which_topic _*",
        "E *TypeError: assert_outputs: the topology writes 2 topics (out, out2): name one (topic_name=...) "
        "or give {topic: records}",
        "*_ test_a_bad_node _*",
        "E *ScenarioError: kssim.driver: topology.graph[[]1[]].to: must be a topic name (a non-empty string), got ''",
    ])


def test_the_dict_form_works_on_a_single_operator_s_output_too(pytester):
    pytester.makepyfile(test_kssim_output_dict='''
from kssim.reference.api import JoinWindows, StreamsBuilder


def test_dict(kssim):
    b = StreamsBuilder()
    b.stream("left").left_join(b.stream("right"), "pair", JoinWindows.of_time_difference_and_grace(15, 5)).to("output")
    driver = kssim.driver(b.build())
    driver.create_input_topic("left").pipe_input("k", "E", ts=40)
    driver.create_input_topic("right").pipe_input("k", "f", ts=80)
    kssim.assert_outputs(driver, {"output": [("k", ["E", None], 40)]})
''')
    pytester.runpytest().assert_outcomes(passed=1)
