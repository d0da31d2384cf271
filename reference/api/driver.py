"""``TopologyTestDriver``: Kafka's test driver, running a topology through the reference engine.

As Kafka's driver: one task, partition 0 of every topic, each piped record processed at once
(scenario order ``as_listed``), the wall clock frozen, output records queued per topic until read.
The outer-join emit interval is 0 by default, as in Kafka's driver since 3.8 and in every
scenario file (before 3.8 Kafka's driver kept 1000 ms unless a test set the interval to 0, as most
of Kafka's own tests did; pass ``emit_interval_ms=1000`` to model that). Record caches are off, as
in every scenario file (``statestore.cache.max.bytes=0``); a topology graph may turn them on
(``caching=True``, the scenario's ``config.caching``).

A topology graph reads its source topics and writes its sink topics (one queue per sink topic,
in the order its records were written), all internal topics processed as Kafka's driver does
before ``pipe_input`` returns. The key of a windowed result (a windowed aggregation, a
windowed-table join; in a graph, a sink topic whose streams have windowed keys) is read as a
:class:`Windowed` (Kafka's ``Windowed<K>``: ``key``, ``start``, ``end``), hashable, so
``read_key_values_to_map`` works on it; ``Windowed.as_dict()`` is the scenario format's
``{"key", "start", "end"}``.

Beyond Kafka's driver, it says why: every output record carries the index of the input that
emitted it, ``drops()`` lists the inputs dropped or ignored with a ``DropReason``, and with
``explain=True`` records and drops carry a :class:`reference.runtime.explain.Why`.
"""
from __future__ import annotations

import collections
from typing import List, NamedTuple, Optional

import attrs

from kssim.reference.runtime.engine import Engine
from kssim.reference.model.documents import check_json_value
from kssim.reference.model.errors import KafkaWouldFail, ScenarioError
from kssim.reference.model.profiles import DEFAULT_RELEASE, profile_for
from kssim.reference.model.records import NO_OLD_VALUE, Drop, InputRecord, windowed_key
from kssim.reference.model.scenario import OUTPUT_TOPIC, STORES, RunConfig
from kssim.reference.model.topology import (
    JAVA_LONG_MAX, WINDOWED_RESULT_OPERATORS, aggregated_value_problem, check_topology, output_topics,
)
from kssim.reference.api.builder import Topology
from kssim.reference.api.errors import IllegalArgumentError, IllegalStateError, NoSuchElementError
from kssim.reference.api.options import to_millis


class KeyValue(NamedTuple):
    """Kafka's ``KeyValue``."""

    key: object
    value: object


@attrs.frozen
class Windowed:
    """Kafka's ``Windowed<K>``: a windowed result's key ``key`` in the window ``[start, end)``
    (time windows: ``end`` exclusive) or ``[start, end]`` (session and sliding windows: inclusive),
    as ``Windowed#window()`` reports them."""

    key: object
    start: int
    end: int

    @classmethod
    def from_dict(cls, key: dict) -> "Windowed":
        """From the scenario format's ``{"key": K, "start": S, "end": E}``."""
        return cls(key["key"], key["start"], key["end"])

    def as_dict(self) -> dict:
        """The scenario format's ``{"key": K, "start": S, "end": E}``."""
        return windowed_key(self.key, self.start, self.end)


@attrs.frozen
class TestRecord:
    """Kafka's ``TestRecord``: key, value and timestamp ``ts`` (None: the input topic's current time).

    Records read from an output topic also carry ``input_index`` (the piped input whose processing
    emitted it, counting from 0 across all input topics), ``old_value`` (table results that send
    old values), ``why`` (with ``explain=True``) and ``topic``. Equality compares key, value and ts
    only. The key of a windowed result is a :class:`Windowed`.
    """

    __test__ = False  # not a pytest test class

    key: object
    value: object
    ts: Optional[int] = None
    input_index: int = attrs.field(default=-1, eq=False)
    old_value: object = attrs.field(default=NO_OLD_VALUE, eq=False)
    why: object = attrs.field(default=None, eq=False, repr=False)
    #: the output topic it was read from (None: a record to pipe)
    topic: Optional[str] = attrs.field(default=None, eq=False, repr=False)


class TopologyTestDriver:
    """Kafka's ``TopologyTestDriver`` for a kssim topology, under the rules of Kafka ``release``
    with ``store`` ("rocksdb", Kafka's default, or "in_memory") for every store.

    Creating it checks the topology under ``release`` (an API the release does not have, a grace
    period on an unversioned table...: :class:`reference.model.errors.TopologyError`). A record on which
    real Kafka Streams would die raises :class:`reference.model.errors.KafkaWouldFail` from
    ``pipe_input``; what the topology wrote before it died can still be read, and the driver is
    unusable afterwards, as Kafka's task is.
    """

    __test__ = False  # not a pytest test class

    def __init__(self, topology: Topology, release: str = DEFAULT_RELEASE, store: str = "rocksdb", *,
                 explain: bool = False, emit_interval_ms: int = 0, caching: bool = False):
        if not isinstance(topology, Topology):
            raise TypeError(f"TopologyTestDriver runs a Topology (StreamsBuilder.build()), got {topology!r}")
        if store not in STORES:
            raise IllegalArgumentError(f"store must be one of {', '.join(STORES)}, got {store!r}")
        emit_interval_ms = to_millis(emit_interval_ms, "emit_interval_ms")
        if emit_interval_ms < 0:
            raise IllegalArgumentError(f"emit_interval_ms must not be negative, got {emit_interval_ms}")
        if not isinstance(caching, bool):
            raise TypeError(f"caching is True or False, got {caching!r}")
        spec = topology.spec
        graph = spec.operator == "graph"
        if caching and not graph:
            raise IllegalArgumentError("record caches (caching=True) are modelled for topology graphs; a single "
                                       f"{spec.operator} runs with caches off (statestore.cache.max.bytes 0)")
        self.topology = topology
        self.profile = profile_for(release)
        check_topology(spec, self.profile, store)
        self.config = RunConfig(order="as_listed", store=store, emit_interval_ms=emit_interval_ms, caching=caching)
        self._engine = Engine(spec, self.profile, self.config, explain=explain)
        if graph:
            # a sink topic has windowed keys when its streams do (all its sinks' keys are of one sort)
            self._windowed_topics = {n.op.topic for n in spec.nodes
                                     if n.name == "to" and spec.nodes[n.upstream].windowed is not None}
        else:
            self._windowed_topics = {OUTPUT_TOPIC} if spec.operator in WINDOWED_RESULT_OPERATORS else set()
        self._queues = {topic: collections.deque() for topic in output_topics(spec)}
        self._drops: List[Drop] = []
        self._next_index = 0
        self._failure: Optional[KafkaWouldFail] = None
        self._closed = False

    @property
    def release(self) -> str:
        return self.profile.release

    @property
    def input_topics(self) -> tuple:
        """The topics the topology reads (a graph: its source topics)."""
        return self._engine.topics

    @property
    def output_topics(self) -> tuple:
        """The topics the topology writes (a graph: its sink topics; format 1: ``output``)."""
        return tuple(self._queues)

    def create_input_topic(self, topic: str, start_ts: int = 0, auto_advance_ms: int = 0) -> "TestInputTopic":
        """``createInputTopic(topic, ..., startTimestamp, autoAdvance)``. Records piped without a
        timestamp get the topic's current time, which starts at ``start_ts`` (Kafka's short form
        starts at the wall clock's now; ours is frozen at 0) and advances by ``auto_advance_ms``."""
        if topic not in self._engine.topics:
            raise IllegalArgumentError(f"Unknown topic: {topic} (the topology reads {', '.join(self._engine.topics)})")
        return TestInputTopic(self, topic, to_millis(start_ts, "startTimestamp"), to_millis(auto_advance_ms, "autoAdvance"))

    def create_output_topic(self, topic: str) -> "TestOutputTopic":
        """``createOutputTopic(topic, ...)``; every output topic object of one topic reads one queue."""
        if topic not in self._queues:
            raise IllegalArgumentError(f"Unknown topic: {topic} (the topology writes {', '.join(self._queues)})")
        return TestOutputTopic(self, topic)

    def advance_wall_clock_time(self, advance_ms) -> None:
        """``advanceWallClockTime(advance)``: moves the mock wall clock (frozen at 0 otherwise).
        Only the outer-join emit throttle reads it, so it matters only with ``emit_interval_ms`` > 0
        (emit-on-window-close is modelled with its throttle interval at 0, as in every scenario)."""
        advance = to_millis(advance_ms, "advance")
        if advance < 0:
            raise IllegalArgumentError("advance must not be negative")
        for ctx in self._engine.contexts:
            ctx.wall_clock_ms += advance

    def drops(self) -> List[Drop]:
        """The input records dropped or ignored so far (wholly or in part), in input order: each a
        :class:`reference.model.records.Drop` with ``input_index``, a ``reason`` (a
        :class:`reference.model.codes.DropReason`; ``reason.code`` is its stable name) and ``why``."""
        self._drops.extend(self._engine.drain_drops())
        return list(self._drops)

    def pending(self) -> tuple:
        """What the topology holds now, waiting for stream time (``kssim run --pending``): each a
        :class:`reference.model.pending.Pending` with the held record or window and the stream time
        that would release it."""
        return self._engine.pending()

    def pipe(self, topic: str, key, value, ts: int) -> int:
        """Process one record now; return its input index. The input topics call this."""
        if self._closed:
            raise IllegalStateError("the driver is closed")
        if self._failure is not None:
            raise self._failure
        if topic not in self._engine.topics:
            raise IllegalArgumentError(f"Unknown topic: {topic} (the topology reads {', '.join(self._engine.topics)})")
        if isinstance(ts, bool) or not isinstance(ts, int):
            raise TypeError(f"a record timestamp is int milliseconds, got {ts!r}")
        if ts > JAVA_LONG_MAX:
            raise IllegalArgumentError(f"Invalid timestamp: {ts}. A timestamp is a Java long: at most {JAVA_LONG_MAX}.")
        for field, item in (("key", key), ("value", value)):
            try:
                check_json_value(item, field)
            except ScenarioError as exc:  # NaN, infinities, sets, bytes...: no JSON serde writes them
                raise IllegalArgumentError(f"{topic}: record {exc.where}: {exc.message}") from None
        if ts < 0:
            # TestRecord(key, value, headers, Long timestampMs), which pipeInput(key, value, long)
            # builds, rejects it before the driver sees the record: nothing is processed
            raise IllegalArgumentError(f"Invalid timestamp: {ts}. Timestamp should always be non-negative or null.")
        problem = aggregated_value_problem(self.topology.spec, topic, value)
        if problem is not None:
            # the value serde of a named aggregation (a Long for sum) fails before the driver sees it
            raise IllegalArgumentError(f"{topic}: {problem}")
        index = self._next_index
        self._next_index += 1
        try:
            outputs = self._engine.process(InputRecord(topic, key, value, ts, 0, index))
        except KafkaWouldFail as exc:
            self._failure = exc
            # what the topology forwarded to the sink before it died was sent (a scenario run keeps
            # it too); Kafka's driver would show it only at the next pipe, which fails
            self._enqueue(self._engine.contexts[0].outputs)
            raise
        if outputs:
            self._enqueue(outputs)
        return index

    def _enqueue(self, outputs) -> None:
        queues = self._queues
        for out in outputs:
            queues[out.topic].append(out)

    def read(self, topic: str) -> TestRecord:
        """The next record of an output topic (``readRecord``); the output topics call this."""
        queue = self._queues[topic]
        if not queue:
            raise NoSuchElementError(f"Empty topic: {topic}")
        out = queue.popleft()
        key = Windowed.from_dict(out.key) if topic in self._windowed_topics and out.key is not None else out.key
        return TestRecord(key, out.value, out.ts, out.input_index, out.old_value, out.why, topic)

    def queue_size(self, topic: str) -> int:
        return len(self._queues[topic])

    def close(self) -> None:
        """``TopologyTestDriver#close()``. Nothing is flushed: records held by an operator (an
        unjoined left record waiting for its window to close, a buffered stream record, a window
        not yet closed, a suppressed update) stay unemitted."""
        self._closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class TestInputTopic:
    """Kafka's ``TestInputTopic``: ``pipe_input(key, value, ts=None)``, ``pipe_input(value)`` (null
    key), ``pipe_input(TestRecord)``, the list forms and ``advance_time``."""

    __test__ = False  # not a pytest test class
    _NO_VALUE = object()

    def __init__(self, driver: TopologyTestDriver, topic: str, start_ts: int, auto_advance_ms: int):
        if auto_advance_ms < 0:
            raise IllegalArgumentError("autoAdvance must be positive")
        self.driver = driver
        self.topic = topic
        self.current_ts = start_ts
        self.auto_advance_ms = auto_advance_ms

    def _timestamp_and_advance(self) -> int:
        ts = self.current_ts
        self.current_ts += self.auto_advance_ms
        return ts

    def advance_time(self, advance_ms) -> None:
        """``TestInputTopic#advanceTime(advance)``: moves this topic's current time only."""
        advance = to_millis(advance_ms, "advance")
        if advance < 0:
            raise IllegalArgumentError("advance must be positive")
        self.current_ts += advance

    def pipe_input(self, key, value=_NO_VALUE, ts: Optional[int] = None) -> int:
        """Pipe one record, processed at once; returns its input index.

        ``pipe_input(key, value, ts=3)``; ``pipe_input(key, value)`` at the topic's current time;
        ``pipe_input(value)`` with a null key; ``pipe_input(TestRecord(...))``.
        """
        if value is self._NO_VALUE:
            if isinstance(key, TestRecord):
                key, value, ts = key.key, key.value, key.ts
            else:
                key, value = None, key  # Kafka's pipeInput(value): a null key
        if ts is None:
            ts = self._timestamp_and_advance()
        return self.driver.pipe(self.topic, key, value, to_millis(ts, "timestamp"))

    def pipe_record_list(self, records) -> None:
        """``pipeRecordList(records)``: ``TestRecord`` s."""
        for position, rec in enumerate(records):
            if not isinstance(rec, TestRecord):
                raise IllegalArgumentError(f"pipe_record_list: element {position} must be a TestRecord, got {rec!r}")
            self.pipe_input(rec)

    def pipe_key_value_list(self, key_values, start_ts: Optional[int] = None, advance_ms: int = 0) -> None:
        """``pipeKeyValueList(keyValues[, startTimestamp, advance])``: ``(key, value)`` pairs."""
        ts = start_ts
        for position, pair in enumerate(key_values):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise IllegalArgumentError(f"pipe_key_value_list: element {position} must be a (key, value) pair "
                                           f"(a KeyValue), got {pair!r}")
            key, value = pair
            self.pipe_input(key, value, ts)
            if ts is not None:
                ts += advance_ms

    def pipe_value_list(self, values, start_ts: Optional[int] = None, advance_ms: int = 0) -> None:
        """``pipeValueList(values[, startTimestamp, advance])``: values with null keys."""
        self.pipe_key_value_list(((None, v) for v in values), start_ts, advance_ms)

    def __repr__(self):
        return f"TestInputTopic[topic={self.topic!r}]"


class TestOutputTopic:
    """Kafka's ``TestOutputTopic``: read records one by one or all at once; reading an empty topic
    raises :class:`NoSuchElementError` as Kafka's ``NoSuchElementException``."""

    __test__ = False  # not a pytest test class

    def __init__(self, driver: TopologyTestDriver, topic: str):
        self.driver = driver
        self.topic = topic

    def read_record(self) -> TestRecord:
        return self.driver.read(self.topic)

    def read_value(self):
        return self.read_record().value

    def read_key_value(self) -> KeyValue:
        rec = self.read_record()
        return KeyValue(rec.key, rec.value)

    def read_records_to_list(self) -> List[TestRecord]:
        out = []
        while not self.is_empty():
            out.append(self.read_record())
        return out

    def read_values_to_list(self) -> list:
        return [r.value for r in self.read_records_to_list()]

    def read_key_values_to_list(self) -> List[KeyValue]:
        return [KeyValue(r.key, r.value) for r in self.read_records_to_list()]

    def read_key_values_to_map(self) -> dict:
        """``readKeyValuesToMap()``: the last value of each key (a null value stays as a None
        entry); a null key raises :class:`IllegalStateError`, as in Kafka."""
        out = {}
        while not self.is_empty():
            rec = self.read_record()
            if rec.key is None:
                raise IllegalStateError("Null keys not allowed with readKeyValuesToMap method")
            out[rec.key] = rec.value
        return out

    def get_queue_size(self) -> int:
        return self.driver.queue_size(self.topic)

    def is_empty(self) -> bool:
        return self.driver.queue_size(self.topic) == 0

    def __repr__(self):
        return f"TestOutputTopic[topic={self.topic!r}, size={self.get_queue_size()}]"
