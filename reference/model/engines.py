"""The engines kssim runs scenarios on, by name: one table, one call for every command and harness.

:func:`run_scenarios` gives one result per scenario, in order: a
:class:`~reference.model.records.RunResult`, or the exception that stopped that one scenario
(an :class:`~reference.model.errors.UnsupportedOperator`: the engine does not implement its
operator). :func:`replay` replays record files into one output file on either engine. The
engines are imported here lazily, by module path, when a run asks for them: the shared model
never imports an engine at import time (and needs no Spark to be imported).
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar

import importlib
from typing import List, Sequence

from kssim.reference.model.errors import KssimError, UnsupportedOperator

#: engine name -> the module that runs it
ENGINE_MODULES = {
    "reference": "kssim.reference.runtime.engine",
    "spark": "kssim.spark_backend.runtime.runner",
}
ENGINES = tuple(ENGINE_MODULES)
#: the Spark backend's session (``get_spark(master)``)
SPARK_SESSION_MODULE = "kssim.spark_backend.session"
#: engine name -> (module, function) of its replay into one output file
REPLAY_FUNCTIONS = {
    "reference": ("kssim.reference.runtime.replay", "replay"),
    "spark": ("kssim.spark_backend.runtime.replay", "replay_to_file"),
}


#: when set to a list, every record a graph task takes (an input, then the internal-topic records it
#: caused) is appended as ``(topic, key, value, ts, input index, stream time after it)``: what
#: ``kssim timeline`` draws on internal topics (:func:`record_graph_traffic`)
GRAPH_TRAFFIC: ContextVar = ContextVar("graph_traffic", default=None)


@contextmanager
def record_graph_traffic():
    """Within it, the reference engine's graph tasks list every record they take (the list it
    yields); outside it they pay one context-variable read per record."""
    taken: list = []
    token = GRAPH_TRAFFIC.set(taken)
    try:
        yield taken
    finally:
        GRAPH_TRAFFIC.reset(token)

#: (module, function) of the reference engine's check of an interleaved run's schedule
SCHEDULE_CHECK = ("kssim.reference.runtime.delivery", "check_schedule")


def check_schedule(topology, profile, config, inputs) -> None:
    """Follow ``config.schedule`` on the reference engine as far as it goes: a
    :class:`~reference.model.errors.ScheduleError` for the first choice that names no non-empty
    queue (which queues hold records depends on the run, so only a run shows it). The loader and
    ``kssim run --schedule`` check every schedule so, whichever engine is to run it."""
    module, function = SCHEDULE_CHECK
    getattr(importlib.import_module(module), function)(topology, profile, config, inputs)


def check_engine(engine: str) -> str:
    """``engine`` if kssim knows it; a KssimError naming the known engines otherwise."""
    if engine not in ENGINE_MODULES:
        raise KssimError(f"unknown engine {engine!r} (engines: {', '.join(ENGINES)})")
    return engine


#: engine name -> why it cannot replay a topology graph (``kssim replay``/``kssim diff`` say it, exit 2);
#: every engine runs graphs (the Spark backend refuses the nodes it lacks, naming them, when it runs)
GRAPHLESS_ENGINES: dict = {}


def check_engine_runs(engine: str, topology) -> str:
    """``engine`` if it can replay ``topology``; a KssimError saying why not otherwise (the Spark
    backend and topology graphs), before any work."""
    check_engine(engine)
    if topology.operator == "graph" and engine in GRAPHLESS_ENGINES:
        raise KssimError(GRAPHLESS_ENGINES[engine])
    return engine


#: why ``kssim run --engine spark --pending`` is refused (exit 2): the Spark backend computes its
#: outputs as whole-input transformations and keeps no per-task state to list at the end
REFERENCE_ONLY_PENDING = ("--pending lists the state a run holds at its end, which only the reference engine "
                          "keeps: run it with --engine reference (the default)")


def run_scenarios(engine: str, scenarios: Sequence, explain: bool = False, master=None,
                  catch=UnsupportedOperator, misses: bool = False, pending: bool = False) -> List:
    """Run ``scenarios`` on ``engine``; one RunResult, or the exception that stopped it, per
    scenario. ``catch``: the exceptions a reference run turns into its result (the Spark runner
    puts an UnsupportedOperator in an unimplemented operator's slot itself and runs the batch as
    one job). ``explain`` asks the reference engine for the why of each output and drop (the
    Spark backend does not explain); ``master``: the Spark master URL (default: local Spark
    in-process, or the Spark environment). ``misses`` (inner joins report inputs without a table
    row, ``no_match``) and ``pending`` (``RunResult.pending``: what the tasks hold at the end) are
    the reference engine's; the Spark backend refuses them (:data:`REFERENCE_ONLY_PENDING`)."""
    module = importlib.import_module(ENGINE_MODULES[check_engine(engine)])
    scenarios = list(scenarios)
    if engine == "reference":
        out = []
        # only what was asked for: a plain run calls run_scenario(scenario, explain=...) as before
        asked = {name: True for name, wanted in (("misses", misses), ("pending", pending)) if wanted}
        for scenario in scenarios:
            try:
                out.append(module.run_scenario(scenario, explain=explain, **asked))
            except catch as exc:
                out.append(exc)
        return out
    if pending:
        raise KssimError(REFERENCE_ONLY_PENDING)
    # one job for the batch; the runner puts an UnsupportedOperator in the slot of a scenario
    # whose operator it does not implement
    session = importlib.import_module(SPARK_SESSION_MODULE)
    return module.run_scenarios(scenarios, spark=session.get_spark(master))


def replay(engine: str, scenario, inputs: Sequence, output, master=None, options=None, drops=None, progress=None):
    """Replay the captures ``inputs`` through ``scenario``'s topology on ``engine`` into the
    file ``output`` (``.jsonl`` or ``.parquet``); returns a
    :class:`~reference.model.record_files.ReplaySummary`. The output path is checked before any
    work (``record_files.check_output_path``) and written atomically, on either engine;
    ``master``: the Spark master URL (the Spark backend); ``options``: how to read the captures
    (``reference.model.captures.CaptureOptions``; None: the defaults); ``drops``: a ``.jsonl``
    file that gets every dropped input (engines that write one); ``progress``: ``progress(total)
    -> bar`` (``tools.progress``), used by engines that report progress. A topology graph replays
    on the reference engine only (:func:`check_engine_runs`)."""
    import inspect

    module_name, function = REPLAY_FUNCTIONS[check_engine_runs(engine, scenario.topology)]
    run = getattr(importlib.import_module(module_name), function)
    extra = {}
    if options is not None:
        if "options" in inspect.signature(run).parameters:
            extra["options"] = options
        elif options != _default_capture_options():
            raise KssimError(f"engine {engine} does not read the capture options (--input-format, --topic, ...) "
                             f"yet: replay on the reference engine")
    parameters = inspect.signature(run).parameters
    if drops is not None:
        if "drops" not in parameters:
            raise KssimError(f"engine {engine} does not write a drops file (--drops) yet: replay on the reference engine")
        extra["drops"] = drops
    if progress is not None and "progress" in parameters:
        extra["progress"] = progress
    if engine == "spark":
        return run(scenario, list(inputs), output, master=master, **extra)
    return run(scenario, list(inputs), output, **extra)


def _default_capture_options():
    from kssim.reference.model.captures import CaptureOptions

    return CaptureOptions()


def stream_reference_outputs(scenario, records, on_output, explain: bool = False):
    """Run the input records ``records`` (an iterable, read as the run goes) through
    ``scenario``'s topology on the reference engine, handing each output record to
    ``on_output`` as it is produced (none is kept: memory bounded by live state; ``kssim diff``).
    Returns the RunResult (its ``failure``: where Kafka Streams would die); drops are not kept.
    ``explain``: outputs carry their ``why``."""
    module = importlib.import_module(ENGINE_MODULES["reference"])
    return module.run_records(scenario.topology, scenario.profile, scenario.config, records, explain=explain,
                              on_output=on_output, collect_drops=False)


def processing_order(scenario) -> tuple:
    """The input indexes of ``scenario`` in the order the reference engine's tasks process them
    (``config.order``, timestamp synchronisation by the release's rules, a GlobalKTable
    bootstrap): what ``kssim timeline`` draws stream time along. A run that fails stops at its
    failing input; the order given here does not."""
    module = importlib.import_module(ENGINE_MODULES["reference"])
    from kssim.reference.model.topology import input_topics

    topics = input_topics(scenario.topology)
    return tuple(rec.index for rec in module.processing_order(scenario.inputs, scenario.config, scenario.profile, topics))


#: the engine that explores interleavings (interleaved delivery is the reference's alone)
EXPLORE_MODULE = "kssim.reference.runtime.explore"


def explore(scenario, schedules: int, seed: int):
    """Run ``schedules`` seeded interleavings of ``scenario`` on the reference engine and group them
    by output sequence (:mod:`reference.runtime.explore`); returns its ``Exploration``."""
    return importlib.import_module(EXPLORE_MODULE).explore(scenario, schedules=schedules, seed=seed)


def outcome_json(outcome) -> dict:
    """One explored outcome as ``kssim explore --format jsonl`` prints it."""
    return importlib.import_module(EXPLORE_MODULE).outcome_json(outcome)
