"""The records of topology graphs on Spark: the frames every graph stage reads and writes, and
the order key that makes their outputs total at any depth.

A batch of graph scenarios runs as one Spark job per *level* (:mod:`spark_backend.graph.runner`);
between stages, records travel as **arrivals**: one row per record reaching a node at one port,

- ``sid``: the scenario (position in the batch), ``node``: the receiving node's index,
  ``port``: 0 (its upstream) or 1 (a binary operation's other side);
- ``op``: the receiving node's operation (``filter``, ``left_join``, ...: the graph's JSON field),
  ``depth``: its level (the longest path from a source, :func:`node_depths`);
- ``ok``: the **order key**, an ``array<bigint>`` compared lexicographically: where the record
  stands in ``TopologyTestDriver``'s processing of its scenario (below);
- ``take``: the order key of the record the task took to produce this one (an input, or a record
  read back from an internal topic): what a record cache flushes after;
- ``idx``: the input whose processing caused it (an output's ``after_input``), ``ts``;
- ``key`` (:func:`reference.model.keys.key_text`, None for a null key), ``value`` (compact JSON
  text, None for null; on a table edge the change's new value), ``old`` (a table change's old
  value, None when null or not sent), ``latest`` (False: a versioned table's out-of-order update);
- ``wstart``, ``wend``: the window of a windowed key (null for plain keys; the key is the inner
  key).

**The order key.** ``TopologyTestDriver`` takes an input, processes it depth-first, then takes
what it wrote to internal topics, one record at a time, each again depth-first
(``../shared/spec/topology-graphs.md``, Processing model). A record in the task's first take of
input ``i`` has ``ok = [i, 0, ...]``; each forward appends the child's rank among the forwarding
node's targets (``ProcessorNode#forward`` order), and a node that emits several records for one
arrival appends the record's position first. A record written to a repartition topic is read back
in a later take of the same input: ``[i, 1, R] + its production path``, then the rank of the node
it feeds; ``R`` is the take's place in ``TopologyTestDriver``'s heap of internal queues, which
:mod:`spark_backend.graph.heap_order` writes in before each level runs and again at the end (0
where one internal topic per input leaves the production paths in the topic's FIFO order).
Lexicographic order on these arrays is the processing order, at any depth, whatever Spark's
partitioning.

Every stage also reports **drops** (``sid, ok, idx, node, where, reason``: a
:class:`~reference.model.codes.DropReason` code; ``where`` names a place that is not a node, a
repartition topic) and **failures** (``sid, ok, idx, code``: a
:class:`~reference.model.codes.FailureCode` code); a sink (``to``) writes **outputs**
(``sid, ok, idx, topic, key, value, ts, wstart, wend``). Each event also carries the ``take`` of
the arrival it happened at (taken from the stage's frame by name), by which its order key gets
its take's final heap rank.
"""
from __future__ import annotations


import attrs

ARRIVAL_DDL = ("sid INT, node INT, port INT, op STRING, depth INT, ok ARRAY<BIGINT>, take ARRAY<BIGINT>, "
               "idx BIGINT, ts BIGINT, key STRING, value STRING, old STRING, latest BOOLEAN, "
               "wstart BIGINT, wend BIGINT")
ARRIVAL_COLUMNS = tuple(part.split()[0] for part in ARRIVAL_DDL.split(", "))
#: what a stage emits: an arrival's columns with ``node`` = the emitting node (port, op, depth unset)
RECORD_COLUMNS = ("sid", "node", "ok", "take", "idx", "ts", "key", "value", "old", "latest", "wstart", "wend")

DROP_DDL = "sid INT, ok ARRAY<BIGINT>, idx BIGINT, node INT, where STRING, reason STRING, take ARRAY<BIGINT>"
DROP_COLUMNS = tuple(part.split()[0] for part in DROP_DDL.split(", "))
FAILURE_DDL = "sid INT, ok ARRAY<BIGINT>, idx BIGINT, node INT, code STRING, take ARRAY<BIGINT>"
FAILURE_COLUMNS = tuple(part.split()[0] for part in FAILURE_DDL.split(", "))
OUTPUT_DDL = ("sid INT, ok ARRAY<BIGINT>, idx BIGINT, topic STRING, key STRING, value STRING, ts BIGINT, "
              "wstart BIGINT, wend BIGINT, take ARRAY<BIGINT>")
OUTPUT_COLUMNS = tuple(part.split()[0] for part in OUTPUT_DDL.split(", "))

#: the kinds of rows a level of the runner leaves: records on their way to a deeper node, and events
ARRIVAL, OUTPUT, DROP, FAILURE = 3, 0, 1, 2
#: every row a level leaves: an arrival's columns, and an event's (an output's topic; a drop's or
#: a failure's place and code)
LEVEL_DDL = "etype INT, " + ARRIVAL_DDL + ", topic STRING, where STRING, code STRING"

#: the order key as sort columns: ``idx`` is ``ok[0]``, a long whose prefix Spark's sort compares
#: at once; the array is compared only between records of one input
IN_ORDER = ("idx", "ok")

#: ``ok[1]`` of the task's first take of an input, and of a record read back from an internal topic
INPUT_TAKE, INTERNAL_TAKE = 0, 1


@attrs.frozen
class StageResult:
    """What one stage made of its arrivals; every part optional (a frame or None)."""

    emitted: object = None
    outputs: object = None
    drops: object = None
    failures: object = None


def _types(ddl: str) -> dict:
    return dict(part.split(" ", 1) for part in ddl.split(", "))


def select_columns(frame, ddl: str, **columns):
    """``frame``'s columns of ``ddl`` in order, each given as a Column or a column name in
    ``columns`` or taken by its own name; absent ones are null, every one cast to its type."""
    from pyspark.sql import functions as F

    present = set(frame.columns)
    picked = []
    for name, kind in _types(ddl).items():
        col = columns.get(name, name if name in present else None)
        col = F.lit(None) if col is None else (F.col(col) if isinstance(col, str) else col)
        picked.append(col.cast(kind).alias(name))
    return frame.select(*picked)


def records(frame, **columns):
    """A stage's emitted records (see :data:`RECORD_COLUMNS`): ``frame``'s columns, overridden
    by ``columns``; the node column must say the emitting node."""
    ddl = ", ".join(p for p in ARRIVAL_DDL.split(", ") if p.split()[0] in RECORD_COLUMNS)
    return select_columns(frame, ddl, **columns)


def drops(frame, reason: str, where=None, **columns):
    """Drop rows for every row of ``frame`` (an arrivals frame): ``reason`` a DropReason code,
    ``where`` (a string or a Column) names a place that is not the node (a repartition topic)."""
    from pyspark.sql import functions as F

    where = where if where is None or not isinstance(where, str) else F.lit(where)
    return select_columns(frame, DROP_DDL, reason=F.lit(reason), where=where, **columns)


def failures(frame, code: str, **columns):
    from pyspark.sql import functions as F

    return select_columns(frame, FAILURE_DDL, code=F.lit(code), **columns)


def extend(ok_column, *positions):
    """The order key ``ok_column`` followed by ``positions`` (Columns or ints)."""
    from pyspark.sql import functions as F

    parts = [p if not isinstance(p, int) else F.lit(p) for p in positions]
    return F.concat(ok_column, F.array(*[p.cast("bigint") for p in parts]))


def merged(parts) -> "StageResult":
    """One StageResult of several (each part's emitted records, drops and failures together)."""
    return StageResult(emitted=union_all([p.emitted for p in parts]), drops=union_all([p.drops for p in parts]),
                       failures=union_all([p.failures for p in parts]))


def union_all(frames):
    """The union of the frames that are not None (None if there are none)."""
    frames = [f for f in frames if f is not None]
    if not frames:
        return None
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out
