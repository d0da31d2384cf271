"""RHS side, stage 2: ``SubscriptionReceiveProcessorSupplier`` (before 3.5
``SubscriptionStoreReceiveProcessorSupplier``): a foreign-table task registers (or removes) the
subscriptions it receives in its subscription store (:mod:`reference.stores.subscription_store`).

- A subscription with a null FK is dropped (NULL_FOREIGN_KEY, "Skipping record due to null
  foreign key"), except, from 3.7 [``fk_left_join_null_foreign_key``, KIP-962], one with
  PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE (the left join's null FK): it is passed on to the lookup
  and stored nowhere. (No release sends a null FK with another instruction.)
- Otherwise DELETE_KEY_* removes the (fk, pk) entry, any other instruction puts
  ``(subscription, ts)`` there, overwriting: the store holds the most recently received
  subscription of (fk, pk), hence the hash of the LHS value that sent it.
- Then the subscription goes on to the lookup (:mod:`reference.foreign_key.subscription_join`)
  with its own ts (the LHS record's).
"""
from __future__ import annotations

from kssim.reference.foreign_key.instructions import (DELETE_KEY_AND_PROPAGATE, DELETE_KEY_NO_PROPAGATE,
                                                PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)
from kssim.reference.model.codes import DropReason
from kssim.reference.runtime.explain import Why, show
from kssim.reference.stores.subscription_store import store_key


class SubscriptionReceive:
    """The subscription-receive processor of one foreign-table task, with its store."""

    __slots__ = ("store", "join", "null_fk_passes")

    def __init__(self, profile, store, join):
        self.store = store
        self.join = join
        self.null_fk_passes = profile.fk_left_join_null_foreign_key

    def process(self, fk, sub, ts, ctx):
        if fk is None:
            if not (self.null_fk_passes and sub.instruction is PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE):
                self._drop(sub, ts, ctx)
                return
            if sub.trace is not None:
                sub.trace[0].append(f"received by foreign task {ctx.task_id}: null FK, passed on, not stored")
        else:
            key = store_key(fk, sub.pk)
            instruction = sub.instruction
            if instruction is DELETE_KEY_NO_PROPAGATE or instruction is DELETE_KEY_AND_PROPAGATE:
                self.store.delete(key)
                done = "removed"
            else:
                self.store.put(key, sub, ts)
                done = "stored"
            if sub.trace is not None:
                sub.trace[0].append(f"received by foreign task {ctx.task_id}: subscription ({show(fk)}, {show(sub.pk)}) "
                                    f"{done}")
        self.join.process(fk, sub, ts, ctx)

    def _drop(self, sub, ts, ctx):
        why = None
        if ctx.explain:
            why = Why("null_foreign_key", f"subscription {sub.instruction.name} of {show(sub.pk)}@{ts} has a null "
                      "foreign key: 'Skipping record due to null foreign key'", ref="SubscriptionReceiveProcessorSupplier")
        ctx.drop(DropReason.NULL_FOREIGN_KEY, why)
