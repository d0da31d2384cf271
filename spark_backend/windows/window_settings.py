"""Per-scenario settings of time-windowed aggregations (``window_aggregate``) and of the
windowed-table join, as ``configs`` columns (driver side, no Spark).

``config_fields(scenario)`` turns a scenario's ``TimeWindows``, aggregations, emit strategy, store
type and the release's rules (read from the profile by name, never by version) into plain columns,
read per row by ``time_window.py`` and ``windowed_table_join.py`` (many scenarios per job).
Scenarios of other operators get nulls. Every column is prefixed ``tw_``; a column that carries a
release rule is ``tw_`` + the rule's name (``reference.model.profiles.RULES``), so grepping a rule
name finds where Spark reads it (other families carry some of the same rules under their own
prefix). ``CONFIG_DDL`` is appended to ``spark_backend.runtime.inputs.CONFIG_DDL``.

Window settings (digest C.1; ``TimeWindows``, ``TimeWindowedKStreamImpl``, ``WindowStoreMaterializer``):

- grace and store retention: the shared model's ``reference.model.profiles.time_window_settings``,
  the one definition per release (no grace before 2.1, ``windowed_grace``; ``maintainMs`` =
  ``max(1 day, size)`` before 3.0 unless ``Materialized#withRetention``,
  ``time_window_retention_size_plus_grace``; the legacy builders' default grace).
- RocksDB segment interval: ``max(retention / 2, 60 000)`` (``Stores.persistent*WindowStore``,
  ``RocksDbIndexedTimeOrderedWindowBytesStoreSupplier``; before 2.1 the same value from
  ``maintainMs / (segments - 1)`` with the default 3 segments).
- the windowed-table join aggregates both sides over the same window; its ``shift_ms`` re-keys the
  right table (0: no shift, the two windowed tables are joined directly).
"""
from __future__ import annotations

from typing import Optional

import attrs

from kssim.reference.model.profiles import time_window_settings
from kssim.reference.model.topology import WindowAggregateSpec, WindowedTableJoinSpec
from kssim.spark_backend.runtime.config_columns import config_columns

#: ``Segments.MIN_SEGMENT_INTERVAL`` / the store suppliers' minimum segment interval
MIN_SEGMENT_INTERVAL_MS = 60_000
#: aggregations computed by native Spark expressions (the others by a Python fold)
NATIVE_AGGREGATIONS = ("count", "sum")

#: name, Spark type, and what the column means (a release rule's column is ``tw_`` + the rule's name)
_COLUMNS = (
    ("tw_size", "BIGINT", "TimeWindows#size"),
    ("tw_adv", "BIGINT", "TimeWindows#advance"),
    ("tw_grace", "BIGINT", "the grace in force (time_window_settings); null before 2.1 (no grace)"),
    ("tw_retention", "BIGINT", "the window store's retention (time_window_settings)"),
    ("tw_segment", "BIGINT", "the RocksDB segment interval"),
    ("tw_final", "BOOLEAN", "EmitStrategy.onWindowClose (KIP-825)"),
    ("tw_in_memory", "BOOLEAN", "in-memory window stores (config.store)"),
    ("tw_lagg", "STRING", "the aggregation of input / left (a name; null: a Python API callable)"),
    ("tw_ragg", "STRING", "the aggregation of right (windowed-table join)"),
    ("tw_shift", "BIGINT", "windowed-table join: the right windows are joined shift ms later (0: no shift)"),
    ("tw_tasks", "INT", "the task count (partitions per input topic): where the shifted right windows go"),
    ("tw_windowed_grace", "BOOLEAN", "KIP-328"),
    ("tw_windowed_agg_own_stream_time", "BOOLEAN", "KAFKA-7895 (the processor's clock)"),
    ("tw_window_store_own_clock", "BOOLEAN", "KAFKA-7895 (the RocksDB store's expiry clock)"),
    ("tw_time_window_output_ts_max", "BOOLEAN", "KAFKA-6455"),
    ("tw_window_fetch_hides_expired", "BOOLEAN", "KAFKA-12960"),
    ("tw_rocksdb_segments_by_retention", "BOOLEAN", "KAFKA-7072"),
    ("tw_time_windows_in_start_order", "BOOLEAN", "KAFKA-6560, KAFKA-6486"),
    ("tw_time_windows_for_fixed", "BOOLEAN", "KAFKA-3784"),
    ("tw_rocksdb_fetch_from_first_segment", "BOOLEAN", "Segments#minSegmentId (KAFKA-4851 until KAFKA-5771)"),
    ("tw_window_bounds_checked", "BOOLEAN", "KAFKA-3452 (Window's constructor)"),
)
#: the DDL, the column names, and the release-rule columns (read from the profile by their own name)
CONFIG_DDL, CONFIG_COLUMNS, RULE_COLUMNS = config_columns(_COLUMNS, first_rule="tw_windowed_grace")
OPERATORS = ("window_aggregate", "windowed_table_join")
#: the key of a config row (not a column) that carries a scenario's (left, right) aggregations
AGGREGATIONS_KEY = "_tw_aggregations"


def segment_interval(retention_ms: int) -> int:
    """The RocksDB window store's segment interval for a retention."""
    return max(retention_ms // 2, MIN_SEGMENT_INTERVAL_MS)


def aggregation_name(aggregation) -> Optional[str]:
    """A named aggregation's name; None for an ``Aggregation`` object of the Python API."""
    return aggregation if isinstance(aggregation, str) else None


def _rule(profile, rule: str) -> bool:
    """A rule of the profile; False while the shared model does not define it yet."""
    try:
        return bool(getattr(profile, rule))
    except AttributeError:
        return False


def config_fields(scenario) -> dict:
    """The ``tw_*`` columns of one scenario (all null unless it is one of ``OPERATORS``)."""
    spec, profile, config = scenario.topology, scenario.profile, scenario.config
    if spec.operator not in OPERATORS:
        return {name: None for name in CONFIG_COLUMNS}
    if isinstance(spec, WindowAggregateSpec):
        window, retention_ms = spec.window, spec.retention_ms
        left, right, shift, final = spec.aggregation, None, 0, spec.emit == "on_window_close"
    else:
        assert isinstance(spec, WindowedTableJoinSpec)
        window, retention_ms = spec.window, None
        left, right, shift, final = spec.left_aggregation, spec.right_aggregation, spec.shift_ms, False
    settings = time_window_settings(profile, window.size_ms, window.grace_ms, retention_ms)
    fields = {
        "tw_size": window.size_ms, "tw_adv": window.advance_ms, "tw_grace": settings.grace_ms,
        "tw_retention": settings.retention_ms, "tw_segment": segment_interval(settings.retention_ms),
        "tw_final": final, "tw_in_memory": config.store == "in_memory",
        "tw_lagg": aggregation_name(left), "tw_ragg": aggregation_name(right), "tw_shift": shift,
        "tw_tasks": config.task_count,
    }
    fields.update((column, _rule(profile, column[len("tw_"):])) for column in RULE_COLUMNS)
    # not a column: the aggregations themselves, for the Python API's callables (``Features.of``)
    fields[AGGREGATIONS_KEY] = (left, right)
    return fields


@attrs.frozen
class Features:
    """What the windowed scenarios of a batch need (read on the driver from the config rows and
    the specs, so a job contains only the steps its scenarios use).

    ``python_fold``: some side aggregates with something other than count / sum;
    ``callables``: ``((sid, side, Aggregation), ...)`` for Python API aggregations (the fold
    applies them; named ones are rebuilt from their name on the executors); ``emit_final``: some
    scenario emits on window close; ``partitioned_shift``: some windowed-table join shifts its right
    windows over several partitions (they are routed by Kafka's partitioner)."""

    python_fold: bool = True
    callables: tuple = ()
    emit_final: bool = True
    partitioned_shift: bool = True
    #: some scenario has two processors (a windowed-table join)
    two_sided: bool = True
    #: some scenario closes by the task's stream time or has no grace (2.1 and older): the store
    #: clocks need a running pass of their own
    legacy_clocks: bool = True
    #: some RocksDB store reads from its first segment on (0.10.2): a pass finds each store's first put
    first_segment: bool = True
    #: some scenario's windows hop (advance < size): a record may have several windows; else
    #: every record has one at most (its tumbling window)
    hopping: bool = True

    @classmethod
    def of(cls, config_rows):
        rows = [r for r in config_rows if r.get("tw_size") is not None]
        callables = tuple((r["sid"], side, agg) for r in rows
                          for side, agg in enumerate(r.get(AGGREGATIONS_KEY, ()))
                          if agg is not None and aggregation_name(agg) is None)
        names = {r["tw_lagg"] for r in rows} | {r["tw_ragg"] for r in rows if r["op"] == "windowed_table_join"}
        return cls(python_fold=bool(callables) or any(n not in NATIVE_AGGREGATIONS for n in names),
                   callables=tuple(callables), emit_final=any(r["tw_final"] for r in rows),
                   partitioned_shift=any(r["tw_shift"] and r["tw_tasks"] > 1 for r in rows),
                   two_sided=any(r["op"] == "windowed_table_join" for r in rows),
                   legacy_clocks=any(not r["tw_windowed_agg_own_stream_time"] or r["tw_grace"] is None
                                     for r in rows),
                   first_segment=any(r["tw_rocksdb_fetch_from_first_segment"] and not r["tw_in_memory"]
                                     for r in rows),
                   hopping=any(r["tw_adv"] != r["tw_size"] for r in rows))
