"""Per-scenario settings of a KStream-KStream join, as ``configs`` columns (driver side, no Spark).

``config_fields(scenario)`` turns a scenario's ``JoinWindows``, store type, emit interval and the
release's rules (read from the profile by name, never by version) into plain columns, so the
set-based code in ``stream_stream.py`` reads them per row (many scenarios per job). A column that
carries a release rule is named as the rule (``reference.model.profiles.RULES``), so grepping a
rule name finds where Spark reads it. Scenarios of other operators get nulls. ``CONFIG_DDL`` is
their schema, meant to be appended to ``inputs.CONFIG_DDL``.

Window settings (digest section 2.2; ``JoinWindows``, ``KStreamImplJoin``, ``StreamJoinedStoreFactory``):

- before / after as given; the size of the window is ``before + after``.
- grace and store retention (``join_window_grace``, KIP-328): the shared model's
  ``reference.model.profiles.join_window_stores``, the one definition per release: since 2.1
  ``size + grace`` with ``JoinWindows.of``'s default grace ``max(24h - size, 0)``; before 2.1 the
  stores keep ``maintainMs`` = 1 day (the loader rejects a window that does not fit), i.e. an
  effective grace of ``1 day - size``.
- RocksDB segment interval ``max(retention / 2, 60 000)`` (``Stores.persistentWindowStore``;
  before 2.1 the same value from ``retention / (numSegments - 1)`` with the default 3 segments).
- the spurious-result fix (KIP-633, KAFKA-10847, ``time_difference_windows``) and with it the
  outer store exist only for ``ofTimeDifference*`` windows on a left or outer join.
"""
from __future__ import annotations

import attrs

from kssim.reference.model.profiles import join_window_stores
from kssim.spark_backend.runtime.config_columns import config_columns

MIN_SEGMENT_INTERVAL_MS = 60_000
#: ``Windows#segments`` before 2.1: a RocksDB window store keeps this many segments
LEGACY_SEGMENTS = 3

#: name, Spark type, and what the column means (a release rule's column is named as the rule)
_COLUMNS = (
    ("ss_before", "BIGINT", "JoinWindows#beforeMs"),
    ("ss_after", "BIGINT", "JoinWindows#afterMs"),
    ("ss_grace", "BIGINT", "effective grace (join_window_stores)"),
    ("ss_retention", "BIGINT", "window-store retention (join_window_stores)"),
    ("ss_segment", "BIGINT", "RocksDB segment interval"),
    ("ss_fix", "BOOLEAN", "the spurious-result fix is on and an outer store exists (left/outer join; "
                          "time_difference_windows)"),
    ("ss_in_memory", "BOOLEAN", "StreamJoined with in-memory window stores (stream_joined_store_suppliers)"),
    ("ss_emit_interval", "BIGINT", "the outer-join emit interval (wall clock frozen at 0)"),
    ("ss_one_sided_left", "BOOLEAN", "before KIP-77 (kip77_join_semantics) leftJoin had one processor: "
                                     "left records look up, right ones are stored"),
    ("stream_join_null_key_throws", "BOOLEAN", "KStreamKStreamJoin throws on a null key (0.10.0)"),
    ("right_join_swaps_window_bounds", "BOOLEAN", "KAFKA-4153"),
    ("rocksdb_segments_by_retention", "BOOLEAN", "KAFKA-7072"),
    ("window_store_own_clock", "BOOLEAN", "KAFKA-7895"),
    ("rocksdb_null_window_put_skipped", "BOOLEAN", "KAFKA-9921"),
    ("rocksdb_fetch_from_first_segment", "BOOLEAN", "Segments#minSegmentId (0.10.2)"),
    ("window_fetch_hides_expired", "BOOLEAN", "KAFKA-12960"),
    ("stream_time_tracker_per_task", "BOOLEAN", "KAFKA-14862"),
    ("stream_time_advanced_by_dropped", "BOOLEAN", "KIP-962"),
    ("outer_scan_early_exit_before_bound", "BOOLEAN", "KAFKA-13721"),
    ("outer_scan_per_side_lookback", "BOOLEAN", "KAFKA-15417"),
    ("emit_throttle_from_now", "BOOLEAN", "KAFKA-13817"),
)
#: the DDL, the column names, and the release-rule columns (read from the profile by their own name)
CONFIG_DDL, CONFIG_COLUMNS, RULE_COLUMNS = config_columns(_COLUMNS, first_rule="stream_join_null_key_throws")


def window_settings(spec, profile):
    """``(before, after, grace, retention, segment_interval)`` of a stream-stream join
    [join_window_grace]: grace and retention from ``join_window_stores``."""
    w = spec.window
    stores = join_window_stores(profile, w.before_ms, w.after_ms, w.grace_ms, spec.window_api == "time_difference")
    segment = max(stores.retention_ms // (LEGACY_SEGMENTS - 1), MIN_SEGMENT_INTERVAL_MS)
    return w.before_ms, w.after_ms, stores.grace_ms, stores.retention_ms, segment


def config_fields(scenario) -> dict:
    """The ``ss_*`` and rule columns of one scenario (all null unless it is a stream-stream join)."""
    spec, profile, config = scenario.topology, scenario.profile, scenario.config
    if spec.operator != "stream_stream_join":
        return {name: None for name in CONFIG_COLUMNS}
    before, after, grace, retention, segment = window_settings(spec, profile)
    fix = (spec.window_api == "time_difference" and profile.time_difference_windows
           and spec.join in ("left", "outer"))
    fields = {
        "ss_before": before, "ss_after": after, "ss_grace": grace,
        "ss_retention": retention, "ss_segment": segment,
        "ss_fix": bool(fix),
        "ss_in_memory": config.store == "in_memory",
        "ss_emit_interval": config.emit_interval_ms,
        # KIP-77 (0.10.2) rebuilt leftJoin on the two-processor join of join/outerJoin
        "ss_one_sided_left": spec.join == "left" and not profile.kip77_join_semantics,
    }
    fields.update((rule, getattr(profile, rule)) for rule in RULE_COLUMNS)
    return fields


@attrs.frozen
class Features:
    """Which optional parts of the stream-stream join a batch needs (read on the driver from the
    config rows, so a job only contains the windows and the replay its scenarios use)."""

    task_time_clock: bool = True
    spurious_result_fix: bool = True

    @classmethod
    def of(cls, config_rows):
        rows = [r for r in config_rows if r.get("ss_before") is not None]
        return cls(
            # 2.1: a RocksDB window store expired by the task's stream time (KAFKA-7895 in 2.2)
            task_time_clock=any(r["rocksdb_segments_by_retention"] and not r["window_store_own_clock"]
                                and not r["ss_in_memory"] for r in rows),
            spurious_result_fix=any(r["ss_fix"] for r in rows))
