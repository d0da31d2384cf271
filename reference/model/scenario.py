"""Scenario files, format 1 (``../shared/spec/scenario-format.md``): model and loader.

A scenario is a topology, the input records fed to it and, optionally, the output it must
produce. Every engine reads scenarios through :func:`load_scenario` / :func:`scenario_from_dict`,
so a file means the same thing everywhere. Anything the loader cannot read is a
:class:`ScenarioError` naming the file, the record index and the field. The text is read by
:func:`reference.model.documents.read_document` (UTF-8 only, no duplicate keys, bounded nesting,
YAML by the 1.2 core schema with YAML 1.1 ambiguities refused); timestamps and durations must fit
a Java long, partition counts a Java int.

Additions to format 1 (all optional):
- ``config.emit_interval_ms``: the outer-join emit interval
  (``__emit.interval.ms.kstreams.outer.join.spurious.results.fix__``), default 0 as in
  ``TopologyTestDriver`` since 3.8; the wall clock stays frozen at 0, as in the driver.
- ``expected_failure``: ``{"input": N, "message_contains": "..."}`` when real Kafka Streams dies
  while processing input N; the scenario then passes only if the engine reports that failure.
"""
from __future__ import annotations

import os
from typing import Optional

import attrs

from kssim.reference.model.documents import read_document
from kssim.reference.model.errors import KssimError, ScenarioError, ScheduleError, TopologyError
from kssim.reference.model.profiles import DEFAULT_RELEASE, Profile, profile_for
from kssim.reference.model.records import NO_OLD_VALUE, InputRecord
from kssim.reference.model.topology import (JAVA_LONG_MAX, JAVA_LONG_MIN, ExtractorError, aggregated_value_problem,
                                      check_topology, extract_key, input_topics, key_extractor_of, output_topics,
                                      parse_topology)

FORMAT = "kssim-scenario/1"
ORDERS = ("as_listed", "timestamp_sync")
STORES = ("rocksdb", "in_memory")
COMPARE_MODES = ("exact", "latest_value_per_key", "distinct_set", "sorted_by_key_and_window_start")
OUTPUT_TOPIC = "output"
JAVA_INT_MAX = 2 ** 31 - 1

_TOP_FIELDS = ("format", "name", "description", "source", "semantics", "topology", "config", "inputs",
               "expected", "checkpoints", "compare", "expected_failure")
_CONFIG_FIELDS = ("order", "store", "partitions", "emit_interval_ms", "delivery", "seed", "schedule",
                  "global_table", "caching")
#: how records written to internal topics (an FK join's subscription and response topics) reach
#: their tasks: ``synchronous``, TopologyTestDriver's order (after each input, internal records
#: are processed in production order before the next input); ``interleaved``, per-partition FIFO
#: queues and a seeded choice among the non-empty ones (every interleaving a deployment can show)
DELIVERIES = ("synchronous", "interleaved")
#: when a GlobalKTable's records are applied: ``as_listed`` (TopologyTestDriver: each piped record
#: at once, in list order) or ``bootstrap`` (a running application reads the global topic in full
#: before it processes the stream)
GLOBAL_TABLE_ORDERS = ("as_listed", "bootstrap")
_INPUT_FIELDS = ("topic", "partition", "key", "value", "ts")
_EXPECTED_FIELDS = ("topic", "partition", "key", "value", "ts", "after_input", "old_value")


@attrs.frozen
class RunConfig:
    """How the scenario is run: processing order, store type, partitions per topic, emit interval."""

    order: str = "as_listed"
    store: str = "rocksdb"
    partitions: dict = attrs.field(factory=dict, eq=False)
    emit_interval_ms: int = 0
    delivery: str = "synchronous"
    seed: Optional[int] = None
    schedule: Optional[tuple] = None
    global_table: str = "as_listed"
    #: record caches on (``statestore.cache.max.bytes`` 10 MB) or off (0, format 1's assumption)
    caching: bool = False

    def partition_count(self, topic: str) -> int:
        return self.partitions.get(topic, 1)

    @property
    def task_count(self) -> int:
        return max([1] + list(self.partitions.values()))


@attrs.frozen
class ExpectedRecord:
    topic: str
    key: object
    value: object
    ts: int
    partition: int = 0
    after_input: Optional[int] = None
    old_value: object = NO_OLD_VALUE


@attrs.frozen
class ExpectedFailure:
    input: int
    message_contains: Optional[str] = None


@attrs.frozen
class Scenario:
    name: str
    topology: object
    profile: Profile = attrs.field(eq=False)
    inputs: tuple
    config: RunConfig = RunConfig()
    expected: Optional[tuple] = None
    checkpoints: Optional[tuple] = None
    compare: str = "exact"
    description: str = ""
    source: str = ""
    semantics: Optional[str] = None
    expected_failure: Optional[ExpectedFailure] = None
    path: Optional[str] = None
    annotations: dict = attrs.field(factory=dict, eq=False)

    @property
    def release(self) -> str:
        return self.profile.release

    def effective_checkpoints(self):
        """The read points: explicit ``checkpoints``, else the distinct ``after_input`` values."""
        if self.checkpoints is not None:
            return self.checkpoints
        if self.expected is None:
            return None
        points = sorted({e.after_input for e in self.expected if e.after_input is not None})
        return tuple(points) if points else None


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _Loader:
    def __init__(self, path, inputs_required=True):
        self.path = path
        self.inputs_required = inputs_required

    def fail(self, where, message):
        return ScenarioError(self.path, where, message)

    def load(self, doc) -> Scenario:
        if not isinstance(doc, dict):
            raise self.fail("", "a scenario must be a JSON/YAML object")
        for name in doc:
            if name not in _TOP_FIELDS and not name.startswith("x-"):
                raise self.fail(name, "unknown top-level field (free annotations must start with 'x-')")
        if doc.get("format") != FORMAT:
            raise self.fail("format", f"must be {FORMAT!r}, got {doc.get('format')!r}")
        name = doc.get("name")
        if not isinstance(name, str) or not name:
            raise self.fail("name", "missing or not a non-empty string")
        for text_field in ("description", "source"):
            if text_field in doc and not isinstance(doc[text_field], str):
                raise self.fail(text_field, "must be a string")
        semantics = doc.get("semantics")
        try:
            profile = profile_for(semantics)
        except KssimError as exc:
            raise self.fail("semantics", str(exc)) from None
        topology = parse_topology(doc.get("topology"), self.fail) if "topology" in doc else None
        if topology is None:
            raise self.fail("topology", "missing required field")
        self.topology = topology
        self.output_topics = output_topics(topology)
        config = self.config(doc.get("config", {}), topology)
        try:
            check_topology(topology, profile, config.store)
        except TopologyError as exc:
            raise self.fail(exc.field, exc.message) from None
        inputs = self.inputs(doc.get("inputs"), topology, config)
        expected = self.expected(doc["expected"], config, output_topics(topology)) if "expected" in doc else None
        checkpoints = self.checkpoints(doc["checkpoints"], len(inputs)) if "checkpoints" in doc else None
        compare = doc.get("compare", "exact")
        if compare not in COMPARE_MODES:
            raise self.fail("compare", f"must be one of {', '.join(COMPARE_MODES)}, got {compare!r}")
        if expected:
            for i, e in enumerate(expected):
                if e.after_input is not None and e.after_input >= len(inputs):
                    raise self.fail(f"expected[{i}].after_input", f"{e.after_input} is not an input index (there are {len(inputs)} inputs)")
        if config.schedule:
            self.check_schedule(topology, profile, config, inputs)
        return Scenario(
            name=name, topology=topology, profile=profile, inputs=inputs, config=config,
            expected=expected, checkpoints=checkpoints, compare=compare,
            description=doc.get("description", ""), source=doc.get("source", ""),
            semantics=semantics, expected_failure=self.expected_failure(doc.get("expected_failure"), len(inputs)),
            path=str(self.path) if self.path is not None else None,
            annotations={k: v for k, v in doc.items() if k.startswith("x-")},
        )

    def check_schedule(self, topology, profile, config, inputs) -> None:
        """Every choice of ``config.schedule`` must name a non-empty queue at its step, which only
        a run of the schedule shows (:func:`reference.model.engines.check_schedule`): checked
        here, so that every command and both engines name the file and the step alike."""
        from kssim.reference.model.engines import check_schedule

        try:
            check_schedule(topology, profile, config, inputs)
        except ScheduleError as exc:
            raise self.fail(exc.where, exc.message) from None

    def config(self, obj, topology) -> RunConfig:
        operator = topology.operator
        if not isinstance(obj, dict):
            raise self.fail("config", "must be an object")
        for name in obj:
            if name not in _CONFIG_FIELDS:
                raise self.fail(f"config.{name}", f"unknown field (expected one of: {', '.join(_CONFIG_FIELDS)})")
        order = obj.get("order", "as_listed")
        if order not in ORDERS:
            raise self.fail("config.order", f"must be one of {', '.join(ORDERS)}, got {order!r}")
        store = obj.get("store", "rocksdb")
        if store not in STORES:
            raise self.fail("config.store", f"must be one of {', '.join(STORES)}, got {store!r}")
        partitions = obj.get("partitions", {})
        if not isinstance(partitions, dict):
            raise self.fail("config.partitions", "must be an object mapping topic to partition count")
        topics = input_topics(topology)
        if operator == "graph":
            self.check_graph_config(obj)
        for topic, count in partitions.items():
            if topic not in topics:
                raise self.fail(f"config.partitions.{topic}", f"not an input topic of {operator} (its topics: {', '.join(topics)})")
            if not _is_int(count) or not 1 <= count <= JAVA_INT_MAX:
                # a partition number is a Java int
                raise self.fail(f"config.partitions.{topic}", f"must be a positive integer that fits in a Java int "
                                                              f"(at most {JAVA_INT_MAX}), got {count!r}")
        counts = {partitions.get(t, 1) for t in topics}
        if len(counts) > 1 and operator not in ("global_table_join", "fk_join"):
            # Kafka's co-partitioning check (TopologyException at start-up); a GlobalKTable's topic
            # is read whole by every instance and needs none (KStreamGlobalKTableJoinTest); an FK
            # join co-partitions its internal topics with each table, not the tables with each other
            raise self.fail("config.partitions", f"the input topics of a join must be co-partitioned (same partition count), got {partitions}")
        interval = obj.get("emit_interval_ms", 0)
        if not _is_int(interval) or not 0 <= interval <= JAVA_LONG_MAX:
            raise self.fail("config.emit_interval_ms", f"must be a non-negative integer that fits in a Java long "
                                                       f"(64 bits), got {interval!r}")
        delivery = obj.get("delivery", "synchronous")
        if delivery not in DELIVERIES:
            raise self.fail("config.delivery", f"must be one of {', '.join(DELIVERIES)}, got {delivery!r}")
        seed = obj.get("seed")
        if seed is not None and not _is_int(seed):
            raise self.fail("config.seed", f"must be an integer, got {seed!r}")
        schedule = obj.get("schedule")
        if schedule is not None and (not isinstance(schedule, list) or not all(_is_int(c) and c >= 0 for c in schedule)):
            raise self.fail("config.schedule", "must be a list of non-negative queue choices (as `kssim explore` prints them)")
        if delivery == "interleaved" and seed is None and schedule is None:
            raise self.fail("config.seed", "interleaved delivery needs a seed (or a schedule): the same seed gives the "
                            "same run, byte for byte")
        if delivery == "synchronous" and (seed is not None or schedule is not None):
            raise self.fail("config.delivery", "seed and schedule choose an interleaving: they need delivery: interleaved")
        global_table = obj.get("global_table", "as_listed")
        if global_table not in GLOBAL_TABLE_ORDERS:
            raise self.fail("config.global_table", f"must be one of {', '.join(GLOBAL_TABLE_ORDERS)}, got {global_table!r}")
        if global_table != "as_listed" and operator not in ("global_table_join", "graph"):
            raise self.fail("config.global_table", f"only a global_table_join reads a GlobalKTable (operator {operator})")
        caching = obj.get("caching", False)
        if not isinstance(caching, bool):
            raise self.fail("config.caching", f"must be true or false, got {caching!r}")
        if caching and operator != "graph":
            raise self.fail("config.caching", "record caches are modelled for topology graphs; a single "
                                              f"{operator} runs with caches off (statestore.cache.max.bytes 0)")
        return RunConfig(order=order, store=store, partitions=dict(partitions), emit_interval_ms=interval,
                         delivery=delivery, seed=seed, schedule=None if schedule is None else tuple(schedule),
                         global_table=global_table, caching=caching)

    def check_graph_config(self, obj):
        """A graph runs as TopologyTestDriver runs it: one partition per topic, records as listed."""
        if obj.get("order", "as_listed") != "as_listed":
            raise self.fail("config.order", "a topology graph is processed as listed (TopologyTestDriver's order); "
                                            "timestamp_sync is for format-1 operators")
        for name in ("partitions", "delivery", "seed", "schedule", "global_table"):
            if name in obj:
                raise self.fail(f"config.{name}", "not available for topology graphs (one partition per topic, "
                                                  "synchronous delivery)")

    def record_fields(self, obj, where, allowed, config, topics):
        if not isinstance(obj, dict):
            raise self.fail(where, "a record must be an object")
        for name in obj:
            if name not in allowed:
                raise self.fail(f"{where}.{name}", f"unknown field (expected one of: {', '.join(allowed)})")
        for name in ("topic", "key", "value", "ts"):
            if name not in obj:
                raise self.fail(f"{where}.{name}", "missing required field")
        topic = obj["topic"]
        if topic not in topics:
            raise self.fail(f"{where}.topic", f"must be one of {', '.join(topics)}, got {topic!r}")
        ts = obj["ts"]
        if not _is_int(ts):
            raise self.fail(f"{where}.ts", f"must be an integer timestamp in milliseconds, got {ts!r}")
        if not JAVA_LONG_MIN <= ts <= JAVA_LONG_MAX:
            raise self.fail(f"{where}.ts", f"{ts} does not fit in a Java long (64 bits, at most {JAVA_LONG_MAX}): "
                                           "no Kafka record has this timestamp")
        partition = obj.get("partition", 0)
        if not _is_int(partition) or partition < 0:
            raise self.fail(f"{where}.partition", f"must be a non-negative integer, got {partition!r}")
        count = config.task_count if topic in self.output_topics else config.partition_count(topic)
        if partition >= count:
            # task N writes partition N of the output topic
            raise self.fail(f"{where}.partition", f"partition {partition} does not exist: topic {topic!r} has {count} partition(s) (config.partitions)")
        return topic, partition, ts

    def inputs(self, items, topology, config) -> tuple:
        if items is None and not self.inputs_required:
            return ()
        if not isinstance(items, list):
            raise self.fail("inputs", "missing, or not a list of records")
        topics = input_topics(topology)
        out = []
        for i, obj in enumerate(items):
            where = f"inputs[{i}]"
            topic, partition, ts = self.record_fields(obj, where, _INPUT_FIELDS, config, topics)
            if ts < 0:
                # FailOnInvalidTimestamp, Kafka's default extractor, stops the application
                raise self.fail(f"{where}.ts", f"negative timestamp {ts}: Kafka's default timestamp extractor (FailOnInvalidTimestamp) rejects it")
            self.check_extractable(obj, where, topic)
            self.check_aggregated(obj, where, topic)
            out.append(InputRecord(topic=topic, key=obj["key"], value=obj["value"], ts=ts, partition=partition, index=i))
        return tuple(out)

    def check_extractable(self, obj, where, topic):
        """A left record of an FK join (or a stream record of a GlobalKTable join) must hold what
        the extractor reads: an error naming the record and the field, not a crash mid-run."""
        extractor = key_extractor_of(self.topology)
        if extractor is None or topic != "left" or (extractor.source == "value" and obj["value"] is None):
            return  # a left tombstone has no FK to extract
        if extractor.source == "key" and obj["key"] is None:
            return
        try:
            extract_key(extractor, obj["key"], obj["value"])
        except ExtractorError as exc:
            raise self.fail(f"{where}.{exc.where}", str(exc)) from None

    def check_aggregated(self, obj, where, topic):
        """A value the topology's named aggregation cannot aggregate (a string for ``sum``) is an
        error naming the record and the field, as Kafka's value serde would fail on it."""
        problem = aggregated_value_problem(self.topology, topic, obj["value"])
        if problem is not None:
            raise self.fail(f"{where}.value", problem)

    def expected(self, items, config, topics) -> tuple:
        if not isinstance(items, list):
            raise self.fail("expected", "must be a list of records")
        out = []
        for i, obj in enumerate(items):
            where = f"expected[{i}]"
            topic, partition, ts = self.record_fields(obj, where, _EXPECTED_FIELDS, config, topics)
            after = obj.get("after_input")
            if after is not None and (not _is_int(after) or after < 0):
                raise self.fail(f"{where}.after_input", f"must be a non-negative input index, got {after!r}")
            out.append(ExpectedRecord(topic=topic, key=obj["key"], value=obj["value"], ts=ts, partition=partition,
                                      after_input=after, old_value=obj.get("old_value", NO_OLD_VALUE)))
        return tuple(out)

    def checkpoints(self, items, n_inputs) -> tuple:
        if not isinstance(items, list):
            raise self.fail("checkpoints", "must be a sorted list of input indexes")
        for i, point in enumerate(items):
            if not _is_int(point) or not 0 <= point < n_inputs:
                raise self.fail(f"checkpoints[{i}]", f"must be an input index below {n_inputs}, got {point!r}")
            if i and point <= items[i - 1]:
                raise self.fail(f"checkpoints[{i}]", "checkpoints must be strictly increasing")
        return tuple(items)

    def expected_failure(self, obj, n_inputs):
        if obj is None:
            return None
        if not isinstance(obj, dict):
            raise self.fail("expected_failure", "must be an object with 'input'")
        for name in obj:
            if name not in ("input", "message_contains"):
                raise self.fail(f"expected_failure.{name}", "unknown field (expected: input, message_contains)")
        index = obj.get("input")
        if not _is_int(index) or not 0 <= index < n_inputs:
            raise self.fail("expected_failure.input", f"must be an input index below {n_inputs}, got {index!r}")
        contains = obj.get("message_contains")
        if contains is not None and not isinstance(contains, str):
            raise self.fail("expected_failure.message_contains", "must be a string")
        return ExpectedFailure(input=index, message_contains=contains)


def scenario_from_dict(doc, path=None, inputs_required=True) -> Scenario:
    """Build a scenario from an already-parsed JSON/YAML document."""
    return _Loader(path, inputs_required).load(doc)


def load_scenario(path, release: Optional[str] = None) -> Scenario:
    """The scenario of file ``path``; with ``release``, read as if its ``semantics`` named that
    Kafka release (``kssim timeline --release``, the pytest plugin's ``--kssim-release``), with
    every check of that release (a topology the release lacks is a ScenarioError/TopologyError)."""
    doc = read_document(path)
    if release is not None and isinstance(doc, dict):
        doc = {**doc, "semantics": release}
    return scenario_from_dict(doc, path=os.fspath(path))


def load_topology_file(path) -> Scenario:
    """A scenario file used for its topology, release and config only (``kssim replay``):
    ``inputs`` may be left out."""
    return scenario_from_dict(read_document(path), path=os.fspath(path), inputs_required=False)


SCENARIO_SUFFIXES = (".json", ".yaml", ".yml")


def _unreadable_folder(error: OSError):
    # os.walk skips what it cannot list unless told: a folder left out silently is never checked
    raise ScenarioError(error.filename, "", f"cannot read folder: {error.strerror}")


def find_scenario_files(paths):
    """Files named directly, and scenario files found recursively in folders, in sorted order."""
    found = []
    for p in paths:
        p = os.fspath(p)
        if os.path.isdir(p):
            for root, dirs, files in os.walk(p, onerror=_unreadable_folder):
                dirs.sort()
                for f in sorted(files):
                    if f.endswith(SCENARIO_SUFFIXES):
                        found.append(os.path.join(root, f))
        elif os.path.exists(p):
            found.append(p)
        else:
            raise ScenarioError(p, "", "no such file or folder")
    return found


__all__ = ["Scenario", "RunConfig", "ExpectedRecord", "ExpectedFailure", "load_scenario", "scenario_from_dict",
           "find_scenario_files", "read_document", "DEFAULT_RELEASE", "OUTPUT_TOPIC"]
