"""A KTable source (Kafka's ``KTableSource``), materialized as every join materializes it.

Rules, per release (read from the profile by the join modules and passed in):
- Null key: dropped ("Skipping record due to null key") since 0.10.2 (KAFKA-4613, shipped with
  the KIP-77 join rework). Before, a null-key table record kills the application: 0.10.1's source
  throws ``StreamsException("Record key for the source KTable ... should not be null")``; in 0.10.0
  the source stores it and the KTable-KTable join processor throws (the stream-table join's
  store fails on its next flush).
- Materialization: the old value is read, then the new value put. An unversioned store
  (:mod:`reference.stores.kv_store`) applies every update, out-of-order ones too, and a tombstone deletes
  the row; a tombstone for an absent key is still forwarded, as ``Change(null, null)``.
- Versioned store (3.5+, KIP-889, :mod:`reference.stores.versioned_store`): a put the store rejects
  (NOT_PUT, ``ts < observed - history retention``) is neither stored nor forwarded and is counted
  as dropped; otherwise the Change carries ``isLatest`` (KIP-914). The old value is the key's
  newest version before the put, whatever the timestamps.
- Emit-on-change (KIP-557, only in 2.6.0, 2.6.1 and 2.7.0; removed by KAFKA-12508): an update
  whose serialized value equals the stored one and whose ts is not older is skipped (no put, no
  forward, the ``idempotent-update-skip`` sensor), and so is a tombstone for an absent key.
- Forwarding: ``Change(new, old)`` where old is the stored value before the put if old values are
  enabled for this source (``enableSendingOldValues``), else null.

``update(key, key_id, value, ts, ctx)`` takes the record's key and its identity
(:func:`reference.model.keys.key_identity`, what the store is keyed by: keys are equal exactly when
their serialized bytes are, as in Kafka; the key itself is kept for explanations). It returns
``(old_value, is_latest)`` for a forwarded change and None when the source forwards nothing (the
reason is recorded with ``ctx.drop``).
"""
from __future__ import annotations

import json

from kssim.reference.model.codes import DropReason, FailureCode
from kssim.reference.runtime.explain import Stored, Why, show
from kssim.reference.stores.kv_store import PUT_IS_LATEST, PUT_NOT_PUT, KeyValueStore
from kssim.reference.stores.versioned_store import VersionedKeyValueStore

_NO_OLD_LATEST = (None, True)


def make_store(table_spec):
    """The store a join materializes a table into: versioned (KIP-889) or key-value."""
    if table_spec.versioned:
        return VersionedKeyValueStore(table_spec.history_retention_ms)
    return KeyValueStore()


def _serialized(value) -> str:
    # the value serde's bytes, for emit-on-change's byte comparison (types stay distinct: 1 vs 1.0)
    return json.dumps(value, separators=(",", ":"))


class TableSource:
    """``KTableSource`` of one input table of one task."""

    __slots__ = ("side", "store", "rows", "put", "send_old_values", "null_key_fatal", "update")

    def __init__(self, side: str, store, send_old_values: bool, emit_on_change: bool = False,
                 null_key_fatal: bool = False):
        self.side = side
        self.store = store
        self.rows = None if store.versioned else store.rows  # read-only fast path for old values
        self.put = store.put
        self.send_old_values = send_old_values
        self.null_key_fatal = null_key_fatal  # before 0.10.2: FailureCode.TABLE_SOURCE_NULL_KEY
        if store.versioned:
            self.update = self._update_versioned
        elif emit_on_change:
            self.update = self._update_emit_on_change
        elif send_old_values:
            self.update = self._update_with_old
        else:
            self.update = self._update

    # --- unversioned store ---------------------------------------------------------------------
    def _update(self, key, key_id, value, ts, ctx):
        if key is None:
            return self._null_key(ctx, value, ts)
        self.put(key_id, value, ts, ctx.input_index)
        return _NO_OLD_LATEST

    def _update_with_old(self, key, key_id, value, ts, ctx):
        if key is None:
            return self._null_key(ctx, value, ts)
        old = self.rows.get(key_id)
        self.put(key_id, value, ts, ctx.input_index)
        return _NO_OLD_LATEST if old is None else (old[0], True)

    def _update_emit_on_change(self, key, key_id, value, ts, ctx):
        # KIP-557 (2.6.0, 2.6.1, 2.7.0): putIfDifferentValues compares the serialized
        # ValueAndTimestamp bytes; a null new value serializes to null, as does an absent row
        if key is None:
            return self._null_key(ctx, value, ts)
        old = self.rows.get(key_id)
        if old is None and value is None:
            return self._idempotent(ctx, key, value, ts, None)
        if old is not None and value is not None and ts >= old[1] and _serialized(value) == _serialized(old[0]):
            return self._idempotent(ctx, key, value, ts, old)
        self.put(key_id, value, ts, ctx.input_index)
        return (old[0] if old is not None and self.send_old_values else None, True)

    # --- versioned store -----------------------------------------------------------------------
    def _update_versioned(self, key, key_id, value, ts, ctx):
        if key is None:
            return self._null_key(ctx, value, ts)
        old = self.store.get(key_id) if self.send_old_values else None
        code = self.put(key_id, value, ts, ctx.input_index)
        if code is PUT_NOT_PUT:
            ctx.drop(DropReason.EXPIRED_VERSIONED_PUT, self._why_expired(ctx, key, value, ts) if ctx.explain else None)
            return None
        return (None if old is None else old[0], code is PUT_IS_LATEST)

    # --- drops ---------------------------------------------------------------------------------
    def _null_key(self, ctx, value, ts):
        if self.null_key_fatal:
            ctx.fail(FailureCode.TABLE_SOURCE_NULL_KEY)
        why = None
        if ctx.explain:
            why = Why("null_key", f"{self.side} table record null:{show(value)}@{ts} has a null key: "
                      "skipped by the KTable source ('Skipping record due to null key')",
                      ref="KTableSource, KAFKA-4613")
        ctx.drop(DropReason.NULL_KEY, why)
        return None

    def _idempotent(self, ctx, key, value, ts, old):
        why = None
        if ctx.explain:
            if old is None:
                text = (f"{self.side} table tombstone {show(key)}:null@{ts} for an absent key: skipped "
                        "(emit-on-change, 2.6.0-2.7.0)")
                joined = ()
            else:
                text = (f"{self.side} table update {show(key)}:{show(value)}@{ts} equals the stored value "
                        f"and ts {ts} >= stored ts {old[1]}: skipped as idempotent (emit-on-change, 2.6.0-2.7.0)")
                joined = (Stored(self.side, key, old[0], old[1], old[2]),)
            why = Why("idempotent_update", text, joined, ref="KIP-557, removed by KAFKA-12508")
        ctx.drop(DropReason.IDEMPOTENT_UPDATE, why)
        return None

    def _why_expired(self, ctx, key, value, ts):
        store = self.store
        return Why("expired_versioned_put",
                   f"expired put: {self.side} table {show(key)}:{show(value)}@{ts}, ts {ts} < observed "
                   f"{store.observed_stream_time} - history retention {store.history_retention_ms} = "
                   f"{store.observed_stream_time - store.history_retention_ms}: not stored, not forwarded",
                   ref="RocksDBVersionedStore (KIP-889)")
