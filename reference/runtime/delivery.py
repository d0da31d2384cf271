"""How records written to internal topics reach their tasks: the delivery model of every internal
topic (an FK join's subscription and response topics, any repartition topic).

``synchronous`` (the default; :meth:`reference.runtime.engine.Engine.drain_internal`): after each
input record, everything it caused on internal topics is processed, in production order, before
the next input. That is ``TopologyTestDriver``'s order: the driver has one task reading one
partition of every topic, re-enqueues each produced internal record on its topic's queue and
processes until all queues are empty, picking the queue with the lowest head timestamp
(``PartitionGroup``). Both orders process every topic's records FIFO and finish an input's whole
round trip before the next input, and in the join families modelled here the records of one
topic never change the state that another queued topic's records read (an FK join's outputs come
only from the response topic, whose records are produced in the order the subscriptions and
right-table updates were processed): so the outputs, their order and their timestamps are the
same. (2.4.0's driver piped each internal record depth-first as soon as it was captured, KAFKA-9503,
fixed in 2.4.1: an FK join's outputs come out in the same order there too, since a subscription
causes at most one response and a response at most one result.) Every conformance file uses
this order.

``interleaved`` (:func:`run_interleaved`): what a deployment may show. One FIFO queue per
(internal topic, partition) plus the input queue (the inputs in ``config.order``); at each step
one non-empty queue is chosen and its head processed in the task of its partition. Per-partition
FIFO holds, and a record's effects (store writes, records produced) are atomic, as in Kafka; any
other interleaving of the queues is reachable in a real run (fetch timing), so the choice is free:

- the options of a step are the non-empty queues in a fixed order: the input queue first (when
  inputs remain), then the internal queues sorted by (topic, partition); a choice is an index
  into that list (the labels are on :class:`Step`);
- ``config.schedule`` (a list of choices) is followed step by step; a choice that names no
  non-empty queue is a :class:`~reference.model.errors.ScheduleError` (the loader finds it first,
  through :func:`check_schedule`, and names the file and ``config.schedule[STEP]``, whichever
  engine runs the scenario);
- after the schedule (or without one) the choices come from ``random.Random(config.seed)``; with
  no seed, the run goes on as ``synchronous`` would (internal records in production order before
  the next input), so a schedule prefix explores one branch and completes deterministically;
- the choices taken, and how many queues were non-empty at each step, are returned on the run's
  :class:`~reference.model.records.RunResult` (``schedule``, ``schedule_options``): passing
  ``schedule`` back as ``config.schedule`` replays the run exactly. Same seed, same run.

Outputs keep the index of the input that started their chain (``input``), whenever they come out.
"""
from __future__ import annotations

import random
from collections import deque
from typing import Callable, Iterable, Optional

import attrs

from kssim.reference.model.errors import KafkaWouldFail, KssimError, ScheduleError
from kssim.reference.model.records import RunResult
from kssim.reference.runtime.engine import flush_outputs, run_result

#: the label of the input queue in a step's options
INPUT_QUEUE = "input"


class _ScheduleFollowed(Exception):
    """Raised by :func:`check_schedule`'s chooser: every choice of the schedule was valid."""


def check_schedule(topology, profile, config, inputs) -> None:
    """Follow ``config.schedule`` on the reference engine as far as it goes, and stop there:
    raises :class:`ScheduleError` for the first choice that names no non-empty queue. Whether a
    queue is non-empty depends on what the run wrote to internal topics, so this is a run of the
    schedule's prefix (a failure Kafka would have ends it early: the choices after it are never
    reached). Cost: the schedule's steps, not the whole run."""
    from kssim.reference.runtime.engine import Engine, processing_order

    engine = Engine(topology, profile, config, collect_drops=False)

    def followed(labels, heads):
        raise _ScheduleFollowed

    try:
        run_interleaved(engine, processing_order(inputs, config, profile, engine.topics), config, chooser=followed)
    except _ScheduleFollowed:
        pass


@attrs.frozen
class Step:
    """One step of an interleaved run: the labels of the non-empty queues (``"input"`` or
    ``"<topic>/<partition>"``), in option order, and the index chosen."""

    options: tuple
    choice: int

    @property
    def chosen(self) -> str:
        return self.options[self.choice]


def queue_label(topic: str, partition: int) -> str:
    """The label of an internal topic partition's queue."""
    return f"{topic}/{partition}"


def run_interleaved(engine, records: Iterable, config, on_output: Optional[Callable] = None,
                    steps: Optional[list] = None, chooser: Optional[Callable] = None) -> RunResult:
    """Run ``records`` (already in processing order) through ``engine`` with interleaved delivery
    (see the module docstring). ``steps``, a list, receives one :class:`Step` per step.
    ``chooser(labels, head_timestamps)``, when given, makes the choices after ``config.schedule``
    instead of the seed: it gets the step's option labels and the timestamps of their head
    records and returns an index (how a harness explores, or imitates a scheduler)."""
    tasks, contexts, produced = engine.tasks, engine.contexts, engine.internal
    sink: list = []
    for ctx in contexts:
        ctx.outputs = sink
    inputs = iter(records)
    head = next(inputs, None)
    queues: dict = {}  # (topic, partition) -> deque of (key, value, ts, origin input index, sequence)
    sequence = 0
    schedule = tuple(config.schedule or ())
    rng = random.Random(config.seed) if config.seed is not None else None
    choices, widths = [], []
    processed = 0
    failure = None
    try:
        while True:
            options = [name for name in sorted(queues) if queues[name]]
            if head is not None:
                options.insert(0, None)  # the input queue comes first
            if not options:
                break
            step = len(choices)
            if step < len(schedule):
                choice = schedule[step]
                if not 0 <= choice < len(options):
                    raise ScheduleError(step, f"choice {choice} names no queue: {len(options)} queue(s) are "
                                              f"non-empty at step {step} ({', '.join(_label(o) for o in options)})")
            elif chooser is not None:
                choice = chooser(tuple(_label(o) for o in options),
                                 tuple(head[3] if o is None else queues[o][0][2] for o in options))
                if not 0 <= choice < len(options):
                    raise KssimError(f"the chooser picked {choice!r} at step {step}: {len(options)} queue(s) are non-empty")
            elif rng is not None:
                choice = rng.randrange(len(options))
            else:  # synchronous from here on: the oldest internal record, else the next input
                internal = [i for i, o in enumerate(options) if o is not None]
                choice = min(internal, key=lambda i: queues[options[i]][0][4]) if internal else 0
            choices.append(choice)
            widths.append(len(options))
            if steps is not None:
                steps.append(Step(tuple(_label(o) for o in options), choice))
            chosen = options[choice]
            if chosen is None:
                topic, key, value, ts, partition, origin = head
                head = next(inputs, None)
                processed += 1
            else:
                key, value, ts, origin, _ = queues[chosen].popleft()
                topic, partition = chosen
            ctx = contexts[partition]
            ctx.input_index = origin
            tasks[partition].process(topic, key, value, ts, ctx)
            while produced:
                p_topic, p_key, p_value, p_ts, p_partition = produced.popleft()
                queue = queues.get((p_topic, p_partition))
                if queue is None:
                    queue = queues[(p_topic, p_partition)] = deque()
                queue.append((p_key, p_value, p_ts, origin, sequence))
                sequence += 1
            if on_output is not None and sink:
                flush_outputs(sink, on_output)
    except KafkaWouldFail as exc:
        failure = exc
        engine.failure = exc
    return run_result(engine, sink, on_output, failure, processed, schedule=tuple(choices),
                      schedule_options=tuple(widths))


def _label(option) -> str:
    return INPUT_QUEUE if option is None else queue_label(*option)
