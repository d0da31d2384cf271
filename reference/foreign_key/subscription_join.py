"""RHS side, stage 3: ``SubscriptionJoinProcessorSupplier`` (before 3.5
``SubscriptionJoinForeignProcessorSupplier``): the LHS-triggered lookup of the foreign row.

The FK's row is read through the foreign table's getter (the newest version of a versioned
table); a null FK has none. The response carries the subscription's hash and goes, keyed by the
PK, to the response topic (:mod:`reference.foreign_key.routing`) at
``resultTs = max(subscription ts, RHS row ts)`` when the row exists, else the subscription's ts
(for every instruction, DELETE_KEY_AND_PROPAGATE included):

| instruction | response |
| DELETE_KEY_AND_PROPAGATE | (hash, null), always |
| PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE | (hash, row value or null), always |
| PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE | (hash, row value) only when the row exists |
| DELETE_KEY_NO_PROPAGATE | none |
"""
from __future__ import annotations

from kssim.reference.foreign_key.instructions import (DELETE_KEY_AND_PROPAGATE, DELETE_KEY_NO_PROPAGATE,
                                                PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE, RESPONSE_TOPIC, Response)
from kssim.reference.model.keys import key_identity
from kssim.reference.runtime.explain import Stored, show


class SubscriptionJoin:
    """The lookup processor of one foreign-table task."""

    __slots__ = ("rhs_get", "routing")

    def __init__(self, rhs_get, routing):
        self.rhs_get = rhs_get  # key identity -> (value, ts, input index) or None
        self.routing = routing

    def process(self, fk, sub, ts, ctx):
        instruction = sub.instruction
        if instruction is DELETE_KEY_NO_PROPAGATE:
            return
        if fk is None:
            row = None
        else:
            row = self.rhs_get(fk if fk.__class__ is str and fk.isascii() else key_identity(fk))
        if row is None:
            if instruction is PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE:
                return
            foreign, out_ts = None, ts
        else:
            foreign = None if instruction is DELETE_KEY_AND_PROPAGATE else row[0]
            out_ts = row[1] if row[1] > ts else ts
        partition = self.routing.response_partition(sub.pk, sub.primary_partition)
        trace = None
        if sub.trace is not None:
            hops, joined = sub.trace
            if row is None:
                found = "no right row for a null FK" if fk is None else f"no right row for FK {show(fk)}"
                when = f"at the subscription's ts {ts}"
            else:
                found = f"looked up right {show(fk)}:{show(row[0])}@{row[1]}"
                when = f"at max({ts}, {row[1]}) = {out_ts}"
                joined = joined + [Stored("right", fk, row[0], row[1], row[2])]
            sent = "null (an unsubscribe that propagates)" if instruction is DELETE_KEY_AND_PROPAGATE and row is not None \
                else show(foreign)
            hops = hops + [f"{found}: response {sent} {when} to {self.routing.describe_response(partition)}"]
            trace = (hops, joined)
        ctx.send(RESPONSE_TOPIC, sub.pk, Response(sub.hash, foreign, sub.pk_id, trace), out_ts, partition)
