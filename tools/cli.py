"""``kssim``: run scenarios, check them against their expectations, explain and list drops,
replay captured topics, diff them against a captured output topic (``kssim diff``:
``tools/diff_command.py``), compare engines and releases.

The command line parses arguments and prints; the work is the packages': the engine table
(``reference.model.engines``), rendering (``reference.model.render``), the verdict
(``reference.model.compare.judge``), record files and output safety
(``reference.model.record_files``), the replays (``reference.runtime.replay``,
``spark_backend.runtime.replay``) and the differential harness (``differential_tests``).

Exit codes: 0 success; 1 a scenario failed its expectations (or ``check`` skipped scenarios
without ``--allow-skip``, Kafka Streams would die in a run or a replay, a diff or difftest found
a divergence); 2 bad input (a malformed file, an impossible topology, an unknown release, an output
path that would overwrite an input); 130 interrupted (Ctrl-C); 143 stopped by SIGTERM, 129 by
SIGHUP, cleaned up as for Ctrl-C.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from typing import Optional

import attrs

from kssim.reference.model.captures.options import add_capture_options
from kssim.reference.model.compare import Status, judge
from kssim.reference.model.codes import DropReason
from kssim.reference.model.engines import ENGINES, REFERENCE_ONLY_PENDING, explore, outcome_json, replay, run_scenarios
from kssim.reference.model.pending import pending_lines, window_text
from kssim.reference.model.errors import KssimError, ScenarioError, ScheduleError, UnsupportedOperator
from kssim.reference.model.records import NO_OLD_VALUE
from kssim.reference.model.render import describe_input, json_line, output_as_json, sends_old_values, show, table
from kssim.reference.model.record_files import STDOUT, atomic_path
from kssim.reference.model.scenario import find_scenario_files, load_scenario
from kssim.reference.model.topology import OPERATOR_KINDS
from kssim.tools.progress import progress_bar, spark_job_progress

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
EXIT_INTERRUPTED = 130
#: the most interleavings ``kssim explore`` runs in one call (each is a whole run of the scenario)
MAX_SCHEDULES = 1_000_000
#: the operators ``kssim difftest`` generates cases for: every format-1 operator (read from the
#: model's table, so that parsing arguments does not import Hypothesis)
DIFFTEST_OPERATORS = tuple(OPERATOR_KINDS)


def cmd_run(args) -> int:
    if args.pending and args.engine != "reference":
        raise KssimError(REFERENCE_ONLY_PENDING)
    scenarios = [load_scenario(f, args.release) for f in find_scenario_files(args.files)]
    if args.schedule is not None:
        scenarios = [with_schedule(s, args.schedule) for s in scenarios]
    several = len(scenarios) > 1
    status = EXIT_OK
    # --explain ends with what is still held too (reference engine: the Spark backend keeps no task state)
    pending = args.pending or (args.explain and args.engine == "reference")
    with spark_job_progress(quiet=args.engine != "spark"):  # stderr, terminals only
        results = run_scenarios(args.engine, scenarios, args.explain, args.master,
                                misses=args.explain or args.drops, pending=pending)
    for scenario, result in zip(scenarios, results):
        if isinstance(result, Exception):
            raise result
        if args.format == "jsonl":
            old = sends_old_values(scenario)
            for rec in result.outputs:
                print(json_line(output_as_json(rec, old, scenario.name if several else None)))
        else:
            _print_table(scenario, result, args, several)
        if args.drops or args.explain:
            _print_drops(scenario, result, args, several)
        if pending:
            _print_pending(scenario, result, args, several)
        if result.failure is not None:
            print(f"{scenario.name}: Kafka Streams would fail while processing "
                  f"{describe_input(scenario, result.failure.input_index)}: {result.failure.message}", file=sys.stderr)
            if args.explain and getattr(result.failure, "why", None) is not None:
                print(f"  why: {result.failure.why.describe()}", file=sys.stderr)
            # as kssim replay: exit 1 when Kafka Streams would die (kssim check judges expectations)
            status = EXIT_FAILED
    return status


def _print_table(scenario, result, args, several):
    if several or args.explain or args.drops or args.pending:
        print(f"== {scenario.name} (Kafka {scenario.release}, {scenario.topology.operator}"
              f"{', ' + scenario.topology.join if hasattr(scenario.topology, 'join') else ''})")
    headers = ["topic", "partition", "key", "value", "ts", "input"]
    old = sends_old_values(scenario)
    if old:
        headers.insert(4, "old_value")
    rows = []
    for rec in result.outputs:
        row = [rec.topic, str(rec.partition), show(rec.key), show(rec.value), str(rec.ts), str(rec.input_index)]
        if old:
            row.insert(4, show(None if rec.old_value is NO_OLD_VALUE else rec.old_value))
        rows.append(row)
    print(table(rows, headers))
    if args.explain:
        print()
        for i, rec in enumerate(result.outputs):
            print(explain_output(scenario, i, rec))


def explain_output(scenario, i, rec) -> str:
    """``--explain``'s line for output record ``rec``, the ``i``-th of the run (also the pytest
    plugin's explanation of a differing record)."""
    why = rec.why.describe() if rec.why is not None else "(no explanation)"
    return f"#{i} {show(rec.key)}:{show(rec.value)}@{rec.ts} while processing {describe_input(scenario, rec.input_index)}: {why}"


def _print_drops(scenario, result, args, several):
    if args.format == "jsonl":
        for d in result.drops:
            obj = {"drop": str(d.reason), "input": d.input_index,
                   "why": d.why.describe() if d.why is not None else None}
            if d.node is not None:
                obj["node"] = d.node
            if d.window:
                obj["lost_window"] = dict(zip(("key", "start", "end"), d.window))
            if several:
                obj = {"scenario": scenario.name, **obj}
            print(json_line(obj))
        return
    # a lost window's inputs were aggregated: it is listed as a window, not as a dropped input
    lost = [d for d in result.drops if d.reason is DropReason.UNEMITTED_WINDOW]
    dropped = [d for d in result.drops if d.reason is not DropReason.UNEMITTED_WINDOW]
    print(f"\ndropped or ignored inputs ({len(dropped)}):")
    for d in dropped:
        print(f"  {explain_drop(scenario, d)}")
    if lost:
        print(f"\nlost windows ({len(lost)}): aggregated, but expired from the window store before a close check "
              "fetched them, so their final result is never emitted (unemitted_window, KAFKA-12960):")
        for d in lost:
            print(f"  {explain_lost_window(scenario, d)}")


def explain_lost_window(scenario, d) -> str:
    """``--drops``' line for an ``unemitted_window`` drop: the window first, then the input whose
    close check lost it."""
    # session and sliding windows include their end; time windows do not
    inclusive = scenario.topology.operator in ("session_aggregate", "sliding_aggregate")
    window = window_text(*d.window, end_inclusive=inclusive) if d.window else "a window"
    why = f": {d.why.describe()}" if d.why is not None else ""
    node = f" at {d.node}" if d.node is not None else ""
    return f"lost {window}{node}: the close check of {describe_input(scenario, d.input_index)} found it expired{why}"


def _print_pending(scenario, result, args, several):
    """``--pending``: what the tasks still hold at the end (also the tail of ``--explain``)."""
    held = result.pending or ()
    if args.format == "jsonl":
        for p in held:
            obj = p.as_json()
            print(json_line({"scenario": scenario.name, **obj} if several else obj))
        return
    print()
    for line in pending_lines(held):
        print(line)


def explain_drop(scenario, d) -> str:
    """``--drops``' line for the drop ``d`` (also the pytest plugin's explanation)."""
    why = f": {d.why.describe()}" if d.why is not None else ""
    node = f" at {d.node}" if d.node is not None else ""
    return f"{describe_input(scenario, d.input_index)}: {d.reason}{node}{why}"


def with_schedule(scenario, text: str):
    """``scenario`` with interleaved delivery following the schedule ``text`` (``0,2,1``: the queue
    chosen at each step, as ``kssim explore`` prints it)."""
    import attrs

    try:
        choices = tuple(int(c) for c in text.replace(" ", "").split(",") if c != "")
    except ValueError:
        raise KssimError(f"--schedule: expected comma-separated queue choices like 0,2,1, got {text!r}") from None
    if any(c < 0 for c in choices):
        raise KssimError(f"--schedule: queue choices are non-negative, got {text!r}")
    if not choices:
        raise KssimError("--schedule: give at least one queue choice (like 0,2,1, as kssim explore prints it)")
    config = attrs.evolve(scenario.config, delivery="interleaved", seed=None, schedule=choices)
    # as the loader checks config.schedule: a choice naming no non-empty queue is named by file and step
    from kssim.reference.model.engines import check_schedule

    try:
        check_schedule(scenario.topology, scenario.profile, config, scenario.inputs)
    except ScheduleError as exc:
        raise ScenarioError(scenario.path, f"--schedule[{exc.step}]", exc.message) from None
    return attrs.evolve(scenario, config=config)


def cmd_explore(args) -> int:
    """Seeded interleavings of one scenario, grouped by outcome."""
    scenario = load_scenario(args.file)
    if not 1 <= args.schedules <= MAX_SCHEDULES:
        raise KssimError(f"--schedules must be between 1 and {MAX_SCHEDULES:,} (each schedule is one run of the "
                         f"scenario), got {args.schedules:,}")
    found = explore(scenario, args.schedules, args.seed)
    if args.format == "jsonl":
        for outcome in found.outcomes:
            print(json_line(outcome_json(outcome)))
        return EXIT_OK
    print(f"{scenario.name} (Kafka {scenario.release}, {scenario.topology.operator}): {found.schedules} schedules "
          f"(seed {found.seed}), {len(found.outcomes)} distinct outcome(s)")
    if found.relational_join is not None:
        rows = ", ".join(f"{show(k)}:{show(v)}" for k, v in found.relational_join.values()) or "(empty)"
        print(f"relational join of the final input tables: {rows}")
    for n, outcome in enumerate(found.outcomes, 1):
        verdict = {True: "final table = relational join", False: "final table DIFFERS from the relational join",
                   None: "no relational reading"}[outcome.matches_relational_join]
        print(f"\noutcome {n}: {outcome.count} of {found.schedules} schedules; {verdict}")
        rows = [[str(p), show(k), show(v), str(ts), str(i)] for p, k, v, ts, i in outcome.outputs]
        print(table(rows, ["partition", "key", "value", "ts", "input"]))
        final = ", ".join(f"{show(k)}:{show(v)}" for k, v in outcome.final_table.values()) or "(empty)"
        print(f"final table: {final}")
        print(f"witness: kssim run {args.file} --schedule {','.join(map(str, outcome.schedule))}")
    return EXIT_OK


@attrs.frozen
class CheckEntry:
    """One file's verdict in ``kssim check``: ``status`` pass, fail, skip or invalid; ``name``
    the scenario's (None when the file could not be loaded); ``detail`` what differs or why."""

    status: str
    path: str
    name: Optional[str] = None
    release: Optional[str] = None
    operator: Optional[str] = None
    detail: str = ""


_STATUS_NAMES = {Status.PASS: "pass", Status.FAIL: "fail", Status.UNSUPPORTED: "skip"}


def cmd_check(args) -> int:
    """Check every scenario; a file that cannot be loaded or run is reported INVALID and the check
    goes on (one bad file never hides the verdict on the others)."""
    started = time.monotonic()
    if args.junit_xml is not None:
        _check_report_path(args.junit_xml)
    report = _print_entry if args.format == "text" else (lambda entry, quiet: None)
    checked = []
    loaded = []
    found = list(_scenario_files_or_problems(args.paths))
    if not found:
        # a CI gate pointed at a wrong folder must not stay green
        raise KssimError(f"no scenario files (.json, .yaml, .yml) found in {', '.join(args.paths)}: nothing to check")
    bar = progress_bar(len(found), "files", "loading", quiet=args.quiet or args.format != "text")
    for path, problem in found:
        bar.update(1)
        try:
            if problem is not None:
                raise problem
            loaded.append((path, load_scenario(path, args.release)))
        except KssimError as exc:
            # a ScenarioError's text starts with the file's path
            text = str(exc) if isinstance(exc, ScenarioError) else f"{path}: {exc}"
            checked.append(CheckEntry("invalid", path, detail=text))
        except Exception as exc:  # a kssim bug must not stop the other files' check
            checked.append(CheckEntry("invalid", path, detail=f"{path}: kssim could not load it "
                                                              f"({type(exc).__name__}: {exc}); please report this"))
        else:
            continue
        report(checked[-1], args.quiet)
    bar.close()
    with spark_job_progress(quiet=args.quiet or args.format != "text" or args.engine != "spark"):
        results = run_each_isolated(args.engine, [s for _, s in loaded], args.master)
    for (path, scenario), result in zip(loaded, results):
        about = dict(name=scenario.name, release=scenario.release, operator=scenario.topology.operator)
        if isinstance(result, Exception) and not isinstance(result, UnsupportedOperator):
            entry = CheckEntry("invalid", path, detail=f"{path}: engine {args.engine} could not run it: "
                                                       f"{error_text(result)}", **about)
        else:
            verdict = judge(scenario, result)
            entry = CheckEntry(_STATUS_NAMES[verdict.status], path, detail=verdict.detail, **about)
        checked.append(entry)
        report(entry, args.quiet)
    elapsed = time.monotonic() - started
    counts = {status: sum(e.status == status for e in checked) for status in ("pass", "fail", "skip", "invalid")}
    if args.junit_xml is not None:
        _write_junit(args.junit_xml, checked, args.engine, elapsed)
    if args.format == "json":
        totals = {"passed": counts["pass"], "failed": counts["fail"], "skipped": counts["skip"],
                  "invalid": counts["invalid"]}
        print(json_line({"engine": args.engine, "seconds": round(elapsed, 3), **totals,
                         "scenarios": [attrs.asdict(e) for e in checked]}))
    skipped, failed, invalid = counts["skip"], counts["fail"], counts["invalid"]
    if args.format == "text":
        skipped_text = f", {skipped} skipped (not supported by engine {args.engine})" if skipped else ""
        print(f"{counts['pass']} passed, {failed} failed, {invalid} invalid{skipped_text} in {elapsed:.1f}s")
    if skipped and not args.allow_skip and not failed and not invalid:
        print(f"kssim: {skipped} scenario(s) not checked on engine {args.engine} (pass --allow-skip to accept that)",
              file=sys.stderr)
    if invalid:
        return EXIT_BAD_INPUT if not failed else EXIT_FAILED
    if failed or (skipped and not args.allow_skip):
        return EXIT_FAILED
    return EXIT_OK


def _check_report_path(path: str) -> None:
    """A report file (``--junit-xml``) must be a ``.xml`` file in an existing folder; it never
    replaces a scenario (an ``.xml`` is none)."""
    if not path.endswith(".xml"):
        raise KssimError(f"--junit-xml {path}: give a file name ending in .xml")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise KssimError(f"--junit-xml {path}: the folder {folder} does not exist")
    if os.path.isdir(path):
        raise KssimError(f"--junit-xml {path} is a folder: give a file name ending in .xml")


def _print_entry(entry: CheckEntry, quiet: bool) -> None:
    """``check``'s text line(s) for one file."""
    if entry.status == "pass":
        if not quiet:
            print(f"PASS {entry.name} ({entry.path})")
    elif entry.status == "skip":
        print(f"SKIP {entry.name} ({entry.path}): {entry.detail}")  # always: a skipped scenario was not checked
    elif entry.status == "invalid":
        print(f"INVALID {entry.detail}")
    else:
        print(f"FAIL {entry.name} ({entry.path}) [Kafka {entry.release}, {entry.operator}]")
        print("  " + entry.detail.replace("\n", "\n  "))


def _write_junit(path: str, checked, engine: str, seconds: float) -> None:
    """``check``'s verdicts as JUnit XML (one testcase a file: failure, skipped or error), the
    format CI systems read; written atomically."""
    import xml.etree.ElementTree as ET

    counts = {status: sum(e.status == status for e in checked) for status in ("fail", "skip", "invalid")}
    suite = ET.Element("testsuite", name=f"kssim check ({engine})", tests=str(len(checked)),
                       failures=str(counts["fail"]), skipped=str(counts["skip"]), errors=str(counts["invalid"]),
                       time=f"{seconds:.3f}")
    for entry in checked:
        case = ET.SubElement(suite, "testcase", classname=os.path.dirname(entry.path) or ".",
                             name=entry.name or os.path.basename(entry.path), file=entry.path)
        if entry.status == "fail":
            ET.SubElement(case, "failure", message=entry.detail.splitlines()[0] if entry.detail else "failed").text = \
                entry.detail
        elif entry.status == "skip":
            ET.SubElement(case, "skipped", message=entry.detail)
        elif entry.status == "invalid":
            ET.SubElement(case, "error", message=entry.detail)
    with atomic_path(path) as temp:
        ET.ElementTree(suite).write(temp, encoding="utf-8", xml_declaration=True)


def _scenario_files_or_problems(paths):
    """(file, None) for each scenario file under ``paths``, or (path, ScenarioError) for a path
    that does not exist, so that ``check`` reports it and goes on."""
    for path in paths:
        try:
            files = find_scenario_files([path])
        except ScenarioError as exc:
            yield path, exc
            continue
        for f in files:
            yield f, None


def run_each_isolated(engine, scenarios, master):
    """One result or exception per scenario. The whole batch runs at once (one Spark job); if it
    fails as a whole, each scenario is run alone, so the failure is pinned on its own scenario."""
    if not scenarios:
        return []  # nothing valid to run: no Spark session either
    try:
        return run_scenarios(engine, scenarios, master=master, catch=Exception)
    except KeyboardInterrupt:
        raise
    except Exception:  # noqa: BLE001 - pinned on its scenario below
        return [_run_alone(engine, s, master) for s in scenarios]


def _run_alone(engine, scenario, master):
    try:
        return run_scenarios(engine, [scenario], master=master, catch=Exception)[0]
    except Exception as exc:  # noqa: BLE001 - reported as INVALID by cmd_check
        return exc


def error_text(exc) -> str:
    """An engine's error as check reports it: kssim's own messages as they are, others with their class."""
    return str(exc) if isinstance(exc, KssimError) else f"{type(exc).__name__}: {exc}"


def cmd_difftest(args) -> int:
    from kssim.differential_tests.engines import parse_engine
    from kssim.differential_tests.runner import difftest
    from kssim.differential_tests.graph_strategies import GRAPH
    from kssim.differential_tests.strategies import OPERATORS, missing_in

    if args.cases < 1:
        raise KssimError(f"--cases must be at least 1, got {args.cases}")
    if args.findings is not None and args.findings < 1:
        raise KssimError(f"--findings must be at least 1, got {args.findings}")
    a, b = parse_engine(args.a), parse_engine(args.b)
    # by default, every operator both releases have; --graphs alone: graphs only
    if args.graphs:
        operators = list(args.operator or []) + [GRAPH]
    else:
        operators = args.operator or [op for op in OPERATORS if not missing_in(op, (a.profile, b.profile))]
    status = EXIT_OK
    bar = progress_bar(args.cases * len(operators), "cases", "difftest", quiet=args.quiet)  # stderr, terminals only
    try:
        runs = difftest(a, b, operators, cases=args.cases, seed=args.seed, out_dir=args.out,
                        max_findings=args.findings, on_cases=bar.update)
    finally:
        bar.close()
    for run in runs:
        rate = run.cases / run.seconds * 60 if run.seconds else 0
        if run.compared < run.cases and not run.findings:
            # a case one engine refuses compares nothing: say so rather than "no divergence"
            status = EXIT_FAILED
            print(f"{run.operator}: only {run.compared} of {run.cases} cases ran on both {a.label} and {b.label}; "
                  f"first refusal: {run.rejected_because}")
            continue
        if not run.findings:
            print(f"{run.operator}: {run.cases} cases, no divergence between {a.label} and {b.label} "
                  f"({run.seconds:.1f}s, {rate:,.0f} cases/min){_changed_rules_note(a, b)}")
            continue
        status = EXIT_FAILED
        for finding in run.findings:
            print(finding.report)
            if finding.written_to:
                print(f"  written to {finding.written_to} (check it with: kssim check {finding.written_to}; "
                      f"see why with: kssim run --explain {finding.written_to})")
    return status


def _changed_rules_note(a, b) -> str:
    """After "no divergence" between two releases: which rules kssim models as changing between
    them (none: the releases behave alike; some: none of them showed in these cases)."""
    from kssim.reference.model.profiles import rule_changes

    if a.release == b.release:
        return ""
    names = [r.name for r in rule_changes(a.profile, b.profile)]
    if not names:
        return f"; kssim models no rule change between {a.release} and {b.release}"
    return f"; rules that change between {a.release} and {b.release} (kssim rules {a.release} {b.release}): " \
           f"{', '.join(names)}"


def cmd_replay(args) -> int:
    """Replay captured record files through a topology file's topology on either engine."""
    from kssim.reference.model.captures import capture_options_from, input_paths
    from kssim.reference.model.record_files import check_drops_path, check_output_path, load_replay_topology
    from kssim.tools.progress import progress_factory

    # before any work: the captures are never overwritten
    if args.output == STDOUT and args.engine != "reference":
        raise KssimError("-o - (JSON lines on standard output) is for the reference engine; give the Spark "
                         "backend an output file")
    check_output_path(args.output, input_paths(args.input))
    if args.drops is not None:
        check_drops_path(args.drops, input_paths(args.input), args.output)
    options = capture_options_from(args)
    # captured topics carry no cross-topic order: Kafka's timestamp synchronisation decides it
    scenario = load_replay_topology(args.topology, order=args.order)
    started = time.monotonic()
    progress = progress_factory("records", "replay", quiet=args.quiet)
    with spark_job_progress(quiet=args.quiet or args.engine != "spark"):
        summary = replay(args.engine, scenario, args.input, args.output, master=args.master, options=options,
                         drops=args.drops, progress=progress)
    ignored = getattr(summary, "ignored", None) or {}
    skipped = "".join(f", {n:,} record{'s' if n != 1 else ''} of topic {t} skipped" for t, n in sorted(ignored.items()))
    summary_stream = sys.stderr if args.output == STDOUT else sys.stdout  # stdout holds the records
    print(f"replayed {', '.join(args.input)} ({scenario.config.order}) through {scenario.topology.operator} "
          f"(Kafka {scenario.release}, engine {args.engine}) in {time.monotonic() - started:.1f}s: "
          f"{summary.outputs:,} output records written to "
          f"{'standard output' if args.output == STDOUT else args.output}, "
          f"{summary.dropped:,} drop{'s' if summary.dropped != 1 else ''}"
          f"{skipped}" + (f" (listed in {args.drops})" if args.drops is not None else ""), file=summary_stream)
    if summary.failure is not None:
        print(f"Kafka Streams would fail while processing input {summary.failure.input_index}: "
              f"{summary.failure.message}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def cmd_describe(args) -> int:
    """The text Kafka's ``Topology#describe()`` prints for a graph scenario's DSL program."""
    scenario = load_scenario(args.file, args.release)
    if scenario.topology.operator != "graph":
        raise ScenarioError(args.file, "topology", f"kssim describe prints topology graphs; this scenario is a "
                                                   f"single {scenario.topology.operator} (format 1)")
    sys.stdout.write(scenario.topology.describe(scenario.release))
    if not scenario.release.startswith("3.9"):
        # the naming rules were read from Kafka 3.9 (reference/model/graph/describe.py)
        print(f"kssim: note: names and order as Kafka 3.9 prints them; Kafka {scenario.release}'s "
              "Topology#describe() may number some processors and stores differently", file=sys.stderr)
    return EXIT_OK


def cmd_timeline(args) -> int:
    """One picture of a scenario: lanes, stream time, windows, outputs linked to their inputs, drops."""
    from kssim.tools.timeline.command import write_timeline

    print(f"wrote {write_timeline(args.file, args.output, args.release)}")
    return EXIT_OK


def cmd_rules(args) -> int:
    """The semantics rules kssim models, per release; or what changes between two releases."""
    from kssim.reference.model.profiles import RULES, profile_for, rule_changes

    if len(args.releases) == 1:
        profile = profile_for(args.releases[0])
        active = profile.active_rules()
        print(f"Kafka {profile.release}: {len(active)} of {len(RULES)} rules in force")
        for r in active:
            print(f"  {r.name} ({r.ref}): {r.doc}")
        return EXIT_OK
    if args.releases:
        if len(args.releases) != 2:
            raise KssimError("rules takes no release (every rule), one (the rules in force there) or two (what "
                             "changes from the first to the second)")
        a, b = (profile_for(r) for r in args.releases)
        changes = rule_changes(a, b)
        print(f"from Kafka {a.release} to {b.release}: {len(changes)} rule(s) change")
        for r in changes:
            state = "gained" if getattr(b, r.name) else "lost"
            print(f"  {state:<6} {r.name} ({r.ref}): {r.doc}")
        return EXIT_OK
    for r in RULES:
        span = f"{r.since}" + (f" until {r.until}" if r.until else "+") + "".join(f", {x}-{y}" for x, y in r.also)
        print(f"{r.name:<40} {span:<22} {r.ref}: {r.doc}")
    return EXIT_OK


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kssim")
    except PackageNotFoundError:
        return "(not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kssim", description="Exactly what Kafka Streams outputs, per release.",
                                     epilog="Exit codes: 0 success; 1 a scenario failed its expectations, check "
                                            "skipped scenarios (without --allow-skip), a comparison found a "
                                            "difference, or Kafka Streams would die (run or replay); 2 bad input (one "
                                            "message naming the file, record and field); 130 interrupted (Ctrl-C); 143 / 129 stopped by "
                                            "SIGTERM / SIGHUP, cleaned up as for Ctrl-C.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run scenario files and print every output record")
    run.add_argument("files", nargs="+", help="scenario files (.json, .yaml, .yml) or folders (searched recursively)")
    run.add_argument("--format", choices=("table", "jsonl"), default="table",
                     help="table (default), or jsonl: one compact JSON object per output record")
    run.add_argument("--drops", action="store_true", help="also list every input record dropped or ignored, with its reason")
    run.add_argument("--pending", action="store_true",
                     help="also list what each task still holds at the end, waiting for stream time: unmatched "
                          "outer-join records, open emit-on-window-close windows, suppressed results, grace-buffered "
                          "stream records, with the stream time that would release each (reference engine; "
                          "--explain ends with this list too)")
    run.add_argument("--explain", action="store_true",
                     help="say why each output record happened, and why each dropped input was dropped (reference engine)")
    run.add_argument("--engine", choices=ENGINES, default="reference", help="reference (default) or spark")
    run.add_argument("--master", help="Spark master URL (default: local Spark in-process, or the Spark environment)")
    run.add_argument("--release", help="run the scenarios at this Kafka release instead of their semantics, e.g. 3.4")
    run.add_argument("--schedule", metavar="CHOICES",
                     help="interleaved delivery of internal records following these queue choices (0,2,1,...), "
                          "as `kssim explore` prints a witness (reference engine)")
    run.set_defaults(func=cmd_run)

    exp = sub.add_parser("explore", help="run seeded interleavings of a scenario with internal topics (an FK join) "
                                         "and group them by outcome",
                         description="Run a scenario whose topology writes internal topics (a foreign-key join) "
                                     "under many seeded interleavings of those topics' records, as a deployment's "
                                     "tasks may see them, and group the runs by outcome: each distinct output with "
                                     "how many schedules gave it, a witness schedule (replay it with kssim run "
                                     "--schedule) and the final table, and whether it matches the relational join.")
    exp.add_argument("file", help="a scenario file")
    exp.add_argument("--schedules", type=int, default=100, help="how many interleavings to run (default 100)")
    exp.add_argument("--seed", type=int, default=0, help="master seed: the same seed explores the same schedules")
    exp.add_argument("--format", choices=("table", "jsonl"), default="table",
                     help="table (default), or jsonl: one object per outcome with outputs, final_table, count, "
                          "schedule, matches_relational_join")
    exp.set_defaults(func=cmd_explore)

    check = sub.add_parser("check", help="check scenarios against their expected output",
                           description="Run each scenario and compare its output (and expected_failure) with what "
                                       "it expects: PASS, FAIL with the first difference, SKIP when the engine "
                                       "lacks the scenario's operator or feature, INVALID (with the file, record "
                                       "and field) when a file cannot be loaded or run; the check always goes on "
                                       "to the summary. Exit 0 all passed; 1 a failure, or a skip without "
                                       "--allow-skip; 2 invalid files and no failure.")
    check.add_argument("paths", nargs="+", help="scenario files (.json, .yaml, .yml) or folders (searched recursively)")
    check.add_argument("--engine", choices=ENGINES, default="reference", help="reference (default) or spark")
    check.add_argument("--master", help="Spark master URL (default: local Spark in-process, or the Spark environment)")
    check.add_argument("-q", "--quiet", action="store_true",
                       help="print only failures, invalid files, skipped scenarios and the summary")
    check.add_argument("--release", help="check the scenarios at this Kafka release instead of their semantics "
                                         "(do their expectations hold after an upgrade?), e.g. 3.9")
    check.add_argument("--format", choices=("text", "json"), default="text",
                       help="text (default), or json: one JSON object with the counts and each file's verdict "
                            "(status pass/fail/skip/invalid, path, name, release, operator, detail)")
    check.add_argument("--junit-xml", metavar="FILE",
                       help="also write the verdicts as JUnit XML (a testcase per file), for CI; never over an "
                            "input, written atomically")
    check.add_argument("--allow-skip", action="store_true",
                       help="exit 0 even when scenarios were skipped because the engine lacks their operator "
                            "or feature (by default a skipped scenario makes the exit code 1)")
    check.set_defaults(func=cmd_check)

    replay = sub.add_parser("replay", help="replay captured topics (kcat -C -J, kafka-console-consumer, JSONL or "
                                           "Parquet) through a topology file")
    replay.add_argument("topology", help="a scenario file giving topology, semantics and config (its inputs are not used)")
    replay.add_argument("--input", "-i", action="append", required=True, metavar="[TOPIC=]PATH",
                        help="a capture: kcat -C -J lines, kafka-console-consumer text (TOPIC= names its topic; "
                             "default: the file's name without extension), or a kssim record file (.jsonl or "
                             ".parquet: topic, partition, offset, ts, key, value); a folder: its data files in name "
                             "order, in one format; repeatable: records are numbered in the order given")
    replay.add_argument("--output", "-o", required=True,
                        help="output file (.jsonl or .parquet) in an existing folder; never an input; written "
                             "atomically (an existing file is replaced only by a complete output); - writes JSON "
                             "lines to standard output (reference engine; the summary then goes to stderr)")
    replay.add_argument("--order", choices=("as_listed", "timestamp_sync"), default=None,
                        help="timestamp_sync (default; a topology graph: as_listed, the only order graphs take): "
                             "Kafka's order: each partition's records in offset order "
                             "(given offsets must increase), and each task takes next the head record of its "
                             "partitions with the smallest timestamp, by the topology file's release (ties: the "
                             "topic declared first, then the lower partition); as_listed: TopologyTestDriver's "
                             "order: every record processed at once as it is read, the files in the order given, "
                             "each top to bottom, timestamps and offsets ignored for the order. With config."
                             "global_table: bootstrap, the global (right) topic's records come first in both")
    replay.add_argument("--engine", choices=ENGINES, default="reference", help="reference (default) or spark")
    replay.add_argument("--master", help="Spark master URL (default: local Spark in-process, or the Spark environment)")
    replay.add_argument("--drops", metavar="FILE.jsonl",
                        help="also write every dropped or ignored input to this file, one JSON object a line (input, "
                             "drop: the reason code, topic, partition, key); never an input or the output; written "
                             "atomically (reference engine)")
    replay.add_argument("-q", "--quiet", action="store_true",
                        help="no progress bar (it shows on stderr only when stderr is a terminal)")
    add_capture_options(replay)
    replay.set_defaults(func=cmd_replay)

    from kssim.tools.diff_command import add_diff_parser  # kssim diff: its command and options live there

    add_diff_parser(sub)

    timeline = sub.add_parser("timeline", help="draw one scenario: input lanes, stream time per task, windows and "
                                               "grace periods, outputs linked to their inputs, drops",
                              description="Draw a scenario on a time axis: a lane per input topic partition, each "
                                          "record at its timestamp (null keys and tombstones marked), the "
                                          "aggregation windows with their close points, a lane per output topic "
                                          "partition with an arrow to the input that emitted each output, drops "
                                          "with their reason; below, the inputs in processing order with each "
                                          "task's stream time as a step line and each join window's grace up to "
                                          "its close (reference engine).")
    timeline.add_argument("file", help="a scenario file (.json, .yaml, .yml)")
    timeline.add_argument("-o", "--output", metavar="OUT",
                          help="the picture: .png, .svg or .html (a page with the SVG and a table of the records); "
                               "default: <file name>.timeline.png in the current folder; written atomically, "
                               "never over the scenario")
    timeline.add_argument("--release", help="draw the scenario at this Kafka release instead of its semantics, e.g. 3.0")
    timeline.set_defaults(func=cmd_timeline)

    describe = sub.add_parser("describe", help="print a graph's topology as Kafka's Topology#describe() does",
                              description="Print the sub-topologies, processors (with Kafka's generated names), "
                                          "stores and repartition topics of a topology graph, as the same DSL "
                                          "program's Topology#describe() prints them, to diff against what your "
                                          "application prints.")
    describe.add_argument("file", help="a scenario file with a topology graph")
    describe.add_argument("--release", help="describe the graph at this Kafka release instead of its semantics")
    describe.set_defaults(func=cmd_describe)

    rules = sub.add_parser("rules", help="list the release-dependent rules, or what changes between two releases",
                           description="With no release: every rule kssim models, the releases it holds in and "
                                       "its source (KIP, JIRA). With one: the rules in force at that release. "
                                       "With two: the rules gained or lost from the first release to the second.")
    rules.add_argument("releases", nargs="*", metavar="RELEASE",
                       help="one release (e.g. 3.6), or two, e.g. 3.6 3.7, or with patch numbers, e.g. 3.1.0 3.1.1")
    rules.set_defaults(func=cmd_rules)

    diff = sub.add_parser("difftest", help="run generated cases through two engine configurations and shrink the first divergence")
    diff.add_argument("--a", required=True, metavar="ENGINE[@RELEASE]", help="e.g. reference, reference@3.6, spark@3.9")
    diff.add_argument("--b", required=True, metavar="ENGINE[@RELEASE]", help="the configuration --a is compared with")
    diff.add_argument("--operator", action="append", choices=DIFFTEST_OPERATORS,
                      help="operator to test (repeatable; default: all, or none with --graphs)")
    diff.add_argument("--graphs", action="store_true",
                      help="generate random topology graphs (sources, stateless and stateful nodes, joins, windows, "
                           "suppress, several sinks; only operations both releases have) instead of single operators; "
                           "with --operator, both; findings are reported and written under the name 'graph'")
    diff.add_argument("--cases", type=int, default=200, help="cases per operator, or graphs (default 200)")
    diff.add_argument("--seed", type=int, default=0, help="the same seed generates the same cases (default 0)")
    diff.add_argument("--findings", type=int, default=None,
                      help="most divergences to report per operator (default: 1 between engines; between two "
                           "releases, one per rule that changes, each explained by its rule)")
    diff.add_argument("--out", default="scenarios/regressions", help="where shrunk cases are written (default scenarios/regressions)")
    diff.add_argument("-q", "--quiet", action="store_true",
                      help="no progress bar (it shows on stderr only when stderr is a terminal)")
    diff.set_defaults(func=cmd_difftest)
    return parser


class Stopped(KeyboardInterrupt):
    """SIGTERM (``docker stop``, systemd, CI timeouts, ``timeout(1)``) or SIGHUP (a closed
    terminal): raised where the program is, so it cleans up exactly as for Ctrl-C (partial
    outputs and spill folders removed, the reading process ended), then exits 128 + the signal."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _stop(signum, frame):
    raise Stopped(signum)


#: the signals that stop kssim cleanly (as Ctrl-C does)
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    handlers = {}
    if threading.current_thread() is threading.main_thread():  # only the main thread may set handlers
        handlers = {signum: signal.signal(signum, _stop) for signum in STOP_SIGNALS}
    try:
        return _run(args)
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)


def _run(args) -> int:
    try:
        return args.func(args)
    except ScenarioError as exc:
        print(f"kssim: invalid input: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KssimError as exc:
        print(f"kssim: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        return EXIT_OK
    except Stopped as exc:
        print(f"kssim: stopped by {signal.Signals(exc.signum).name}", file=sys.stderr)
        return 128 + exc.signum
    except KeyboardInterrupt:
        print("kssim: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as exc:  # e.g. a full disk or a folder without write permission
        where = f": {exc.filename}" if exc.filename else ""
        print(f"kssim: {exc.strerror or exc}{where}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
