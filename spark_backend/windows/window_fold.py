"""The running fold of the aggregations Spark has no native expression for: string_adder,
string_reduce, list (and Python API callables), per window of one processor, in processing order.

A ``mapInArrow`` over the window rows clustered by (scenario, task, side, key) and sorted by
(window start, position): each row is one update of one window; the fold keeps that window's
stored aggregate and timestamp and applies the shared model's functions
(``reference.model.aggregations.aggregation_of``: the same ``initial`` / ``add`` the reference
engine evaluates). Per row it returns the new aggregate (JSON text; null when a reduce's aggregate
turns null, which deletes the window), the old one (the stored aggregate, or the initializer's when
the store had none), the window's stored ts after the update (the record's ts for a fresh window,
else the max of both), ``prior`` (the store had the window) and ``fail`` (the aggregator threw:
``AggregatorNullValue``). A ``dead`` row (before 2.1: the store forgot the window) starts from the
initializer and stores nothing.
"""
from __future__ import annotations

_INPUT = ("sid", "task", "side", "key", "w_start", "value", "ts", "dead", "agg")
#: the columns the fold adds to its rows
FOLD_DDL = ("new_text STRING, new_null BOOLEAN, old_text STRING, old_null BOOLEAN, new_ts BIGINT, prior BOOLEAN, "
            "fail BOOLEAN")
_OUTPUT = tuple(part.split()[0] for part in FOLD_DDL.split(", "))


def fold_function(callables):
    """The ``mapInArrow`` function; ``callables``: ``((sid, side, Aggregation), ...)`` of the batch."""
    by_processor = {(sid, side): agg for sid, side, agg in callables}

    def fold(batches):
        import json

        import pyarrow as pa

        from kssim.reference.model.aggregations import AggregatorNullValue, aggregation_of
        from kssim.spark_backend.runtime.inputs import json_text

        named = {}

        def aggregation(sid, side, name):
            found = by_processor.get((sid, side))
            if found is not None:
                return found
            if name not in named:
                named[name] = aggregation_of(name)
            return named[name]

        window = None
        stored = stored_ts = key = fn = None
        has = False
        for batch in batches:
            cols = {name: batch.column(name).to_pylist() for name in _INPUT}
            out = {name: [] for name in _OUTPUT}
            for i in range(batch.num_rows):
                this = (cols["sid"][i], cols["task"][i], cols["side"][i], cols["key"][i], cols["w_start"][i])
                if this != window:
                    window, has, stored, stored_ts = this, False, None, None
                    key = json.loads(this[3])
                    fn = aggregation(this[0], this[2], cols["agg"][i])
                text, ts, dead = cols["value"][i], cols["ts"][i], cols["dead"][i]
                value = None if text is None else json.loads(text)
                prior = has and not dead
                old = stored if prior else fn.initial()
                fail = False
                try:
                    new = fn.add(key, value, old)
                except AggregatorNullValue:
                    new, fail = None, True
                new_ts = max(ts, stored_ts) if prior else ts
                if not dead:
                    has, stored, stored_ts = new is not None, new, new_ts
                out["new_text"].append(None if new is None else json_text(new))
                out["new_null"].append(new is None)
                out["old_text"].append(None if old is None else json_text(old))
                out["old_null"].append(old is None)
                out["new_ts"].append(new_ts)
                out["prior"].append(prior)
                out["fail"].append(fail)
            added = [pa.array(out[name], kind) for name, kind in _arrow_types(pa)]
            yield pa.RecordBatch.from_arrays(batch.columns + added, names=batch.schema.names + list(_OUTPUT))

    return fold


def _arrow_types(pa):
    kinds = {"BIGINT": pa.int64(), "STRING": pa.string(), "BOOLEAN": pa.bool_()}
    return [(part.split()[0], kinds[part.split()[1]]) for part in FOLD_DDL.split(", ")]


def folded(rows, callables):
    """``rows`` (window rows whose aggregation is folded in Python) with the fold's columns added."""
    from pyspark.sql.types import StructType

    clustered = rows.repartition("sid", "task", "side", "key") \
        .sortWithinPartitions("sid", "task", "side", "key", "w_start", "seq")
    schema = StructType(rows.schema.fields + StructType.fromDDL(FOLD_DDL).fields)
    return clustered.mapInArrow(fold_function(callables), schema)
