"""``kssim difftest --graphs``: random topology graphs, valid in the releases asked and diverse;
graph rule changes between releases found, shrunk to a few nodes and inputs, and named; the
written form of a graph (ids, ``from``) kept as the spec writes it."""
import glob
import json
import os
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, Phase, find, settings

from kssim.differential_tests import graph_shrink
from kssim.differential_tests.engines import parse_engine
from kssim.differential_tests.graph_strategies import (GRAPH, compact, explicit, graph_scenarios, operations_of,
                                                       valid_in)
from kssim.differential_tests.runner import difftest_operator, draw_cases
from kssim.reference.model.graph.nodes import OPERATIONS
from kssim.reference.model.profiles import profile_for
from kssim.tools.cli import main

CORPUS = "/work/shared/conformance-graphs/kafka-oracle"


@lru_cache(maxsize=None)
def _cases(releases, count, seed):
    return tuple(draw_cases(GRAPH, tuple(profile_for(r) for r in releases), count, seed))


@lru_cache(maxsize=None)
def _pair(a, b, cases=150):
    return difftest_operator(GRAPH, parse_engine(a), parse_engine(b), cases, seed=0)


# --- generation ------------------------------------------------------------------------------------

def test_every_drawn_graph_is_valid_in_every_release_asked():
    for releases in (("3.9",), ("2.4", "2.5"), ("3.4", "3.5")):
        for doc in _cases(releases, 40, 1):
            assert all(valid_in(doc, r) for r in releases), doc


def _reachable(condition):
    """A drawn graph scenario (3.9) for which ``condition`` holds, found by Hypothesis within a
    budget (no fixed draws: any Hypothesis version finds one)."""
    strategy = graph_scenarios((profile_for("3.9"),))
    return find(strategy, condition, settings=settings(max_examples=1500, phases=[Phase.generate], database=None,
                                                       deadline=None, suppress_health_check=list(HealthCheck)))


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_every_operation_of_the_spec_is_reachable(operation):
    assert operation in operations_of(_reachable(lambda doc: operation in operations_of(doc)))


def _features(doc):
    graph = doc["topology"]["graph"]
    args = [next(v for k, v in node.items() if k in OPERATIONS) for node in graph]
    names = operations_of(doc)
    inputs = doc["inputs"]
    yield from (f"window:{w}" for node in graph for w in node.get("windowed_by", {}) if w != "emit")
    if any(node.get("windowed_by", {}).get("emit") == "on_window_close" for node in graph):
        yield "emit_on_window_close"
    if any(node.get("materialized", {}).get("versioned") for node in graph):
        yield "versioned table"
    for name, arg in zip(names, args):
        if name in ("join", "left_join", "outer_join"):
            yield "foreign key join" if "foreign_key" in arg else "stream-stream join" if "window" in arg \
                else "stream-table grace" if "grace_ms" in arg else "join"
        if name in ("reduce", "aggregate"):
            yield f"{name}:{arg}"
    if sum(1 for n in names if n in ("stream", "table")) >= 2:
        yield "several sources"
    if len({arg for name, arg in zip(names, args) if name == "to"}) >= 2:
        yield "several sink topics"
    readers = [ref for node in explicit(graph) for ref in graph_shrink.references(node)]
    if len(readers) != len(set(readers)):
        yield "branch"
    if any(r["key"] is None for r in inputs):
        yield "null key"
    if any(r["value"] is None for r in inputs):
        yield "null value"
    if any(later["ts"] < earlier["ts"] for earlier, later in zip(inputs, inputs[1:])):
        yield "out of order"
    if doc["config"].get("caching"):
        yield "caching"


FEATURES = ("window:time", "window:sliding", "window:session", "emit_on_window_close", "versioned table",
            "foreign key join", "stream-stream join", "stream-table grace", "join", "several sources",
            "several sink topics", "branch", "null key", "null value", "out of order", "caching",
            "reduce:sum", "reduce:string_reduce", "aggregate:count", "aggregate:sum", "aggregate:string_adder",
            "aggregate:list")


@pytest.mark.parametrize("feature", FEATURES)
def test_graphs_are_diverse(feature):
    assert feature in set(_features(_reachable(lambda doc: feature in set(_features(doc)))))


def test_only_operations_every_release_has_are_drawn():
    # 2.4 has no KStream#toTable (2.5) or #repartition (2.6), no sliding windows (2.7), no
    # versioned tables (3.5), no emit on window close (3.3)
    for doc in _cases(("2.4", "2.5"), 60, 2):
        assert not {"to_table", "repartition"} & set(operations_of(doc))
        text = json.dumps(doc)
        assert '"sliding"' not in text and '"versioned"' not in text and "on_window_close" not in text


# --- the written form --------------------------------------------------------------------------------

def test_compact_writes_the_corpus_graphs_as_they_are():
    files = sorted(glob.glob(os.path.join(CORPUS, "*", "*.json")))[::9]
    if not files:
        pytest.skip("no conformance corpus")
    for path in files:
        with open(path, encoding="utf-8") as handle:
            graph = json.load(handle)["topology"]["graph"]
        assert compact(explicit(graph)) == graph, path


def _doc(graph, inputs):
    return {"format": "kssim-scenario/1", "name": "t", "topology": {"graph": graph}, "config": {"order": "as_listed"},
            "inputs": inputs}


def test_dropping_a_node_reconnects_its_readers_upstream():
    doc = _doc([{"table": "t1"}, {"filter": {"is_null": "$value"}}, {"to_stream": {}}, {"to": "out"}],
               [{"topic": "t1", "key": "k", "value": 1, "ts": 0}])
    graphs = [c["topology"]["graph"] for c in graph_shrink.structure_candidates(doc)]
    assert [{"table": "t1"}, {"to_stream": {}}, {"to": "out"}] in graphs


def test_dropping_a_sink_drops_its_branch_and_the_inputs_no_source_reads():
    doc = _doc([{"stream": "s1", "id": "n1"}, {"to": "out"}, {"stream": "s2"}, {"filter": {"and": []}},
                {"merge": "n1"}, {"to": "out2"}],
               [{"topic": "s1", "key": "k", "value": 1, "ts": 0}, {"topic": "s2", "key": "k", "value": 2, "ts": 0}])
    smaller = [c for c in graph_shrink.structure_candidates(doc) if c["topology"]["graph"] == [{"stream": "s1"},
                                                                                             {"to": "out"}]]
    assert smaller and smaller[0]["inputs"] == [{"topic": "s1", "key": "k", "value": 1, "ts": 0}]


def test_a_cut_ends_the_chain_with_a_sink_and_expressions_get_simpler():
    doc = _doc([{"table": "t1"}, {"group_by": {"key": {"field": "g"}}}, {"count": {}}, {"to_stream": {}},
                {"to": "out"}], [{"topic": "t1", "key": "k", "value": {"g": "a"}, "ts": 0}])
    structures = [c["topology"]["graph"] for c in graph_shrink.structure_candidates(doc)]
    assert [{"table": "t1"}, {"to_stream": {}}, {"to": "cut"}] in structures
    simpler = [c["topology"]["graph"][1] for c in graph_shrink.simplify_candidates(doc)]
    assert {"group_by": {"key": "$value"}} in simpler
    for candidate in graph_shrink.structure_candidates(doc) + graph_shrink.simplify_candidates(doc):
        assert graph_shrink.size_of(candidate) < graph_shrink.size_of(doc)


# --- release pairs and one release -----------------------------------------------------------------

@pytest.mark.parametrize("a, b, rule, max_nodes", [
    # KIP-904 needs a table, its group_by, an aggregation and the way out (to_stream, to)
    ("reference@3.4", "reference@3.5", "table_group_by_single_record", 5),
    # KAFKA-10077 needs a filter on a table that something else materializes (a join) and both ways out
    ("reference@2.6", "reference@2.7", "ktable_filter_old_values_if_materialized", 8),
])
def test_a_graph_rule_change_between_releases_is_found_shrunk_and_named(a, b, rule, max_nodes):
    run = _pair(a, b)
    finding = next(f for f in run.findings if rule in f.explained_by)
    assert finding.explained_by == (rule,)
    assert len(finding.shrunk["topology"]["graph"]) <= max_nodes and len(finding.shrunk["inputs"]) <= 3
    assert all(valid_in(finding.shrunk, r) for r in (a.split("@")[1], b.split("@")[1]))
    assert len(finding.shrunk["topology"]["graph"]) < len(finding.original["topology"]["graph"]) \
        or len(finding.shrunk["inputs"]) < len(finding.original["inputs"])


def test_one_release_against_itself_finds_nothing():
    run = difftest_operator(GRAPH, parse_engine("reference@3.9"), parse_engine("reference@3.9"), 200, seed=5)
    assert run.finding is None and run.cases == 200
    assert run.compared >= 180  # an engine's refusal or crash is counted, never fatal


def test_the_cli_runs_graphs_and_writes_a_checkable_regression(capsys, tmp_path):
    status = main(["difftest", "--a", "reference@3.4", "--b", "reference@3.5", "--graphs", "--cases", "120",
                   "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert status == 1 and "divergence in graph" in out and "explained by: table_group_by_single_record" in out
    written = [p for p in tmp_path.iterdir() if p.name.startswith("graph-reference_3.4-vs-reference_3.5")]
    assert written
    assert main(["check", str(written[0])]) == 0
