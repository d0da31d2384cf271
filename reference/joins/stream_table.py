"""KStream-KTable join (``KStreamKTableJoin`` / ``KStreamKTableJoinProcessor``): inner and left.

Topic ``left`` is the stream, ``right`` the table. Rules, per release (profile rule in brackets):
- Only stream records trigger; a table update is stored (:mod:`reference.joins.table_source`) and
  produces nothing. Output key = stream key, output ts = the stream record's ts (every release;
  KAFKA-6455 did not touch this operator).
- Lookup: the table's current value; a versioned table (3.5+, ``versioned_tables``) answers
  as of the stream record's ts (KIP-889 ``get(key, asOfTimestamp)``).
- Inner emits only when the table has a value; left always emits, with null for a missing one.
- Null key / null value [``kip77_join_semantics``, 0.10.2]: since KIP-77 a stream record with a
  null key or a null value is dropped ("Skipping record due to null join key or value"). Before
  (0.10.0/0.10.1, where only the left join exists) a null key is skipped and a null value is
  joined like any other value. Since 3.7 [``null_key_outer_emit``, KIP-962] a left join emits a
  null-key stream record with a non-null value at once, with a null key and a null table value.
- Grace period (3.6+, KIP-923, :mod:`reference.stores.grace_buffer`): a stream record that is not late
  is buffered and joined when the buffer's time passes its ts + grace; a late one is joined at
  once; each joins as of its own ts against the table as it is at that moment. A 3.7+ left join
  with a grace period dies on a null-key stream record: the buffer's put throws
  ``NullPointerException("key cannot be null")`` (3.6 still dropped it).
- Before 0.10.2 a null-key table record kills the application (see :mod:`reference.joins.table_source`).
- Keys: the table store and the lookups use the key's identity
  (:func:`reference.model.keys.key_identity`): a stream key finds a table row exactly when their
  serialized bytes are equal (``1``, ``1.0``, ``true`` and ``"1"`` are four keys); outputs keep
  the stream record's own key.
"""
from __future__ import annotations

from kssim.reference.model.codes import DropReason, FailureCode
from kssim.reference.model.keys import key_identity
from kssim.reference.model.pending import Pending, PendingKind, record_text
from kssim.reference.runtime.explain import Stored, Why, show
from kssim.reference.stores.grace_buffer import StreamTableGraceBuffer
from kssim.reference.model.joiners import make_joiner
from kssim.reference.joins.table_source import TableSource, make_store

_REF = "KStreamKTableJoinProcessor"


def build(spec, profile, config, instance_state):
    join = StreamTableJoin(spec, profile)
    if join.buffer is None and not join.versioned:
        join.__class__ = PlainStreamTableJoin  # same state, the hot path inlined
    return join


class StreamTableJoin:
    """The stream-table join of one task: the table source, its store, the optional grace buffer."""

    __slots__ = ("joiner", "left_join", "table", "store", "rows", "versioned", "buffer", "drop_null_values",
                 "null_key_left_emit")

    def __init__(self, spec, profile):
        self.joiner = make_joiner(spec.joiner, spec.joiner_separator)
        self.left_join = spec.join == "left"
        store = make_store(spec.table)
        self.table = TableSource("right", store, send_old_values=False,
                                 emit_on_change=profile.ktable_emit_on_change,
                                 null_key_fatal=not profile.kip77_join_semantics)
        self.store = store
        self.versioned = store.versioned
        self.rows = None if store.versioned else store.rows
        self.buffer = StreamTableGraceBuffer(spec.grace_ms) if spec.grace_ms is not None else None
        self.drop_null_values = profile.kip77_join_semantics
        self.null_key_left_emit = self.left_join and profile.null_key_outer_emit

    def process(self, topic, key, value, ts, ctx):
        if topic != "left":
            # an ASCII string is its own identity (the hot path); key_identity for the rest
            self.table.update(key, key if key.__class__ is str and key.isascii() else key_identity(key),
                              value, ts, ctx)
            return
        if (key is None or value is None) and not self._survives_null_check(key, value, ts, ctx):
            return
        buffer = self.buffer
        if buffer is None:
            self._join(key, value, ts, ctx.input_index, ctx, None)
        else:
            self._buffer_then_join(buffer, key, value, ts, ctx)

    def _join(self, key, value, ts, input_index, ctx, via):
        if key is None:
            row = None
        else:
            key_id = key if key.__class__ is str and key.isascii() else key_identity(key)
            row = self.store.get_as_of(key_id, ts) if self.versioned else self.rows.get(key_id)
        if row is None:
            if not self.left_join:
                if ctx.misses:
                    self._note_miss(key, value, ts, ctx)
                return
            out = self.joiner(value, None)
        else:
            out = self.joiner(value, row[0])
        ctx.emit(key, out, ts, self._why_join(key, value, ts, input_index, row, via) if ctx.explain else None)

    def _survives_null_check(self, key, value, ts, ctx) -> bool:
        if key is None:
            if value is not None and self.null_key_left_emit:
                return True  # KIP-962: joined with a null table value, key stays null
            reason, text = DropReason.NULL_KEY, f"stream record null:{show(value)}@{ts} has a null key: dropped"
        elif not self.drop_null_values:
            return True  # before KIP-77 a null stream value is handed to the joiner
        else:
            reason, text = DropReason.NULL_VALUE, f"stream record {show(key)}:null@{ts} has a null value: dropped"
        why = None
        if ctx.explain:
            why = Why(reason.code, text + " ('Skipping record due to null join key or value')", ref=f"{_REF}, KIP-77")
        ctx.drop(reason, why)
        return False

    def _buffer_then_join(self, buffer, key, value, ts, ctx):
        if key is None:
            ctx.fail(FailureCode.GRACE_BUFFER_NULL_KEY)
        observed = buffer.observed_stream_time
        if not buffer.put(key, value, ts, ctx.input_index):
            self._join(key, value, ts, ctx.input_index, ctx, ("late", observed))
            return
        for b_key, b_value, b_ts, b_index in buffer.evict():
            self._join(b_key, b_value, b_ts, b_index, ctx, ("evicted", buffer.observed_stream_time))

    def pending(self, task: int) -> tuple:
        """The stream records in the grace buffer (KIP-923), in release order: each is joined once
        the buffer's stream time reaches its ts + grace. Without a grace period nothing waits."""
        buffer = self.buffer
        if buffer is None:
            return ()
        grace = buffer.grace_ms
        return tuple(Pending(PendingKind.GRACE_BUFFERED, task, record_text("stream", key, value, ts), key, value, ts,
                             ts + grace, f"ts {ts} + grace {grace}", buffer.observed_stream_time,
                             "the grace buffer's", input_index=index)
                     for key, value, ts, index in buffer.held())

    def _note_miss(self, key, value, ts, ctx):
        """An inner join found no table row: nothing is emitted (Kafka logs and counts nothing);
        reported as a ``no_match`` drop when the run asks for misses (``ctx.misses``)."""
        why = None
        if ctx.explain:
            lookup = f"as of {ts} in the versioned table" if self.versioned else "the table's current value"
            why = Why("inner_no_match", f"inner join: stream {show(key)}:{show(value)}@{ts} found no table row for "
                      f"{show(key)} ({lookup}): nothing emitted (a table row arriving later does not trigger the "
                      "join)", ref=_REF)
        ctx.drop(DropReason.NO_MATCH, why)

    # --- explanations (only built when ctx.explain) --------------------------------------------
    def _why_join(self, key, value, ts, input_index, row, via):
        stream = f"stream {show(key)}:{show(value)}@{ts}"
        if input_index != -1:
            stream += f" (input {input_index})"
        lookup = f"as of {ts} in the versioned table" if self.versioned else "current table value"
        kind = "left" if self.left_join else "inner"
        if row is None and key is None:
            rule = "null_key_left_emit"
            text = f"left join: {stream} has a null key: joined with null at once, output key null (KIP-962)"
        elif row is None:
            rule = "left_no_match"
            text = f"left join: {stream} found no table value for {show(key)} ({lookup}): joined with null"
        else:
            rule = kind + "_match"
            text = f"{kind} join: {stream} joined with table {show(key)}:{show(row[0])}@{row[1]} ({lookup})"
        joined = () if row is None else (Stored("right", key, row[0], row[1], row[2]),)
        if via is not None:
            grace = self.buffer.grace_ms
            how, observed = via
            if how == "late":
                rule = "late_" + rule
                text = (f"late for the grace buffer: buffer time {observed} - grace {grace} = {observed - grace} "
                        f"> {ts}, joined at once; " + text)
            else:
                rule = "buffered_" + rule
                text = (f"released by the grace buffer: ts {ts} <= buffer time {observed} - grace {grace} = "
                        f"{observed - grace}; " + text)
        return Why(rule, text + "; output ts = stream ts", joined, ref=_REF + (", KIP-923" if via else ""))


class PlainStreamTableJoin(StreamTableJoin):
    """A stream-table join without grace buffer on an unversioned table: a stream record with a
    key and a value is joined inline (the hot path of a replay); everything else, and every run
    that explains, goes through :class:`StreamTableJoin`'s steps."""

    __slots__ = ()

    def process(self, topic, key, value, ts, ctx):
        if topic != "left" or key is None or value is None or ctx.explain:
            return StreamTableJoin.process(self, topic, key, value, ts, ctx)
        row = self.rows.get(key if key.__class__ is str and key.isascii() else key_identity(key))
        if row is not None:
            ctx.emit(key, self.joiner(value, row[0]), ts)
        elif self.left_join:
            ctx.emit(key, self.joiner(value, None), ts)
        elif ctx.misses:
            self._note_miss(key, value, ts, ctx)
