"""LHS side, stage 5: ``ResponseJoinProcessorSupplier`` (before 3.5
``SubscriptionResolverJoinProcessorSupplier``) and the result table: a response becomes a result
only if it was computed for the LHS row's current value.

For a response ``(hash_m, foreign)`` keyed by PK at ts t, in the LHS task that received it:
1. ``cur`` = the current LHS value (the newest version of a versioned table); ``hash_c`` its
   hash (:mod:`reference.foreign_key.value_hash`), None when the row is absent.
2. ``hash_m != hash_c`` (None equals None): the response is stale, computed for an older value,
   and dropped (STALE_FK_RESPONSE; counted by the dropped-records metric from 3.8, KAFKA-14747,
   silently before). An older value that comes back (v1 -> v2 -> v1) makes it valid again.
3. Otherwise the result is a tombstone when ``foreign`` is null and the join is inner or ``cur``
   is absent, else ``joiner(cur, foreign)`` (the left join calls it with a null foreign value;
   never with a null LHS value). Its ts is t.
4. The result goes through the result ``KTableSource``: unmaterialized, it forwards every result
   as is (a tombstone for a key that had no result included: the "unnecessary" tombstones).
   When ``send_old_values`` asks for old values, the result table is materialized and forwards
   ``Change(result, previous result)`` (:mod:`reference.joins.table_source`, emit-on-change in
   2.6.0-2.7.0 included); 2.4.0 cannot build that topology [``fk_result_old_values``, 2.4.1,
   KAFKA-9500], which the loader rejects.
"""
from __future__ import annotations

from kssim.reference.foreign_key.value_hash import short
from kssim.reference.model.codes import DropReason
from kssim.reference.model.joiners import make_joiner
from kssim.reference.runtime.explain import Stored, Why, show


class ResponseJoin:
    """The response-join processor of one LHS task, and the result table it writes."""

    __slots__ = ("left", "joiner", "lhs_get", "hashes", "result_source", "join_kind")

    def __init__(self, spec, lhs_get, hashes, result_source=None):
        self.left = spec.join == "left"
        self.join_kind = spec.join
        self.joiner = make_joiner(spec.joiner, spec.joiner_separator)
        self.lhs_get = lhs_get  # key identity -> (value, ts, input index) or None
        self.hashes = hashes
        self.result_source = result_source  # a TableSource when the result is materialized

    def process(self, pk, response, ts, ctx):
        pk_id = response.pk_id
        cur = self.lhs_get(pk_id)
        if cur is None:
            cur_value = cur_hash = None
        else:
            cur_value = cur[0]
            cached = self.hashes.entries.get(pk_id)  # HashCache.of, inlined: the hot path
            cur_hash = cached[1] if cached is not None and cached[0] is cur_value else self.hashes.of(pk_id, cur_value)
        if response.hash != cur_hash:
            self._drop_stale(pk, response, cur, cur_hash, ts, ctx)
            return
        foreign = response.foreign_value
        if foreign is None and (not self.left or cur is None):
            result = None
        else:
            result = self.joiner(cur_value, foreign)
        why = self._why(pk, response, cur, cur_hash, result, ts) if ctx.explain else None
        source = self.result_source
        if source is None:
            ctx.emit(pk, result, ts, why)
            return
        change = source.update(pk, pk_id, result, ts, ctx)
        if change is not None:
            ctx.emit(pk, result, ts, why, change[0])

    def _why(self, pk, response, cur, cur_hash, result, ts):
        hops, joined = response.trace if response.trace is not None else ([], [])
        if cur is None:
            check = f"hash check passed: the left row {show(pk)} is absent and the response hash is null"
            joined = list(joined)
        else:
            check = f"hash check passed: {short(cur_hash)} is the hash of the current left value {show(cur[0])}"
            joined = [Stored("left", pk, cur[0], cur[1], cur[2])] + list(joined)
        if result is None:
            what = "tombstone (the left row is deleted)" if cur is None else "tombstone (inner join, no foreign value)"
        else:
            what = show(result)
        rule = "fk_join" if response.foreign_value is not None else "fk_join_null"
        return Why(rule, "; ".join(hops + [check, f"{self.join_kind} join -> {what} at ts {ts}"]), tuple(joined),
                   ref="ResponseJoinProcessorSupplier, KIP-213")

    def _drop_stale(self, pk, response, cur, cur_hash, ts, ctx):
        why = None
        if ctx.explain:
            hops = response.trace[0] if response.trace is not None else []
            now = "the left row is absent (hash null)" if cur is None else \
                f"the current left value {show(cur[0])} hashes to {short(cur_hash)}"
            why = Why("stale_fk_response",
                      "; ".join(hops + [f"hash check failed: the response for {show(pk)}@{ts} carries hash "
                                        f"{short(response.hash)}, {now}: stale, dropped"]),
                      ref="ResponseJoinProcessorSupplier (dropped-records metric from 3.8, KAFKA-14747)")
        ctx.drop(DropReason.STALE_FK_RESPONSE, why)
