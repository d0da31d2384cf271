"""The runtime: tasks, processing order, processor contexts, and the run loop.

Kafka Streams runs one task per input partition; the reference does the same. Each task gets
its own processors and stores (built by the operator module); records are handed to the task of
their partition in the order ``config.order`` defines:

- ``as_listed``: list order, one record at a time, as ``TopologyTestDriver`` processes each piped
  record immediately. This is a true stream: :meth:`Engine.process` takes one record at a time.
- ``timestamp_sync``: every partition fully buffered in list (offset) order; each step a task takes
  the head of the partition with the smallest priority key (``PartitionGroup``): the raw head
  timestamp since 2.4, the monotone maximum of head timestamps in 2.1-2.3, the monotone partition
  time of the buffered minimum (``MinTimestampTracker``) before 2.1. Ties go to the input topic
  declared first (``left`` before ``right``), then the lower partition (scenario contract).
- ``config.global_table: bootstrap`` (a GlobalKTable join): every ``right`` record first, in list
  order, as a starting application restores its global store, then the stream in the order above.

Output records go to partition N of the output topic for task N (a key-preserving sink), in the
order the processors forward them (depth-first, as Kafka does).

Records a processor sends to an internal topic (``TaskContext.send``) reach the task of their
partition as ``config.delivery`` says (:mod:`reference.runtime.delivery`): ``synchronous``
(:meth:`Engine.drain_internal`, TopologyTestDriver's order) or ``interleaved`` (seeded or
scheduled choices among per-partition FIFO queues).
"""
from __future__ import annotations

from collections import deque
from itertools import chain
from typing import Callable, Iterable, Iterator, List, Optional

import attrs

from reference.model.codes import DropReason, FailureCode
from reference.model.errors import KafkaWouldFail
from reference.runtime.explain import Why
from reference.model.keys import partition_for
from reference.runtime.operators import builder_for
from reference.model.records import NO_OLD_VALUE, Drop, InputRecord, OutputRecord, RunResult
from reference.model.scenario import OUTPUT_TOPIC, RunConfig, Scenario
from reference.model.topology import OPERATOR_INPUT_TOPICS, check_topology


_new_tuple = tuple.__new__


class TaskContext:
    """What a processor sees while its task processes one input record.

    ``emit`` writes an output record (attributed to the current input), ``drop`` records that the
    current input was dropped or ignored, with a :class:`~reference.model.codes.DropReason`;
    ``fail`` stops the run with a :class:`~reference.model.codes.FailureCode`. ``explain`` tells
    processors whether to build :class:`~reference.runtime.explain.Why` objects at all.
    """

    __slots__ = ("task_id", "input_index", "explain", "outputs", "drops", "collect_drops", "wall_clock_ms", "config",
                 "internal")

    def __init__(self, task_id: int, config: RunConfig, explain: bool, collect_drops: bool = True, internal=None):
        self.task_id = task_id
        self.internal = internal  # the engine's queue of records sent to internal (repartition) topics
        self.input_index = -1
        self.explain = explain
        self.outputs: List[OutputRecord] = []
        self.drops: List[Drop] = []
        self.collect_drops = collect_drops
        self.wall_clock_ms = 0  # TopologyTestDriver's mock clock: frozen unless advanced
        self.config = config

    def emit(self, key, value, ts, why: Optional[Why] = None, old_value=NO_OLD_VALUE, topic: str = OUTPUT_TOPIC):
        # tuple.__new__ skips the NamedTuple's generated __new__: this is the hottest allocation
        self.outputs.append(_new_tuple(OutputRecord, (topic, self.task_id, key, value, ts, self.input_index, old_value, why)))

    def send(self, topic: str, key, value, ts: int, partition: Optional[int] = None):
        """Write to an internal (repartition) topic: the engine hands the record to the task of
        ``partition`` (default: Kafka's default partitioner on the key, this task for a null key)
        after the current processor returns, still attributed to the current input, as
        ``TopologyTestDriver`` processes what a record wrote to internal topics before returning."""
        if partition is None:
            partition = self.task_id if key is None else partition_for(key, self.config.task_count)
        self.internal.append((topic, key, value, ts, partition))

    def drop(self, reason: DropReason, why: Optional[Why] = None):
        """The current input was dropped or ignored (wholly, or by one processor) for ``reason``."""
        if self.collect_drops:
            self.drops.append(Drop(self.input_index, reason, why))

    def fail(self, code: FailureCode, why: Optional[Why] = None):
        """Real Kafka Streams dies here (an exception escapes a processor): raises
        :class:`~reference.model.errors.KafkaWouldFail` with ``code`` for the current input;
        ``why`` (when explanations were asked for) says why, with the numbers."""
        raise KafkaWouldFail(self.input_index, code, why)


class Engine:
    """One run of one topology: a processor per task, fed one input record at a time."""

    def __init__(self, topology, profile, config: RunConfig = RunConfig(), explain: bool = False,
                 collect_drops: bool = True):
        self.topology = topology
        self.profile = profile
        self.config = config
        self.topics = OPERATOR_INPUT_TOPICS[topology.operator]
        build = builder_for(topology.operator)
        check_topology(topology, profile, config.store)  # specs built in code skip the loader
        instance_state: dict = {}
        self.tasks = []
        self.contexts = []
        self.internal: deque = deque()
        for task_id in range(config.task_count):
            self.tasks.append(build(topology, profile, config, instance_state))
            self.contexts.append(TaskContext(task_id, config, explain, collect_drops, self.internal))
        self.failure: Optional[KafkaWouldFail] = None

    def process(self, record: InputRecord) -> List[OutputRecord]:
        """Process one record in its task; return the output records it caused, in order."""
        if self.failure is not None:
            raise self.failure
        out: List[OutputRecord] = []
        for ctx in self.contexts:
            ctx.outputs = out
        try:
            self.deliver(record.topic, record.key, record.value, record.ts, record.partition, record.index)
        except KafkaWouldFail as exc:
            self.failure = exc
            raise
        return out

    def deliver(self, topic, key, value, ts, partition, index):
        """Process one input record in its task, then what it sent to internal topics."""
        ctx = self.contexts[partition]
        ctx.input_index = index
        self.tasks[partition].process(topic, key, value, ts, ctx)
        if self.internal:
            self.drain_internal(index)

    def drain_internal(self, index):
        """Process every record sent to internal topics, in the order sent (breadth-first), in the
        task of its partition, attributed to input ``index``: ``synchronous`` delivery, whose
        outputs are TopologyTestDriver's (see :mod:`reference.runtime.delivery`)."""
        internal = self.internal
        while internal:
            topic, key, value, ts, partition = internal.popleft()
            ctx = self.contexts[partition]
            ctx.input_index = index
            self.tasks[partition].process(topic, key, value, ts, ctx)

    def drain_drops(self) -> List[Drop]:
        drops = []
        for ctx in self.contexts:
            drops.extend(ctx.drops)
            ctx.drops = []
        return drops


def processing_order(inputs, config: RunConfig, profile, topics) -> Iterator[InputRecord]:
    """The order in which the tasks process ``inputs`` (see the module docstring)."""
    if config.global_table == "bootstrap":
        # a running application restores its GlobalKTable from the whole topic before any stream
        # thread starts: every ``right`` record first (list order), then the stream in its order
        inputs = list(inputs)
        table = [r for r in inputs if r.topic == "right"]
        stream = [r for r in inputs if r.topic != "right"]
        rest = iter(stream) if config.order == "as_listed" else _timestamp_sync_order(stream, profile, topics)
        return chain(table, rest)
    if config.order == "as_listed":
        return iter(inputs)
    return _timestamp_sync_order(list(inputs), profile, topics)


def _timestamp_sync_order(inputs, profile, topics) -> Iterator[InputRecord]:
    queues = {}
    for rec in inputs:
        queues.setdefault((rec.partition, rec.topic), []).append(rec)
    # priority key state per queue: position of the head, and the monotone key (pre-2.4 rules)
    heads = {q: 0 for q in queues}
    mono = {q: -1 for q in queues}
    topic_rank = {t: i for i, t in enumerate(topics)}

    def priority(q):
        recs, head = queues[q], heads[q]
        if profile.partition_choice_raw_head:  # 2.4+: the raw head-record timestamp
            return recs[head].ts
        if profile.partition_choice_max_head:  # 2.1-2.3: monotone max of head timestamps
            return max(mono[q], recs[head].ts)
        # before 2.1: partition time, the monotone max of the buffered minimum (MinTimestampTracker)
        return max(mono[q], min(r.ts for r in recs[head:]))

    while True:
        live = [q for q in queues if heads[q] < len(queues[q])]
        if not live:
            return
        # tasks are independent; interleave them by the same rule, lower task first on ties
        best = min(live, key=lambda q: (priority(q), q[0], topic_rank[q[1]]))
        mono[best] = priority(best)
        rec = queues[best][heads[best]]
        heads[best] += 1
        yield rec


def run_scenario(scenario: Scenario, explain: bool = False) -> RunResult:
    """Run a scenario through the reference engine; outputs in output order, drops in input order."""
    return run_records(scenario.topology, scenario.profile, scenario.config, scenario.inputs, explain=explain)


def run_records(topology, profile, config: RunConfig, inputs: Iterable[InputRecord], explain: bool = False,
                on_output: Optional[Callable[[OutputRecord], None]] = None, collect_drops: bool = True) -> RunResult:
    """Run input records through a topology. With ``on_output`` the outputs are streamed to it
    (and not kept), so memory stays bounded by live state."""
    engine = Engine(topology, profile, config, explain=explain, collect_drops=collect_drops)
    if config.delivery == "interleaved":
        from reference.runtime.delivery import run_interleaved

        return run_interleaved(engine, processing_order(inputs, config, profile, engine.topics), config, on_output)
    tasks, contexts, internal = engine.tasks, engine.contexts, engine.internal
    sink: list = []  # every task emits into it; drained after each input when streaming
    for ctx in contexts:
        ctx.outputs = sink
    processed = 0
    failure = None
    try:
        for topic, key, value, ts, partition, index in processing_order(inputs, config, profile, engine.topics):
            ctx = contexts[partition]
            ctx.input_index = index
            tasks[partition].process(topic, key, value, ts, ctx)
            if internal:
                engine.drain_internal(index)
            processed += 1
            if on_output is not None and sink:
                flush_outputs(sink, on_output)
    except KafkaWouldFail as exc:
        failure = exc
        engine.failure = exc
    return run_result(engine, sink, on_output, failure, processed)


def flush_outputs(sink: list, on_output) -> None:
    """Hand the outputs collected so far to ``on_output`` (streaming runs) and forget them."""
    for o in sink:
        on_output(o)
    sink.clear()


def run_result(engine, sink, on_output, failure, processed, **extra) -> RunResult:
    """The result of a run: outputs kept unless they were streamed, drops in input order."""
    outputs = sink if on_output is None else []
    drops = sorted(engine.drain_drops(), key=lambda d: d.input_index)
    return RunResult(outputs=tuple(outputs), drops=tuple(drops), failure=failure, processed=processed, **extra)
