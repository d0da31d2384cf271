"""kssim's pytest plugin (entry point ``pytest11``: ``kssim``): scenario files as tests, and a
``kssim`` fixture for tests written with the Python API.

It is loaded by every pytest run of an environment where kssim is installed, so it stays inert
until a project opts in, and imports nothing heavy at load time (no Spark, no engine, not even
the scenario loader): every kssim import happens in a function, when there is work for it.

- ``kssim_scenarios`` (ini, one entry a line, relative to the rootdir): folders (searched
  recursively), files or globs. Each scenario file (.json, .yaml, .yml; a format-1 operator or a
  topology graph) pytest visits under them becomes one test item named after the scenario,
  judged as ``kssim check`` judges it
  (``reference.model.compare.judge``). A failure shows check's first difference with neighbours,
  then the ``--explain`` lines of the input at the difference; an invalid file fails with check's
  INVALID message; a scenario the engine cannot run is skipped with check's reason.
- ``--kssim-engine reference|spark``: spark runs every selected scenario as one batch on the
  process's one SparkSession (``spark_backend.session.get_spark``, through the engine table), as
  ``kssim check`` does.
- ``--kssim-release X``: run the scenarios (and the fixture's drivers) at Kafka X instead of the
  release each names; the expected records stay those of the file.
- the ``kssim`` fixture: :class:`KssimHelper`.
"""
from __future__ import annotations

import glob
import os
from pathlib import Path
from typing import Optional

import attrs
import pytest

INI_SCENARIOS = "kssim_scenarios"
#: how the explanation of a failure is introduced (the reference engine explains; Spark does not)
EXPLAIN_ENGINE = "reference"


@attrs.frozen
class Settings:
    """A run's choices: the scenario ``roots`` (resolved files and folders), the ``engine`` and
    the ``release`` override (None: each scenario's own)."""

    roots: tuple
    engine: str
    release: Optional[str]

    def selects(self, path: Path) -> bool:
        from kssim.reference.model.scenario import SCENARIO_SUFFIXES

        return path.name.endswith(SCENARIO_SUFFIXES) and any(path == r or r in path.parents for r in self.roots)


_SETTINGS = pytest.StashKey[Settings]()
#: engine results of the run's scenario items, by node id (filled by :func:`_result_of`)
_RESULTS = pytest.StashKey[dict]()


def pytest_addoption(parser):
    from kssim.reference.model.engines import ENGINES  # the engine table only (no engine is imported)

    parser.addini(INI_SCENARIOS, type="linelist", default=[],
                  help="kssim: scenario folders (recursive), files or globs, relative to the rootdir; "
                       "each scenario file becomes a test")
    group = parser.getgroup("kssim", "kssim scenario files")
    group.addoption("--kssim-engine", choices=ENGINES, default="reference",
                    help="engine that runs the scenario files: reference (default) or spark (one Spark session)")
    group.addoption("--kssim-release", metavar="RELEASE", default=None,
                    help="run the scenario files and the kssim fixture's drivers at this Kafka release "
                         "instead of the release each scenario names")


def pytest_configure(config):
    release = config.getoption("kssim_release")
    if release is not None:
        _check_release(release)
    entries = config.getini(INI_SCENARIOS)
    if entries:
        roots = _resolve(config.rootpath, entries)
        config.stash[_SETTINGS] = Settings(roots, config.getoption("kssim_engine"), release)
        config.stash[_RESULTS] = {}


def _check_release(release: str) -> None:
    from kssim.reference.model.errors import KssimError
    from kssim.reference.model.profiles import profile_for

    try:
        profile_for(release)
    except KssimError as exc:
        raise pytest.UsageError(f"--kssim-release: {exc}") from None


def _resolve(rootdir: Path, entries) -> tuple:
    """The files and folders the ini entries name. A plain path that does not exist, or a glob
    that matches nothing, is a usage error (a typo would otherwise test nothing: a green run
    without a test)."""
    roots = []
    for entry in entries:
        pattern = os.path.join(rootdir, entry)
        if any(c in entry for c in "*?["):
            matched = sorted(glob.glob(pattern, recursive=True))
            if not matched:
                raise pytest.UsageError(f"{INI_SCENARIOS}: the glob {entry} matches nothing (relative to {rootdir})")
            roots.extend(Path(p).resolve() for p in matched)
        elif os.path.exists(pattern):
            roots.append(Path(pattern).resolve())
        else:
            raise pytest.UsageError(f"{INI_SCENARIOS}: no such file or folder: {entry} (relative to {rootdir})")
    root = Path(rootdir).resolve()
    for found in roots:
        if found != root and root not in found.parents:
            # pytest walks the rootdir's tree only: files out there would never become tests
            raise pytest.UsageError(f"{INI_SCENARIOS}: {found} is outside the rootdir {root}: pytest collects "
                                    "files under the rootdir only; move the scenarios under it or run pytest "
                                    "from a folder that holds both")
    return tuple(roots)


def pytest_collect_file(file_path: Path, parent):
    settings = parent.config.stash.get(_SETTINGS, None)
    if settings is not None and settings.selects(file_path.resolve()):
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


class ScenarioFile(pytest.File):
    """One scenario file: one item, named after the scenario (the file's stem if it cannot be read)."""

    def collect(self):
        from kssim.reference.model.errors import KssimError
        from kssim.reference.model.scenario import load_scenario

        settings = self.config.stash[_SETTINGS]
        path = shown_path(self.path)
        try:
            scenario = load_scenario(path)
        except KssimError as exc:
            yield ScenarioItem.from_parent(self, name=self.path.stem, scenario=None, problem=_invalid(path, exc))
            return
        except Exception as exc:  # a kssim bug: reported on this file, as check does, not as a collection error
            problem = f"INVALID {path}: kssim could not load it ({type(exc).__name__}: {exc}); please report this"
            yield ScenarioItem.from_parent(self, name=self.path.stem, scenario=None, problem=problem)
            return
        item = ScenarioItem.from_parent(self, name=scenario.name, scenario=scenario, problem=None)
        if settings.release is not None:
            try:
                item.scenario = load_scenario(path, settings.release)
            except KssimError as exc:  # e.g. a topology that release lacks
                item.add_marker(pytest.mark.skip(reason=f"not valid at Kafka {settings.release} "
                                                        f"(--kssim-release): {_within_file(exc)}"))
        yield item


def shown_path(path: Path) -> str:
    """``path`` as ``kssim check`` run from here would name it (relative to the working folder);
    also the path the file is read by, so the loader's messages name it the same way."""
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return str(path)


def _within_file(exc) -> str:
    """An error's text without the file's path (the report names the file already)."""
    from kssim.reference.model.errors import ScenarioError

    if isinstance(exc, ScenarioError):
        return f"{exc.where}: {exc.message}" if exc.where else exc.message
    return str(exc)


def _invalid(path, exc) -> str:
    """``kssim check``'s INVALID line (a ScenarioError's text starts with the file's path)."""
    from kssim.reference.model.errors import ScenarioError

    return f"INVALID {exc}" if isinstance(exc, ScenarioError) else f"INVALID {path}: {exc}"


class ScenarioFailed(Exception):
    """A scenario item's failure; its text is the whole report (no traceback: the test is a file)."""


class ScenarioItem(pytest.Item):
    def __init__(self, *, scenario, problem: Optional[str], **kwargs):
        super().__init__(**kwargs)
        self.scenario = scenario
        self.problem = problem

    @property
    def runnable(self) -> bool:
        return self.problem is None and self.get_closest_marker("skip") is None

    def runtest(self):
        from kssim.reference.model.compare import Status, judge
        from kssim.reference.model.errors import UnsupportedOperator
        from kssim.tools.cli import error_text

        if self.problem is not None:
            raise ScenarioFailed(self.problem)
        engine = self.config.stash[_SETTINGS].engine
        result = _result_of(self)
        where = shown_path(self.path)
        if isinstance(result, Exception) and not isinstance(result, UnsupportedOperator):
            raise ScenarioFailed(f"INVALID {where}: engine {engine} could not run it: {error_text(result)}")
        verdict = judge(self.scenario, result)
        if verdict.status is Status.UNSUPPORTED:
            # reported at the scenario file, as a skip marker is (not at this line of the plugin)
            raise pytest.skip.Exception(f"not supported by engine {engine}: {verdict.detail}", _use_item_location=True)
        if verdict.status is Status.FAIL:
            s = self.scenario
            lines = [f"FAIL {s.name} ({where}) [Kafka {s.release}, {s.topology.operator}, engine {engine}]",
                     "  " + verdict.detail.replace("\n", "\n  ")]
            lines += explanation(s, result, engine)
            raise ScenarioFailed("\n".join(lines))

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, ScenarioFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        # a line number (the file's start): pytest's report of a skip marker requires one
        return self.path, 0, f"kssim scenario {self.name}"


def _result_of(item: ScenarioItem):
    """The engine's result for ``item``'s scenario (a RunResult or the exception that stopped it),
    run as ``kssim check`` runs it (``tools.cli.run_each_isolated``). On Spark the first item
    run also runs every runnable scenario item after it in one batch: one job on the process's
    one session, not one per item."""
    from kssim.tools.cli import run_each_isolated

    settings, results = item.config.stash[_SETTINGS], item.config.stash[_RESULTS]
    if item.nodeid not in results:
        if settings.engine == "reference":
            batch = [item]  # one at a time: results come as pytest reports them, and -x stops early
        else:
            items = item.session.items
            rest = items[items.index(item):] if item in items else [item]
            batch = [i for i in rest if isinstance(i, ScenarioItem) and i.runnable and i.nodeid not in results]
        for other, result in zip(batch, run_each_isolated(settings.engine, [i.scenario for i in batch], None)):
            results[other.nodeid] = result
    return results.pop(item.nodeid)


def explanation(scenario, result, engine: str) -> list:
    """The ``--explain`` lines (outputs, drops, failure) of the input where ``result`` first
    differs from the expectation. The reference engine explains (on Spark it re-runs the
    scenario there, and says so); [] when there is no one input to explain."""
    from kssim.reference.model.compare import compare_outputs
    from kssim.reference.model.engines import run_scenarios
    from kssim.reference.model.render import describe_input
    from kssim.tools.cli import explain_drop, explain_output

    if isinstance(result, Exception):
        return []
    mismatch = compare_outputs(scenario, result.outputs)
    index = mismatch.input_index if mismatch is not None else getattr(result.failure, "input_index", None)
    if index is None or not 0 <= index < len(scenario.inputs):
        return []
    explained = run_scenarios(EXPLAIN_ENGINE, [scenario], explain=True, catch=Exception)[0]
    if isinstance(explained, Exception):
        return []
    by = "" if engine == EXPLAIN_ENGINE else f" (explained by the {EXPLAIN_ENGINE} engine)"
    lines = [f"why, at {describe_input(scenario, index)}{by}:"]
    lines += ["  " + explain_output(scenario, i, rec) for i, rec in enumerate(explained.outputs)
              if rec.input_index == index]
    lines += ["  dropped: " + explain_drop(scenario, d) for d in explained.drops if d.input_index == index]
    failure = explained.failure
    if failure is not None and failure.input_index == index:
        why = getattr(failure, "why", None)
        lines.append(f"  Kafka Streams would fail: {failure.message}" + (f": {why.describe()}" if why else ""))
    if len(lines) == 1:
        lines.append("  it emitted nothing and was not dropped")
    return lines


# ---------------------------------------------------------------------------------------------
# the kssim fixture


@pytest.fixture
def kssim(request) -> "KssimHelper":
    """A :class:`KssimHelper`: TopologyTestDriver at the run's release (``--kssim-release``, else
    the driver's default), and assertions on outputs and drops with a readable first difference."""
    release = request.config.getoption("kssim_release", default=None)
    return KssimHelper(release)


@attrs.frozen
class KssimHelper:
    """What the ``kssim`` fixture gives a test: :meth:`driver`, :meth:`assert_outputs`,
    :meth:`assert_drops`. ``release``: the ``--kssim-release`` value (None: the driver's
    default release)."""

    release: Optional[str] = None

    def driver(self, topology, release: Optional[str] = None, **options):
        """``TopologyTestDriver(topology, release, **options)``; ``release`` defaults to the run's.
        ``topology``: a ``Topology``, or a topology graph as a scenario file writes it (the
        ``{"graph": [...]}`` object, or its list of nodes), or a parsed spec, which is wrapped
        in a ``Topology``. Explanations are on unless ``explain=False``, so a failed assertion
        can say why."""
        from kssim.reference.api import Topology, TopologyTestDriver

        if not isinstance(topology, Topology):
            topology = Topology(topology_spec(topology))
        release = release or self.release
        if release is not None:
            options["release"] = release
        options.setdefault("explain", True)
        return TopologyTestDriver(topology, **options)

    def assert_outputs(self, topic, expected, *, topic_name: Optional[str] = None) -> None:
        """Read every record waiting on an output topic and check they are ``expected``:
        ``(key, value, ts)`` tuples or TestRecords, in order. ``topic``: a TestOutputTopic, or a
        driver: the topic ``topic_name``, else the one topic its topology writes (``output`` for
        a single operator, a graph's one sink topic). For a topology that writes several topics
        (a graph with several ``to``), ``expected`` may be a dict ``{topic: records}``: each of
        those topics is read and checked (a topic left out is not read), every difference
        reported. Keys and values compare as Kafka compares them (serialized: ``1``, ``1.0``,
        ``True`` and ``"1"`` differ), as ``kssim check`` does; a windowed key may be given as a
        ``Windowed`` or as ``{"key", "start", "end"}``."""
        __tracebackhide__ = True
        if isinstance(expected, dict):
            if topic_name is not None:
                raise TypeError("assert_outputs: give either topic_name or a {topic: records} dict, not both")
            problems = [_topic_mismatch(_output_topic(topic, name), records) for name, records in expected.items()]
        else:
            problems = [_topic_mismatch(_output_topic(topic, topic_name), expected)]
        problems = [p for p in problems if p is not None]
        if problems:
            raise AssertionError("\n".join(problems))

    def assert_drops(self, driver, expected) -> None:
        """Check ``driver.drops()`` is ``expected``: ``(input_index, reason)`` pairs in input
        order, ``reason`` a ``DropReason`` or its code (``"null_key"``)."""
        __tracebackhide__ = True
        from kssim.reference.model.codes import DropReason

        drops = driver.drops()
        actual = [(d.input_index, str(d.reason)) for d in drops]
        wanted = [(index, str(reason if isinstance(reason, DropReason) else DropReason.from_code(reason)))
                  for index, reason in expected]
        if actual == wanted:
            return
        n = next((i for i, (a, w) in enumerate(zip(actual, wanted)) if a != w), min(len(actual), len(wanted)))
        if n >= len(actual):
            first = f"missing drop #{n}: input {wanted[n][0]} {wanted[n][1]}"
        elif n >= len(wanted):
            first = f"unexpected drop #{n}: input {actual[n][0]} {actual[n][1]}"
        else:
            first = f"drop #{n}: expected input {wanted[n][0]} {wanted[n][1]}, got input {actual[n][0]} {actual[n][1]}"
        lines = [first, f"  expected: {wanted}", f"  actual:   {actual}"]
        if n < len(drops) and drops[n].why is not None:
            lines.append(f"  why #{n}: {drops[n].why.describe()}")
        raise AssertionError("\n".join(lines))


def topology_spec(topology):
    """The topology spec of what :meth:`KssimHelper.driver` is given other than a ``Topology``:
    a topology graph as a scenario file writes it (``{"graph": [...]}`` or the list of nodes,
    parsed and checked as the scenario loader does: a bad node raises ``ScenarioError`` naming
    it), or a spec already parsed (returned as is)."""
    from kssim.reference.model.errors import ScenarioError
    from kssim.reference.model.topology import parse_topology

    if isinstance(topology, (list, tuple)):
        topology = {"graph": list(topology)}
    if not isinstance(topology, dict):
        return topology

    def fail(where, message):
        return ScenarioError("kssim.driver", where, message)

    return parse_topology(topology, fail)


def _output_topic(topic, name: Optional[str] = None):
    """The TestOutputTopic to read: ``topic`` itself, or a driver's topic ``name`` (default: the
    one topic its topology writes)."""
    from kssim.reference.api import TopologyTestDriver

    if not isinstance(topic, TopologyTestDriver):
        if name is not None and name != topic.topic:
            raise TypeError(f"assert_outputs: topic_name {name!r} given with the output topic {topic.topic!r}")
        return topic
    if name is None:
        written = _written_topics(topic)
        if len(written) != 1:
            raise TypeError(f"assert_outputs: the topology writes {len(written)} topics ({', '.join(written)}): "
                            "name one (topic_name=...) or give {topic: records}")
        name = written[0]
    return topic.create_output_topic(name)


def _written_topics(driver) -> tuple:
    """The topics ``driver``'s topology writes (a graph's sink topics; format 1's ``output``)."""
    from kssim.reference.model.scenario import OUTPUT_TOPIC
    from kssim.reference.model.topology import output_topics

    written = getattr(driver, "output_topics", None)
    if written is not None:
        return tuple(written)
    spec = getattr(getattr(driver, "topology", None), "spec", None)
    return (OUTPUT_TOPIC,) if spec is None else tuple(output_topics(spec))


def _topic_mismatch(topic, expected) -> Optional[str]:
    """Read every record waiting on TestOutputTopic ``topic``; None when they are ``expected``,
    else kssim check's first difference (with neighbours and the why of the record there)."""
    from kssim.reference.model.compare import compare_records
    from kssim.reference.model.records import OutputRecord

    actual = [OutputRecord(topic.topic, 0, _plain_key(r.key), r.value, r.ts, r.input_index, r.old_value, r.why)
              for r in topic.read_records_to_list()]
    wanted = [_expected_record(topic.topic, item, n) for n, item in enumerate(expected)]
    # kssim check's comparison of one partition: the same first difference and neighbours
    mismatch = compare_records(wanted, actual, None)
    if mismatch is None:
        return None
    text = mismatch.describe()
    # check names a topic other than format 1's output itself ("topic out2 partition 0, ...")
    text = f"output {text}" if text.startswith("topic ") else f"output topic {topic.topic!r}: {text}"
    if 0 <= mismatch.position < len(actual) and actual[mismatch.position].why is not None:
        text += f"\n  why #{mismatch.position}: {actual[mismatch.position].why.describe()}"
    return text


def _plain_key(key):
    """A driver's ``Windowed`` key as the scenario format's ``{"key", "start", "end"}``."""
    as_dict = getattr(key, "as_dict", None)
    return as_dict() if callable(as_dict) else key


def _expected_record(topic: str, item, n: int):
    from kssim.reference.model.scenario import ExpectedRecord

    if hasattr(item, "key") and hasattr(item, "value") and hasattr(item, "ts"):
        key, value, ts = item.key, item.value, item.ts
    elif isinstance(item, (tuple, list)) and len(item) == 3:
        key, value, ts = item
    else:
        raise TypeError(f"expected[{n}]: a (key, value, ts) tuple or a TestRecord, got {item!r}")
    if isinstance(ts, bool) or not isinstance(ts, int):
        raise TypeError(f"expected[{n}]: ts must be int milliseconds, got {ts!r}")
    return ExpectedRecord(topic, _plain_key(key), value, ts)
