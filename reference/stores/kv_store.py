"""The key-value store behind an unversioned KTable (Kafka's timestamped key-value store).

Rules (``KTableSource`` with a ``TimestampedKeyValueStore``, RocksDB or in-memory alike):
- one row per key: the value of the last put and that put's timestamp;
- every put is applied, out-of-order ones included (Kafka only logs "Detected out-of-order KTable
  update"), so every put is the latest (``KeyValueStoreWrapper`` returns IS_LATEST);
- a tombstone (null value) deletes the row.

Keys are key identities (:func:`reference.model.keys.key_identity`): two keys are one row exactly
when their serialized bytes are equal, as in Kafka; the callers (the joins) convert. A stored row
is the tuple ``(value, ts, input_index)``; the input index says which input record wrote it, for
explanations. Versioned tables use :mod:`reference.stores.versioned_store`, which answers
``get`` with the same tuples.
"""
from __future__ import annotations

#: put() outcomes, as ``KeyValueStoreWrapper`` reports them to ``KTableSource`` (KIP-889/KIP-914)
PUT_IS_LATEST = "is_latest"
PUT_NOT_LATEST = "not_latest"
PUT_NOT_PUT = "not_put"


class KeyValueStore:
    """Latest value per key; a put always overwrites, a tombstone deletes.

    Backed by one ``dict`` from key identity to row (``rows``, which joins read directly on their
    hot path): every operation is one hash-table operation, O(1) expected."""

    versioned = False
    __slots__ = ("rows",)

    def __init__(self):
        self.rows: dict = {}

    def get(self, key):
        """The stored row ``(value, ts, input_index)`` of ``key`` (a key identity), or None.

        Cost: O(1) expected (one dict lookup)."""
        return self.rows.get(key)

    def put(self, key, value, ts, input_index=-1) -> str:
        """Store ``value`` as the row of ``key`` (a key identity); None deletes the row. Always
        PUT_IS_LATEST.

        Cost: O(1) expected (one dict store or pop)."""
        if value is None:
            self.rows.pop(key, None)
        else:
            self.rows[key] = (value, ts, input_index)
        return PUT_IS_LATEST

    def __len__(self):
        """Number of stored rows. Cost: O(1)."""
        return len(self.rows)
