"""KStream-GlobalKTable join (``KStreamGlobalKTableJoin`` / ``KStreamKTableJoinProcessor``): inner and left.

Topic ``left`` is the stream, ``right`` the topic behind the GlobalKTable. Rules, per release
(profile rule in brackets), read in Kafka's code at the release tags:

- The GlobalKTable [``global_table_joins``, KIP-99, 0.10.2]: every instance holds the *whole*
  topic in one key-value store (``GlobalTables cannot be versioned``: a plain timestamped store,
  :mod:`reference.stores.kv_store`), filled by the global thread through a ``KTableSource``. Here
  that is ONE store shared by all tasks of the run: a ``right`` record is applied to it whatever its
  partition, and every task's stream records read it. The topics need not be co-partitioned.
  A ``right`` record with a null key is skipped (``KTableSource``: "Skipping record due to null
  key"); a null value (tombstone) deletes the key. In 2.6.0, 2.6.1 and 2.7.0
  [``ktable_emit_on_change``, KIP-557] the source skips an update equal to the stored value, and a
  tombstone for an absent key, as any ``KTableSource`` does (the store's content is the same).
- When the table's records are applied (``config.global_table``): ``as_listed`` (TopologyTestDriver:
  a piped global record updates the store at once, so it is applied at its place in the
  processing order) or ``bootstrap`` (a starting application restores the store from the whole
  topic before its stream threads run: :func:`reference.runtime.engine.processing_order` puts
  every ``right`` record first). The restore writes the store directly, without ``KTableSource``:
  no emit-on-change; it skips null keys [``global_restore_skips_null_key``, KAFKA-5047, 0.11.0];
  in 0.10.2 a null-key record makes the restore throw ``NullPointerException`` and the application
  dies (failure ``global_restore_null_key``).
- Only stream records trigger; output key = the stream record's key, output ts = the stream
  record's ts in every release (the processor forwards the stream record with a new value:
  KAFKA-6455 [``output_ts_max``] does not apply). Inner emits only when the table has a value for
  the mapped key, left always (a missing value is null). No record of the table ever emits.
- The key mapper (:func:`reference.model.topology.extract_key`; a mapper whose source, the value or
  the key, is null returns null) and the null checks:
  * 0.10.2-2.6: a stream record with a null key or a null value is dropped before the mapper
    runs (silently before 2.0, then with "Skipping record due to null key or value"). A null mapped
    key then reaches ``get(null)`` on the global store, which throws (failure
    ``global_lookup_null_key``) [``global_join_null_mapped_key_throws``, until 1.0.1]; from 1.0.1
    (KAFKA-6378) it means "no match": the left join emits ``joiner(v, null)``, the inner join
    nothing, and nothing is counted [``global_left_join_null_mapped_key``, 1.0.1-2.6].
  * 2.7+ [``global_join_null_stream_key``, KAFKA-10277]: the mapper runs first; a record whose
    mapped key or value is null is dropped ("Skipping record due to null join key or value",
    ``null_join_key`` / ``null_value``), so a null stream key with a non-null mapped key is joined
    (output key null) and a null mapped key is dropped in the left join too.
  * 3.7+ [``null_key_outer_emit``, KIP-962]: a left join never drops a null-key record with a
    value: it is joined (with null when its mapped key is null too).
  * 4.1+ [``global_left_join_null_mapped_key``, KAFKA-19208]: a left join never drops a record
    with a value whose mapped key is null: ``joiner(v, null)``.
  The null-value drop [``kip77_join_semantics``] holds in every release that has the join.
- Keys: the store and the lookups use the key's identity (:func:`reference.model.keys.key_identity`):
  a mapped key finds a table row exactly when their serialized bytes are equal.
"""
from __future__ import annotations

from kssim.reference.joins.table_source import TableSource
from kssim.reference.model.codes import DropReason, FailureCode
from kssim.reference.model.errors import KssimError
from kssim.reference.model.joiners import make_joiner
from kssim.reference.model.keys import key_identity
from kssim.reference.model.topology import ExtractorError, extract_key
from kssim.reference.runtime.explain import Stored, Why, show
from kssim.reference.stores.kv_store import KeyValueStore

_REF = "KStreamKTableJoinProcessor (KStreamGlobalKTableJoin)"
#: ``instance_state`` entry: the one GlobalKTable of the run, shared by every task
_STATE_KEY = "global_table"


def build(spec, profile, config, instance_state):
    table = instance_state.get(_STATE_KEY)
    if table is None:
        table = instance_state[_STATE_KEY] = GlobalTable(profile, bootstrap=config.global_table == "bootstrap")
    return GlobalTableJoin(spec, profile, table)


class GlobalTable:
    """The GlobalKTable of one instance: its store, written by the global thread (``as_listed``:
    its ``KTableSource`` as each record comes; ``bootstrap``: the start-up restore)."""

    __slots__ = ("store", "rows", "source", "bootstrap", "restore_skips_null_key")

    def __init__(self, profile, bootstrap: bool):
        self.store = KeyValueStore()
        self.rows = self.store.rows
        self.bootstrap = bootstrap
        self.restore_skips_null_key = profile.global_restore_skips_null_key
        # [ktable_emit_on_change] only KTableSource checks for idempotent updates; the restore writes the store
        self.source = TableSource("right", self.store, send_old_values=False,
                                  emit_on_change=profile.ktable_emit_on_change and not bootstrap)

    def update(self, key, value, ts, ctx):
        if key is None and self.bootstrap:
            self._restore_null_key(value, ts, ctx)
            return
        self.source.update(key, None if key is None else key_identity(key), value, ts, ctx)

    def _restore_null_key(self, value, ts, ctx):
        if not self.restore_skips_null_key:  # [global_restore_skips_null_key] 0.10.2
            ctx.fail(FailureCode.GLOBAL_RESTORE_NULL_KEY)
        why = None
        if ctx.explain:
            why = Why("null_key", f"global table record null:{show(value)}@{ts} has a null key: skipped by the "
                      "start-up restore of the global store (no log, no metric)",
                      ref="GlobalStateManagerImpl#restoreState, KAFKA-5047")
        ctx.drop(DropReason.NULL_KEY, why)


class GlobalTableJoin:
    """The join processor of one task, reading the instance's one :class:`GlobalTable`."""

    __slots__ = ("joiner", "left_join", "table", "key_mapper", "mapper_first", "null_mapped_throws",
                 "null_mapped_left_emit", "null_key_left_emit")

    def __init__(self, spec, profile, table: GlobalTable):
        self.joiner = make_joiner(spec.joiner, spec.joiner_separator)
        self.left_join = spec.join == "left"
        self.table = table
        self.key_mapper = spec.key_mapper
        self.mapper_first = profile.global_join_null_stream_key
        self.null_mapped_throws = profile.global_join_null_mapped_key_throws
        self.null_mapped_left_emit = self.left_join and profile.global_left_join_null_mapped_key
        self.null_key_left_emit = self.left_join and profile.null_key_outer_emit

    def process(self, topic, key, value, ts, ctx):
        if topic != "left":
            self.table.update(key, value, ts, ctx)
            return
        if not self.mapper_first:
            # 0.10.2-2.6: the null check comes first and reads the stream key
            if key is None or value is None:
                self._drop(DropReason.NULL_KEY if key is None else DropReason.NULL_VALUE, key, value, ts, None, ctx)
                return
            mapped = self._map(key, value, ctx)
            if mapped is None:
                if self.null_mapped_throws:  # [global_join_null_mapped_key_throws] get(null)
                    ctx.fail(FailureCode.GLOBAL_LOOKUP_NULL_KEY)
                if self.null_mapped_left_emit:  # [global_left_join_null_mapped_key] KAFKA-6378
                    self._emit(key, value, ts, None, None, ctx)
                elif ctx.misses:
                    self._note_miss(key, value, ts, None, ctx)
                return  # inner join: no match, nothing counted
        else:
            # [global_join_null_stream_key] 2.7+: the mapper runs first, the check reads its result
            mapped = self._map(key, value, ctx)
            exempt = value is not None and (
                (key is None and self.null_key_left_emit)  # [null_key_outer_emit] KIP-962
                or (mapped is None and self.null_mapped_left_emit))  # [global_left_join_null_mapped_key] KAFKA-19208
            if not exempt and (mapped is None or value is None):
                self._drop(DropReason.NULL_VALUE if value is None else DropReason.NULL_JOIN_KEY, key, value, ts,
                           mapped, ctx)
                return
            if mapped is None:
                self._emit(key, value, ts, None, None, ctx)
                return
        row = self.table.rows.get(mapped if mapped.__class__ is str and mapped.isascii() else key_identity(mapped))
        if row is None and not self.left_join:
            if ctx.misses:
                self._note_miss(key, value, ts, mapped, ctx)
            return
        self._emit(key, value, ts, mapped, row, ctx)

    def _map(self, key, value, ctx):
        """``keyMapper(key, value)``: a mapper reading a null value (or a null key) returns null."""
        mapper = self.key_mapper
        if (value if mapper.source == "value" else key) is None:
            return None
        try:
            return extract_key(mapper, key, value)
        except ExtractorError as exc:  # a replayed row: the scenario loader rejects these up front
            raise KssimError(f"input {ctx.input_index}: {exc.where}: {exc}") from None

    def _emit(self, key, value, ts, mapped, row, ctx):
        out = self.joiner(value, None if row is None else row[0])
        ctx.emit(key, out, ts, self._why_join(key, value, ts, ctx.input_index, mapped, row) if ctx.explain else None)

    def _note_miss(self, key, value, ts, mapped, ctx):
        """An inner join found no row for the mapped key (or, 1.0.1-2.6, the mapper returned null):
        nothing is emitted, logged or counted; reported as a ``no_match`` drop when the run asks for
        misses (``ctx.misses``)."""
        why = None
        if ctx.explain:
            stream = f"stream {show(key)}:{show(value)}@{ts}"
            if mapped is None:
                text = (f"inner join: the key mapper returned null for {stream}: no lookup, nothing emitted "
                        "(KAFKA-6378, 1.0.1-2.6: not counted as dropped)")
            else:
                when = "bootstrapped before the stream" if self.table.bootstrap else "as of this input"
                text = (f"inner join: {stream} mapped to {show(mapped)}, which the global table ({when}) lacks: "
                        "nothing emitted")
            why = Why("inner_no_match", text, ref=_REF)
        ctx.drop(DropReason.NO_MATCH, why)

    def _drop(self, reason, key, value, ts, mapped, ctx):
        why = None
        if ctx.explain:
            stream = f"stream record {show(key)}:{show(value)}@{ts}"
            if reason is DropReason.NULL_KEY:
                text = (f"{stream} has a null key: dropped before the key mapper runs (before 2.7, KAFKA-10277; "
                        "since 2.0 with 'Skipping record due to null key or value' and the skipped/dropped-records "
                        "metric, silently before)")
            elif reason is DropReason.NULL_VALUE:
                text = f"{stream} has a null value: dropped ('Skipping record due to null join key or value')"
            else:
                kind = "left" if self.left_join else "inner"
                text = (f"{kind} join: the key mapper returned null for {stream}: dropped ('Skipping record due to "
                        "null join key or value'" + ("; a left join keeps it from 4.1, KAFKA-19208)" if self.left_join
                                                     else ")"))
            why = Why(reason.code, text, ref=_REF)
        ctx.drop(reason, why)

    # --- explanations (only built when ctx.explain) --------------------------------------------
    def _why_join(self, key, value, ts, input_index, mapped, row):
        stream = f"stream {show(key)}:{show(value)}@{ts}"
        if input_index != -1:
            stream += f" (input {input_index})"
        kind = "left" if self.left_join else "inner"
        when = "bootstrapped before the stream" if self.table.bootstrap else "as of this input"
        if mapped is None:
            if key is None:
                rule, source = "null_key_left_emit", "a left join keeps a null-key record since 3.7, KIP-962"
            else:
                rule = "null_mapped_key_left_emit"
                source = "KAFKA-19208, 4.1+" if self.mapper_first else "KAFKA-6378, 1.0.1-2.6"
            text = f"left join: the key mapper returned null for {stream}: joined with null without a lookup ({source})"
        elif row is None:
            rule = "left_no_match"
            text = f"left join: {stream} mapped to {show(mapped)}, which the global table ({when}) lacks: joined with null"
        else:
            rule = kind + "_match"
            text = f"{kind} join: {stream} mapped to {show(mapped)}, global table ({when}) value {show(row[0])}"
        if key is None and mapped is not None:
            text += "; null stream key with a non-null mapped key joined (KAFKA-10277), output key null"
        joined = () if row is None else (Stored("right", mapped, row[0], row[1], row[2]),)
        return Why(rule, text + "; output ts = stream ts", joined, ref=_REF)
