"""Topology specs: what a scenario (or the Python API) asks Kafka Streams to build.

One frozen ``attrs`` class per operator. ``parse_topology`` turns the scenario file's
``topology`` object into a spec and names the field of anything it cannot read;
``check_topology`` rejects, in our words, what Kafka's own API would reject for the modelled
release (negative windows, grace on an unversioned stream-table join, history retention below
grace, APIs that did not exist yet).
"""
from __future__ import annotations

from typing import Callable, Optional

import attrs

from reference.model.errors import TopologyError
from reference.model.profiles import DEFAULT_WINDOW_RETENTION_MS, Profile

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
    operator: str = attrs.field(default="table_table_join", init=False)


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
                             f"the {'foreign key' if extractor.source == 'value' else 'key'} extractor reads field "
                             f"{extractor.field!r} of the record's {extractor.source}, which must be an object, "
                             f"got {source!r}")
    if extractor.field not in source:
        raise ExtractorError(f"{extractor.source}.{extractor.field}",
                             f"missing field {extractor.field!r} that the extractor reads (a null FK is written "
                             f"as \"{extractor.field}\": null)")
    return source[extractor.field]


def check_extractable(extractor: KeyExtractorSpec, key, value) -> None:
    """Raise :class:`ExtractorError` unless a ``left`` record has what ``extractor`` reads; a
    record with nothing to extract from (a null value for a value extractor, a null key for a key
    extractor: a tombstone, or a record the table source drops) passes."""
    if (value if extractor.source == "value" else key) is None:
        return
    extract_key(extractor, key, value)


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


@attrs.frozen
class OtherOperatorSpec:
    """An operator of the scenario format that the join engines of this release of kssim do not
    build yet (FK joins, windowed aggregations). Its fields are kept as read."""

    operator: str
    fields: dict = attrs.field(eq=False)


# Fields each operator accepts (besides "operator"); the scenario contract's table.
_COMMON_JOIN_FIELDS = ("join", "joiner", "joiner_separator")
_AGG_FIELDS = ("aggregation", "emit", "merge_separator", "send_old_values")
OPERATOR_FIELDS = {
    "stream_stream_join": _COMMON_JOIN_FIELDS + ("window", "window_api"),
    "stream_table_join": _COMMON_JOIN_FIELDS + ("grace_ms", "table"),
    "table_table_join": _COMMON_JOIN_FIELDS + ("left_table", "right_table", "send_old_values"),
    "fk_join": _COMMON_JOIN_FIELDS + ("foreign_key", "left_table", "right_table", "send_old_values"),
    "global_table_join": _COMMON_JOIN_FIELDS + ("key_mapper",),
    "session_aggregate": _AGG_FIELDS + ("gap_ms", "grace_ms"),
    "window_aggregate": _AGG_FIELDS + ("size_ms", "advance_ms", "grace_ms"),
    "sliding_aggregate": _AGG_FIELDS + ("time_difference_ms", "grace_ms"),
    "windowed_table_join": _COMMON_JOIN_FIELDS
    + ("window", "left_aggregation", "right_aggregation", "shift_ms", "send_old_values", "merge_separator"),
}

#: Input topics each operator reads.
OPERATOR_INPUT_TOPICS = {
    "stream_stream_join": ("left", "right"),
    "stream_table_join": ("left", "right"),
    "table_table_join": ("left", "right"),
    "fk_join": ("left", "right"),
    "global_table_join": ("left", "right"),
    "windowed_table_join": ("left", "right"),
    "session_aggregate": ("input",),
    "window_aggregate": ("input",),
    "sliding_aggregate": ("input",),
}


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
            raise self.fail(self.path(name), f"must be an integer number of milliseconds, got {value!r}")
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


def _parse_extractor(reader: _Reader) -> KeyExtractorSpec:
    reader.check_known(("from", "field"))
    source = reader.get("from", str, default="value", choices=KEY_SOURCES)
    field = reader.get("field", str, default=None, nullable=source == "key")
    return KeyExtractorSpec(source=source, field=field)


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
    operator = r.get("operator", str, choices=tuple(OPERATOR_FIELDS))
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
            **_joiner_fields(r),
        )
    if operator == "fk_join":
        return ForeignKeyJoinSpec(
            join=r.get("join", str, choices=JOIN_TYPES_FOREIGN_KEY),
            foreign_key=_parse_extractor(r.sub("foreign_key")),
            left_table=_parse_table(r.sub("left_table") if "left_table" in obj else None),
            right_table=_parse_table(r.sub("right_table") if "right_table" in obj else None),
            send_old_values=r.get("send_old_values", bool, default=False),
            **_joiner_fields(r),
        )
    if operator == "global_table_join":
        return GlobalTableJoinSpec(
            join=r.get("join", str, choices=JOIN_TYPES_GLOBAL_TABLE),
            key_mapper=_parse_extractor(r.sub("key_mapper")),
            **_joiner_fields(r),
        )
    return OtherOperatorSpec(operator=operator, fields=dict(obj))


def check_topology(spec, profile: Profile, store: Optional[str] = None) -> None:
    """Reject what Kafka Streams' API (of the modelled release) rejects, as TopologyError.

    ``store`` ("rocksdb"/"in_memory", the scenario's ``config.store``) is checked where the release
    could not build the join on it."""
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
