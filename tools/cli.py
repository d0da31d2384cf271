"""``kssim``: run scenarios, check them against their expectations, explain and list drops.

Exit codes: 0 success; 1 a scenario failed its expectations; 2 bad input (a malformed file, an
impossible topology, an unknown release).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from reference.model.compare import check_failure, compare_outputs, fmt_record
from reference.runtime.engine import run_scenario
from reference.model.errors import KssimError, ScenarioError, UnsupportedOperator
from reference.model.render import show
from reference.model.records import NO_OLD_VALUE
from reference.model.scenario import find_scenario_files, load_scenario

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def _sends_old_values(scenario) -> bool:
    return bool(getattr(scenario.topology, "send_old_values", False))


def output_as_json(rec, scenario, with_scenario: bool) -> dict:
    obj = {"topic": rec.topic, "partition": rec.partition, "key": rec.key, "value": rec.value,
           "ts": rec.ts, "input": rec.input_index}
    if _sends_old_values(scenario):
        obj["old_value"] = None if rec.old_value is NO_OLD_VALUE else rec.old_value
    if with_scenario:
        obj = {"scenario": scenario.name, **obj}
    return obj


def _table(rows, headers):
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    out = [line.rstrip(), "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(out)


def _describe_input(scenario, index) -> str:
    rec = scenario.inputs[index]
    part = f"[{rec.partition}]" if scenario.config.task_count > 1 else ""
    return f"input {index} ({rec.topic}{part} {show(rec.key)}:{show(rec.value)}@{rec.ts})"


ENGINES = ("reference", "spark")


def run_engine(scenarios, engine: str, explain: bool = False, master=None):
    """Results for ``scenarios``, in order: a RunResult, or the exception (e.g. UnsupportedOperator)
    that stopped that one scenario. The Spark backend runs them all in one job."""
    if engine == "reference":
        out = []
        for scenario in scenarios:
            try:
                out.append(run_scenario(scenario, explain=explain))
            except UnsupportedOperator as exc:
                out.append(exc)
        return out
    if engine == "spark":
        from spark_backend.runtime.runner import run_scenarios
        from spark_backend.session import get_spark

        return run_scenarios(list(scenarios), spark=get_spark(master))
    raise KssimError(f"unknown engine {engine!r} (engines: {', '.join(ENGINES)})")


def cmd_run(args) -> int:
    scenarios = [load_scenario(f) for f in find_scenario_files(args.files)]
    several = len(scenarios) > 1
    status = EXIT_OK
    for scenario, result in zip(scenarios, run_engine(scenarios, args.engine, args.explain, args.master)):
        if isinstance(result, Exception):
            raise result
        if args.format == "jsonl":
            for rec in result.outputs:
                print(json.dumps(output_as_json(rec, scenario, several), sort_keys=False))
        else:
            _print_table(scenario, result, args, several)
        if args.drops or args.explain:
            _print_drops(scenario, result, args)
        if result.failure is not None:
            print(f"{scenario.name}: Kafka Streams would fail while processing "
                  f"{_describe_input(scenario, result.failure.input_index)}: {result.failure.message}", file=sys.stderr)
            if check_failure(scenario, result.failure):
                status = EXIT_FAILED
    return status


def _print_table(scenario, result, args, several):
    if several or args.explain or args.drops:
        print(f"== {scenario.name} (Kafka {scenario.release}, {scenario.topology.operator}"
              f"{', ' + scenario.topology.join if hasattr(scenario.topology, 'join') else ''})")
    headers = ["topic", "partition", "key", "value", "ts", "input"]
    old = _sends_old_values(scenario)
    if old:
        headers.insert(4, "old_value")
    rows = []
    for rec in result.outputs:
        row = [rec.topic, str(rec.partition), show(rec.key), show(rec.value), str(rec.ts), str(rec.input_index)]
        if old:
            row.insert(4, show(None if rec.old_value is NO_OLD_VALUE else rec.old_value))
        rows.append(row)
    print(_table(rows, headers))
    if args.explain:
        print()
        for i, rec in enumerate(result.outputs):
            why = rec.why.describe() if rec.why is not None else "(no explanation)"
            print(f"#{i} {show(rec.key)}:{show(rec.value)}@{rec.ts} while processing "
                  f"{_describe_input(scenario, rec.input_index)}: {why}")


def _print_drops(scenario, result, args):
    if args.format == "jsonl":
        for d in result.drops:
            obj = {"drop": d.reason, "input": d.input_index,
                   "why": d.why.describe() if d.why is not None else None}
            if args.files and len(args.files) > 1:
                obj = {"scenario": scenario.name, **obj}
            print(json.dumps(obj), file=sys.stdout)
        return
    print(f"\ndropped or ignored inputs ({len(result.drops)}):")
    for d in result.drops:
        why = f": {d.why.describe()}" if d.why is not None else ""
        print(f"  {_describe_input(scenario, d.input_index)}: {d.reason}{why}")


def judge(scenario, result):
    """(status, detail) of one scenario's run: status is 'pass', 'fail' or 'unsupported'."""
    if isinstance(result, UnsupportedOperator):
        return "unsupported", str(result)
    if isinstance(result, Exception):
        return "fail", f"{type(result).__name__}: {result}"
    failure_problem = check_failure(scenario, result.failure)
    if failure_problem and scenario.expected_failure is not None:
        return "fail", failure_problem
    mismatch = compare_outputs(scenario, result.outputs)
    if mismatch is not None:
        detail = mismatch.describe()
        if mismatch.input_index is not None and 0 <= mismatch.input_index < len(scenario.inputs):
            detail += f"\n    at {_describe_input(scenario, mismatch.input_index)}"
        if result.failure is not None:
            detail += f"\n    {result.failure}"
        return "fail", detail
    if failure_problem:
        return "fail", failure_problem
    return "pass", ""


def cmd_check(args) -> int:
    files = find_scenario_files(args.paths)
    counts = {"pass": 0, "fail": 0, "unsupported": 0, "invalid": 0}
    started = time.monotonic()
    loaded = []
    for path in files:
        try:
            loaded.append((path, load_scenario(path)))
        except KssimError as exc:
            counts["invalid"] += 1
            print(f"INVALID {path}: {exc}")
    results = run_engine([s for _, s in loaded], args.engine, master=args.master)
    for (path, scenario), result in zip(loaded, results):
        status, detail = judge(scenario, result)
        counts[status] += 1
        if status == "pass":
            if not args.quiet:
                print(f"PASS {scenario.name} ({path})")
        elif status == "unsupported":
            if not args.quiet:
                print(f"SKIP {scenario.name} ({path}): {detail}")
        else:
            print(f"FAIL {scenario.name} ({path}) [Kafka {scenario.release}, {scenario.topology.operator}]")
            print("  " + detail.replace("\n", "\n  "))
    elapsed = time.monotonic() - started
    skipped = f", {counts['unsupported']} skipped (operator not implemented by engine {args.engine})" if counts["unsupported"] else ""
    print(f"{counts['pass']} passed, {counts['fail']} failed, {counts['invalid']} invalid{skipped} in {elapsed:.1f}s")
    if counts["invalid"]:
        return EXIT_BAD_INPUT if not counts["fail"] else EXIT_FAILED
    return EXIT_FAILED if counts["fail"] else EXIT_OK


def cmd_difftest(args) -> int:
    from differential_tests.engines import parse_engine
    from differential_tests.runner import difftest
    from differential_tests.strategies import OPERATORS

    a, b = parse_engine(args.a), parse_engine(args.b)
    operators = args.operator or list(OPERATORS)
    status = EXIT_OK
    for run in difftest(a, b, operators, cases=args.cases, seed=args.seed, out_dir=args.out):
        rate = run.cases / run.seconds * 60 if run.seconds else 0
        if run.finding is None:
            print(f"{run.operator}: {run.cases} cases, no divergence between {a.label} and {b.label} "
                  f"({run.seconds:.1f}s, {rate:,.0f} cases/min)")
            continue
        status = EXIT_FAILED
        print(run.finding.report)
        if run.finding.written_to:
            print(f"  written to {run.finding.written_to} (check it with: kssim check {run.finding.written_to}; "
                  f"see why with: kssim run --explain {run.finding.written_to})")
    return status


def cmd_replay(args) -> int:
    """Replay captured record files through a topology file's topology on either engine."""
    import attrs

    from reference.model.scenario import load_topology_file

    base = load_topology_file(args.topology)
    # captured topics carry no cross-topic order: Kafka's timestamp synchronisation decides it
    scenario = attrs.evolve(base, config=attrs.evolve(base.config, order=args.order), expected=None, checkpoints=None)
    started = time.monotonic()
    replay = _replay_spark if args.engine == "spark" else _replay_reference
    outputs, drops, failure = replay(scenario, args)
    print(f"replayed {', '.join(args.input)} ({args.order}) through {scenario.topology.operator} "
          f"(Kafka {scenario.release}, engine {args.engine}) in {time.monotonic() - started:.1f}s: "
          f"{outputs:,} output records written to {args.output}, {drops:,} inputs dropped")
    if failure is not None:
        print(f"Kafka Streams would fail while processing input {failure.input_index}: {failure.message}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def _replay_reference(scenario, args):
    import attrs

    from reference.model.record_files import output_row, read_record_files, write_rows
    from reference.model.topology import OPERATOR_INPUT_TOPICS

    inputs = read_record_files(args.input, OPERATOR_INPUT_TOPICS[scenario.topology.operator], scenario.config.partitions,
                               offsets_matter=scenario.config.order == "timestamp_sync")
    result, = run_engine([attrs.evolve(scenario, inputs=tuple(inputs))], "reference")
    if isinstance(result, Exception):
        raise result
    old = _sends_old_values(scenario)
    write_rows(args.output, [output_row(rec, old) for rec in result.outputs])
    return len(result.outputs), len(result.drops), result.failure


def _replay_spark(scenario, args):
    """Spark reads the files itself and writes part files in parallel; they are joined, in
    order, into ``args.output``."""
    import shutil
    import tempfile

    from spark_backend.runtime.replay import replay
    from spark_backend.session import get_spark

    fmt = "parquet" if args.output.endswith(".parquet") else "jsonl"
    folder = tempfile.mkdtemp(prefix="kssim-replay-")
    try:
        counts, failure = replay(scenario, args.input, os.path.join(folder, "out"), fmt,
                                 spark=get_spark(args.master, workload="bulk"))
        _join_parts(os.path.join(folder, "out"), args.output, fmt)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        outputs = pq.ParquetFile(args.output).metadata.num_rows
    else:
        with open(args.output, "rb") as handle:
            outputs = sum(1 for _ in handle)
    return outputs, sum(counts.values()), failure


def _join_parts(folder, output, fmt) -> None:
    """Concatenate Spark's part files (named in output order) into one file."""
    import glob
    import shutil

    parts = sorted(p for p in glob.glob(os.path.join(folder, "part-*")) if not p.endswith(".crc"))
    if fmt == "jsonl":
        with open(output, "wb") as sink:
            for part in parts:
                with open(part, "rb") as source:
                    shutil.copyfileobj(source, sink)
        return
    import pyarrow.parquet as pq

    writer = None
    try:
        for part in parts:
            source = pq.ParquetFile(part)
            writer = writer or pq.ParquetWriter(output, source.schema_arrow)
            for batch in source.iter_batches():
                writer.write_batch(batch)
    finally:
        if writer is not None:
            writer.close()


def cmd_rules(args) -> int:
    """The semantics rules kssim models, per release; or what changes between two releases."""
    from reference.model.profiles import RULES, profile_for, rule_changes

    if args.releases:
        if len(args.releases) != 2:
            raise KssimError("kssim rules takes no release (all rules) or two releases (what changes from the first to the second)")
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kssim", description="Exactly what Kafka Streams outputs, per release.")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run scenario files and print every output record")
    run.add_argument("files", nargs="+", help="scenario files or folders")
    run.add_argument("--format", choices=("table", "jsonl"), default="table")
    run.add_argument("--drops", action="store_true", help="also list every input record dropped or ignored, with its reason")
    run.add_argument("--explain", action="store_true", help="say why each output record happened, and why each dropped input was dropped")
    run.add_argument("--engine", choices=ENGINES, default="reference")
    run.add_argument("--master", help="Spark master URL (default: local Spark in-process, or the Spark environment)")
    run.set_defaults(func=cmd_run)

    check = sub.add_parser("check", help="check scenarios against their expected output")
    check.add_argument("paths", nargs="+", help="scenario files or folders (searched recursively)")
    check.add_argument("--engine", choices=ENGINES, default="reference")
    check.add_argument("--master", help="Spark master URL (default: local Spark in-process, or the Spark environment)")
    check.add_argument("-q", "--quiet", action="store_true", help="print only failures and the summary")
    check.set_defaults(func=cmd_check)

    replay = sub.add_parser("replay", help="replay captured record files (JSONL or Parquet) through a topology file")
    replay.add_argument("topology", help="a scenario file giving topology, semantics and config (its inputs are not used)")
    replay.add_argument("--input", "-i", action="append", required=True,
                        help="record file (.jsonl or .parquet) with topic, partition, offset, ts, key, value; repeatable")
    replay.add_argument("--output", "-o", required=True, help="where to write outputs (.jsonl or .parquet)")
    replay.add_argument("--order", choices=("as_listed", "timestamp_sync"), default="timestamp_sync",
                        help="timestamp_sync (default): each task picks its next record as Kafka does; "
                             "as_listed: files' rows in (topic, partition, offset) order")
    replay.add_argument("--engine", choices=ENGINES, default="reference")
    replay.add_argument("--master", help="Spark master URL")
    replay.set_defaults(func=cmd_replay)

    rules = sub.add_parser("rules", help="list the release-dependent rules, or what changes between two releases")
    rules.add_argument("releases", nargs="*", metavar="RELEASE", help="two releases, e.g. 3.6 3.7")
    rules.set_defaults(func=cmd_rules)

    diff = sub.add_parser("difftest", help="run generated cases through two engine configurations and shrink the first divergence")
    diff.add_argument("--a", required=True, metavar="ENGINE[@RELEASE]", help="e.g. reference, reference@3.6, spark@3.9")
    diff.add_argument("--b", required=True, metavar="ENGINE[@RELEASE]")
    diff.add_argument("--operator", action="append", choices=("stream_stream_join", "stream_table_join", "table_table_join"))
    diff.add_argument("--cases", type=int, default=200, help="cases per operator (default 200)")
    diff.add_argument("--seed", type=int, default=0)
    diff.add_argument("--out", default="scenarios/regressions", help="where shrunk cases are written (default scenarios/regressions)")
    diff.set_defaults(func=cmd_difftest)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ScenarioError as exc:
        print(f"kssim: invalid scenario: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KssimError as exc:
        print(f"kssim: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
