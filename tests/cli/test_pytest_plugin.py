"""The pytest plugin (``tools/pytest_plugin.py``), as a project that installs kssim uses it: fresh
projects made by ``pytester``, run in this process (the plugin is found through its ``pytest11``
entry point, as in any environment where kssim is installed)."""
from __future__ import annotations

import os
import shutil
from importlib.metadata import entry_points

import pytest

# imported here, before pytester's inline runs: each run forgets the modules first imported during
# it, and a second import of PyYAML's Python half (the loader imports it when it first reads YAML)
# no longer matches its C parser; Hypothesis's pytest plugin imports Hypothesis in every run (200
# modules to assertion-rewrite each time, seconds per run, unless imported already)
import hypothesis  # noqa: F401
import yaml  # noqa: F401

import kssim.reference.api  # noqa: F401
import kssim.reference.model.scenario  # noqa: F401
import kssim.reference.runtime.engine  # noqa: F401
import kssim.tools.pytest_plugin  # noqa: F401
from kssim.tools.cli import main

from kssim_testing import CONFORMANCE, ROOT

pytest_plugins = ["pytester"]

COOKBOOK = os.path.join(ROOT, "scenarios", "cookbook")
EAGER_31 = os.path.join(COOKBOOK, "01-eager-left-null-3.1.yaml")
#: passes at 3.9 (its release); at 4.1 the FK left join's tombstones change (KAFKA-18713)
FK_TOMBSTONES_39 = os.path.join(COOKBOOK, "06-fk-left-join-tombstones-3.9.yaml")
SEED_LEFT_31 = os.path.join(CONFORMANCE, "seeds", "seed-stream-stream-left-3.1.json")
#: interleaved delivery: the reference engine's alone (Spark skips it)
INTERLEAVED = os.path.join(ROOT, "scenarios", "features", "fk-inner-stale-hash-response-dropped-3.9.yaml")


def project(pytester, *files, ini="kssim_scenarios = specs\n", edits=None):
    """A fresh project: ``files`` copied into ``specs/``, ``edits`` ({copied name: (old, new)})
    applied to the copies, and a pytest.ini with ``ini``. Returns the copies' paths."""
    specs = pytester.path / "specs"
    specs.mkdir()
    copies = [shutil.copy(f, specs) for f in files]
    for name, (old, new) in (edits or {}).items():
        path = specs / name
        text = path.read_text(encoding="utf-8")
        assert text.count(old) == 1, f"{old!r} in {name}"
        path.write_text(text.replace(old, new), encoding="utf-8")
    pytester.makeini("[pytest]\n" + ini)
    return copies


def check_output(capsys, path) -> str:
    """What ``kssim check`` prints for ``path`` (run from the project folder)."""
    capsys.readouterr()  # drop what an inline pytest run printed before
    main(["check", "-q", path])
    return capsys.readouterr().out


def test_the_entry_point_is_registered():
    found = [e for e in entry_points(group="pytest11") if e.name == "kssim"]
    assert [e.value for e in found] == ["kssim.tools.pytest_plugin"]


def test_without_the_ini_option_nothing_is_collected(pytester):
    project(pytester, EAGER_31, ini="")
    # the plugin is loaded (its option parses), and collects nothing
    result = pytester.runpytest("--kssim-engine", "reference")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(["*no tests ran*"])


def test_loading_the_plugin_imports_no_engine_nor_spark(pytester):
    # a fresh interpreter: this process has imported everything already
    pytester.makeconftest("""
        import sys
        def pytest_sessionfinish(session):
            print("PLUGIN", session.config.pluginmanager.get_plugin("kssim") is sys.modules["kssim.tools.pytest_plugin"])
            heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("pyspark", "py4j", "spark_backend")
                           or m.startswith(("kssim.reference.runtime", "kssim.reference.api", "kssim.reference.model.scenario")))
            print("HEAVY", heavy)
    """)
    project(pytester, EAGER_31, ini="")
    result = pytester.runpytest_subprocess("-s")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(["PLUGIN True", "HEAVY []"])


def test_scenario_files_run_as_tests_named_after_their_scenario(pytester):
    project(pytester, EAGER_31, SEED_LEFT_31)
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines_random([
        "specs/01-eager-left-null-3.1.yaml::cookbook-01-eager-left-null-3.1 PASSED*",
        "specs/seed-stream-stream-left-3.1.json::seed-stream-stream-left-3.1 PASSED*"])


def test_globs_and_files_select_scenarios(pytester):
    project(pytester, EAGER_31, SEED_LEFT_31, ini="kssim_scenarios =\n    specs/*.json\n")
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["specs/seed-stream-stream-left-3.1.json::seed-stream-stream-left-3.1 PASSED*"])


def test_an_ini_entry_that_does_not_exist_is_a_usage_error(pytester):
    project(pytester, EAGER_31, ini="kssim_scenarios = spec\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*kssim_scenarios: no such file or folder: spec (relative to *"])


def test_a_glob_that_matches_nothing_is_a_usage_error(pytester):
    project(pytester, EAGER_31, ini="kssim_scenarios = specs/*.jsn\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # not a green run without a test
    result.stderr.fnmatch_lines(["*kssim_scenarios: the glob specs/*.jsn matches nothing (relative to *"])


def test_an_entry_outside_the_rootdir_is_a_usage_error(pytester, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    shutil.copy(EAGER_31, elsewhere)
    project(pytester, EAGER_31, ini=f"kssim_scenarios = specs\n    {elsewhere}\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # pytest would never visit it: no test, no word
    result.stderr.fnmatch_lines([f"*kssim_scenarios: {elsewhere.resolve()} is outside the rootdir *"])


def test_a_broken_expectation_fails_with_checks_first_difference_and_the_explanation(pytester, capsys):
    project(pytester, EAGER_31, SEED_LEFT_31,
            edits={"01-eager-left-null-3.1.yaml": ("value: A-a, ts: 3", "value: A-b, ts: 3")})
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    # every line kssim check prints for the failure, in the same order
    check = check_output(capsys, "specs/01-eager-left-null-3.1.yaml").splitlines()
    assert check[0].startswith("FAIL cookbook-01-eager-left-null-3.1 (specs/01-eager-left-null-3.1.yaml)")
    detail = check[1:check.index(next(line for line in check if " passed, " in line))]
    assert "partition 0, record #0: expected key=k value=A-b ts=3 (expected by input 1), " \
           "got key=k value=A-a ts=3 (emitted at input 1)" in detail[0]
    result.stdout.fnmatch_lines(
        ["FAIL cookbook-01-eager-left-null-3.1 (specs/01-eager-left-null-3.1.yaml) "
         "[[]Kafka 3.1, stream_stream_join, engine reference[]]"]
        + [line.replace("[", "[[]") for line in detail]
        # then kssim run --explain's line of the record at the difference
        + ["why, at input 1 (right k:a@3):",
           "  #0 k:A-a@3 while processing input 1 (right k:a@3): right a@3 joins left A@1*"])
    assert "Traceback" not in out and "def runtest" not in out


def test_a_missing_output_explains_what_its_input_did(pytester):
    # an expected record no input emits: the explanation says what its input did instead
    project(pytester, EAGER_31, edits={"01-eager-left-null-3.1.yaml": (
        "  - {topic: output, key: k, value: B-null, ts: 30, after_input: 3}\n",
        "  - {topic: output, key: k, value: B-null, ts: 30, after_input: 3}\n"
        "  - {topic: output, key: k2, value: x-null, ts: 41, after_input: 3}\n")})
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*partition 0, record #2: missing output key=k2 value=x-null ts=41 (expected by input 3)",
                                 "why, at input 3 (right k2:x@41):",
                                 "  #1 k:B-null@30 while processing input 3 (right k2:x@41): unjoined left B@30*"])


def test_an_invalid_file_fails_with_its_file_record_and_field(pytester, capsys):
    project(pytester, SEED_LEFT_31, EAGER_31,
            edits={"seed-stream-stream-left-3.1.json": ('"value": null,\n   "ts": 2\n', '"value": null,\n   "ts": "two"\n')})
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    invalid = [line for line in check_output(capsys, "specs").splitlines() if line.startswith("INVALID")]
    assert invalid == ["INVALID specs/seed-stream-stream-left-3.1.json: inputs[1].ts: "
                       "must be an integer timestamp in milliseconds, got 'two'"]
    # named after the file (it has no readable scenario), and check's message, without a traceback
    result.stdout.fnmatch_lines(["*_ kssim scenario seed-stream-stream-left-3.1 _*", invalid[0],
                                 "*short test summary*"])
    assert "Traceback" not in result.stdout.str()


def test_the_release_option_runs_scenarios_at_another_release(pytester):
    project(pytester, FK_TOMBSTONES_39, EAGER_31)
    pytester.runpytest().assert_outcomes(passed=2)
    result = pytester.runpytest("--kssim-release", "4.1")
    # 4.1 changes the FK left join's tombstones; the stream-stream join is the same
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["FAIL cookbook-06-fk-left-join-tombstones-3.9 "
                                 "(specs/06-fk-left-join-tombstones-3.9.yaml) [[]Kafka 4.1, fk_join, engine reference[]]",
                                 "  partition 0, record #1: expected *"])


def test_a_scenario_whose_topology_a_release_lacks_is_skipped_there(pytester):
    project(pytester, EAGER_31, FK_TOMBSTONES_39)
    result = pytester.runpytest("--kssim-release", "3.0", "-rs")
    result.assert_outcomes(skipped=1, failed=1)
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] specs/01-eager-left-null-3.1.yaml: not valid at Kafka 3.0 "
                                 "(--kssim-release): topology.window_api: JoinWindows.ofTimeDifference* (KIP-633) "
                                 "does not exist before Kafka 3.1*"])


def test_an_unknown_release_is_a_usage_error(pytester):
    project(pytester, EAGER_31)
    result = pytester.runpytest("--kssim-release", "9.9")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--kssim-release: release '9.9' is not modelled*"])


FIXTURE_TESTS = '''
from kssim.reference.api import JoinWindows, StreamsBuilder
from kssim.reference.model.codes import DropReason


def left_join(windows=JoinWindows.of_time_difference_and_grace(15, 5)):
    b = StreamsBuilder()
    left, right = b.stream("left"), b.stream("right")
    left.left_join(right, lambda l, r: f"{l}+{r}", windows).to("output")
    return b.build()


def pipe(kssim):
    driver = kssim.driver(left_join())
    lin, rin = driver.create_input_topic("left"), driver.create_input_topic("right")
    lin.pipe_input("k", "E", ts=40)
    lin.pipe_input("k", None, ts=41)
    rin.pipe_input("k", "f", ts=80)
    return driver


def test_outputs_and_drops(kssim):
    driver = pipe(kssim)
    kssim.assert_outputs(driver.create_output_topic("output"), [("k", "E+None", 40)])
    kssim.assert_drops(driver, [(1, "null_value")])
    kssim.assert_drops(driver, [(1, DropReason.NULL_VALUE)])


def test_wrong_value(kssim):
    kssim.assert_outputs(pipe(kssim), [("k", "E+f", 40)])


def test_missing_record(kssim):
    kssim.assert_outputs(pipe(kssim), [("k", "E+None", 40), ("k", "F+None", 60)])


def test_a_number_is_not_a_string(kssim):
    kssim.assert_outputs(pipe(kssim), [("k", "E+None", 40.0)])


def test_wrong_drop(kssim):
    kssim.assert_drops(pipe(kssim), [(1, "null_key")])


def test_release(kssim):
    assert kssim.driver(left_join(JoinWindows.of(10))).release == "3.0"
    assert kssim.driver(left_join(), release="3.9").release == "3.9"
'''


def test_the_fixture_asserts_outputs_and_drops(pytester):
    pytester.makepyfile(test_kssim_fixture_usage=FIXTURE_TESTS)
    result = pytester.runpytest("-k", "not release")
    result.assert_outcomes(passed=1, failed=4)
    result.stdout.fnmatch_lines([
        "*_ test_wrong_value _*",
        "E * output topic 'output': partition 0, record #0: expected key=k value=E+f ts=40, "
        "got key=k value=E+None ts=40 (emitted at input 2)",
        "E *   actual:",
        "E *   > #0: key=k value=E+None ts=40 (emitted at input 2)",
        "E *why #0: unjoined left E@40 flushed: stream time 80 > 40 + after 15 + grace 5*",
        "*_ test_missing_record _*",
        "E * record #1: missing output key=k value=F+None ts=60",
        "*_ test_a_number_is_not_a_string _*",
        "E *TypeError: expected[[]0[]]: ts must be int milliseconds, got 40.0",
        "*_ test_wrong_drop _*",
        "E *AssertionError: drop #0: expected input 1 null_key, got input 1 null_value",
        "E *expected: [[](1, 'null_key')[]]",
        "E *actual:   [[](1, 'null_value')[]]",
        "E *why #0: null value on the left (ts 41)*",
    ])


def test_the_fixtures_driver_runs_at_the_release_option(pytester):
    pytester.makepyfile(test_kssim_fixture_usage=FIXTURE_TESTS)
    pytester.runpytest("-k", "release").assert_outcomes(failed=1)  # the default release is not 3.0
    pytester.runpytest("-k", "release", "--kssim-release", "3.0").assert_outcomes(passed=1)


def test_spark_runs_every_scenario_in_one_batch_on_the_tests_session(pytester, spark, monkeypatch):
    import kssim.spark_backend.runtime.runner  # noqa: F401 - kept across pytester's module snapshot
    from kssim import spark_backend
    import kssim.spark_backend.session  # noqa: F401 (spark_backend.session below)

    calls = []
    get_spark = spark_backend.session.get_spark
    monkeypatch.setattr(spark_backend.session, "get_spark", lambda *a, **k: calls.append(a) or get_spark(*a, **k))
    project(pytester, EAGER_31, SEED_LEFT_31, INTERLEAVED,
            edits={"seed-stream-stream-left-3.1.json": ('"E",\n    null\n', '"E",\n    "x"\n')})
    result = pytester.runpytest("--kssim-engine", "spark", "-rs")  # in this process: this session
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    assert len(calls) == 1  # one batch for the whole run, not one job per item
    assert spark_backend.session.get_spark() is spark
    result.stdout.fnmatch_lines_random([
        "FAIL seed-stream-stream-left-3.1 (specs/seed-stream-stream-left-3.1.json) "
        "[[]Kafka 3.1, stream_stream_join, engine spark[]]",
        "*expected key=k value=*E*x* ts=40*, got key=k value=*E*null* ts=40*",
        "why, at input 17 (right k:f@80) (explained by the reference engine):",
        "SKIPPED [[]1[]] specs/fk-inner-stale-hash-response-dropped-3.9.yaml*: not supported by engine spark: "
        "interleaved delivery is not supported by engine spark"])
