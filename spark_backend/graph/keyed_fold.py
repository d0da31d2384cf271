"""A sequential fold per key of a graph node: the one shape of every key-value state of graphs
(table sources' stores, aggregations' stores).

A node's store changes only by the records of one key at a time, and what a record makes of it
depends only on the key's earlier records: so the arrivals are clustered by
``(sid, node, key, wstart, wend)`` (the key's identity is its JSON text, its window for windowed
keys) and sorted by the order key ``ok`` inside each partition; ``mapInArrow`` streams them through
each instance's :class:`Folder`, keys in parallel, one key's records in processing order.

A folder's :meth:`Folder.step` gets the key's state (what it returned last time, None at first)
and one arrival as a :class:`Arrival`; it returns the new state and what the record made: records
to emit (:class:`Emit`, with their position among the arrival's records) and at most one
:class:`Drop` or failure (:class:`Fail`). The fold's frame has the arrival's columns, the
``kind`` of each result (:data:`EMIT`, :data:`DROP`, :data:`FAIL`), its ``code`` (a DropReason or
FailureCode code), ``pos`` (an emitted record's position) and the emitted record's ``n_*``
columns; :func:`split` turns it into a StageResult.

Cost: one shuffle of the arrivals, a sort within partitions, one Python pass (O(1) per record plus
the folder's work).
"""
from __future__ import annotations

from typing import Callable, Dict, Optional, Tuple

import attrs

from kssim.spark_backend.graph import flow

EMIT, DROP, FAIL = "emit", "drop", "fail"
_GROUP = ("sid", "node", "key", "wstart", "wend")
#: the columns the fold adds to the arrival's
RESULT_DDL = ("kind STRING, code STRING, pos INT, n_key STRING, n_value STRING, n_old STRING, n_ts BIGINT, "
              "n_latest BOOLEAN")


@attrs.frozen
class Arrival:
    """One record reaching the folder: key and values as JSON text (None for null)."""

    key: Optional[str]
    value: Optional[str]
    old: Optional[str]
    ts: int
    latest: Optional[bool]
    wstart: Optional[int]
    wend: Optional[int]
    idx: int
    extra: dict = attrs.field(factory=dict)  # further columns a stage asked for (``extra_columns``)


@attrs.frozen
class Emit:
    value: Optional[str]
    old: Optional[str]
    ts: int
    latest: bool = True
    pos: int = 0


@attrs.frozen
class Drop:
    reason: str  # a DropReason code


@attrs.frozen
class Fail:
    code: str  # a FailureCode code


class Folder:
    """One node instance's fold: ``step(state, arrival) -> (state, results)``."""

    def step(self, state, arrival: Arrival) -> Tuple[object, tuple]:
        raise NotImplementedError


Folders = Dict[Tuple[int, int], Folder]


def _fold_batches(folders: Folders, extra_columns: tuple) -> Callable:
    def body(batches):
        import pyarrow as pa

        current, state = None, None
        names = ("sid", "node", "key", "value", "old", "ts", "latest", "wstart", "wend", "idx") + extra_columns
        for batch in batches:
            cols = {name: batch.column(name).to_pylist() for name in names}
            taken, kinds, codes, positions = [], [], [], []
            keys, values, olds, times, latests = [], [], [], [], []
            for i in range(batch.num_rows):
                group = tuple(cols[c][i] for c in _GROUP)
                if group != current:
                    current, state = group, None
                folder = folders[(group[0], group[1])]
                arrival = Arrival(cols["key"][i], cols["value"][i], cols["old"][i], cols["ts"][i], cols["latest"][i],
                                  cols["wstart"][i], cols["wend"][i], cols["idx"][i],
                                  {c: cols[c][i] for c in extra_columns})
                state, results = folder.step(state, arrival)
                for result in results:
                    taken.append(i)
                    if isinstance(result, Emit):
                        kinds.append(EMIT), codes.append(None), positions.append(result.pos)
                        keys.append(arrival.key), values.append(result.value), olds.append(result.old)
                        times.append(result.ts), latests.append(result.latest)
                    else:
                        kinds.append(DROP if isinstance(result, Drop) else FAIL)
                        codes.append(result.reason if isinstance(result, Drop) else result.code)
                        positions.append(None), keys.append(None), values.append(None), olds.append(None)
                        times.append(None), latests.append(None)
            kept = batch.take(pa.array(taken, pa.int64()))
            added = [pa.array(kinds, pa.string()), pa.array(codes, pa.string()), pa.array(positions, pa.int32()),
                     pa.array(keys, pa.string()), pa.array(values, pa.string()), pa.array(olds, pa.string()),
                     pa.array(times, pa.int64()), pa.array(latests, pa.bool_())]
            yield pa.RecordBatch.from_arrays(kept.columns + added,
                                             names=kept.schema.names + [f.split()[0] for f in RESULT_DDL.split(", ")])
    return body


def fold(arrivals, folders: Folders, extra_columns: tuple = ()):
    """The fold's frame (see the module docstring) of ``arrivals`` (keys not null), ``extra_columns``
    of the arrivals handed to the folders in :attr:`Arrival.extra`."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    schema = StructType(arrivals.schema.fields + StructType.fromDDL(RESULT_DDL).fields)
    # few partitions: a Python task costs tens of ms even when its partition is empty
    width = max(1, arrivals.sparkSession.sparkContext.defaultParallelism)
    clustered = arrivals.repartition(width, *[F.col(c) for c in _GROUP]).sortWithinPartitions(*_GROUP, *flow.IN_ORDER)
    return clustered.mapInArrow(_fold_batches(folders, tuple(extra_columns)), schema)


def split(folded, extend_ok: bool = False) -> flow.StageResult:
    """The emitted records, drops and failures of a fold. ``extend_ok``: an emitted record's
    order key is the arrival's followed by its position (a node that emits several records per
    arrival); else the arrival's."""
    from pyspark.sql import functions as F

    emitted = folded.filter(F.col("kind") == EMIT)
    ok = flow.extend(F.col("ok"), F.col("pos")) if extend_ok else F.col("ok")
    return flow.StageResult(
        emitted=flow.records(emitted, ok=ok, key="n_key", value="n_value", old="n_old", ts="n_ts", latest="n_latest"),
        drops=flow.select_columns(folded.filter(F.col("kind") == DROP), flow.DROP_DDL, reason="code"),
        failures=flow.select_columns(folded.filter(F.col("kind") == FAIL), flow.FAILURE_DDL))
