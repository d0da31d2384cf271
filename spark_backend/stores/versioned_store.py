"""A versioned KTable's store (``RocksDBVersionedStore``, KIP-889, 3.5+, ``versioned_tables``):
the one per-key sequential part of the Spark backend.

Why sequential: the store is not a clean "set of versions". It keeps the latest version in a
latest-value store and older ones in segments (by validTo, ``segmentInterval`` from the history
retention), and some operations lose information: a tombstone at the latest version's own
timestamp deletes that version without recording a tombstone, so a later, older put becomes the
latest again; a tombstone with nothing newer is a degenerate segment record; a put inside the
history splits a record and may move it to an older segment. What a put returns (``isLatest``, the
flag ``KTableSource`` forwards) and what ``get(key, asOf)`` returns depend on that physical
history, so each key's puts and as-of lookups are replayed in processing order through a model
of the store (``_KeyHistory``): the rows of versioned tables, sorted by (scenario, task, table, key,
position) inside the batch's (scenario, task) partitions, stream through ``mapInArrow``.

Set-based around it: expired puts (``ts < observedStreamTime - historyRetention``) are removed
before (``table_source.py``), and the store clock a lookup sees is a window max over the task's
earlier puts, passed in per lookup (``observed``). Segment clean-up is not modelled: it only removes segments
older than the clock minus the retention, which no non-expired put and no in-retention lookup
reaches.
"""
from __future__ import annotations

from pyspark.sql import functions as F

SENTINEL = None  # "nothing newer found": the put goes to the latest-value store


def segment_interval(history_retention_ms: int) -> int:
    """``RocksDbVersionedKeyValueBytesStoreSupplier``'s default segment interval."""
    r = history_retention_ms
    if r <= 60_000:
        return max(r // 3, 2_000)
    if r <= 300_000:
        return max(r // 5, 20_000)
    if r <= 3_600_000:
        return max(r // 12, 60_000)
    return max(r // 24, 300_000)


class _Segment:
    """One key's records in one segment: newest first, each ``[valid_from, value]``; the newest is
    valid until ``next_ts``, every other one until the next newer one starts. A *degenerate*
    segment is a lone tombstone with ``valid_from == next_ts``."""

    __slots__ = ("records", "next_ts")

    def __init__(self, value, valid_from, valid_to):
        self.reset(value, valid_from, valid_to)

    def reset(self, value, valid_from, valid_to):
        self.records = [[valid_from, value]]
        self.next_ts = valid_to

    @property
    def min_ts(self):
        return self.records[-1][0]

    @property
    def degenerate(self):
        return self.next_ts == self.min_ts

    def find(self, ts):
        """(index, valid_from, valid_to, value) of the record valid at ``ts`` (min_ts <= ts < next_ts)."""
        valid_to = self.next_ts
        for i, (valid_from, value) in enumerate(self.records):
            if valid_from <= ts:
                return i, valid_from, valid_to, value
            valid_to = valid_from
        raise AssertionError("versioned segment search out of range")

    def insert_as_latest(self, valid_from, valid_to, value):
        if valid_from < self.next_ts:
            self._truncate(valid_from)  # recovery path of the formatter; unreachable in normal runs
        if self.next_ts == valid_from:
            if self.degenerate:
                self.reset(value, valid_from, valid_to)
            else:
                self.records.insert(0, [valid_from, value])
        else:
            # a gap between the newest record and this one is filled with a tombstone
            if self.degenerate:
                self.reset(None, self.next_ts, valid_from)
            else:
                self.records.insert(0, [self.next_ts, None])
            self.records.insert(0, [valid_from, value])
        self.next_ts = valid_to

    def insert_as_earliest(self, ts, value):
        if self.degenerate:
            self.reset(value, ts, self.next_ts)
        else:
            self.records.append([ts, value])

    def _truncate(self, ts):
        if ts <= self.min_ts:
            self.reset(None, ts, ts)
            return
        index, valid_from, _, _ = self.find(ts)
        drop = index + (1 if valid_from == ts else 0)
        del self.records[:drop]
        self.next_ts = ts


class _KeyHistory:
    """One key's slice of a RocksDBVersionedStore: the latest value and the segments."""

    __slots__ = ("interval", "latest", "segments")

    def __init__(self, interval):
        self.interval = interval
        self.latest = None  # (value, ts); tombstones are never in the latest-value store
        self.segments = {}

    def _segment_id(self, ts):
        return ts // self.interval

    def _newest_first(self, ts):
        low = self._segment_id(ts)
        return [self.segments[s] for s in sorted(self.segments, reverse=True) if s >= low]

    def put(self, value, ts) -> bool:
        """Store a (non-expired) put; True when it became the latest version (isLatest)."""
        found = SENTINEL
        if self.latest is not None:
            latest_value, latest_ts = self.latest
            if ts >= latest_ts:
                if ts > latest_ts:
                    self._add_as_latest(self._segment_id(ts), latest_ts, ts, latest_value)
                # a tombstone at the latest version's own ts simply deletes it
                self.latest = (value, ts) if value is not None else None
                return True
            found = latest_ts
        for segment in self._newest_first(ts):
            if segment.next_ts <= ts:
                break
            if segment.min_ts <= ts:
                self._put_into(segment, value, ts)
                return False
            found = segment.min_ts
        if found is SENTINEL:
            if value is not None:
                self.latest = (value, ts)
                return True
            segment = self.segments.get(self._segment_id(ts))
            if segment is None:
                self.segments[self._segment_id(ts)] = _Segment(None, ts, ts)
            elif segment.next_ts != ts:
                segment.insert_as_latest(segment.next_ts, ts, None)
            return True
        segment = self.segments.get(self._segment_id(found))
        if segment is None:
            self.segments[self._segment_id(found)] = _Segment(value, ts, found)
        elif segment.next_ts <= ts:
            segment.insert_as_latest(ts, found, value)
        else:
            segment.insert_as_earliest(ts, value)
        return False

    def _add_as_latest(self, segment_id, valid_from, valid_to, value):
        segment = self.segments.get(segment_id)
        if segment is None:
            self.segments[segment_id] = _Segment(value, valid_from, valid_to)
        else:
            segment.insert_as_latest(valid_from, valid_to, value)

    def _put_into(self, segment, value, ts):
        index, valid_from, _, old_value = segment.find(ts)
        if valid_from == ts:
            segment.records[index] = [ts, value]
            return
        target = self._segment_id(ts)
        if self.segments.get(target) is not segment:
            # the record that now ends at ts belongs (by validTo) to an older segment
            self._add_as_latest(target, valid_from, ts, old_value)
            segment.records[index] = [ts, value]
            return
        segment.records.insert(index, [ts, value])

    def get(self, as_of, observed, retention):
        """``get(key, asOf)`` with the store's clock at ``observed``."""
        latest = self.latest
        if latest is not None and latest[1] <= as_of:
            return latest[0]
        if as_of < observed - retention:
            return None  # beyond history retention only the latest version answers
        for segment in self._newest_first(as_of):
            if segment.next_ts <= as_of:
                return None
            if segment.min_ts > as_of:
                continue
            return segment.find(as_of)[3]
        return None


PUT, LOOKUP = 0, 1


def _replay_batches(batches):
    """Rows sorted by (scenario, task, store, key, position): isLatest per put, value per lookup."""
    import pyarrow as pa

    current, history = None, None
    for batch in batches:
        cols = {name: batch.column(name).to_pylist() for name in
                ("sid", "task", "store", "key", "v_kind", "ts", "value", "t_ret", "asof", "observed")}
        is_latest, tvals = [], []
        for i in range(batch.num_rows):
            kind = cols["v_kind"][i]
            if kind is None:
                is_latest.append(None)
                tvals.append(None)
                continue
            group = (cols["sid"][i], cols["task"][i], cols["store"][i], cols["key"][i])
            if group != current:
                current, history = group, _KeyHistory(segment_interval(cols["t_ret"][i]))
            if kind == PUT:
                is_latest.append(history.put(cols["value"][i], cols["ts"][i]))
                tvals.append(None)
            else:
                observed = cols["observed"][i]
                is_latest.append(None)
                tvals.append(history.get(cols["asof"][i], -1 if observed is None else observed, cols["t_ret"][i]))
        yield pa.RecordBatch.from_arrays(
            batch.columns + [pa.array(is_latest, pa.bool_()), pa.array(tvals, pa.string())],
            names=batch.schema.names + ["v_latest", "v_tval"])


def replay(frame, involved, enabled=True):
    """Replay the versioned stores of the rows where ``involved`` holds, per key in position order.

    ``frame`` is clustered by (scenario, task) and has ``store`` (which table), ``key, pos, v_kind``
    (PUT: a stored put; LOOKUP: a ``get(key, asOf)``; else nothing), ``ts, value, t_ret``, and for
    lookups ``asof`` and ``observed`` (the store's clock at that point). Adds ``v_latest`` (isLatest
    of a put) and ``v_tval`` (a lookup's answer); other rows get nulls. Without versioned tables in
    the batch (``enabled`` false) nothing is replayed."""
    from pyspark.sql.types import BooleanType, StringType, StructField, StructType

    if not enabled:
        return frame.select("*", F.lit(None).cast("boolean").alias("v_latest"),
                            F.lit(None).cast("string").alias("v_tval"))
    schema = StructType(frame.schema.fields + [StructField("v_latest", BooleanType()),
                                               StructField("v_tval", StringType())])
    frame = frame.withColumn("v_kind", F.when(involved, F.col("v_kind")))
    return python_partitions(frame).sortWithinPartitions("sid", "task", "store", "key", "pos", "v_kind") \
        .mapInArrow(_replay_batches, schema)


def python_partitions(frame):
    """At most one partition per core before a Python step: a Python task costs tens of ms even
    when its partition is empty, and with many shuffle partitions most are. ``coalesce`` only
    merges whole partitions, so every (scenario, task) stays together."""
    return frame.coalesce(max(1, frame.sparkSession.sparkContext.defaultParallelism))
