"""The differential harness's parts on their own: divergence, shrinking, engine names, strategies."""
import pytest

from kssim.differential_tests.divergence import code_of, first_divergence
from kssim.differential_tests.engines import CaseResult, parse_engine
from kssim.differential_tests.runner import draw_cases
from kssim.differential_tests.shrink import shrink
from kssim.reference.model.codes import DropReason, FailureCode
from kssim.reference.model.errors import KafkaWouldFail, KssimError
from kssim.reference.model.keys import key_text
from kssim.reference.model.profiles import profile_for
from kssim.reference.model.records import OutputRecord
from kssim.reference.model.scenario import scenario_from_dict


def rec(key, value, ts, at, partition=0):
    return OutputRecord("output", partition, key, value, ts, at)


def test_identical_runs_agree():
    a = CaseResult(outputs=(rec("k", "A", 1, 0), rec("k", "B", 2, 1)))
    assert first_divergence(a, a) is None


def test_first_divergence_is_the_smallest_input_index_over_partitions():
    a = CaseResult(outputs=(rec("k", "A", 1, 0, 0), rec("k", "B", 2, 5, 0), rec("j", "C", 3, 2, 1)))
    b = CaseResult(outputs=(rec("k", "A", 1, 0, 0), rec("k", "X", 2, 5, 0), rec("j", "C", 3, 3, 1)))
    div = first_divergence(a, b)
    assert (div.partition, div.position, div.input_index) == (1, 0, 2)


def test_missing_records_and_failures_diverge():
    a = CaseResult(outputs=(rec("k", "A", 1, 0),))
    assert first_divergence(a, CaseResult()).what == "missing in b"
    fail = CaseResult(outputs=(rec("k", "A", 1, 0),), failure=KafkaWouldFail(3, FailureCode.GRACE_BUFFER_NULL_KEY))
    assert "failure" in first_divergence(a, fail).what


def test_different_drop_reasons_diverge():
    from kssim.reference.model.records import Drop

    a = CaseResult(drops=(Drop(2, DropReason.NULL_KEY),))
    assert first_divergence(a, a) is None
    div = first_divergence(a, CaseResult(drops=(Drop(2, DropReason.NULL_VALUE),)))
    assert div.input_index == 2 and "null_key" in div.what and "null_value" in div.what
    assert "not dropped" in first_divergence(a, CaseResult()).what


def test_drops_compare_by_reason_code_and_report_code_and_message():
    from kssim.reference.model.records import Drop

    a = CaseResult(drops=(Drop(2, DropReason.NULL_KEY),))
    assert first_divergence(a, a) is None
    div = first_divergence(a, CaseResult(drops=(Drop(2, DropReason.NULL_VALUE),)))
    assert div.input_index == 2
    assert "null_key" in div.what and DropReason.NULL_KEY.message in div.what
    assert "null_value" in div.what and DropReason.NULL_VALUE.message in div.what
    assert code_of(DropReason.NULL_KEY) == "null_key"


def _fail(index, code):
    return KafkaWouldFail(index, code)


def test_failures_compare_by_input_and_failure_code():
    npe = CaseResult(failure=_fail(3, FailureCode.GRACE_BUFFER_NULL_KEY))
    assert first_divergence(npe, CaseResult(failure=_fail(3, FailureCode.GRACE_BUFFER_NULL_KEY))) is None
    div = first_divergence(npe, CaseResult(failure=_fail(3, FailureCode.STREAM_JOIN_NULL_KEY)))
    assert div is not None and div.input_index == 3
    assert "grace_buffer_null_key" in div.what and "stream_join_null_key" in div.what
    assert "NullPointerException" in div.what  # each side's message
    div = first_divergence(npe, CaseResult(failure=_fail(5, FailureCode.GRACE_BUFFER_NULL_KEY)))
    assert div.input_index == 3 and "input 5" in div.what
    div = first_divergence(CaseResult(), npe)
    assert div.input_index == 3 and "does not fail" in div.what


@pytest.mark.parametrize("x, y", [(1, True), (1, 1.0), (1, "1"), (0.0, -0.0),
                                  ({"a": 1, "b": 2}, {"b": 2, "a": 1}), ([1], [True])])
def test_keys_equal_in_python_but_not_in_kafka_diverge(x, y):
    assert first_divergence(CaseResult(outputs=(rec(x, "A", 1, 0),)), CaseResult(outputs=(rec(y, "A", 1, 0),))) is not None
    assert first_divergence(CaseResult(outputs=(rec(x, "A", 1, 0),)), CaseResult(outputs=(rec(x, "A", 1, 0),))) is None


def test_shrink_finds_the_minimal_pair_with_batched_predicate():
    # divergence iff a left "X" and a right "Y" are both present
    doc = {"config": {"order": "timestamp_sync", "store": "in_memory", "partitions": {"left": 2, "right": 2}},
           "inputs": [{"topic": t, "key": "k", "value": v, "ts": 10 + i, "partition": i % 2}
                      for i, (t, v) in enumerate([("left", "a"), ("left", "X"), ("right", "b"), ("right", "c"),
                                                  ("left", "d"), ("right", "Y"), ("left", "e")])]}
    batches = []

    def still_fails(docs):
        batches.append(len(docs))
        return [any(r["value"] == "X" for r in d["inputs"]) and any(r["value"] == "Y" for r in d["inputs"]) for d in docs]

    small = shrink(doc, still_fails)
    assert [r["value"] for r in small["inputs"]] == ["X", "Y"]
    assert small["config"] == {"order": "as_listed", "store": "rocksdb"}
    assert [r["ts"] for r in small["inputs"]] == [0, 4]
    assert "partition" not in small["inputs"][0]
    assert max(batches) > 1  # candidates were asked about in batches


@pytest.mark.parametrize("text, label", [("reference", "reference@4.3"), ("reference@3.6", "reference@3.6"), ("spark@0.10.2", "spark@0.10.2")])
def test_engine_names(text, label):
    assert parse_engine(text).label == label


@pytest.mark.parametrize("text", ["flink", "reference@4.4", "reference@x"])
def test_bad_engine_names(text):
    with pytest.raises(KssimError):
        parse_engine(text)


@pytest.mark.parametrize("operator", ["stream_stream_join", "stream_table_join", "table_table_join"])
def test_generated_cases_are_valid_in_both_releases_and_deterministic(operator):
    profiles = (profile_for("3.0"), profile_for("3.9"))
    cases = draw_cases(operator, profiles, 200, seed=5)
    assert len(cases) >= 100
    assert cases == draw_cases(operator, profiles, 200, seed=5)
    for doc in cases:
        for release in ("3.0", "3.9"):
            scenario_from_dict({**doc, "semantics": release})
    # the hard cases are there on purpose
    inputs = [r for d in cases for r in d["inputs"]]
    assert any(r["key"] is None for r in inputs) and any(r["value"] is None for r in inputs)
    assert any(d["inputs"][i]["ts"] < d["inputs"][i - 1]["ts"] for d in cases for i in range(1, len(d["inputs"])))
    assert any(d["config"].get("partitions") for d in cases)
    # keys Python takes for one (1 == 1.0 == True, field order) but Kafka, by bytes, does not
    assert sum(map(_python_collision, cases)) >= len(cases) // 10
    kinds = {type(r["key"]).__name__ for r in inputs}
    assert {"str", "int", "float", "bool", "dict", "list"} <= kinds
    assert any(_python_collision(d) and len({r["topic"] for r in d["inputs"]}) == 2 for d in cases)


def _python_collision(doc) -> bool:
    keys = [r["key"] for r in doc["inputs"] if r["key"] is not None]
    return any(x == y and key_text(x) != key_text(y) for i, x in enumerate(keys) for y in keys[i + 1:])


@pytest.mark.parametrize("operator", ["fk_join", "global_table_join"])
def test_generated_key_extracting_joins_hit_the_hard_cases(operator):
    profiles = (profile_for("3.6"), profile_for("4.1"))
    cases = draw_cases(operator, profiles, 200, seed=7)
    assert len(cases) >= 100 and cases == draw_cases(operator, profiles, 200, seed=7)
    for doc in cases:
        for release in ("3.6", "4.1"):
            scenario_from_dict({**doc, "semantics": release})
    field = "fk" if operator == "fk_join" else "to"
    left = [r for d in cases for r in d["inputs"] if r["topic"] == "left"]
    assert any(r["value"] is None for r in left) and any(r["value"] and r["value"][field] is None for r in left)

    def changes_back_and_forth(doc):  # a primary key's FK goes a -> b -> a
        seen = {}
        for r in doc["inputs"]:
            if r["topic"] == "left" and r["value"] is not None:
                seen.setdefault(key_text(r["key"]), []).append(key_text(r["value"][field]))
        return any(len(v) >= 3 and v[0] == v[2] != v[1] for v in seen.values())

    def aba_values(doc):  # a primary key's value v1 -> v2 -> v1, byte-identical
        seen = {}
        for r in doc["inputs"]:
            if r["topic"] == "left" and r["value"] is not None:
                seen.setdefault(key_text(r["key"]), []).append(key_text(r["value"]))
        return any(v[i] == v[i + 2] != v[i + 1] for v in seen.values() for i in range(len(v) - 2))

    def shared_foreign_key(doc):  # several primary keys subscribe to one FK
        owners = {}
        for r in doc["inputs"]:
            if r["topic"] == "left" and r["value"] is not None and r["key"] is not None:
                owners.setdefault(key_text(r["value"][field]), set()).add(key_text(r["key"]))
        return any(len(v) >= 2 for v in owners.values())

    assert sum(map(changes_back_and_forth, cases)) >= 5
    assert sum(map(aba_values, cases)) >= 5
    assert sum(map(shared_foreign_key, cases)) >= 20
    assert any(d["config"].get("partitions") for d in cases)


def test_the_cli_offers_every_generated_operator():
    from kssim.differential_tests.strategies import OPERATORS
    from kssim.tools.cli import DIFFTEST_OPERATORS

    assert DIFFTEST_OPERATORS == OPERATORS


def test_a_release_pair_gives_one_shrunk_case_per_changed_rule_each_explained_by_it():
    from kssim.differential_tests.runner import difftest_operator

    run = difftest_operator("fk_join", parse_engine("reference@4.0"), parse_engine("reference@4.1"), 200, seed=0)
    explained = [f.explained_by for f in run.findings]
    assert ("fk_left_unsubscribe_no_propagate",) in explained and ("fk_inner_null_fk_transitions",) in explained
    unsubscribe = next(f for f in run.findings if f.explained_by == ("fk_left_unsubscribe_no_propagate",))
    assert len(unsubscribe.shrunk["inputs"]) <= 3 and "KAFKA-18713" in unsubscribe.report
    # between engines at one release the first divergence is the finding
    assert difftest_operator("table_table_join", parse_engine("reference@3.9"), parse_engine("reference@3.9"),
                             20, seed=0).findings == ()


def _fake_engine(behaviour):
    """A run_batch stand-in: ``ignores`` suppress, ``rejects`` it, or ``holds`` the probe's result back."""
    def run(config, docs, explain=False):
        out = []
        for doc in docs:
            suppressed = "suppress" in doc["topology"]
            if suppressed and behaviour == "rejects":
                out.append(CaseResult(error="the engine does not implement suppress"))
            elif suppressed and behaviour == "holds":
                out.append(CaseResult())
            else:
                out.append(CaseResult(outputs=(rec("k", 1, 0, 0),)))
        return out
    return run


@pytest.mark.parametrize("behaviour, supported", [("ignores", False), ("rejects", False), ("holds", True)])
def test_suppress_support_is_asked_of_the_engine(monkeypatch, behaviour, supported):
    import kssim.differential_tests.engines as engines

    monkeypatch.setattr(engines, "run_batch", _fake_engine(behaviour))
    monkeypatch.setattr(engines, "_SUPPORTS_SUPPRESS", {})
    for operator in ("window_aggregate", "session_aggregate", "sliding_aggregate", "windowed_table_join",
                     "table_table_join", "fk_join"):
        assert engines.supports_suppress(parse_engine("spark@3.9"), operator) is supported
    assert engines.supports_suppress(parse_engine("spark@2.0"), "window_aggregate") is False  # no suppress before 2.1
    assert engines.supports_suppress(parse_engine("spark@3.9"), "stream_table_join") is False  # a KStream result


@pytest.mark.parametrize("operator", ["window_aggregate", "session_aggregate", "sliding_aggregate",
                                      "windowed_table_join", "table_table_join", "fk_join"])
def test_suppress_probes_are_valid_scenarios_in_every_suppress_release(operator):
    from kssim.differential_tests.engines import suppress_probe

    for release in ("2.7", "3.9", "4.3"):
        for suppressed in (False, True):
            scenario = scenario_from_dict({**suppress_probe(operator, suppressed), "semantics": release})
            assert (scenario.topology.suppress is not None) is suppressed


def test_cases_an_engine_refuses_are_counted_not_compared(monkeypatch):
    import kssim.differential_tests.runner as runner

    def refusing(config, docs, explain=False):
        if config.engine == "spark":
            return [CaseResult(error="the Spark backend does not implement operator 'window_aggregate' yet")] * len(docs)
        return [CaseResult(outputs=(rec("k", 1, 0, 0),))] * len(docs)

    monkeypatch.setattr(runner, "run_batch", refusing)
    monkeypatch.setattr(runner, "supports_suppress", lambda config, operator: False)
    run = runner.difftest_operator("window_aggregate", parse_engine("reference"), parse_engine("spark"), 20, seed=0)
    assert (run.cases, run.compared, run.finding) == (20, 0, None)
    assert run.rejected_because.startswith("spark@4.3: the Spark backend does not implement")


def test_an_operator_a_release_lacks_is_an_error_not_an_empty_run():
    with pytest.raises(KssimError, match="fk_join does not exist in Kafka 2.3"):
        draw_cases("fk_join", (profile_for("2.3"), profile_for("2.4")), 10, seed=0)


def test_explanations_cite_rules_by_whole_name_before_shared_refs():
    from kssim.differential_tests.runner import explained_by
    from kssim.reference.model.profiles import RULES

    rules = {r.name: r for r in RULES}
    changed = [rules[n] for n in ("session_close_includes_gap", "suppress_session_close_includes_gap",
                                  "session_output_ts_window_end", "time_window_output_ts_max")]
    assert explained_by("because: ... [suppress_session_close_includes_gap]", changed) == ("suppress_session_close_includes_gap",)
    # a name wins over a JIRA the rules share (KAFKA-6455)
    assert explained_by("output ts = session end [session_output_ts_window_end, KAFKA-6455]", changed) == \
        ("session_output_ts_window_end",)
    # a JIRA the changed rules share cites neither: it cannot say which rule explains the case
    assert explained_by("the timestamped store [KAFKA-6455]", changed) == ()
    # the report's own list of what differs cites nothing
    assert explained_by("  rules that differ between 2.8 and 3.0: session_close_includes_gap (KAFKA-12718)", changed) == ()


def test_shrink_simplifies_the_topology_while_the_divergence_stays():
    doc = {"topology": {"operator": "window_aggregate", "size_ms": 10, "advance_ms": 5, "grace_ms": 0,
                        "aggregation": "list", "send_old_values": True, "merge_separator": "|",
                        "suppress": {"until": "window_close", "buffer": {"max_records": 1, "when_full": "shut_down"}}},
           "config": {"order": "as_listed", "store": "rocksdb"},
           "inputs": [{"topic": "input", "key": "k", "value": v, "ts": t} for v, t in (("a", 3), ("b", 7))]}

    def still_fails(docs):  # the divergence needs hopping windows and a bounded suppress buffer
        return [d["topology"].get("advance_ms") == 5 and "buffer" in d["topology"].get("suppress", {}) for d in docs]

    small = shrink(doc, still_fails)
    assert small["topology"] == {"operator": "window_aggregate", "size_ms": 10, "advance_ms": 5, "grace_ms": 0,
                                 "aggregation": "count",
                                 "suppress": {"until": "window_close", "buffer": {"max_records": 1, "when_full": "shut_down"}}}


def test_between_engines_more_findings_are_divergences_of_other_symptoms(monkeypatch):
    import kssim.differential_tests.runner as runner
    from kssim.reference.model.records import Drop

    def engines(config, docs, explain=False):
        out = []
        for doc in docs:
            value = 2 if config.engine == "spark" and doc["config"].get("store") == "in_memory" else 1
            drops = (Drop(0, DropReason.NULL_KEY),) if config.engine == "spark" and doc["topology"].get("emit") else ()
            out.append(CaseResult(outputs=(rec("k", value, 0, 0),), drops=drops))
        return out

    monkeypatch.setattr(runner, "run_batch", engines)
    monkeypatch.setattr(runner, "supports_suppress", lambda config, operator: False)
    reference, spark = parse_engine("reference"), parse_engine("spark")
    assert len(runner.difftest_operator("window_aggregate", reference, spark, 100, seed=0).findings) == 1
    run = runner.difftest_operator("window_aggregate", reference, spark, 100, seed=0, max_findings=5)
    kinds = {f.divergence.what.split(":")[0] for f in run.findings}
    assert {"records differ", "drops"} <= kinds
    shrunk = [runner._case_of(f.shrunk) for f in run.findings]
    assert len(shrunk) == len(set(shrunk)) and len(run.findings) <= 5


def test_a_ref_shared_by_changed_rules_explains_none_of_them():
    from kssim.differential_tests.runner import explained_by
    from kssim.reference.model.profiles import RULES_BY_NAME

    changed = [RULES_BY_NAME["null_key_outer_emit"], RULES_BY_NAME["fk_left_join_null_foreign_key"]]
    assert all("KIP-962" in rule.ref for rule in changed)
    # a stream-stream explanation citing the KIP only: no FK rule may be named for it
    assert explained_by("null key on the right side of an outer join: emitted at once; [KIP-962]", changed) == ()
    assert explained_by("...; [null_key_outer_emit, KIP-962]", changed) == ("null_key_outer_emit",)
    only_fk = [RULES_BY_NAME["fk_left_join_null_foreign_key"]]
    assert explained_by("a left join with a null FK: [KIP-962]", only_fk) == ("fk_left_join_null_foreign_key",)
