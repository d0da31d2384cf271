"""Record caches (``config.caching: true``: ``statestore.cache.max.bytes`` 10 MB, never full in a
scenario), as ``ThreadCache``/``NamedCache`` and the caching stores' flush listeners behave under
``TopologyTestDriver``, which commits after every record it processes.

A cached store's processor does not forward its updates; the cache keeps, per key, the latest
update (new value, timestamp, explanation) and the store's value before the first update since
the last flush. At the commit the driver flushes every cache in store-creation order, twice
(``StreamTask#prepareCommit`` flushes the caches, ``postCommit`` flushes the stores again); each
dirty key, in the order of its last update, is forwarded as ``Change(latest, value before)``
(the old value only where the store sends old values), unless both are null: a tombstone for a
key the store never held is not forwarded at all (``CachingKeyValueStore#putAndMaybeForward``, since 2.2: ``record_cache_skips_null_changes``).
What a flush forwards may dirty other caches; those flushed in the second pass go out at this
commit, the others at the next one.

The stores themselves are written at once (a cache read returns the latest value, as Kafka's
caching store reads through its cache), so only forwarding is deferred. Which stores are cached:
key-value stores of materialized table sources and of aggregations; not versioned stores, not
join windows. Costs: :meth:`NamedCache.put` O(1); a flush O(dirty keys).
"""
from __future__ import annotations

_ABSENT = object()


class NamedCache:
    """The cache of one store: dirty keys in the order they first became dirty."""

    __slots__ = ("processor", "send_old", "skip_null_changes", "dirty")

    def __init__(self, processor, send_old: bool, skip_null_changes: bool):
        self.processor = processor  # forwards what the cache flushes
        self.send_old = send_old
        self.skip_null_changes = skip_null_changes  # [record_cache_skips_null_changes, KAFKA-7652, 2.2]
        self.dirty: dict = {}  # key identity -> [key, new, old before this generation, ts, why]

    def put(self, key, key_id, new, old_stored, ts, why) -> None:
        """An update of ``key``: ``old_stored`` is the store's value before this update. A key
        already dirty moves to the end (``NamedCache``'s ``LinkedHashSet`` of dirty keys is
        re-added on every put: the flush order is by each key's last put)."""
        entry = self.dirty.pop(key_id, None)
        if entry is None:
            self.dirty[key_id] = [key, new, old_stored, ts, why]
        else:
            entry[1], entry[3], entry[4] = new, ts, why
            self.dirty[key_id] = entry

    def flush(self) -> None:
        if not self.dirty:
            return
        dirty, self.dirty = self.dirty, {}
        forward = self.processor.forward_flushed
        for key, new, old, ts, why in dirty.values():
            if new is None and old is None and self.skip_null_changes:
                continue
            forward(key, new, old if self.send_old else None, ts, why)


class RecordCache:
    """Every cache of the task, in store-creation order."""

    __slots__ = ("caches", "skip_null_changes")

    def __init__(self, skip_null_changes: bool = True):
        self.caches: list = []
        self.skip_null_changes = skip_null_changes

    def register(self, processor, send_old: bool) -> NamedCache:
        cache = NamedCache(processor, send_old, self.skip_null_changes)
        self.caches.append(cache)
        return cache

    def commit(self) -> None:
        for _ in range(2):
            for cache in self.caches:
                cache.flush()
