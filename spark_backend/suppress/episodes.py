"""Stage 2b: untilTimeLimit episodes, a fold per key (``mapInArrow``).

Under untilTimeLimit an entry's buffer time is the ts of the change that put the key into the
buffer; every later change of the key only replaces its record (non-resetting put). Given, per
change, ``c`` = where an episode opened by it would end (``time_eviction.time_limit_candidates``),
one key's episodes chain: the first change opens one, which ends at its ``c``; the next change
after that end opens the next one; a ``c`` of null (never evicted) keeps the episode open to the
end. Each change gets its episode's end ``e`` and buffer time ``bt``.

Where an episode ends depends on where it began, and where it began on where the previous one
ended: a chain, sequential per key. The fold reads only ``(sid, task, key, r, ts, c)`` sorted by
``(sid, task, key, r)``; keys are independent, so the rows are clustered by key, in parallel.
"""
from __future__ import annotations

from pyspark.sql import functions as F

_KEYS = ("sid", "task", "key")
#: the columns the fold adds
EPISODE_DDL = "e BIGINT, bt BIGINT"


def episode_batches(batches):
    """The ``mapInArrow`` body (see the module docstring)."""
    import pyarrow as pa

    current = None  # (sid, task, key) of the episode state below
    open_episode, end, start_ts = False, None, None
    for batch in batches:
        cols = {name: batch.column(name).to_pylist() for name in _KEYS + ("r", "ts", "c")}
        ends, times = [], []
        for i in range(batch.num_rows):
            this = (cols["sid"][i], cols["task"][i], cols["key"][i])
            if this != current:
                current, open_episode = this, False
            r = cols["r"][i]
            if not open_episode or (end is not None and r > end):
                # the key is not buffered: this change puts it at its own ts
                open_episode, end, start_ts = True, cols["c"][i], cols["ts"][i]
            ends.append(end)
            times.append(start_ts)
        added = [pa.array(ends, pa.int64()), pa.array(times, pa.int64())]
        yield pa.RecordBatch.from_arrays(batch.columns + added, names=batch.schema.names + ["e", "bt"])


def time_limit_episodes(candidates):
    """Changes with ``c`` -> adds ``e`` and ``bt`` (see the module docstring)."""
    from pyspark.sql.types import StructType

    schema = StructType(candidates.schema.fields + StructType.fromDDL(EPISODE_DDL).fields)
    clustered = candidates.repartition(*[F.col(c) for c in _KEYS]).sortWithinPartitions(*_KEYS, "r")
    return clustered.mapInArrow(episode_batches, schema)
