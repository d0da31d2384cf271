"""Captures as input records: :func:`open_captures` (see the package docstring for the contract).
"""
from __future__ import annotations

import os
from typing import Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

import attrs

from kssim.reference.model.captures import console, detect, jsonl, kcat, parquet
from kssim.reference.model.captures.lines import count_lines, decode_text
from kssim.reference.model.captures.options import (ALL_TOPICS, TEXT_CAPTURE_FORMATS, CaptureOptions, InputFormat,
                                              TextFormat, split_input, text_formats)
from kssim.reference.model.errors import KssimError, ScenarioError
from kssim.reference.model.record_files import MAX_LONG, RECORD_FIELDS, RecordProblem, check_record
from kssim.reference.model.records import InputRecord
from kssim.reference.model.topology import ExtractorError, check_extractable

#: the topology's output topic (``reference.model.scenario.OUTPUT_TOPIC``)
OUTPUT_TOPIC = "output"
_FIELDS = frozenset(RECORD_FIELDS)
_MISSING = object()
#: builds a NamedTuple without its Python-level ``__new__`` (the hot loop)
_new_tuple = tuple.__new__


@attrs.frozen
class CaptureSource:
    """One capture file: its ``path``, ``format``, the captured ``topic`` of a console file (None
    for formats that name it per record), how many records it holds (``count``: non-blank lines or
    Parquet rows) and the input index of its first record (``first_index``)."""

    path: str
    format: InputFormat
    topic: Optional[str]
    count: int
    first_index: int


@attrs.frozen
class TopicPlan:
    """Which captured topics are read as which topology topic (``read``: captured -> topology
    topic) and which are skipped (``skipped``: the other side's topics and ``--ignore-topic``)."""

    read: Mapping[str, str]
    skipped: frozenset


def plan_topics(options: CaptureOptions, topics: Sequence[str], other_topics: Sequence[str]) -> TopicPlan:
    """The :class:`TopicPlan` for reading ``topics`` while skipping ``other_topics`` (their
    captured names); KssimError for a mapping of an unknown topic, two topology topics read from
    one captured topic, or an ignored topic the topology reads."""
    known = tuple(topics) + tuple(other_topics)
    for name in options.topics:
        if name not in known:
            raise KssimError(f"--topic {name}={options.topics[name]}: the topology has no topic {name!r} "
                             f"(its topics: {', '.join(known)})")
    captured = {t: options.topics.get(t, t) for t in known}
    owner: Dict[str, str] = {}
    for topic, name in captured.items():
        if name in owner:
            raise KssimError(f"--topic: topics {owner[name]} and {topic} both read captured topic {name!r} "
                             f"(map each topology topic to its own captured topic)")
        owner[name] = topic
    read = {captured[t]: t for t in topics}
    for name in options.ignore_topics:
        if name in read:
            raise KssimError(f"--ignore-topic {name}: the topology reads that topic (as {read[name]})")
    return TopicPlan(read, frozenset(captured[t] for t in other_topics) | frozenset(options.ignore_topics))


def _source_format(path, options: CaptureOptions) -> Optional[InputFormat]:
    if options.input_format is InputFormat.AUTO:
        return detect.detect_format(path)
    return options.input_format


def _count(path, fmt) -> int:
    if fmt is None:
        return 0
    return parquet.count_rows(path) if fmt is InputFormat.PARQUET else count_lines(path)


def list_sources(inputs: Sequence, options: CaptureOptions) -> List[CaptureSource]:
    """The capture files of ``inputs`` (``--input`` values: files, folders, ``TOPIC=PATH``) in
    order, each with its format, topic, record count and first input index; every file is opened
    and its format known before any record is read (ScenarioError otherwise)."""
    sources = []
    index = 0
    for given in inputs:
        topic, path = split_input(given)
        files = detect.data_files(path)
        for file in files:
            detect.check_not_compressed(file)
        formats = [_source_format(f, options) for f in files]
        if os.path.isdir(path):
            detect.folder_format(path, files, formats)
        for file, fmt in zip(files, formats):
            if topic is not None and fmt not in (InputFormat.CONSOLE, None):
                raise ScenarioError(file, "", f"--input {given}: TOPIC=PATH names the topic of a console capture; "
                                              f"this file is {fmt.value}, whose records name their topic")
            if fmt is InputFormat.CONSOLE and topic is None:
                file_topic = os.path.splitext(os.path.basename(file))[0]
            else:
                file_topic = topic
            count = _count(file, fmt)
            sources.append(CaptureSource(file, fmt or InputFormat.JSONL, file_topic, count, index))
            index += count
    return sources


class Captures:
    """Open captures: :attr:`sources` (each a :class:`CaptureSource`), :attr:`total` records,
    :meth:`records` (all, in file order) or :meth:`records_of` (one source, for a lazy merge);
    :attr:`ignored` (captured topic -> records skipped so far). Reading checks each record as it
    goes (ScenarioError naming file, line or row, and field); state kept: the last offset of each
    topic partition (O(partitions)). Every method streams: O(1) memory per record."""

    def __init__(self, sources: List[CaptureSource], plan: TopicPlan, options: CaptureOptions,
                 formats: Mapping[str, Tuple[TextFormat, TextFormat]], partitions: Optional[Mapping[str, int]],
                 offsets_matter: bool, extractor=None, graph: bool = False, value_check=None):
        self.sources = sources
        #: ``(topic, value) -> problem or None``: what the topology's named aggregation cannot add
        #: (a scenario record's check, ``topology.aggregated_value_problem``); None: nothing checked
        self.value_check = value_check
        self.total = sum(s.count for s in sources)
        self.plan, self.options = plan, options
        #: topology topic -> (key format, value format) of kcat and console text
        self.formats = formats
        self.partitions, self.offsets_matter, self.extractor = partitions, offsets_matter, extractor
        #: the topology is a graph: one partition per topic (a record of another is refused as such)
        self.graph = graph
        self.ignored: Dict[str, int] = {}
        self._topics = tuple(plan.read.values())
        self._last_offset: Dict[Tuple[str, int], int] = {}

    @property
    def ignored_count(self) -> int:
        return sum(self.ignored.values())

    def reopened(self, offsets_matter: bool) -> "Captures":
        """The same captures read afresh (no file listed or counted again): e.g. a second pass
        over records a first pass checked, with ``offsets_matter`` False."""
        return Captures(self.sources, self.plan, self.options, self.formats, self.partitions, offsets_matter,
                        self.extractor, self.graph, self.value_check)

    def records(self) -> Iterator[InputRecord]:
        """Every record of every source, in the order given: input indexes from 0."""
        for source in self.sources:
            yield from self.records_of(source)

    def _rows(self, source: CaptureSource):
        """``(unit, rows)``: rows are ``(number, row, raw)``, ``raw`` naming the fields that are
        still text (kcat, console); ``unit`` + number say where a record is (``line 3``)."""
        fmt = source.format
        if fmt is InputFormat.KCAT:
            return "line", kcat.numbered(source.path)
        if fmt is InputFormat.CONSOLE:
            return "line", console.numbered(source.path, source.topic, self.options)
        if fmt is InputFormat.PARQUET:
            return "row", parquet.numbered(source.path)
        return "line", jsonl.numbered(source.path)

    def records_of(self, source: CaptureSource) -> Iterator[InputRecord]:
        """The records of one source, numbered from its ``first_index``; a skipped record (of a
        topic the plan skips) takes its number too, so input N is always the N-th captured record.
        Each record is checked by the shared row rules (``record_files.check_record``: a fast path
        here for the usual well-formed record, the rule function itself for anything else)."""
        index = source.first_index - 1
        path = source.path
        read, skipped, formats, ignored = self.plan.read, self.plan.skipped, self.formats, self.ignored
        partitions = self.partitions
        # topic -> partitions it has (no bound when the caller checks them)
        limits = {t: (MAX_LONG + 1 if partitions is None else partitions.get(t, 1)) for t in self._topics}
        last_offset = self._last_offset if self.offsets_matter else None
        extractor, value_check = self.extractor, self.value_check
        fields = _FIELDS
        unit, rows = self._rows(source)
        for n, row, raw in rows:
            index += 1
            topic = None
            if row.__class__ is dict:
                get = row.get
                name = get("topic")
                if name.__class__ is str:
                    if name in skipped:
                        ignored[name] = ignored.get(name, 0) + 1
                        continue
                    topic = read.get(name)
                    if topic is None:
                        raise ScenarioError(path, f"{unit} {n}, field topic", self._unknown_topic(name))
                    row["topic"] = topic
                    for field, shown in raw:  # kcat and console text, read as the topic's format says
                        row[field] = decode_text(formats[topic][0 if field == "key" else 1], row[field], path,
                                                 f"{unit} {n}", shown)
                    ts, partition, offset = get("ts"), get("partition", 0), get("offset")
                    key, value = get("key", _MISSING), get("value", _MISSING)
            # the usual well-formed record passes here; anything else meets the rules themselves
            if not (topic is not None and ts.__class__ is int and 0 <= ts <= MAX_LONG
                    and partition.__class__ is int and 0 <= partition < limits[topic]
                    and (offset is None or (offset.__class__ is int and 0 <= offset <= MAX_LONG))
                    and key is not _MISSING and value is not _MISSING and row.keys() <= fields):
                try:
                    topic, partition, offset, ts, key, value = check_record(row, self._topics, partitions)
                except RecordProblem as exc:
                    where = f"{unit} {n}"
                    problem = exc.problem
                    if self.graph and exc.field == "partition" and problem.startswith("partition "):
                        # not config.partitions (graphs have none): TopologyTestDriver's one partition
                        problem = (f"partition {row['partition']} does not exist: a topology graph runs one "
                                   f"partition per topic (TopologyTestDriver's), partition 0 of {row['topic']!r}")
                    raise ScenarioError(path, f"{where}, field {exc.field}" if exc.field else where,
                                        problem) from None
            if last_offset is not None:  # timestamp_sync: a partition's given offsets increase
                coord = (topic, partition)
                last = last_offset.get(coord, -1)
                if offset is None:
                    offset = last + 1
                elif offset <= last:
                    raise ScenarioError(path, f"{unit} {n}, field offset",
                                        f"offset {offset} of topic {topic!r} partition {partition} comes after "
                                        f"offset {last}: list each partition's records in increasing offset order")
                last_offset[coord] = offset
            if extractor is not None and topic == "left":
                try:
                    check_extractable(extractor, key, value)
                except ExtractorError as exc:
                    raise ScenarioError(path, f"{unit} {n}, field {exc.where}", str(exc)) from None
            if value_check is not None:
                problem = value_check(topic, value)
                if problem is not None:
                    raise ScenarioError(path, f"{unit} {n}, field value", problem)
            yield _new_tuple(InputRecord, (topic, key, value, ts, partition, index))

    def _unknown_topic(self, name) -> str:
        reads = ", ".join(c if c == t else f"{c} (as {t})" for c, t in self.plan.read.items())
        return (f"topic {name!r} is not a topic the topology reads ({reads}): map it with --topic "
                f"{next(iter(self.plan.read.values()))}={name}, or skip its records with --ignore-topic {name}")


def open_captures(inputs: Sequence, options: Optional[CaptureOptions] = None, topology=None,
                  partitions: Optional[Mapping[str, int]] = None, offsets_matter: bool = True,
                  reading: str = "inputs", topics: Optional[Sequence[str]] = None,
                  output_topic: Optional[str] = None) -> Captures:
    """Open the captures ``inputs`` (``--input`` values) for reading ``topology``'s input topics
    (``reading="inputs"``: records of its output topics are skipped) or one of its output topics
    (``reading="output"``, for diff: ``output_topic``, default the topology's only one; records of
    its input topics and other output topics are skipped). A topology's topics are
    ``topology.input_topics`` / ``output_topics``: a format-1 operator's ``left``/``right`` or
    ``input`` and ``output``, a graph's source and sink topics. ``partitions``:
    topology topic -> partition count (``config.partitions``; a record of a partition beyond it is
    an error; None: not checked). ``offsets_matter`` (``timestamp_sync``): given offsets must
    increase per topic partition. ``topics`` overrides the topology's input topics (no topology:
    ``left``, ``right``). Every file is found, its format known and its records counted here,
    before any record is read (cost: one quick pass over each line-based file, about 0.1 µs a
    line; Parquet: its metadata); bad options are KssimErrors, bad files ScenarioErrors."""
    from kssim.reference.model.topology import input_topics, key_extractor_of

    options = options or CaptureOptions()
    if topics is None:
        topics = input_topics(topology) if topology is not None else ("left", "right")
    topics = tuple(topics)
    outputs = topology_outputs(topology)
    if reading == "inputs":
        plan = plan_topics(options, topics, outputs)
    elif reading == "output":
        read = (chosen_output_topic(topology, output_topic),)
        plan = plan_topics(options, read, topics + tuple(t for t in outputs if t not in read))
    else:
        raise ValueError(f"reading must be 'inputs' or 'output', got {reading!r}")
    sources = list_sources(inputs, options)
    check_text_options(options, sources, topics + outputs)
    formats = {topic: text_formats(options, topology, topic) for topic in plan.read.values()}
    extractor = key_extractor_of(topology) if topology is not None and reading == "inputs" else None
    return Captures(sources, plan, options, formats, partitions, offsets_matter, extractor,
                    graph=topology is not None and topology.operator == "graph",
                    value_check=_value_check(topology) if reading == "inputs" else None)


def _value_check(topology):
    """The scenario loader's check of the values a topology's ``sum`` adds (integers that fit a
    Java long), for captured records: None when it adds none."""
    from kssim.reference.model.topology import aggregated_value_problem, summed_topics

    if topology is None or not summed_topics(topology):
        return None
    return lambda topic, value: aggregated_value_problem(topology, topic, value)


def topology_outputs(topology) -> tuple:
    """The output topics of ``topology`` (``reference.model.topology.output_topics``; no
    topology: format 1's ``output``)."""
    from kssim.reference.model.topology import output_topics

    return tuple(output_topics(topology)) if topology is not None else (OUTPUT_TOPIC,)


def chosen_output_topic(topology, name: Optional[str] = None) -> str:
    """The output topic ``kssim diff`` compares: ``name`` (``--sink``), which must be one of the
    topology's output topics, else the topology's only one; KssimError naming the topics when
    ``name`` is not one of them, or when a graph writes several and none is named."""
    outputs = topology_outputs(topology)
    if name is not None:
        if name not in outputs:
            raise KssimError(f"--sink {name}: the topology writes no topic {name!r} (its output "
                             f"topic{'s' if len(outputs) != 1 else ''}: {', '.join(outputs) or 'none'})")
        return name
    if len(outputs) == 1:
        return outputs[0]
    if not outputs:
        raise KssimError("the topology writes no output topic (a graph without a `to` node): there is nothing to "
                         "compare with a capture")
    raise KssimError(f"the graph writes {len(outputs)} topics ({', '.join(outputs)}): name the one the capture "
                     f"holds with --sink TOPIC (e.g. --sink {outputs[0]})")


def check_text_options(options: CaptureOptions, sources: List[CaptureSource], topics: Sequence[str] = ()) -> None:
    """KssimError when ``--key-format``/``--value-format`` are given but cannot apply: every
    input is a kssim record file (JSON values already), or a format names a topic that is not
    read."""
    for option, formats in (("--key-format", options.key_format), ("--value-format", options.value_format)):
        for topic in formats:
            if topics and topic != ALL_TOPICS and topic not in topics:
                raise KssimError(f"{option} {topic}=...: the topology has no topic {topic!r} (its topics: "
                                 f"{', '.join(topics)})")
    given = [name for name, fmt in (("--key-format", options.key_format), ("--value-format", options.value_format))
             if fmt]
    if given and sources and not any(s.format in TEXT_CAPTURE_FORMATS for s in sources):
        raise KssimError(f"{' and '.join(given)} apply to kcat and console captures, whose keys and values are "
                         f"text; these inputs are kssim record files (JSONL/Parquet), which hold JSON values")
