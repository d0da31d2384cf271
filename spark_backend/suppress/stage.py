"""The suppress stage of a batch: how the runner builds the operator of a suppressed scenario, and
how it turns the operator's events into the suppressed ones.

- :func:`upstream`: from 2.3 [``suppress_enables_old_values``, KAFKA-8199] suppress asks its parent
  for old values (``KTableSuppressProcessorSupplier#enableSendingOldValues``), which can change
  what the operator forwards (a table join computes and forwards old results, an FK join
  materializes its result). The operators read that request from the ``send_old`` column, so the
  rows of a suppressed scenario get ``send_old`` = asked by the scenario or by suppress; the
  configs keep the scenario's own ``send_old`` (what the output reports).
- :func:`suppressed`: per (scenario, task) a pure function of the operator's events in output
  order (``changes``); the OUTPUT events are the changes, replaced by what suppress forwards
  (``time_eviction`` + ``episodes`` for unbounded buffers, ``bounded`` for the others); the
  operator's drops and failures stay where they were among them (``f1`` = their place ``q``
  among the events of their input).
  Events of scenarios without suppress pass through untouched.
"""
from __future__ import annotations

import attrs
from pyspark.sql import functions as F

from kssim.spark_backend.runtime.outputs import OLD_NONE, OUTPUT, events as event_frame
from kssim.spark_backend.suppress import settings
from kssim.spark_backend.suppress.bounded import sequential_events
from kssim.spark_backend.suppress.changes import changes_of, ranked, with_stream_time
from kssim.spark_backend.suppress.episodes import time_limit_episodes
from kssim.spark_backend.suppress.time_eviction import evicted, time_limit_candidates, window_end_episodes

#: what the eviction steps keep of an episode's change
EPISODE_COLUMNS = ("sid", "task", "r", "key", "ts", "n_null", "n_l", "n_r", "o_kind", "o_l", "o_r", "sup_key_kind",
                   "sup_json_serde", "sup_report_old", "sup_drop_tombstones", "bt", "e")


def upstream(rows, features):
    """``(rows, features)`` for the operators (see the module docstring)."""
    asked = F.col("send_old") | (F.col("sup") & F.coalesce(F.col("suppress_enables_old_values"), F.lit(False)))
    rows = rows.withColumn("send_old", asked)
    if features.suppress.fk_old_values:
        # the FK join's result table is materialized to send old values (foreign_key.response_join)
        features = attrs.evolve(features, foreign_key=attrs.evolve(features.foreign_key, send_old=True))
    return rows, features


def _with_settings(frame, configs, features):
    """``frame`` (of suppressed scenarios) plus the ``sup*`` columns of its scenario (literals in a
    one-scenario batch)."""
    constants = dict(features.constants)
    if constants:
        types = dict(part.split() for part in settings.CONFIG_DDL.split(", "))
        return frame.select("*", *[F.lit(constants[c]).cast(types[c]).alias(c) for c in settings.CONFIG_COLUMNS])
    return frame.join(F.broadcast(configs.select("sid", *settings.CONFIG_COLUMNS)), "sid")


def _forwarded(rows, step_of):
    """Evicted changes (with ``e``, ``f3``) -> OUTPUT events attributed to the change ``e``."""
    at = rows.join(step_of, ["sid", "task", "e"])
    report = F.col("sup_report_old")
    keep = ~(F.col("n_null") & F.col("sup_drop_tombstones"))
    return event_frame(at.filter(keep), etype=F.lit(OUTPUT), idx=F.col("s_idx"),
                       g1=F.col("s_g1"), g2=F.col("s_g2"), g3=F.col("s_g3"), g4=F.col("s_g4"),
                       f1=F.col("s_q"), f2=F.lit(b""),
                       o_kind=F.when(report, F.col("o_kind")).otherwise(F.lit(OLD_NONE)),
                       o_l=F.when(report, F.col("o_l")), o_r=F.when(report, F.col("o_r")))


def _set_based(changes, features):
    """Events of the scenarios whose buffers evict by time only (``time_eviction``)."""
    changes = changes.filter(~F.col("sup_sequential"))
    step_of = changes.select("sid", "task", F.col("r").alias("e"), F.col("idx").alias("s_idx"), F.col("q").alias("s_q"),
                             *[F.col(g).alias("s_" + g) for g in ("g1", "g2", "g3", "g4")])
    parts = []
    if features.suppress.window_end:
        parts.append(window_end_episodes(changes.filter(F.col("sup_window_end"))))
    if features.suppress.time_limit:
        candidates = time_limit_candidates(changes.filter(~F.col("sup_window_end")))
        parts.append(time_limit_episodes(candidates.select(*EPISODE_COLUMNS[:-2], "c")))
    parts = [part.select(*EPISODE_COLUMNS) for part in parts]
    episodes = parts[0]
    for part in parts[1:]:
        episodes = episodes.unionByName(part)
    return _forwarded(evicted(episodes), step_of)


def _sequential(changes, rows, features):
    """Events of the scenarios replayed by the per-task pass (``bounded``)."""
    sides = rows.filter(F.col("sup_sequential")).select("sid", "idx", "side")
    changes = changes.filter(F.col("sup_sequential")).join(sides, ["sid", "idx"], "left")
    return sequential_events(changes, features.suppress.sequential)


def suppressed(events, rows, configs, features):
    """The batch's events with those of suppressed scenarios replaced (see the module docstring)."""
    parts = []
    if not features.suppress.everything:
        # both parts read the operators' events: computed once
        events = events.localCheckpoint(eager=False)
        is_suppressed = F.col("sid").isin(list(features.suppress.sids))
        parts.append(events.filter(~is_suppressed))
        events = events.filter(is_suppressed)
    # read by the changes and by the drops and failures: computed once
    ranked_events = ranked(_with_settings(events, configs, features), features).localCheckpoint(eager=False)
    # the operator's drops and failures, at their place among the changes
    kept = event_frame(ranked_events.filter(F.col("etype") != OUTPUT), f1=F.col("q"), f2=F.lit(b""), f3=F.lit(0))
    changes = with_stream_time(changes_of(ranked_events), rows, features)
    parts.append(kept)
    if features.suppress.window_end or features.suppress.time_limit:
        parts.append(_set_based(changes, features))
    if features.suppress.sequential:
        parts.append(_sequential(changes, rows, features))
    out = parts[0]
    for part in parts[1:]:
        out = out.unionByName(part)
    return out
