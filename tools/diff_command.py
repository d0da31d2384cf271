"""``kssim diff``: replay captured input topics and compare kssim's prediction with the captured
output topic: "is this what Kafka Streams should have produced, and if not, where does it first
differ, and why?".

The comparison is :mod:`reference.model.diff` (streaming, bounded memory); this module runs an
engine into it and prints the report. The reference engine streams its outputs straight into the
comparison (``engines.stream_reference_outputs``); the Spark backend replays into a file
(``engines.replay``: a temporary one, removed afterwards, or ``--output``) that is then read in
order. The explanation of the records around the first divergence always comes from the
reference engine (the Spark backend does not explain), re-run with explanations only up to the
records shown, so the report is the same whichever engine predicted the output.

A topology graph writes several sink topics: the comparison takes kssim's records of one of them
(``--sink``, default the graph's only sink topic: ``captures.chosen_output_topic``), ``--output``
gets them all. Graphs are processed as listed and predicted on the reference engine only (the
Spark backend refuses them before any work: ``engines.check_engine_runs``).

Nothing is written unless ``--output`` asks for kssim's predicted output, which is refused before
any work as ``kssim replay`` refuses it (``record_files.check_output_path``) and written atomically.
Exit codes: 0 the capture matches, 1 a divergence, 2 invalid input.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile

from kssim.reference.model import diff as model_diff
from kssim.reference.model.captures import (add_capture_options, capture_options_from, chosen_output_topic, input_paths,
                                      open_captures)
from kssim.reference.model.engines import ENGINES, check_engine_runs, replay, stream_reference_outputs
from kssim.reference.model.errors import KssimError
from kssim.reference.model.record_files import check_output_path, counted, load_replay_topology, open_output
from kssim.reference.model.render import json_line, sends_old_values, show
from kssim.tools.progress import progress_bar, spark_job_progress

EXIT_OK, EXIT_FAILED = 0, 1


def add_diff_parser(sub) -> None:
    """The ``kssim diff`` subcommand and its options."""
    diff = sub.add_parser("diff", help="replay captured inputs and compare kssim's prediction with a captured "
                                       "output topic: the first divergence, its class, the input behind it, counts")
    diff.add_argument("topology", help="a scenario file giving topology, semantics and config (its inputs are not used)")
    diff.add_argument("--input", "-i", action="append", required=True,
                      help="captured input topics: kcat -C -J, kafka-console-consumer text, or kssim record files "
                           "(.jsonl, .parquet), files or folders, as for kssim replay; repeatable")
    diff.add_argument("--expected", "-e", action="append", required=True,
                      help="the captured output topic, in the same formats (records of the input topics in it "
                           "are skipped; map its name with --topic output=NAME); each partition in offset "
                           "order; repeatable")
    diff.add_argument("--compare", choices=[m.value for m in model_diff.CompareMode], default="exact",
                      help="exact (default): every record in order, per output partition; latest_value_per_key: "
                           "only the final value of each key (outputs captured with record caching on, which "
                           "kssim does not model)")
    diff.add_argument("--order", choices=("as_listed", "timestamp_sync"), default=None,
                      help="how the inputs are processed, as for kssim replay (default timestamp_sync; a topology "
                           "graph: as_listed, the only order graphs take)")
    diff.add_argument("--sink", metavar="TOPIC",
                      help="the topology graph's sink topic the --expected capture holds (default: the graph's only "
                           "sink topic; required when it writes several); map its captured name with --topic "
                           "TOPIC=NAME")
    diff.add_argument("--engine", choices=ENGINES, default="reference", help="reference (default) or spark")
    diff.add_argument("--master", help="Spark master URL (default: local Spark in-process, or the Spark environment)")
    diff.add_argument("--output", "-o",
                      help="also write kssim's predicted output here (.jsonl or .parquet; never an input or the "
                           "capture; written atomically)")
    diff.add_argument("--format", choices=("text", "json"), default="text",
                      help="text (default), or json: one object with compare, match, counts, first divergence")
    diff.add_argument("--lookahead", type=int, default=model_diff.LOOKAHEAD,
                      help=f"records each side is searched ahead, per partition, to tell order from "
                           f"missing/extra (default {model_diff.LOOKAHEAD}; memory grows with it)")
    diff.add_argument("--list", type=int, default=model_diff.LISTED, metavar="N",
                      help=f"list the first N divergences, one line each (default {model_diff.LISTED}; 0: none)")
    diff.add_argument("-q", "--quiet", action="store_true",
                      help="no progress bar (it shows on stderr only when stderr is a terminal)")
    diff.add_argument("--no-explain", action="store_true",
                      help="do not re-run the reference engine to explain the records around the first divergence")
    add_capture_options(diff)
    diff.set_defaults(func=cmd_diff)


def cmd_diff(args) -> int:
    if args.lookahead < 1:
        raise KssimError("--lookahead must be at least 1")
    if args.list < 0:
        raise KssimError("--list must be 0 or more")
    options = capture_options_from(args)
    scenario = load_replay_topology(args.topology, order=args.order)
    check_engine_runs(args.engine, scenario.topology)
    # the output topic compared: a graph's sink topic (--sink), format 1's ``output``
    sink = chosen_output_topic(scenario.topology, args.sink)
    # before any work: every capture is found and recognised, an output never overwrites one
    inputs = _open_inputs(scenario, args.input, options)
    expected = open_captures(args.expected, options, scenario.topology, partitions=None, reading="output",
                             output_topic=sink)
    if args.output is not None:
        check_output_path(args.output, input_paths(args.input) + input_paths(args.expected))
    mode = model_diff.CompareMode(args.compare)
    comparison = model_diff.new_diff(mode, model_diff.captured_records(expected), args.lookahead,
                                     max(model_diff.BUFFER, 4 * (args.lookahead + 1)), args.list)
    if args.engine == "reference":
        bar = progress_bar(inputs.total, "records", "diff", quiet=args.quiet)
        try:
            failure = _predict_on_reference(scenario, counted(inputs.records(), bar), args, comparison, sink)
        finally:
            bar.close()
    else:
        failure = _predict_on_spark(scenario, args, options, comparison, sink)
    result = comparison.finish()
    if result.captured_total == 0 and expected.ignored:
        # every record of the expected capture belongs to another topic: most likely an input
        # capture given as --expected; "everything missing" would hide that
        topics = ", ".join(f"{name} ({count})" for name, count in sorted(expected.ignored.items()))
        raise KssimError(f"--expected {', '.join(args.expected)}: holds no record of the output topic {sink}, only "
                         f"records of {topics}: give the capture of the topology's output topic (or map it with "
                         f"--topic {sink}=CAPTURED_NAME)")
    input_text, explanation = None, []
    if result.first is not None:
        input_text = _describe_input(scenario, args.input, options, result.first.input_index)
        if not args.no_explain:
            explanation = _explanation(scenario, _open_inputs(scenario, args.input, options).records(), result.first,
                                       args.engine, sink)
    header = (f"kssim diff: {args.topology} ({_operator(scenario, sink)}, Kafka {scenario.release}, engine "
              f"{args.engine}, {scenario.config.order}) against {', '.join(args.expected)}")
    failure_text = None
    if failure is not None:
        failure_text = (f"Kafka Streams would fail while processing input {failure.input_index}: {failure.message} "
                        f"(kssim's prediction stops there)")
    if args.format == "json":
        print(json_line(model_diff.report_json(result, {
            "engine": args.engine, "input_text": input_text, "why": explanation, "failure": failure_text})))
    else:
        lines = model_diff.report_text(result, header, input_text, explanation)
        if failure_text:
            lines.insert(1, "note: " + failure_text)
        print("\n".join(lines))
    return EXIT_FAILED if result.diverged else EXIT_OK


def _operator(scenario, sink) -> str:
    if scenario.topology.operator == "graph":
        return f"graph, sink topic {sink}"
    join = getattr(scenario.topology, "join", None)
    return scenario.topology.operator + (f" {join}" if join else "")


def _open_inputs(scenario, inputs, options):
    """The captured inputs, opened as ``kssim replay`` opens them (records are read as the run goes)."""
    return open_captures(inputs, options, scenario.topology, scenario.config.partitions,
                         offsets_matter=scenario.config.order == "timestamp_sync", reading="inputs")


def _predict_on_reference(scenario, records, args, comparison, sink):
    """Stream the reference's outputs into the comparison (those of topic ``sink``) and
    ``--output`` (all of them); the failure or None."""
    with contextlib.ExitStack() as stack:
        writer = stack.enter_context(open_output(args.output, sends_old_values(scenario))) if args.output else None

        def on_output(rec):
            if writer is not None:
                writer.write(rec)
            if rec.topic == sink:
                comparison.add_expected(rec.partition, rec.key, rec.value, rec.ts, rec.input_index)

        return stream_reference_outputs(scenario, records, on_output).failure


def _predict_on_spark(scenario, args, options, comparison, sink):
    """Replay on Spark into a file (``--output``, or a temporary one removed afterwards), then
    read its records of topic ``sink`` into the comparison in order; the failure or None."""
    folder = None
    try:
        target = args.output
        if target is None:
            folder = tempfile.mkdtemp(prefix="kssim-diff-")
            target = os.path.join(folder, "predicted.jsonl")
        with spark_job_progress(quiet=args.quiet):  # stderr, terminals only
            summary = replay("spark", scenario, args.input, target, master=args.master, options=options)
        for partition, key, value, ts, index in model_diff.read_predicted(target, sink):
            comparison.add_expected(partition, key, value, ts, index)
        return summary.failure
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def _describe_input(scenario, inputs, options, index):
    """``input 3 (left[0] k:A@5), orders.jsonl record 4``: the input whose processing should have
    produced the record, and where it is."""
    if index is None:
        return None
    captures = _open_inputs(scenario, inputs, options)
    rec = next((r for r in captures.records() if r.index == index), None)
    if rec is None:
        return None
    source = next(s for s in captures.sources if s.first_index <= index < s.first_index + s.count)
    return (f"input {index} ({rec.topic}[{rec.partition}] {show(rec.key)}:{show(rec.value)}@{rec.ts}), "
            f"{source.path} record {index - source.first_index + 1}")


class _Shown(Exception):
    """Stops the explaining re-run once the records to explain have been produced."""


def _explanation(scenario, records, first, engine="reference", sink="output"):
    """The reference engine's explanation of kssim's records (of topic ``sink``) around the first
    divergence: a re-run with explanations that stops once the last of them is produced."""
    label = "why (reference engine)" if engine == "reference" else \
        f"why (explained by the reference engine: engine {engine} does not explain)"
    wanted = sorted(rec.position for rec, _ in first.expected_context)
    if first.expected is not None and first.expected.position not in wanted:
        wanted.append(first.expected.position)
    if not wanted:
        return [f"{label}: kssim predicts no output in partition {first.partition} around here"]
    lo, hi = min(wanted), max(wanted)
    explained, position = [], [0]

    def on_output(rec):
        if rec.partition != first.partition or rec.topic != sink:
            return
        n = position[0]
        position[0] += 1
        if lo <= n <= hi:
            why = rec.why.describe() if rec.why is not None else "(no explanation)"
            explained.append(f"  #{n} {show(rec.key)}:{show(rec.value)}@{rec.ts} while processing input "
                             f"{rec.input_index}: {why}")
        if n >= hi:
            raise _Shown()

    with contextlib.suppress(_Shown):
        stream_reference_outputs(scenario, records, on_output, explain=True)
    return [f"{label}:"] + explained
