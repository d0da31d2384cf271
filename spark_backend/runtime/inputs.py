"""Inputs of the Spark backend: scenarios and record files -> one records DataFrame per batch.

Every batch (many scenarios, or one topology replayed over record files) becomes

- ``records``: one row per input record: ``sid`` (scenario id = position in the batch), ``idx``
  (the input index: position in the scenario's ``inputs`` / row in the record file), ``side``
  (0 = ``left``, 1 = ``right``: the topic's rank, which also breaks timestamp ties), ``task`` (the
  partition; task N reads partition N of each topic), ``off`` (the offset in the topic partition:
  list order within (topic, partition), or the file's ``offset``), ``ts``, ``key`` as
  ``reference.model.keys.key_text`` (the key identity both engines share: compact JSON in
  document order, lone surrogates as ``?``) and ``value`` as compact JSON text (``None`` for a
  JSON null, i.e. a null key or a null value / tombstone);
- ``configs``: one row per scenario with the topology fields and the release rules the operators
  need, read from the profile by rule name (never by comparing versions); a column that carries a
  rule is named as the rule (``reference.model.profiles.RULES``: ``kip77_join_semantics``,
  ``output_ts_max``, ...), so grepping a rule name finds the Spark code that reads it.

Keys and values stay JSON text through the whole job: two keys are the same key exactly when
their ``key_text`` is equal (``1``, ``1.0``, ``true`` and ``"1"`` are four keys, as their
serialized bytes are to Kafka), value equality (KIP-557's idempotence check) is equality of the
bytes a JSON serde writes, and the joiner is applied once, at the end (``outputs.py``). Where an
order depends on the key's serialized bytes, it comes from ``reference.model.keys.serialized_key``
(``stream_stream_outer``) or its Spark twin ``stream_table.key_bytes``, tested against it.

Record files (captured topics) become the same ``records`` frame: ``record_files.py``.
"""
from __future__ import annotations

import json
from typing import List, Optional, Sequence

import attrs

from kssim.reference.model.keys import key_text
from kssim.reference.model.topology import ForeignKeyJoinSpec, StreamTableJoinSpec, TableSpec, TableTableJoinSpec

from kssim.spark_backend.foreign_key import settings as fk_settings
from kssim.spark_backend.joins import global_table_settings, stream_stream_settings
from kssim.spark_backend.windows import session_settings, sliding_settings, window_settings
from kssim.spark_backend.suppress import settings as suppress_settings

#: an aggregation reads one topic, ``input``: side 0, as a join's ``left``
SIDES = {"left": 0, "right": 1, "input": 0}
TOPICS = ("left", "right")

RECORD_COLUMNS = ("sid", "idx", "side", "task", "off", "ts", "key", "value")
RECORDS_DDL = ("sid INT, idx BIGINT, side INT, task INT, off BIGINT, ts BIGINT, key STRING, value STRING")

#: Per-scenario settings; the operator modules read them as columns (many scenarios per job).
CONFIG_DDL = (
    "sid INT, op STRING, join STRING, ts_sync BOOLEAN, "
    "partition_choice_max_head BOOLEAN, partition_choice_raw_head BOOLEAN, "
    "kip77_join_semantics BOOLEAN, output_ts_max BOOLEAN, ktable_emit_on_change BOOLEAN, "
    "null_key_outer_emit BOOLEAN, "
    "grace BIGINT, lver BOOLEAN, lret BIGINT, rver BOOLEAN, rret BIGINT, send_old BOOLEAN, "
    "joiner STRING, sep STRING, " + stream_stream_settings.CONFIG_DDL + ", " + fk_settings.CONFIG_DDL
    + ", " + global_table_settings.CONFIG_DDL + ", " + window_settings.CONFIG_DDL
    + ", " + session_settings.CONFIG_DDL + ", " + sliding_settings.CONFIG_DDL
    + ", " + suppress_settings.CONFIG_DDL
)
CONFIG_COLUMNS = tuple(part.split()[0] for part in CONFIG_DDL.split(", "))

IMPLEMENTED = ("stream_table_join", "table_table_join", "stream_stream_join", "fk_join", "global_table_join")
IMPLEMENTED += ("window_aggregate", "windowed_table_join")
IMPLEMENTED += ("session_aggregate", "sliding_aggregate")


@attrs.frozen
class Features:
    """Which optional rules a batch needs at all. Read on the driver from the configs, so a job
    only contains the windows its scenarios use (each window is a sort of the whole batch)."""

    ts_sync: bool = True
    #: versioned tables (``versioned_tables``: the loader rejects them before 3.5)
    versioned: bool = True
    #: a stream-table grace period (``stream_table_grace``: the loader rejects it before 3.6)
    grace: bool = True
    ktable_emit_on_change: bool = True
    operators: frozenset = frozenset(IMPLEMENTED)
    stream_stream: stream_stream_settings.Features = stream_stream_settings.Features()
    foreign_key: fk_settings.Features = fk_settings.Features()
    windows: window_settings.Features = window_settings.Features()
    session: session_settings.Features = session_settings.Features()
    sliding: sliding_settings.Features = sliding_settings.Features()
    suppress: suppress_settings.Features = suppress_settings.Features()
    #: the settings of a one-scenario batch (a replay) as ``(column, value)`` pairs: they become
    #: literals, so Spark's optimizer folds the rules away and prunes the windows nobody reads
    constants: tuple = ()
    #: positions per block of the stream-stream join's running clocks (``prefix_scan``): set for
    #: large ``as_listed`` replays, whose task scans then run in parallel blocks
    scan_block: Optional[int] = None

    @property
    def task_scan_block(self) -> Optional[int]:
        """``scan_block`` where it is valid: blocks of positions need ``as_listed`` order (the
        position is the input index), so a batch with timestamp_sync scenarios has none."""
        return None if self.ts_sync else self.scan_block

    @property
    def per_task_windows(self) -> bool:
        """Does some rule of the batch need a window over a whole task's sequence?"""
        return self.ts_sync or self.versioned or self.grace \
            or ("stream_stream_join" in self.operators and self.task_scan_block is None)

    @classmethod
    def of(cls, config_rows):
        rows = list(config_rows)
        constants = tuple((c, rows[0][c]) for c in CONFIG_COLUMNS if c != "sid") if len(rows) == 1 else ()
        return cls(operators=frozenset(r["op"] for r in rows), constants=constants,
                   stream_stream=stream_stream_settings.Features.of(rows),
                   foreign_key=fk_settings.Features.of(rows),
                   windows=window_settings.Features.of(rows),
                   session=session_settings.Features.of(rows),
                   sliding=sliding_settings.Features.of(rows),
                   suppress=suppress_settings.Features.of(rows),
                   ts_sync=any(r["ts_sync"] for r in rows),
                   versioned=any(r["lver"] or r["rver"] for r in rows),
                   grace=any(r["grace"] is not None for r in rows),
                   ktable_emit_on_change=any(r["ktable_emit_on_change"] for r in rows))


def json_text(value) -> str:
    """Compact JSON text in document order (no key sorting): what a JSON serde would write, so
    equal text is equal bytes (KIP-557's idempotence check) and joiners print maps in order. Keys
    use ``reference.model.keys.key_text`` (the same text, lone surrogates replaced)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _json_or_none(value):
    return None if value is None else json_text(value)


def _table_fields(table: TableSpec):
    return bool(table.versioned), table.history_retention_ms


def config_row(sid: int, scenario) -> dict:
    """The settings of one scenario as a ``configs`` row (release rules read by name)."""
    spec, profile, config = scenario.topology, scenario.profile, scenario.config
    row = {
        "sid": sid, "op": spec.operator, "join": getattr(spec, "join", None),
        "ts_sync": config.order == "timestamp_sync",
        # PartitionGroup's priority key (processing_order.py)
        "partition_choice_max_head": profile.partition_choice_max_head,
        "partition_choice_raw_head": profile.partition_choice_raw_head,
        "kip77_join_semantics": profile.kip77_join_semantics,
        "output_ts_max": profile.output_ts_max,
        "ktable_emit_on_change": profile.ktable_emit_on_change,
        "null_key_outer_emit": profile.null_key_outer_emit,
        "grace": None, "lver": False, "lret": None, "rver": False, "rret": None,
        "send_old": bool(getattr(spec, "send_old_values", False)),
        # aggregations have no joiner: their result value is the first argument as it is (outputs.py)
        "joiner": getattr(spec, "joiner", None) if isinstance(getattr(spec, "joiner", None), str) else None,
        "sep": getattr(spec, "joiner_separator", None),
    }
    if isinstance(spec, StreamTableJoinSpec):
        row["grace"] = spec.grace_ms
        row["rver"], row["rret"] = _table_fields(spec.table)
    elif isinstance(spec, (TableTableJoinSpec, ForeignKeyJoinSpec)):
        row["lver"], row["lret"] = _table_fields(spec.left_table)
        row["rver"], row["rret"] = _table_fields(spec.right_table)
        row["send_old"] = spec.send_old_values
    row.update(stream_stream_settings.config_fields(scenario))
    row.update(fk_settings.config_fields(scenario))
    row.update(global_table_settings.config_fields(scenario))
    row.update(window_settings.config_fields(scenario))
    row.update(session_settings.config_fields(scenario))
    row.update(sliding_settings.config_fields(scenario))
    row.update(suppress_settings.config_fields(scenario))
    return row


def record_rows(sid: int, inputs) -> List[tuple]:
    """Rows of ``records`` for one scenario's input records (offsets = list order per partition)."""
    offsets = {}
    rows = []
    for rec in inputs:
        part = (rec.topic, rec.partition)
        off = offsets.get(part, 0)
        offsets[part] = off + 1
        rows.append((sid, rec.index, SIDES[rec.topic], rec.partition, off, rec.ts,
                     key_text(rec.key), _json_or_none(rec.value)))
    return rows


def _frame(spark, rows, ddl, columns):
    import pandas as pd

    pdf = pd.DataFrame.from_records(rows, columns=list(columns)) if rows else None
    if pdf is None:
        return spark.createDataFrame([], ddl)
    return spark.createDataFrame(pdf, ddl)


def scenarios_to_frames(spark, scenarios: Sequence, sids: Sequence[int]):
    """``(records, configs, features)`` for the scenarios ``scenarios[i]`` with ids ``sids[i]``."""
    rows, configs = [], []
    for sid, scenario in zip(sids, scenarios):
        rows.extend(record_rows(sid, scenario.inputs))
        configs.append(config_row(sid, scenario))
    records = _frame(spark, rows, RECORDS_DDL, RECORD_COLUMNS)
    return records, config_frame(spark, configs), Features.of(configs)


def with_configs(records, configs, features):
    """``records`` with their scenario's settings as columns: literals for a one-scenario batch
    (see ``Features.constants``), else a broadcast join on ``sid``."""
    from pyspark.sql import functions as F

    if not features.constants:
        return records.join(F.broadcast(configs), "sid")
    types = dict(part.split() for part in CONFIG_DDL.split(", "))
    return records.select("*", *[F.lit(value).cast(types[name]).alias(name) for name, value in features.constants])


def config_frame(spark, rows: Sequence[dict]):
    """One settings row per scenario, held on the driver (broadcasting it runs no job)."""
    from kssim.spark_backend.runtime.local_frames import local_frame

    return local_frame(spark, [tuple(c[k] for k in CONFIG_COLUMNS) for c in rows], CONFIG_DDL)
