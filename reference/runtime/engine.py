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

The order is computed lazily: :func:`processing_order` over a list (a scenario's inputs),
:func:`stream_processing_order` over per-file streams (a replay), both by :func:`merge_heads`
since 2.1 (a heap over the partition heads; a stream is read only as far as the heads need).
:func:`run_records` streams its outputs and drops to callbacks when asked, keeping neither.

Output records go to partition N of the output topic for task N (a key-preserving sink), in the
order the processors forward them (depth-first, as Kafka does).

Records a processor sends to an internal topic (``TaskContext.send``) reach the task of their
partition as ``config.delivery`` says (:mod:`reference.runtime.delivery`): ``synchronous``
(:meth:`Engine.drain_internal`, TopologyTestDriver's order) or ``interleaved`` (seeded or
scheduled choices among per-partition FIFO queues).
"""
from __future__ import annotations

from collections import deque
from functools import partial
from heapq import heapify, heappop, heappushpop
from itertools import chain
from typing import Callable, Iterable, Iterator, List, Optional

import attrs

from kssim.reference.model.codes import DropReason, FailureCode
from kssim.reference.model.errors import KafkaWouldFail, KssimError
from kssim.reference.runtime.explain import Why
from kssim.reference.model.keys import partition_for
from kssim.reference.model.pending import pending_of
from kssim.reference.runtime.operators import builder_for
from kssim.reference.model.records import NO_OLD_VALUE, Drop, InputRecord, OutputRecord, RunResult
from kssim.reference.model.scenario import OUTPUT_TOPIC, RunConfig, Scenario
from kssim.reference.model.topology import check_topology, input_topics


_new_tuple = tuple.__new__


class TaskContext:
    """What a processor sees while its task processes one input record.

    ``emit`` writes an output record (attributed to the current input), ``drop`` records that the
    current input was dropped or ignored, with a :class:`~reference.model.codes.DropReason`;
    ``fail`` stops the run with a :class:`~reference.model.codes.FailureCode`. ``explain`` tells
    processors whether to build :class:`~reference.runtime.explain.Why` objects at all; ``misses``
    whether inner joins report an input that found no table row (``DropReason.NO_MATCH``), which
    ``kssim run --explain`` / ``--drops`` ask for and replays and engine comparisons do not.
    """

    __slots__ = ("task_id", "input_index", "explain", "outputs", "drops", "collect_drops", "wall_clock_ms", "config",
                 "internal", "on_drop", "misses")

    def __init__(self, task_id: int, config: RunConfig, explain: bool, collect_drops: bool = True, internal=None,
                 on_drop=None, misses: bool = False):
        self.task_id = task_id
        self.misses = misses
        # streaming runs (replays) hand each drop to on_drop(input index, reason, task, node) instead of
        # keeping it (``node``: the graph node that dropped it, None for a single operator)
        self.on_drop = on_drop
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

    def drop(self, reason: DropReason, why: Optional[Why] = None, node: Optional[str] = None, window: tuple = ()):
        """The current input was dropped or ignored (wholly, or by one processor: a graph's ``node``)
        for ``reason``; ``window``: ``(key, start, end)`` of the window an ``unemitted_window`` drop
        lost (the input was aggregated, the window is what is lost)."""
        if self.on_drop is not None:
            self.on_drop(self.input_index, reason, self.task_id, node)
        elif self.collect_drops:
            self.drops.append(Drop(self.input_index, reason, why, node, window))

    def fail(self, code: FailureCode, why: Optional[Why] = None):
        """Real Kafka Streams dies here (an exception escapes a processor): raises
        :class:`~reference.model.errors.KafkaWouldFail` with ``code`` for the current input;
        ``why`` (when explanations were asked for) says why, with the numbers."""
        raise KafkaWouldFail(self.input_index, code, why)


class Engine:
    """One run of one topology: a processor per task, fed one input record at a time."""

    def __init__(self, topology, profile, config: RunConfig = RunConfig(), explain: bool = False,
                 collect_drops: bool = True, on_drop=None, misses: bool = False):
        self.topology = topology
        self.profile = profile
        self.config = config
        self.topics = input_topics(topology)
        build = builder_for(topology.operator)
        check_topology(topology, profile, config.store)  # specs built in code skip the loader
        instance_state: dict = {}
        self.tasks = []
        self.contexts = []
        self.internal: deque = deque()
        context_class = TaskContext
        if topology.operator == "graph":
            from kssim.reference.graph.engine import GraphContext as context_class
        for task_id in range(config.task_count):
            self.tasks.append(build(topology, profile, config, instance_state))
            self.contexts.append(context_class(task_id, config, explain, collect_drops, self.internal, on_drop, misses))
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

    def pending(self) -> tuple:
        """What every task still holds (:mod:`reference.model.pending`), task by task: asked once,
        at the end of a run, never on the hot path."""
        held = []
        for task_id, task in enumerate(self.tasks):
            held.extend(pending_of(task, task_id))
        return tuple(held)

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


def stream_processing_order(open_streams: Callable[[], List[Iterator[InputRecord]]], queue_counts: List[dict],
                            config: RunConfig, profile, topics) -> Iterator[InputRecord]:
    """:func:`processing_order` of inputs given as streams (one per record file, in input index
    order) without holding them: ``open_streams()`` opens the streams afresh (a GlobalKTable
    bootstrap reads them twice: the table, then the stream); ``queue_counts[i]``: how many records
    stream ``i`` holds per ``(partition, topic)`` (counted up front), which tells the merge when a
    partition has no more records without reading ahead. Memory: the records the merge reads ahead
    of a partition's head (none when each file holds one partition; in a file mixing partitions,
    those between two partitions' heads). Before 2.1 a partition's priority depends on all its
    records (its buffered minimum): those releases read every record first, as
    :func:`processing_order` does."""
    if config.global_table == "bootstrap":
        table = (r for stream in open_streams() for r in stream if r[0] == "right")
        counts = [{q: n for q, n in c.items() if q[1] != "right"} for c in queue_counts]

        def stream_only():
            return [(r for r in stream if r[0] != "right") for stream in open_streams()]

        return chain(table, _ordered_streams(stream_only, counts, config.order, profile, topics))
    return _ordered_streams(open_streams, queue_counts, config.order, profile, topics)


def _ordered_streams(open_streams, queue_counts, order, profile, topics) -> Iterator[InputRecord]:
    if order == "as_listed":
        return chain.from_iterable(open_streams())
    if not (profile.partition_choice_raw_head or profile.partition_choice_max_head):
        return _timestamp_sync_order(list(chain.from_iterable(open_streams())), profile, topics)
    return _merge_by_head(open_streams(), queue_counts, profile, topics)


def _timestamp_sync_order(inputs, profile, topics) -> Iterator[InputRecord]:
    if profile.partition_choice_raw_head or profile.partition_choice_max_head:
        counts: dict = {}
        for rec in inputs:
            q = (rec[4], rec[0])
            counts[q] = counts.get(q, 0) + 1
        return _merge_by_head([iter(inputs)], [counts], profile, topics)
    return _partition_time_order(inputs, topics)


def _merge_by_head(streams: List[Iterator[InputRecord]], queue_counts: List[dict], profile,
                   topics) -> Iterator[InputRecord]:
    """:func:`merge_heads` over lazily read streams: a queue's records are those of the streams
    in order; ``queue_counts`` (per stream, records per queue) tell when a stream holds no more
    of a queue, so a stream is read only as far as the heads the merge needs."""
    # per queue: the streams still holding some of its records, in order, with how many are left
    holders: dict = {}
    for s, counts in enumerate(queue_counts):
        for q, n in counts.items():
            if n:
                holders.setdefault(q, deque()).append([s, n])
    ahead = [dict() for _ in streams]  # records read from a stream before their queue needed them
    streams = list(streams)

    def take(q):
        """The next record of queue ``q`` (None: it has no more), reading its stream as far as needed."""
        held = holders[q]
        if not held:
            return None
        entry = held[0]
        s = entry[0]
        buffered = ahead[s].get(q)
        if buffered:
            rec = buffered.popleft()
        else:
            parked = ahead[s]
            for rec in streams[s]:
                rq = (rec[4], rec[0])
                if rq == q:
                    break
                if rq in parked:
                    parked[rq].append(rec)
                else:
                    parked[rq] = deque((rec,))
            else:
                raise KssimError(f"input file {s + 1} ended before its counted records of topic {q[1]!r} partition "
                                 f"{q[0]}: was it changed during the replay?")
        entry[1] -= 1
        if not entry[1]:
            held.popleft()
        return rec

    return merge_heads(list(holders), take, profile, topics)


def merge_heads(queues, take: Callable[[tuple], Optional[tuple]], profile, topics) -> Iterator[InputRecord]:
    """``PartitionGroup`` since 2.1: each step takes the head of the topic partition (queue,
    ``(partition, topic)``) with the smallest priority key: the raw head timestamp since 2.4; the
    monotone maximum of head timestamps in 2.1-2.3; ties to the lower partition, then the topic
    declared first. ``take(q)`` gives the next record of queue ``q`` (None: it has no more);
    ``queues``: every queue that may have records. Only the picked queue's key changes in a step,
    so a heap of one entry per queue gives the minimum (O(log queues) a record)."""
    topic_rank = {t: i for i, t in enumerate(topics)}
    raw = profile.partition_choice_raw_head
    heap = []
    heads = {}
    for q in queues:
        rec = take(q)
        if rec is None:
            continue
        heads[q] = rec
        heap.append((rec[3], q[0], topic_rank[q[1]], q))
    if not heap:
        return
    heapify(heap)
    entry = heappop(heap)
    while True:
        key, partition, rank, q = entry
        yield heads[q]
        rec = take(q)
        if rec is None:
            del heads[q]
            if not heap:
                return
            entry = heappop(heap)
            continue
        heads[q] = rec
        ts = rec[3]
        # 2.1-2.3: the key never falls below the key the queue was last picked with; one heap
        # operation a record (none when the queue stays first, as in a file sorted by time)
        entry = heappushpop(heap, (ts if raw or ts > key else key, partition, rank, q))


def _partition_time_order(inputs, topics) -> Iterator[InputRecord]:
    """Before 2.1: each step takes the queue with the smallest partition time, the monotone
    maximum of the minimum timestamp of its buffered records (``MinTimestampTracker``; every
    remaining record of the partition is buffered); ties as in :func:`_merge_by_head`."""
    queues = {}
    for rec in inputs:
        queues.setdefault((rec[4], rec[0]), []).append(rec)
    suffix_min = {}
    for q, recs in queues.items():
        mins, low = [0] * len(recs), None
        for i in range(len(recs) - 1, -1, -1):
            low = recs[i][3] if low is None or recs[i][3] < low else low
            mins[i] = low
        suffix_min[q] = mins
    heads = {q: 0 for q in queues}
    mono = {q: -1 for q in queues}
    topic_rank = {t: i for i, t in enumerate(topics)}

    def priority(q):
        return max(mono[q], suffix_min[q][heads[q]])

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


def run_scenario(scenario: Scenario, explain: bool = False, misses: bool = False, pending: bool = False) -> RunResult:
    """Run a scenario through the reference engine; outputs in output order, drops in input order.
    ``misses``: inner joins report inputs that found no table row (``no_match`` drops);
    ``pending``: the result lists what the tasks still hold at the end (``RunResult.pending``)."""
    return run_records(scenario.topology, scenario.profile, scenario.config, scenario.inputs, explain=explain,
                       misses=misses, pending=pending)


#: a streaming run hands its outputs over in batches of about this many (fewer calls, larger writes)
OUTPUT_BATCH = 1024


def run_records(topology, profile, config: RunConfig, inputs: Iterable[InputRecord], explain: bool = False,
                on_output: Optional[Callable[[OutputRecord], None]] = None, collect_drops: bool = True,
                on_outputs: Optional[Callable[[list], None]] = None,
                on_drop: Optional[Callable[[int, object, int, Optional[str]], None]] = None,
                ordered: bool = False, misses: bool = False, pending: bool = False) -> RunResult:
    """Run input records through a topology. Streaming runs keep neither outputs nor drops, so
    memory stays bounded by live state: ``on_outputs(batch)`` gets the outputs in order, in lists
    of about :data:`OUTPUT_BATCH` as they are produced (or ``on_output(record)`` one at a time);
    ``on_drop(input index, reason, task, node)`` gets each drop as it happens (``node``: the graph
    node that dropped it, as ``Drop.node``; None for a single operator). On a failure the outputs
    of the inputs before the failing one are handed over, not the failing input's. ``ordered``:
    ``inputs`` are already in processing order (:func:`stream_processing_order`). ``misses`` and
    ``pending``: see :func:`run_scenario`."""
    engine = Engine(topology, profile, config, explain=explain, collect_drops=collect_drops, on_drop=on_drop,
                    misses=misses)
    if on_output is not None and on_outputs is None:
        on_outputs = partial(flush_outputs, on_output=on_output)
    records = inputs if ordered else processing_order(inputs, config, profile, engine.topics)
    if config.delivery == "interleaved":
        from kssim.reference.runtime.delivery import run_interleaved

        one_by_one = on_output
        if one_by_one is None and on_outputs is not None:
            def one_by_one(rec):
                on_outputs([rec])
        result = run_interleaved(engine, records, config, one_by_one)
        return attrs.evolve(result, pending=engine.pending()) if pending else result
    tasks, contexts, internal = engine.tasks, engine.contexts, engine.internal
    sink: list = []  # every task emits into it; handed over in batches when streaming
    for ctx in contexts:
        ctx.outputs = sink
    batch = OUTPUT_BATCH if on_outputs is not None else -1
    processed = 0
    failure = None
    try:
        for topic, key, value, ts, partition, index in records:
            ctx = contexts[partition]
            ctx.input_index = index
            tasks[partition].process(topic, key, value, ts, ctx)
            if internal:
                engine.drain_internal(index)
            processed += 1
            if len(sink) > batch > 0:
                on_outputs(sink)
                sink = _new_sink(contexts)
    except KafkaWouldFail as exc:
        failure = exc
        engine.failure = exc
    if on_outputs is not None:
        if failure is not None:
            while sink and sink[-1].input_index == failure.input_index:
                sink.pop()  # the failing input's outputs never reach the output topic
        if sink:
            on_outputs(sink)
        sink = []
    if pending:
        return run_result(engine, sink, None, failure, processed, pending=engine.pending())
    return run_result(engine, sink, None, failure, processed)


def _new_sink(contexts) -> list:
    sink: list = []
    for ctx in contexts:
        ctx.outputs = sink
    return sink


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
