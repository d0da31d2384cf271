"""Per-scenario settings of a session aggregation, as ``configs`` columns (driver side, no Spark).

``config_fields(scenario)`` turns a scenario's ``SessionWindows``, store, emit strategy and the
release's rules (read from the profile by name, never by version) into plain columns, read per row
by ``session.py`` (many scenarios per job). A column that carries a session rule is named as the
rule (``reference.model.profiles.RULES``); the store rules several families share are folded on the
driver into the store models below (their names in the comments), so the configs frame never has
two columns of one name. Scenarios of other operators get nulls. ``CONFIG_DDL`` is their schema,
appended to ``spark_backend.runtime.inputs.CONFIG_DDL``.

Grace, close offset and retention come from the shared model's
``reference.model.profiles.session_window_settings`` (one definition per release). The session
store (``RocksDBSegmentedBytesStore`` over ``SessionKeySchema``, the time-ordered
``RocksDBTimeOrderedSessionSegmentedBytesStore`` under emit-on-window-close, or
``InMemorySessionStore``) hides old sessions by their end time; which ones, is a *store model*
(``windows/store_models.py``) for each of the three ways the aggregation reads or writes it.
"""
from __future__ import annotations

import attrs

from kssim.reference.model.profiles import session_window_settings
from kssim.spark_backend.runtime.config_columns import config_columns
from kssim.spark_backend.windows.store_models import (BY_CLOCK, BY_LIVE_SEGMENTS, BY_NEWEST_SEGMENTS, NONE,
                                                segment_interval)

#: name, Spark type, and what the column means (a release rule's column is named as the rule)
_COLUMNS = (
    ("sw_gap", "BIGINT", "SessionWindows#inactivityGap"),
    ("sw_close_offset", "BIGINT", "how far the close time trails the stream time (grace [+ gap]); null "
                                  "before 2.1: no record is late (session_window_settings)"),
    ("sw_retention", "BIGINT", "the session store's retention (session_window_settings)"),
    ("sw_segment", "BIGINT", "the RocksDB store's segment interval"),
    ("sw_final", "BOOLEAN", "EmitStrategy.onWindowClose (emit_on_window_close; the loader rejects it before 3.3)"),
    ("sw_in_memory", "BOOLEAN", "in-memory session store (in_memory_window_stores; rejected before 2.3)"),
    ("sw_agg", "STRING", "the named aggregation"),
    ("sw_merge_sep", "STRING", "the session merger's separator"),
    ("sw_fetch_model", "INT", "which sessions findSessions(key, ...) still sees (store_models)"),
    ("sw_put_model", "INT", "which session puts the store still keeps (store_models)"),
    ("sw_emit_model", "INT", "which sessions the emit-final range fetch still sees (store_models)"),
    ("sw_aggregate_first", "BOOLEAN", "before 2.1 (windowed_grace) the aggregator ran before the merged "
                                      "sessions were removed and their tombstones forwarded"),
    ("sw_per_task", "BOOLEAN", "the store's clock couples the keys of a task: replay the task in one pass"),
    ("sw_task_clock", "BOOLEAN", "2.1: the close time and the RocksDB segments follow the task's stream time"),
    ("sw_from_first_segment", "BOOLEAN", "0.10.2: lookups skip segments older than the store's first "
                                         "(rocksdb_fetch_from_first_segment, Segments#minSegmentId)"),
    ("session_own_stream_time", "BOOLEAN", "KAFKA-7895"),
    ("session_late_before_close", "BOOLEAN", "KAFKA-8289"),
    ("session_output_ts_window_end", "BOOLEAN", "KAFKA-6455"),
    ("session_fetch_end_bounded", "BOOLEAN", "KAFKA-7652"),
    ("session_emit_final_iterator_leak", "BOOLEAN", "HOTFIX #14624"),
    ("zero_cache_strips_caching_layer", "BOOLEAN", "KAFKA-6998"),
    ("session_cache_finds_previous", "BOOLEAN", "KAFKA-5172"),
)
#: the DDL, the column names, and the release-rule columns (read from the profile by their own name)
CONFIG_DDL, CONFIG_COLUMNS, RULE_COLUMNS = config_columns(_COLUMNS, first_rule="session_own_stream_time")
#: not a column: the aggregation itself, for the Python API's callables (``Features.of``)
AGGREGATION_KEY = "_sw_aggregation"
#: what the sequential replay reads of a scenario's config row: its session columns and whether
#: it sends old values
REPLAY_SETTINGS = CONFIG_COLUMNS + ("send_old",)


def store_models(profile, in_memory: bool, final: bool):
    """``(fetch, put, emit)`` store models of a session store (``store_models``)."""
    if in_memory:
        # InMemorySessionStore (2.3+): removeExpiredSegments drops every session ending before
        # observedStreamTime - retention + 1 before each fetch; a put ending at or before
        # observedStreamTime - retention is skipped
        return BY_CLOCK, BY_CLOCK, BY_CLOCK if final else NONE
    if not profile.rocksdb_segments_by_retention:
        # [rocksdb_segments_by_retention] before 2.1 the store keeps its three newest segments
        return BY_NEWEST_SEGMENTS, BY_NEWEST_SEGMENTS, NONE
    # [window_fetch_hides_expired] KAFKA-12960 (3.4): the fetch also hides sessions ending before
    # observedStreamTime - retention + 1 (getActualFrom); before, only dropped segments are gone.
    # The emit-final range fetch (fetchSessions of the time-ordered store) never got that filter.
    fetch = BY_CLOCK if profile.window_fetch_hides_expired else BY_LIVE_SEGMENTS
    return fetch, BY_LIVE_SEGMENTS, BY_LIVE_SEGMENTS if final else NONE


def config_fields(scenario) -> dict:
    """The session columns of one scenario (all null unless it is a ``session_aggregate``)."""
    spec, profile, config = scenario.topology, scenario.profile, scenario.config
    if spec.operator != "session_aggregate":
        return {name: None for name in CONFIG_COLUMNS}
    # [session_windows] KIP-94: the loader rejects session windows before 0.10.2, and a null grace
    # (SessionWindows.with(gap)) from 4.0 on [legacy_window_builders_removed]; grace, close offset and
    # retention [windowed_grace, session_close_includes_gap, session_retention_gap_plus_grace] are
    # the shared model's
    settings = session_window_settings(profile, spec.gap_ms, spec.grace_ms, spec.retention_ms)
    in_memory = config.store == "in_memory"
    final = spec.emit == "on_window_close"
    fetch, put, emit = store_models(profile, in_memory, final)
    fields = {
        "sw_gap": spec.gap_ms, "sw_close_offset": settings.close_offset_ms, "sw_retention": settings.retention_ms,
        "sw_segment": segment_interval(settings.retention_ms),
        "sw_final": final, "sw_in_memory": in_memory,
        "sw_agg": spec.aggregation if isinstance(spec.aggregation, str) else None,
        "sw_merge_sep": spec.merge_separator,
        "sw_fetch_model": fetch, "sw_put_model": put, "sw_emit_model": emit,
        # [windowed_grace] KIP-328 (2.1) reordered KStreamSessionWindowAggregate#process
        "sw_aggregate_first": not profile.windowed_grace,
        # 2.1 (before session_own_stream_time) a RocksDB store's segments expire by the task's
        # stream time at its last put, which depends on which records of other keys were late;
        # 3.3-3.6.0 (session_emit_final_iterator_leak) an in-memory store stops expiring at the
        # emit-final iterators it leaks, which depend on every key's sessions
        # [session_own_stream_time] KAFKA-7895 (2.2); before 2.1 there is no close time, and the
        # store's segments follow its own clock, the largest session end put
        "sw_task_clock": profile.windowed_grace and not profile.session_own_stream_time,
        # [rocksdb_fetch_from_first_segment] KAFKA-4851 (0.10.2.1) until KAFKA-5771 (0.11.0.1)
        "sw_from_first_segment": profile.rocksdb_fetch_from_first_segment and not in_memory,
        "sw_per_task": bool((profile.windowed_grace and not profile.session_own_stream_time and not in_memory)
                            or (in_memory and final and profile.session_emit_final_iterator_leak)),
    }
    fields.update((rule, getattr(profile, rule)) for rule in RULE_COLUMNS)
    fields[AGGREGATION_KEY] = spec.aggregation
    return fields


@attrs.frozen
class Features:
    """Which optional parts of the session aggregation a batch needs (read on the driver from the
    config rows, so a job only contains the branches its scenarios use)."""

    #: emit-on-window-close computed set-based from the per-key replays' session versions
    final_per_key: bool = True
    #: ``((sid, Aggregation), ...)``: the Python API's aggregations (named ones are rebuilt from
    #: their name on the executors)
    callables: tuple = ()
    #: ``((sid, ((column, value), ...)), ...)``: each scenario's ``REPLAY_SETTINGS``, shipped with the
    #: replay (``session_replay``) instead of riding along every record
    settings: tuple = ()

    @classmethod
    def of(cls, config_rows):
        rows = [r for r in config_rows if r.get("sw_gap") is not None]
        return cls(final_per_key=any(r["sw_final"] and not r["sw_per_task"] for r in rows),
                   callables=tuple((r["sid"], r[AGGREGATION_KEY]) for r in rows if r["sw_agg"] is None),
                   settings=tuple((r["sid"], tuple((c, r[c]) for c in REPLAY_SETTINGS)) for r in rows))
