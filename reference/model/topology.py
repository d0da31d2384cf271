"""Topology specs: what a scenario (or the Python API) asks Kafka Streams to build.

One frozen ``attrs`` class per operator. ``parse_topology`` turns the scenario file's
``topology`` object into a spec and names the field of anything it cannot read;
``check_topology`` rejects, in our words, what Kafka's own API would reject for the modelled
release (negative windows, grace on an unversioned stream-table join, history retention below
grace, APIs that did not exist yet).
"""
from __future__ import annotations

import enum
from typing import Callable, Optional

import attrs

from kssim.reference.model.aggregations import AGGREGATION_NAMES
from kssim.reference.model.errors import TopologyError
from kssim.reference.model.profiles import (DEFAULT_WINDOW_RETENTION_MS, Profile, session_window_settings,
                                      time_window_settings)

JOIN_TYPES_STREAM_STREAM = ("inner", "left", "outer")
JOIN_TYPES_STREAM_TABLE = ("inner", "left")
JOIN_TYPES_TABLE_TABLE = ("inner", "left", "outer")
JOIN_TYPES_FOREIGN_KEY = ("inner", "left")
JOIN_TYPES_GLOBAL_TABLE = ("inner", "left")
KEY_SOURCES = ("value", "key")
JOINER_NAMES = ("pair", "concat")
WINDOW_APIS = ("time_difference", "legacy")


@attrs.frozen
class JoinWindowSpec:
    """``JoinWindows``: a left record L and a right record R join iff
    ``L.ts - before_ms <= R.ts <= L.ts + after_ms``. ``grace_ms`` None means the release's
    default (legacy ``JoinWindows.of`` only)."""

    before_ms: int
    after_ms: int
    grace_ms: Optional[int] = None


@attrs.frozen
class TableSpec:
    """How a KTable source is materialized: a key-value store, or a versioned store (KIP-889)."""

    versioned: bool = False
    history_retention_ms: Optional[int] = None


@attrs.frozen
class StreamStreamJoinSpec:
    join: str
    window: JoinWindowSpec
    window_api: str = "legacy"
    joiner: object = "pair"
    joiner_separator: str = "+"
    operator: str = attrs.field(default="stream_stream_join", init=False)


@attrs.frozen
class StreamTableJoinSpec:
    join: str
    table: TableSpec = TableSpec()
    grace_ms: Optional[int] = None
    joiner: object = "pair"
    joiner_separator: str = "+"
    operator: str = attrs.field(default="stream_table_join", init=False)


@attrs.frozen
class TableTableJoinSpec:
    join: str
    left_table: TableSpec = TableSpec()
    right_table: TableSpec = TableSpec()
    joiner: object = "pair"
    joiner_separator: str = "+"
    send_old_values: bool = False
    suppress: Optional["SuppressSpec"] = None
    operator: str = attrs.field(default="table_table_join", init=False)


#: what error messages call a key extractor (:attr:`KeyExtractorSpec.role`)
FK_EXTRACTOR, KEY_MAPPER = "foreign-key extractor", "key mapper"


@attrs.frozen
class KeyExtractorSpec:
    """A named key extractor of the scenario format: the FK extractor of an ``fk_join``, the key
    mapper of a ``global_table_join``.

    ``source`` "value" (default): ``value[field]`` of the record's value, which must be an object
    holding ``field`` (a null there is a null FK / mapped key). ``source`` "key": the record's key
    itself (``field`` None) or ``key[field]`` of an object key; for ``fk_join`` this is KIP-1104's
    ``BiFunction`` extractor (Kafka 4.0+). Apply it with :func:`extract_key`."""

    source: str = "value"
    field: Optional[str] = None
    #: what error messages call it: the ``fk_join``'s foreign-key extractor, the
    #: ``global_table_join``'s key mapper (not part of its identity)
    role: str = attrs.field(default=FK_EXTRACTOR, eq=False)


class ExtractorError(ValueError):
    """A record the key extractor cannot read (its value is not an object, or lacks the field);
    ``where`` names the field (``value.fk``) for the error message."""

    def __init__(self, where: str, message: str):
        self.where = where
        super().__init__(message)


def extract_key(extractor: KeyExtractorSpec, key, value):
    """The extracted key of a record (its FK, or its mapped key); None is a null FK / mapped key.
    Raises :class:`ExtractorError` when the record does not have what the extractor reads."""
    source = value if extractor.source == "value" else key
    if extractor.field is None:
        return source
    if not isinstance(source, dict):
        raise ExtractorError(f"{extractor.source}.{extractor.field}" if source is not None else extractor.source,
                             f"the {extractor.role} reads field {extractor.field!r} of the record's "
                             f"{extractor.source}, which must be an object, "
                             f"got {source!r}")
    if extractor.field not in source:
        raise ExtractorError(f"{extractor.source}.{extractor.field}",
                             f"missing field {extractor.field!r} that the {extractor.role} reads (a null "
                             f"{'FK' if extractor.role == FK_EXTRACTOR else 'mapped key'} is written as "
                             f"\"{extractor.field}\": null)")
    return source[extractor.field]


def check_extractable(extractor: KeyExtractorSpec, key, value) -> None:
    """Raise :class:`ExtractorError` unless a ``left`` record has what ``extractor`` reads; a
    record with nothing to extract from (a null value for a value extractor, a null key for a key
    extractor: a tombstone, or a record the table source drops) passes."""
    if (value if extractor.source == "value" else key) is None:
        return
    extract_key(extractor, key, value)


def aggregation_for_topic(spec, topic: str):
    """The aggregation (a name or an ``Aggregation``) applied to ``topic``'s records, or None."""
    if spec.operator == "windowed_table_join":
        return spec.left_aggregation if topic == "left" else spec.right_aggregation
    return getattr(spec, "aggregation", None)


def summed_topics(topology) -> tuple:
    """The input topics whose values a format-1 topology's ``sum`` aggregation adds (their values
    are checked: integers that fit a Java long); a graph's ``sum`` takes any value (INT)."""
    if topology.operator == "graph":
        return ()
    return tuple(t for t in OPERATOR_INPUT_TOPICS[topology.operator] if aggregation_for_topic(topology, t) == "sum")


def aggregated_value_problem(spec, topic: str, value) -> Optional[str]:
    """Why ``value`` of a ``topic`` record cannot be aggregated by the topology's named
    aggregation (``reference.model.aggregations.check_aggregated_value``), or None."""
    from kssim.reference.model.aggregations import check_aggregated_value

    name = aggregation_for_topic(spec, topic)
    return check_aggregated_value(name, value) if isinstance(name, str) else None


def key_extractor_of(spec) -> Optional[KeyExtractorSpec]:
    """The key extractor of an operator that has one (fk_join, global_table_join), else None."""
    return getattr(spec, "foreign_key", None) or getattr(spec, "key_mapper", None)


@attrs.frozen
class ForeignKeyJoinSpec:
    """``KTable#join/leftJoin(other, foreignKeyExtractor, joiner)`` (KIP-213, 2.4+): ``left`` is
    the primary table (key PK), ``right`` the foreign table, keyed by the FK that ``foreign_key``
    extracts from each left record."""

    join: str
    foreign_key: KeyExtractorSpec
    left_table: TableSpec = TableSpec()
    right_table: TableSpec = TableSpec()
    joiner: object = "pair"
    joiner_separator: str = "+"
    send_old_values: bool = False
    suppress: Optional["SuppressSpec"] = None
    operator: str = attrs.field(default="fk_join", init=False)


@attrs.frozen
class GlobalTableJoinSpec:
    """``KStream#join/leftJoin(globalTable, keyMapper, joiner)`` (KIP-99, 0.10.2+): ``left`` is the
    stream, ``right`` the topic behind the GlobalKTable, looked up by the key that ``key_mapper``
    maps each stream record to. Output key: the stream key; output ts: the stream record's."""

    join: str
    key_mapper: KeyExtractorSpec
    joiner: object = "pair"
    joiner_separator: str = "+"
    operator: str = attrs.field(default="global_table_join", init=False)


# --- windowed aggregations (KIP-94 sessions, time windows, KIP-450 sliding windows) -------------

EMIT_STRATEGIES = ("on_update", "on_window_close")
SUPPRESS_UNTIL = ("window_close", "time_limit")
SUPPRESS_WHEN_FULL = ("shut_down", "emit_early")


@attrs.frozen
class SuppressBufferSpec:
    """``Suppressed.BufferConfig``: ``max_records`` / ``max_bytes`` None is unbounded in that
    measure (``BufferConfig.unbounded()`` when both are). ``when_full``: ``shut_down``
    (``shutDownWhenFull``: the application dies at the record that overflows the buffer) or
    ``emit_early`` (``emitEarlyWhenFull``: the oldest records are emitted early to make room)."""

    max_records: Optional[int] = None
    max_bytes: Optional[int] = None
    when_full: str = "shut_down"

    @property
    def bounded(self) -> bool:
        return self.max_records is not None or self.max_bytes is not None


@attrs.frozen
class SuppressSpec:
    """``KTable#suppress`` (KIP-328, 2.1+) on an operator's table result.

    ``until`` ``window_close``: ``Suppressed.untilWindowCloses`` (windowed results only, with a
    strict buffer: never ``emit_early``); ``time_limit``: ``Suppressed.untilTimeLimit(time_limit_ms,
    buffer)``."""

    until: str
    time_limit_ms: Optional[int] = None
    buffer: SuppressBufferSpec = SuppressBufferSpec()


@attrs.frozen
class TimeWindowSpec:
    """``TimeWindows``: windows ``[start, start + size_ms)`` every ``advance_ms`` (tumbling when
    equal). ``grace_ms`` None: the legacy ``TimeWindows.of`` builder and the release's default
    grace (:func:`reference.model.profiles.time_window_settings`)."""

    size_ms: int
    advance_ms: int
    grace_ms: Optional[int]


@attrs.frozen
class SessionAggregateSpec:
    """``groupByKey().windowedBy(SessionWindows).aggregate`` (KIP-94, 0.10.2+). ``grace_ms`` None:
    the legacy ``SessionWindows.with(gap)`` and its release default. ``retention_ms``:
    ``Materialized.withRetention`` (None: Kafka's default for the release)."""

    gap_ms: int
    grace_ms: Optional[int]
    aggregation: object = "count"
    emit: str = "on_update"
    merge_separator: str = "+"
    send_old_values: bool = False
    retention_ms: Optional[int] = None
    suppress: Optional[SuppressSpec] = None
    operator: str = attrs.field(default="session_aggregate", init=False)


@attrs.frozen
class WindowAggregateSpec:
    """``groupByKey().windowedBy(TimeWindows).aggregate``: tumbling or hopping windows."""

    window: TimeWindowSpec
    aggregation: object = "count"
    emit: str = "on_update"
    merge_separator: str = "+"
    send_old_values: bool = False
    retention_ms: Optional[int] = None
    suppress: Optional[SuppressSpec] = None
    operator: str = attrs.field(default="window_aggregate", init=False)


@attrs.frozen
class SlidingAggregateSpec:
    """``groupByKey().windowedBy(SlidingWindows).aggregate`` (KIP-450, 2.7+): windows
    ``[start, start + time_difference_ms]``, both ends inclusive. ``grace_ms`` None: the legacy
    ``SlidingWindows.withTimeDifferenceAndGrace`` cannot be expressed (it always had a grace), so
    None is an error."""

    time_difference_ms: int
    grace_ms: Optional[int]
    aggregation: object = "count"
    emit: str = "on_update"
    merge_separator: str = "+"
    send_old_values: bool = False
    retention_ms: Optional[int] = None
    suppress: Optional[SuppressSpec] = None
    operator: str = attrs.field(default="sliding_aggregate", init=False)


@attrs.frozen
class WindowedTableJoinSpec:
    """Seed 003's "WTable" join: ``left`` and ``right`` each aggregated over the same time
    ``window`` (``left_aggregation`` / ``right_aggregation``), the two windowed tables joined on
    (key, window) with ``join``. ``shift_ms``: the right windowed table is turned into a stream,
    each key mapped to the window ``shift_ms`` later, and back into a key-value table (never
    expiring) that the left table joins; output keys are the left window's."""

    join: str
    window: TimeWindowSpec
    left_aggregation: object = "count"
    right_aggregation: object = "count"
    shift_ms: int = 0
    joiner: object = "pair"
    joiner_separator: str = "+"
    merge_separator: str = "+"
    send_old_values: bool = False
    suppress: Optional[SuppressSpec] = None
    operator: str = attrs.field(default="windowed_table_join", init=False)


WINDOWED_AGGREGATE_SPECS = (SessionAggregateSpec, WindowAggregateSpec, SlidingAggregateSpec)


class ResultKind(enum.Enum):
    """What an operator's result is in Kafka's DSL."""

    STREAM = "KStream"
    TABLE = "KTable"
    WINDOWED_TABLE = "windowed KTable"


@attrs.frozen
class OperatorKind:
    """One row of the table of format-1 operators: its spec class, the fields its topology object
    accepts (besides ``operator``), the input topics it reads, its result, how its result keys are
    serialized (``plain``, ``time_window``, ``session_window``), the reference engine module whose
    ``build`` makes its task processor, and its family (``join`` or ``window``)."""

    name: str
    spec: type
    fields: tuple
    input_topics: tuple
    result: ResultKind
    key_kind: str
    reference_module: str
    family: str
    #: what each input topic is read as: ``stream``, ``table`` or ``global table``
    input_kinds: tuple = ()


_COMMON_JOIN_FIELDS = ("join", "joiner", "joiner_separator")
_AGG_FIELDS = ("aggregation", "emit", "merge_separator", "send_old_values", "retention_ms", "suppress")
_LR, _IN = ("left", "right"), ("input",)
_S, _T, _W = ResultKind.STREAM, ResultKind.TABLE, ResultKind.WINDOWED_TABLE

#: the one table of format-1 operators (graph nodes have theirs: reference.model.graph.nodes.OPERATIONS);
#: every list of operators elsewhere is read from it
OPERATOR_KINDS = {kind.name: kind for kind in (
    OperatorKind("stream_stream_join", StreamStreamJoinSpec, _COMMON_JOIN_FIELDS + ("window", "window_api"), _LR, _S,
                 "plain", "kssim.reference.joins.stream_stream", "join", ("stream", "stream")),
    OperatorKind("stream_table_join", StreamTableJoinSpec, _COMMON_JOIN_FIELDS + ("grace_ms", "table"), _LR, _S,
                 "plain", "kssim.reference.joins.stream_table", "join", ("stream", "table")),
    OperatorKind("table_table_join", TableTableJoinSpec,
                 _COMMON_JOIN_FIELDS + ("left_table", "right_table", "send_old_values", "suppress"), _LR, _T,
                 "plain", "kssim.reference.joins.table_table", "join", ("table", "table")),
    OperatorKind("fk_join", ForeignKeyJoinSpec,
                 _COMMON_JOIN_FIELDS + ("foreign_key", "left_table", "right_table", "send_old_values", "suppress"),
                 _LR, _T, "plain", "kssim.reference.foreign_key.join", "join", ("table", "table")),
    OperatorKind("global_table_join", GlobalTableJoinSpec, _COMMON_JOIN_FIELDS + ("key_mapper",), _LR, _S,
                 "plain", "kssim.reference.joins.global_table", "join", ("stream", "global table")),
    OperatorKind("session_aggregate", SessionAggregateSpec, _AGG_FIELDS + ("gap_ms", "grace_ms"), _IN, _W,
                 "session_window", "kssim.reference.windows.session", "window", ("stream",)),
    OperatorKind("window_aggregate", WindowAggregateSpec, _AGG_FIELDS + ("size_ms", "advance_ms", "grace_ms"), _IN,
                 _W, "time_window", "kssim.reference.windows.time_window", "window", ("stream",)),
    OperatorKind("sliding_aggregate", SlidingAggregateSpec, _AGG_FIELDS + ("time_difference_ms", "grace_ms"), _IN,
                 _W, "time_window", "kssim.reference.windows.sliding", "window", ("stream",)),
    OperatorKind("windowed_table_join", WindowedTableJoinSpec,
                 _COMMON_JOIN_FIELDS + ("window", "left_aggregation", "right_aggregation", "shift_ms",
                                        "send_old_values", "merge_separator", "suppress"),
                 _LR, _W, "time_window", "kssim.reference.windows.windowed_table_join", "window", ("stream", "stream")),
)}

# views of the table, by the names the rest of kssim reads
OPERATOR_FIELDS = {name: kind.fields for name, kind in OPERATOR_KINDS.items()}
#: operators whose result is a KStream: Kafka has no suppress for them
STREAM_RESULT_OPERATORS = tuple(n for n, k in OPERATOR_KINDS.items() if k.result is ResultKind.STREAM)
#: operators whose result is a windowed KTable (``suppress(untilWindowCloses)`` applies)
WINDOWED_RESULT_OPERATORS = tuple(n for n, k in OPERATOR_KINDS.items() if k.result is ResultKind.WINDOWED_TABLE)
#: the operators of each family
WINDOWED_OPERATORS = tuple(n for n, k in OPERATOR_KINDS.items() if k.family == "window")
#: Input topics each operator reads.
OPERATOR_INPUT_TOPICS = {name: kind.input_topics for name, kind in OPERATOR_KINDS.items()}


def input_topics(topology) -> tuple:
    """The topics a topology reads: a graph's source topics, or a format-1 operator's."""
    if topology.operator == "graph":
        return topology.source_topics
    return OPERATOR_INPUT_TOPICS[topology.operator]


def output_topics(topology) -> tuple:
    """The topics a topology writes: a graph's sink topics, or format 1's one ``output``."""
    if topology.operator == "graph":
        return topology.sink_topics
    return ("output",)


#: the range of a Java ``long``: Kafka's timestamps and durations in milliseconds
JAVA_LONG_MIN, JAVA_LONG_MAX = -(2 ** 63), 2 ** 63 - 1


def _integer_of(field: str) -> str:
    """What an integer field counts, for its error message (a buffer size is no duration)."""
    if field.endswith("_ms"):
        return "an integer number of milliseconds"
    unit = {"max_records": "records", "max_bytes": "bytes"}.get(field)
    return f"an integer number of {unit}" if unit else "an integer"


class _Reader:
    """Reads typed fields out of a JSON object, raising ``fail(where, message)`` on bad ones."""

    def __init__(self, obj, where: str, fail: Callable[[str, str], Exception]):
        self.obj = obj
        self.where = where
        self.fail = fail

    def path(self, name):
        return f"{self.where}.{name}"

    def check_known(self, allowed):
        for name in self.obj:
            if name not in allowed:
                raise self.fail(self.path(name), f"unknown field (expected one of: {', '.join(sorted(allowed))})")

    def get(self, name, kind, default=attrs.NOTHING, choices=None, nullable=False):
        if name not in self.obj:
            if default is attrs.NOTHING:
                raise self.fail(self.path(name), "missing required field")
            return default
        value = self.obj[name]
        if value is None and nullable:
            return None
        if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
            raise self.fail(self.path(name), f"must be {_integer_of(name)}, got {value!r}")
        if kind is int and not JAVA_LONG_MIN <= value <= JAVA_LONG_MAX:
            # every duration of the DSL is a Java long (Duration#toMillis throws beyond it)
            raise self.fail(self.path(name), f"{value} does not fit in a Java long (64 bits, at most {JAVA_LONG_MAX})")
        if kind is bool and not isinstance(value, bool):
            raise self.fail(self.path(name), f"must be true or false, got {value!r}")
        if kind is str and not isinstance(value, str):
            raise self.fail(self.path(name), f"must be a string, got {value!r}")
        if kind is dict and not isinstance(value, dict):
            raise self.fail(self.path(name), f"must be an object, got {value!r}")
        if choices is not None and value not in choices:
            raise self.fail(self.path(name), f"must be one of {', '.join(choices)}, got {value!r}")
        return value

    def sub(self, name):
        return _Reader(self.get(name, dict), self.path(name), self.fail)


def _parse_table(reader: Optional[_Reader]) -> TableSpec:
    if reader is None:
        return TableSpec()
    reader.check_known(("versioned", "history_retention_ms"))
    versioned = reader.get("versioned", bool, default=False)
    retention = reader.get("history_retention_ms", int, default=None, nullable=True)
    if versioned and retention is None:
        raise reader.fail(reader.path("history_retention_ms"), "a versioned table needs history_retention_ms")
    if retention is not None and retention < 0:
        raise reader.fail(reader.path("history_retention_ms"), f"must not be negative, got {retention}")
    return TableSpec(versioned=versioned, history_retention_ms=retention)


def _parse_extractor(reader: _Reader, role: str) -> KeyExtractorSpec:
    reader.check_known(("from", "field"))
    source = reader.get("from", str, default="value", choices=KEY_SOURCES)
    field = reader.get("field", str, default=None, nullable=source == "key")
    return KeyExtractorSpec(source=source, field=field, role=role)


def _joiner_fields(r: _Reader):
    return dict(
        joiner=r.get("joiner", str, default="pair", choices=JOINER_NAMES),
        joiner_separator=r.get("joiner_separator", str, default="+"),
    )


def parse_topology(obj, fail: Callable[[str, str], Exception], where: str = "topology"):
    """Build the spec of a scenario's ``topology`` object; ``fail(where, message)`` makes the error."""
    r = _Reader(obj, where, fail)
    if not isinstance(obj, dict):
        raise fail(where, "must be an object")
    if "graph" in obj and "operator" not in obj:
        from kssim.reference.model.graph.nodes import parse_graph

        return parse_graph(obj, fail, where)
    operator = r.get("operator", str, choices=tuple(OPERATOR_FIELDS))
    if "suppress" in obj and operator in STREAM_RESULT_OPERATORS:
        raise fail(r.path("suppress"), f"suppress exists only on a KTable (KTable#suppress); a {operator} "
                                       "produces a KStream")
    r.check_known(("operator",) + OPERATOR_FIELDS[operator])
    if operator == "stream_stream_join":
        w = r.sub("window")
        w.check_known(("before_ms", "after_ms", "grace_ms"))
        window = JoinWindowSpec(
            before_ms=w.get("before_ms", int),
            after_ms=w.get("after_ms", int),
            grace_ms=w.get("grace_ms", int, default=None, nullable=True),
        )
        return StreamStreamJoinSpec(
            join=r.get("join", str, choices=JOIN_TYPES_STREAM_STREAM),
            window=window,
            window_api=r.get("window_api", str, default="legacy", choices=WINDOW_APIS),
            **_joiner_fields(r),
        )
    if operator == "stream_table_join":
        return StreamTableJoinSpec(
            join=r.get("join", str, choices=JOIN_TYPES_STREAM_TABLE),
            table=_parse_table(r.sub("table") if "table" in obj else None),
            grace_ms=r.get("grace_ms", int, default=None, nullable=True),
            **_joiner_fields(r),
        )
    if operator == "table_table_join":
        return TableTableJoinSpec(
            join=r.get("join", str, choices=JOIN_TYPES_TABLE_TABLE),
            left_table=_parse_table(r.sub("left_table") if "left_table" in obj else None),
            right_table=_parse_table(r.sub("right_table") if "right_table" in obj else None),
            send_old_values=r.get("send_old_values", bool, default=False),
            suppress=_parse_suppress(r),
            **_joiner_fields(r),
        )
    if operator == "fk_join":
        return ForeignKeyJoinSpec(
            join=r.get("join", str, choices=JOIN_TYPES_FOREIGN_KEY),
            foreign_key=_parse_extractor(r.sub("foreign_key"), FK_EXTRACTOR),
            left_table=_parse_table(r.sub("left_table") if "left_table" in obj else None),
            right_table=_parse_table(r.sub("right_table") if "right_table" in obj else None),
            send_old_values=r.get("send_old_values", bool, default=False),
            suppress=_parse_suppress(r),
            **_joiner_fields(r),
        )
    if operator == "global_table_join":
        return GlobalTableJoinSpec(
            join=r.get("join", str, choices=JOIN_TYPES_GLOBAL_TABLE),
            key_mapper=_parse_extractor(r.sub("key_mapper"), KEY_MAPPER),
            **_joiner_fields(r),
        )
    if operator == "windowed_table_join":
        return WindowedTableJoinSpec(
            join=r.get("join", str, choices=JOIN_TYPES_TABLE_TABLE),
            window=_parse_time_window(r.sub("window")),
            left_aggregation=r.get("left_aggregation", str, default="count", choices=AGGREGATION_NAMES),
            right_aggregation=r.get("right_aggregation", str, default="count", choices=AGGREGATION_NAMES),
            shift_ms=r.get("shift_ms", int, default=0),
            merge_separator=r.get("merge_separator", str, default="+"),
            send_old_values=r.get("send_old_values", bool, default=False),
            suppress=_parse_suppress(r),
            **_joiner_fields(r),
        )
    common = dict(
        aggregation=r.get("aggregation", str, default="count", choices=AGGREGATION_NAMES),
        emit=r.get("emit", str, default="on_update", choices=EMIT_STRATEGIES),
        merge_separator=r.get("merge_separator", str, default="+"),
        send_old_values=r.get("send_old_values", bool, default=False),
        retention_ms=r.get("retention_ms", int, default=None, nullable=True),
        suppress=_parse_suppress(r),
    )
    if operator == "session_aggregate":
        return SessionAggregateSpec(gap_ms=r.get("gap_ms", int), grace_ms=r.get("grace_ms", int, nullable=True),
                                    **common)
    if operator == "window_aggregate":
        return WindowAggregateSpec(window=_parse_time_window(r), **common)
    return SlidingAggregateSpec(time_difference_ms=r.get("time_difference_ms", int),
                                grace_ms=r.get("grace_ms", int, nullable=True), **common)


def _parse_time_window(r: _Reader) -> TimeWindowSpec:
    """``size_ms``, ``advance_ms`` (default: the size, tumbling) and ``grace_ms`` of a time window,
    read from ``r`` (the topology itself for ``window_aggregate``, its ``window`` object for
    ``windowed_table_join``)."""
    if r.where != "topology":
        r.check_known(("size_ms", "advance_ms", "grace_ms"))
    size = r.get("size_ms", int)
    return TimeWindowSpec(size_ms=size, advance_ms=r.get("advance_ms", int, default=size),
                          grace_ms=r.get("grace_ms", int, nullable=True))


def _parse_suppress(r: _Reader) -> Optional[SuppressSpec]:
    if "suppress" not in r.obj:
        return None
    s = r.sub("suppress")
    s.check_known(("until", "time_limit_ms", "buffer"))
    until = s.get("until", str, choices=SUPPRESS_UNTIL)
    if until == "time_limit":
        time_limit = s.get("time_limit_ms", int)
    elif "time_limit_ms" in s.obj:
        raise s.fail(s.path("time_limit_ms"), "only untilTimeLimit takes a time limit (until: time_limit); "
                                             "untilWindowCloses waits for the window's end plus its grace")
    else:
        time_limit = None
    buffer = SuppressBufferSpec()
    if "buffer" in s.obj:
        b = s.sub("buffer")
        b.check_known(("max_records", "max_bytes", "when_full"))
        buffer = SuppressBufferSpec(max_records=b.get("max_records", int, default=None, nullable=True),
                                    max_bytes=b.get("max_bytes", int, default=None, nullable=True),
                                    when_full=b.get("when_full", str, default="shut_down", choices=SUPPRESS_WHEN_FULL))
    return SuppressSpec(until=until, time_limit_ms=time_limit, buffer=buffer)


def check_topology(spec, profile: Profile, store: Optional[str] = None) -> None:
    """Reject what Kafka Streams' API (of the modelled release) rejects, as TopologyError.

    ``store`` ("rocksdb"/"in_memory", the scenario's ``config.store``) is checked where the release
    could not build the join on it. A graph is compiled (:func:`reference.model.graph.plan.compile_graph`),
    which checks every node."""
    if spec.operator == "graph":
        from kssim.reference.model.graph.plan import compile_graph

        compile_graph(spec, profile, store or "rocksdb")
        return
    if isinstance(spec, StreamStreamJoinSpec):
        _check_join_windows(spec, profile)
        if store == "in_memory" and not profile.stream_joined_store_suppliers:
            # StreamJoined (KIP-479) is the only way to give a stream-stream join in-memory stores
            raise TopologyError("config.store", "a stream-stream join can use in-memory stores only through "
                                f"StreamJoined (KIP-479, Kafka 2.4+); modelled release {profile.release}")
    elif isinstance(spec, StreamTableJoinSpec):
        if spec.join == "inner" and not profile.kip77_join_semantics:
            # KIP-77 added KStream#join(KTable) in 0.10.2
            raise TopologyError("topology.join", "a stream-table inner join does not exist before Kafka 0.10.2 "
                                f"(modelled release {profile.release}); only leftJoin")
        _check_table(spec.table, "topology.table", profile)
        if spec.grace_ms is not None:
            if not profile.stream_table_grace:
                raise TopologyError("topology.grace_ms", f"Joined.withGracePeriod does not exist before Kafka 3.6 (modelled release {profile.release})")
            if spec.grace_ms < 0:
                raise TopologyError("topology.grace_ms", f"the grace period must not be negative, got {spec.grace_ms}")
            if not spec.table.versioned:
                # KStreamKTableJoin#init (KIP-923)
                raise TopologyError("topology.grace_ms", "a grace period on a stream-table join needs a versioned table (Kafka: 'KTable must be versioned to use a grace period in a stream table join')")
            if spec.table.history_retention_ms < spec.grace_ms:
                raise TopologyError("topology.table.history_retention_ms", f"history retention {spec.table.history_retention_ms} ms is below the join's grace period {spec.grace_ms} ms; Kafka rejects this topology")
    elif isinstance(spec, TableTableJoinSpec):
        _check_table(spec.left_table, "topology.left_table", profile)
        _check_table(spec.right_table, "topology.right_table", profile)
    elif isinstance(spec, ForeignKeyJoinSpec):
        if not profile.foreign_key_joins:
            raise TopologyError("topology.operator", "foreign-key table joins (KIP-213) do not exist before Kafka 2.4 "
                                f"(modelled release {profile.release})")
        if spec.foreign_key.source == "key" and not profile.fk_extractor_with_key:
            raise TopologyError("topology.foreign_key.from", "an FK extractor that reads the key (KIP-1104's "
                                f"BiFunction) does not exist before Kafka 4.0 (modelled release {profile.release})")
        if spec.send_old_values and not profile.fk_result_old_values:
            raise TopologyError("topology.send_old_values", "before Kafka 2.4.1 (KAFKA-9500) an FK join whose result "
                                "is not materialized cannot send old values downstream: the result's store is never "
                                f"added to the topology (modelled release {profile.release})")
        _check_table(spec.left_table, "topology.left_table", profile)
        _check_table(spec.right_table, "topology.right_table", profile)
    elif isinstance(spec, GlobalTableJoinSpec):
        if not profile.global_table_joins:
            raise TopologyError("topology.operator", "GlobalKTable joins (KIP-99) do not exist before Kafka 0.10.2 "
                                f"(modelled release {profile.release})")
    elif isinstance(spec, SessionAggregateSpec):
        if not profile.session_windows:
            raise TopologyError("topology.operator", "session windows (KIP-94) do not exist before Kafka 0.10.2 "
                                f"(modelled release {profile.release})")
        if spec.gap_ms <= 0:
            # SessionWindows.ofInactivityGap*: "Gap time cannot be zero or negative."
            raise TopologyError("topology.gap_ms", f"the inactivity gap must be above 0 ms, got {spec.gap_ms}")
        _check_grace(spec.grace_ms, "topology.grace_ms", profile, "SessionWindows.with(gap)")
        session = session_window_settings(profile, spec.gap_ms, spec.grace_ms, spec.retention_ms)
        _check_windowed_aggregate(spec, profile, minimum_retention=session.minimum_retention_ms,
                                  retention_rule="gap_ms + grace_ms")
        _check_session_fits_maintain(spec, session)
    elif isinstance(spec, WindowAggregateSpec):
        _check_time_window(spec.window, "topology", profile)
        settings = time_window_settings(profile, spec.window.size_ms, spec.window.grace_ms, spec.retention_ms)
        _check_windowed_aggregate(spec, profile, minimum_retention=spec.window.size_ms + (settings.grace_ms or 0),
                                  retention_rule="size_ms + grace_ms")
        _check_time_window_fits_maintain(spec.window, settings, "topology.grace_ms")
    elif isinstance(spec, SlidingAggregateSpec):
        if not profile.sliding_windows:
            raise TopologyError("topology.operator", "sliding windows (KIP-450) do not exist before Kafka 2.7 "
                                f"(modelled release {profile.release})")
        if spec.time_difference_ms < 0:
            # SlidingWindows.ofTimeDifference*: "Window time difference must not be negative."
            raise TopologyError("topology.time_difference_ms",
                                f"the time difference must not be negative, got {spec.time_difference_ms}")
        if spec.grace_ms is None:
            raise TopologyError("topology.grace_ms", "sliding windows always have an explicit grace "
                                "(ofTimeDifferenceAndGrace; 0 for ofTimeDifferenceWithNoGrace)")
        if spec.grace_ms < 0:
            raise TopologyError("topology.grace_ms", f"the grace period must not be negative, got {spec.grace_ms}")
        _check_windowed_aggregate(spec, profile, minimum_retention=2 * spec.time_difference_ms + spec.grace_ms,
                                  retention_rule="2 * time_difference_ms + grace_ms")
    elif isinstance(spec, WindowedTableJoinSpec):
        _check_time_window(spec.window, "topology.window", profile)
        _check_time_window_fits_maintain(spec.window, time_window_settings(profile, spec.window.size_ms,
                                                                           spec.window.grace_ms, None),
                                         "topology.window.grace_ms")
        _check_window_shift(spec, profile)
    if store == "in_memory" and isinstance(spec, WINDOWED_AGGREGATE_SPECS + (WindowedTableJoinSpec,)) \
            and not profile.in_memory_window_stores:
        raise TopologyError("config.store", "in-memory window and session stores (Stores.inMemoryWindowStore, "
                            "KAFKA-4730; inMemorySessionStore, KAFKA-8029) do not exist before Kafka 2.3 "
                            f"(modelled release {profile.release})")
    if getattr(spec, "suppress", None) is not None:
        _check_suppress(spec, profile)
    _check_sums_fit_a_long(spec)


def _window_sums(spec):
    """(field, text, value) of the sums Kafka computes from a topology's durations in Java longs
    (window size, size + grace as the stores' retention, ...)."""
    grace = getattr(spec, "grace_ms", None) or 0
    if isinstance(spec, StreamStreamJoinSpec):
        w = spec.window
        size = w.before_ms + w.after_ms
        return [("topology.window.after_ms", "before_ms + after_ms", size),
                ("topology.window.grace_ms", "before_ms + after_ms + grace_ms", size + (w.grace_ms or 0))]
    if isinstance(spec, (WindowAggregateSpec, WindowedTableJoinSpec)):
        sums = [("topology.window.grace_ms", "size_ms + grace_ms", spec.window.size_ms + (spec.window.grace_ms or 0))]
        if isinstance(spec, WindowedTableJoinSpec):
            sums.append(("topology.shift_ms", "shift_ms + size_ms", spec.shift_ms + spec.window.size_ms))
        return sums
    if isinstance(spec, SessionAggregateSpec):
        return [("topology.grace_ms", "gap_ms + grace_ms", spec.gap_ms + grace)]
    if isinstance(spec, SlidingAggregateSpec):
        return [("topology.grace_ms", "2 * time_difference_ms + grace_ms", 2 * spec.time_difference_ms + grace)]
    return []


def _check_sums_fit_a_long(spec) -> None:
    # Kafka's arithmetic would overflow (and wrap) beyond a Java long: kssim does not model that
    for field, text, value in _window_sums(spec):
        if value > JAVA_LONG_MAX:
            raise TopologyError(field, f"{text} = {value} does not fit in a Java long (at most {JAVA_LONG_MAX}): "
                                "Kafka's window arithmetic would overflow")


def _check_grace(grace_ms: Optional[int], field: str, profile: Profile, legacy_builder: str) -> None:
    if grace_ms is None:
        if profile.legacy_window_builders_removed:
            raise TopologyError(field, f"{legacy_builder} and its default grace were removed in Kafka 4.0 "
                                "(KAFKA-16332); give grace_ms (0 for no grace) as ofSizeAndGrace / "
                                f"ofInactivityGapAndGrace do (modelled release {profile.release})")
        return
    if not profile.windowed_grace:
        raise TopologyError(field, "window grace periods (KIP-328) do not exist before Kafka 2.1 "
                            f"(modelled release {profile.release}); use grace_ms: null")
    if grace_ms < 0:
        raise TopologyError(field, f"the grace period must not be negative, got {grace_ms}")


def _check_time_window(window: TimeWindowSpec, where: str, profile: Profile) -> None:
    if window.size_ms <= 0:
        # TimeWindows.ofSize*: "Window size must be larger than zero."
        raise TopologyError(f"{where}.size_ms", f"the window size must be above 0 ms, got {window.size_ms}")
    if window.advance_ms <= 0 or window.advance_ms > window.size_ms:
        # TimeWindows#advanceBy: "Window advancement interval should be more than zero and less than
        # window duration"
        raise TopologyError(f"{where}.advance_ms", f"the advance must be above 0 and at most the window size "
                            f"{window.size_ms} ms, got {window.advance_ms}")
    _check_grace(window.grace_ms, f"{where}.grace_ms", profile, "TimeWindows.of(size)")
    _check_windows_per_record(window, where)


#: the most hopping windows one record may fall into (size / advance) before kssim refuses the
#: topology as too costly to run (Kafka would run it, one store write per window per record);
#: ``KSSIM_MAX_WINDOWS_PER_RECORD`` raises it
MAX_WINDOWS_PER_RECORD = 100_000


def max_windows_per_record() -> int:
    """The bound in force: :data:`MAX_WINDOWS_PER_RECORD`, or the environment's
    ``KSSIM_MAX_WINDOWS_PER_RECORD`` (a positive integer)."""
    import os

    text = os.environ.get("KSSIM_MAX_WINDOWS_PER_RECORD")
    if text is None:
        return MAX_WINDOWS_PER_RECORD
    try:
        bound = int(text)
    except ValueError:
        bound = 0
    if bound < 1:
        raise TopologyError("", f"KSSIM_MAX_WINDOWS_PER_RECORD must be a positive integer, got {text!r}")
    return bound


def _check_windows_per_record(window: TimeWindowSpec, where: str) -> None:
    """A hopping window whose size is a huge multiple of its advance puts each record into that
    many windows: refused with the cost named, rather than run until memory runs out."""
    per_record = -(-window.size_ms // window.advance_ms)
    bound = max_windows_per_record()
    if per_record > bound:
        raise TopologyError(f"{where}.advance_ms", f"each record falls into size {window.size_ms} / advance "
                            f"{window.advance_ms} = {per_record:,} windows (one store write and one result each); "
                            f"kssim runs at most {bound:,} windows per record: set the environment variable "
                            "KSSIM_MAX_WINDOWS_PER_RECORD to raise the bound")


def _check_time_window_fits_maintain(window: TimeWindowSpec, settings, field: str) -> None:
    """2.1-2.8 without ``Materialized#withRetention``: the store keeps ``Windows#maintainMs``
    (``max(1 day, size)``), and TimeWindowedKStreamImpl rejects a window whose size + grace
    exceeds it (KAFKA-7106 made the default retention size + grace in 3.0)."""
    if settings.maintain_ms and settings.grace_ms is not None and window.grace_ms is not None \
            and window.size_ms + window.grace_ms > settings.retention_ms:
        raise TopologyError(field, f"size {window.size_ms} + grace {window.grace_ms} ms exceeds the window store's "
                            f"retention Windows#maintainMs = max(1 day, size) = {settings.retention_ms} ms; Kafka "
                            "rejects this topology before 3.0 unless retention_ms (Materialized#withRetention) "
                            "covers it")


def _check_session_fits_maintain(spec: "SessionAggregateSpec", session) -> None:
    """2.1-2.8 without ``Materialized#withRetention``: the session store keeps
    ``SessionWindows#maintainMs`` (``max(1 day, gap)``), and ``SessionWindowedKStreamImpl#materialize``
    rejects a gap + grace above it (KAFKA-7106 made the default retention gap + grace in 3.0)."""
    if session.maintain_ms and session.grace_ms is not None and spec.grace_ms is not None \
            and spec.gap_ms + spec.grace_ms > session.retention_ms:
        raise TopologyError("topology.grace_ms", f"gap {spec.gap_ms} + grace {spec.grace_ms} ms exceeds the session "
                            f"store's retention SessionWindows#maintainMs = max(1 day, gap) = {session.retention_ms} "
                            "ms; Kafka rejects this topology before 3.0 unless retention_ms "
                            "(Materialized#withRetention) covers it")


def _check_window_shift(spec: "WindowedTableJoinSpec", profile: Profile) -> None:
    if spec.shift_ms == 0:
        return
    if not profile.kstream_to_table:
        # the shifted right table is built with KStream#toTable (KIP-523)
        raise TopologyError("topology.shift_ms", "a shifted windowed-table join turns the shifted right stream "
                            "back into a table with KStream#toTable (KIP-523), which does not exist before Kafka 2.5 "
                            f"(modelled release {profile.release})")
    if spec.shift_ms < 0:
        # new TimeWindow(start + shift, ...) throws for a negative start: the first windows would kill the app
        raise TopologyError("topology.shift_ms", f"shift_ms must not be negative, got {spec.shift_ms}: the shifted "
                            "window of a right window starting before -shift_ms would have a negative start, which "
                            "TimeWindow rejects (the mapper throws and the application dies)")


def _check_windowed_aggregate(spec, profile: Profile, minimum_retention: int, retention_rule: str) -> None:
    if spec.emit == "on_window_close" and not profile.emit_on_window_close:
        raise TopologyError("topology.emit", "EmitStrategy.onWindowClose (KIP-825) does not exist before Kafka 3.3 "
                            f"(modelled release {profile.release})")
    if spec.retention_ms is not None:
        if not profile.windowed_grace:
            raise TopologyError("topology.retention_ms", "Materialized#withRetention (KIP-328) does not exist "
                                f"before Kafka 2.1 (modelled release {profile.release})")
        if spec.retention_ms < minimum_retention:
            # the store materializers: "The retention period of the window store ... must be no smaller than
            # its window size plus the grace period"
            raise TopologyError("topology.retention_ms", f"the store retention {spec.retention_ms} ms is below "
                                f"{retention_rule} = {minimum_retention} ms; Kafka rejects this topology")


def _check_suppress(spec, profile: Profile) -> None:
    """What ``KTableImpl#suppress`` and the ``Suppressed`` API reject. Kafka checks no number: a
    negative time limit or buffer bound is accepted (a negative limit evicts at once, a negative
    bound is always exceeded), so kssim accepts them too."""
    suppress = spec.suppress
    if not profile.suppress_operator:
        raise TopologyError("topology.suppress", "KTable#suppress (KIP-328) does not exist before Kafka 2.1 "
                            f"(modelled release {profile.release})")
    if suppress.until == "window_close":
        if spec.operator not in WINDOWED_RESULT_OPERATORS:
            # GraphGraceSearchUtil.findAndVerifyWindowGrace
            raise TopologyError("topology.suppress.until", "Suppressed.untilWindowCloses needs a windowed KTable "
                                f"(Kafka: 'Window close time is only defined for windowed computations'); a "
                                f"{spec.operator} result is not windowed: use until: time_limit")
        if suppress.buffer.when_full == "emit_early":
            # untilWindowCloses takes a StrictBufferConfig: emitEarlyWhenFull would emit non-final results
            raise TopologyError("topology.suppress.buffer.when_full", "untilWindowCloses takes a strict buffer "
                                "(unbounded or shutDownWhenFull); emitEarlyWhenFull would emit non-final results")
    if spec.send_old_values and not profile.suppress_enables_old_values:
        # 2.1-2.2: the suppressed KTable's processor supplier is no KTableProcessorSupplier, and
        # KTableImpl#enableSendingOldValues casts it (KAFKA-8199 added KTableSuppressProcessorSupplier)
        raise TopologyError("topology.send_old_values", "before Kafka 2.3 (KAFKA-8199) a suppressed KTable cannot "
                            "feed a downstream that needs old values (ClassCastException when the topology is "
                            f"built; modelled release {profile.release})")
    if spec.operator == "fk_join" and profile.suppress_enables_old_values and not profile.fk_result_old_values:
        # suppress asks its parent for old values (KAFKA-8199); 2.4.0's FK join result cannot send them
        raise TopologyError("topology.suppress", "in Kafka 2.4.0 an FK join's result cannot be suppressed: suppress "
                            "asks it for old values, and the result store that needs is never added to the "
                            "topology (KAFKA-9500, fixed in 2.4.1)")


def _check_table(table: TableSpec, field: str, profile: Profile) -> None:
    if table.versioned and not profile.versioned_tables:
        raise TopologyError(field + ".versioned", f"versioned tables (KIP-889) do not exist before Kafka 3.5 (modelled release {profile.release})")


def _check_join_windows(spec: StreamStreamJoinSpec, profile: Profile) -> None:
    w = spec.window
    if w.before_ms + w.after_ms < 0:
        # JoinWindows#before/#after
        raise TopologyError("topology.window", f"the window size before_ms + after_ms must not be negative, got {w.before_ms} + {w.after_ms}")
    if spec.window_api == "time_difference":
        if not profile.time_difference_windows:
            raise TopologyError("topology.window_api", f"JoinWindows.ofTimeDifference* (KIP-633) does not exist before Kafka 3.1 (modelled release {profile.release})")
        if w.grace_ms is None:
            raise TopologyError("topology.window.grace_ms", "ofTimeDifferenceAndGrace needs a grace period (0 for ofTimeDifferenceWithNoGrace)")
    elif not profile.join_window_grace:
        if w.grace_ms is not None:
            raise TopologyError("topology.window.grace_ms", f"JoinWindows#grace (KIP-328) does not exist before Kafka 2.1 (modelled release {profile.release}); use grace_ms: null")
        size = w.before_ms + w.after_ms
        if size + 1 > DEFAULT_WINDOW_RETENTION_MS:
            # KStreamJoinWindow: the stores keep JoinWindows#maintainMs() (1 day), which must exceed the window
            raise TopologyError("topology.window", f"before Kafka 2.1 a join window of {size} ms does not fit the "
                                "1-day retention (KStreamJoinWindow: retention must be at least the window size + 1)")
    if w.grace_ms is not None and w.grace_ms < 0:
        raise TopologyError("topology.window.grace_ms", f"the grace period must not be negative, got {w.grace_ms}")
