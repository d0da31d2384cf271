"""Per-scenario settings of a sliding-window aggregation, as ``configs`` columns (driver side, no Spark).

``config_fields(scenario)`` turns a scenario's ``SlidingWindows``, store, emit strategy and the
release's rules (read from the profile by name, never by version) into plain columns, read per row
by ``sliding.py`` (many scenarios per job). A column that carries a sliding-window rule is named as
the rule (``reference.model.profiles.RULES``); the store rules several families share are folded on
the driver into store models (``store_models``, their names in the comments below). Scenarios of
other operators get nulls. ``CONFIG_DDL`` is their schema, appended to
``spark_backend.runtime.inputs.CONFIG_DDL``.

The store: ``Stores.persistentTimestampedWindowStore(retention, windowSize = time difference,
retainDuplicates = false)`` (``RocksDBSegmentedBytesStore`` over ``WindowKeySchema``, keyed by the
window *start*), the indexed time-ordered ``RocksDBTimeOrderedWindowSegmentedBytesStore`` under
emit-on-window-close (3.3+), or ``InMemoryWindowStore``; retention from the shared model's
``reference.model.profiles.sliding_window_retention``.
"""
from __future__ import annotations

import attrs

from kssim.reference.model.profiles import sliding_window_retention
from kssim.spark_backend.runtime.config_columns import config_columns
from kssim.spark_backend.windows.store_models import (BY_CLOCK, BY_CLOCK_INCLUSIVE, BY_LIVE_SEGMENTS, NONE,
                                                segment_interval)

#: name, Spark type, and what the column means (a release rule's column is named as the rule)
_COLUMNS = (
    ("sl_diff", "BIGINT", "SlidingWindows#timeDifferenceMs"),
    ("sl_grace", "BIGINT", "SlidingWindows#gracePeriodMs"),
    ("sl_retention", "BIGINT", "the window store's retention (sliding_window_retention)"),
    ("sl_segment", "BIGINT", "the RocksDB store's segment interval"),
    ("sl_final", "BOOLEAN", "EmitStrategy.onWindowClose (emit_on_window_close; the loader rejects it before 3.3)"),
    ("sl_agg", "STRING", "the named aggregation"),
    ("sl_in_memory", "BOOLEAN", "in-memory window store"),
    ("sl_fetch_model", "INT", "which windows the per-key fetch still sees (store_models)"),
    ("sl_put_model", "INT", "which window puts the store keeps (store_models)"),
    ("sl_emit_model", "INT", "which windows the emit-final fetchAll still sees (store_models)"),
    ("sliding_window_close_inclusive", "BOOLEAN", "KAFKA-13739"),
    ("sliding_late_check_by_window_end", "BOOLEAN", "KAFKA-13785"),
)
#: the DDL, the column names, and the release-rule columns (read from the profile by their own name)
CONFIG_DDL, CONFIG_COLUMNS, RULE_COLUMNS = config_columns(_COLUMNS, first_rule="sliding_window_close_inclusive")
#: not a column: the aggregation itself, for the Python API's callables (``Features.of``)
AGGREGATION_KEY = "_sl_aggregation"


def store_models(profile, in_memory: bool, final: bool):
    """``(fetch, put, emit)`` store models of a sliding-window store (``store_models``)."""
    if in_memory:
        # InMemoryWindowStore: removeExpiredSegments and minTime = observedStreamTime - retention + 1;
        # a put at or before observedStreamTime - retention is skipped
        return BY_CLOCK, BY_CLOCK, BY_CLOCK if final else NONE
    if final:
        # [window_fetch_hides_expired] KAFKA-12960 (3.4): the time-ordered store's getActualFrom is
        # observedStreamTime - retention for its time-first window schema (no + 1), for the per-key
        # fetch (and the index's base-store get) and for fetchAll; 3.3: live segments only
        seen = BY_CLOCK_INCLUSIVE if profile.window_fetch_hides_expired else BY_LIVE_SEGMENTS
        return seen, BY_LIVE_SEGMENTS, seen
    fetch = BY_CLOCK if profile.window_fetch_hides_expired else BY_LIVE_SEGMENTS
    return fetch, BY_LIVE_SEGMENTS, NONE


def config_fields(scenario) -> dict:
    """The sliding-window columns of one scenario (all null unless it is a ``sliding_aggregate``)."""
    spec, profile, config = scenario.topology, scenario.profile, scenario.config
    if spec.operator != "sliding_aggregate":
        return {name: None for name in CONFIG_COLUMNS}
    # [sliding_windows] KIP-450: the loader rejects sliding windows before 2.7
    in_memory = config.store == "in_memory"
    final = spec.emit == "on_window_close"
    retention = sliding_window_retention(spec.time_difference_ms, spec.grace_ms, spec.retention_ms)
    fetch, put, emit = store_models(profile, in_memory, final)
    fields = {
        "sl_diff": spec.time_difference_ms, "sl_grace": spec.grace_ms, "sl_retention": retention,
        "sl_segment": segment_interval(retention), "sl_final": final,
        "sl_agg": spec.aggregation if isinstance(spec.aggregation, str) else None, "sl_in_memory": in_memory,
        "sl_fetch_model": fetch, "sl_put_model": put, "sl_emit_model": emit,
    }
    fields.update((rule, getattr(profile, rule)) for rule in RULE_COLUMNS)
    fields[AGGREGATION_KEY] = spec.aggregation
    return fields


@attrs.frozen
class Features:
    """What the sliding-window scenarios of a batch need (read on the driver from the config rows)."""

    #: ``((sid, Aggregation), ...)``: the Python API's aggregations (named ones are rebuilt from
    #: their name on the executors)
    callables: tuple = ()

    @classmethod
    def of(cls, config_rows):
        rows = [r for r in config_rows if r.get("sl_diff") is not None]
        return cls(callables=tuple((r["sid"], r[AGGREGATION_KEY]) for r in rows if r["sl_agg"] is None))
