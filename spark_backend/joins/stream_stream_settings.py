"""Per-scenario settings of a KStream-KStream join, as ``configs`` columns (driver side, no Spark).

``config_fields(scenario)`` turns a scenario's ``JoinWindows``, store type, emit interval and the
release's rules (read from the profile by name, never by version) into plain columns, so the
set-based code in ``stream_stream_join.py`` reads them per row (many scenarios per job).
Scenarios of other operators get nulls. ``CONFIG_DDL`` is their schema, meant to be appended to
``inputs.CONFIG_DDL``.

Window settings (digest section 2.2; ``JoinWindows``, ``KStreamImplJoin``, ``StreamJoinedStoreFactory``):

- before / after as given; the size of the window is ``before + after``.
- grace: ``ofTimeDifference*`` as given. ``JoinWindows.of`` with no ``grace()``: since KIP-328
  (2.1) ``max(24h - size, 0)`` (``gracePeriodMs = maintainMs - size`` in 2.1-2.8, the same value
  set by ``of`` since 3.0); before 2.1 there is no grace, the stores keep ``maintainMs`` =
  ``max(1 day, size)``.
- store retention: ``size + grace`` (2.1+), ``max(1 day, size)`` before; RocksDB segment interval
  ``max(retention / 2, 60 000)`` (``Stores.persistentWindowStore``; before 2.1 the same value
  from ``retention / (numSegments - 1)`` with the default 3 segments).
- the spurious-result fix (KIP-633, KAFKA-10847) and with it the outer store exist only for
  ``ofTimeDifference*`` windows on a left or outer join.
"""
from __future__ import annotations

import attrs

DAY_MS = 24 * 60 * 60 * 1000
MIN_SEGMENT_INTERVAL_MS = 60_000
#: ``Windows#segments`` before 2.1: a RocksDB window store keeps this many segments
LEGACY_SEGMENTS = 3

#: name, Spark type, and what the column means
_COLUMNS = (
    ("ss_before", "BIGINT", "JoinWindows#beforeMs"),
    ("ss_after", "BIGINT", "JoinWindows#afterMs"),
    ("ss_grace", "BIGINT", "effective grace (0 where the release has none)"),
    ("ss_retention", "BIGINT", "window-store retention"),
    ("ss_segment", "BIGINT", "RocksDB segment interval"),
    ("ss_fix", "BOOLEAN", "the spurious-result fix is on and an outer store exists (left/outer join)"),
    ("ss_in_memory", "BOOLEAN", "StreamJoined with in-memory window stores"),
    ("ss_emit_interval", "BIGINT", "the outer-join emit interval (wall clock frozen at 0)"),
    ("ss_one_sided_left", "BOOLEAN", "before KIP-77 leftJoin had one processor: left records look up, right ones are stored"),
    ("ss_null_key_throws", "BOOLEAN", "stream_join_null_key_throws"),
    ("ss_swap_bounds", "BOOLEAN", "right_join_swaps_window_bounds"),
    ("ss_by_retention", "BOOLEAN", "rocksdb_segments_by_retention"),
    ("ss_own_clock", "BOOLEAN", "window_store_own_clock"),
    ("ss_null_put_skipped", "BOOLEAN", "rocksdb_null_window_put_skipped"),
    ("ss_first_segment", "BOOLEAN", "rocksdb_fetch_from_first_segment"),
    ("ss_hides_expired", "BOOLEAN", "window_fetch_hides_expired"),
    ("ss_per_task_clock", "BOOLEAN", "stream_time_tracker_per_task"),
    ("ss_clock_by_dropped", "BOOLEAN", "stream_time_advanced_by_dropped"),
    ("ss_exit_before", "BOOLEAN", "outer_scan_early_exit_before_bound"),
    ("ss_per_side", "BOOLEAN", "outer_scan_per_side_lookback"),
    ("ss_rearm_now", "BOOLEAN", "emit_throttle_from_now"),
)
CONFIG_DDL = ", ".join(f"{name} {kind}" for name, kind, _ in _COLUMNS)
CONFIG_COLUMNS = tuple(name for name, _, _ in _COLUMNS)


def window_settings(spec, profile):
    """``(before, after, grace, retention, segment_interval)`` of a stream-stream join."""
    w = spec.window
    size = w.before_ms + w.after_ms
    if spec.window_api == "time_difference":
        grace = w.grace_ms
    elif w.grace_ms is not None:
        grace = w.grace_ms
    elif profile.join_window_grace:
        grace = max(DAY_MS - size, 0)
    else:
        grace = None
    if profile.join_window_grace:
        retention = size + grace
    else:
        # JoinWindows#maintainMs before KIP-328
        retention = max(DAY_MS, size)
    segment = max(retention // (LEGACY_SEGMENTS - 1), MIN_SEGMENT_INTERVAL_MS)
    return w.before_ms, w.after_ms, grace or 0, retention, segment


def config_fields(scenario) -> dict:
    """The ``ss_*`` columns of one scenario (all null unless it is a stream-stream join)."""
    spec, profile, config = scenario.topology, scenario.profile, scenario.config
    if spec.operator != "stream_stream_join":
        return {name: None for name in CONFIG_COLUMNS}
    before, after, grace, retention, segment = window_settings(spec, profile)
    fix = (spec.window_api == "time_difference" and profile.time_difference_windows
           and spec.join in ("left", "outer"))
    return {
        "ss_before": before, "ss_after": after, "ss_grace": grace,
        "ss_retention": retention, "ss_segment": segment,
        "ss_fix": bool(fix),
        "ss_in_memory": config.store == "in_memory",
        "ss_emit_interval": config.emit_interval_ms,
        # KIP-77 (0.10.2) rebuilt leftJoin on the two-processor join of join/outerJoin
        "ss_one_sided_left": spec.join == "left" and not profile.kip77_join_semantics,
        "ss_null_key_throws": profile.stream_join_null_key_throws,
        "ss_swap_bounds": profile.right_join_swaps_window_bounds,
        "ss_by_retention": profile.rocksdb_segments_by_retention,
        "ss_own_clock": profile.window_store_own_clock,
        "ss_null_put_skipped": profile.rocksdb_null_window_put_skipped,
        "ss_first_segment": profile.rocksdb_fetch_from_first_segment,
        "ss_hides_expired": profile.window_fetch_hides_expired,
        "ss_per_task_clock": profile.stream_time_tracker_per_task,
        "ss_clock_by_dropped": profile.stream_time_advanced_by_dropped,
        "ss_exit_before": profile.outer_scan_early_exit_before_bound,
        "ss_per_side": profile.outer_scan_per_side_lookback,
        "ss_rearm_now": profile.emit_throttle_from_now,
    }


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
            task_time_clock=any(r["ss_by_retention"] and not r["ss_own_clock"] and not r["ss_in_memory"] for r in rows),
            spurious_result_fix=any(r["ss_fix"] for r in rows))
