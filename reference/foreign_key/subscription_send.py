"""LHS side, stage 1: ``SubscriptionSendProcessorSupplier`` (before 3.5
``ForeignJoinSubscriptionSendProcessorSupplier``): what each change of the primary (left) table
sends to the subscription topic.

Input: a left table ``Change(new, old)`` (old values are always on: ``doJoinOnForeignKey``
enables them). Every subscription carries the hash of ``new`` (None for a delete), the
instruction, the PK and the LHS partition, and is sent with the LHS record's ts. "FK changed"
compares the FKs' serialized bytes (kssim: their key identity), so a null FK differs from any
other. ``fk(x)`` is the extractor applied to x; a null ``fk`` is a null FK.

Default instructions: every inner join, and the left join before 3.7 (2.4 to 3.6; KAFKA-9244,
the old FK's unsubscribe on an FK change, is already in 2.4.0):

| old | new | sent |
| null | null | nothing |
| null | v | fk(v) null: dropped (NULL_FOREIGN_KEY); else PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE (inner) or PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE (left) to fk(v) |
| o | any | fk(o) null: the whole update is dropped (NULL_FOREIGN_KEY) |
| o | null | DELETE_KEY_AND_PROPAGATE to fk(o) |
| o | v | fk(v) null: dropped (the stale result stays, KAFKA-16434); FK changed: DELETE_KEY_NO_PROPAGATE to fk(o), then PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE to fk(v); same FK: PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE to fk(v) |

Left join [``fk_left_join_null_foreign_key``, 3.7, KIP-962]: nothing for (null, null); otherwise,
when fk(o) is non-null and differs from fk(new) (null for a delete), an unsubscribe to fk(o):
DELETE_KEY_AND_PROPAGATE (3.7 to 4.0: a second result, ``joiner(new, null)`` or a second
tombstone, KAFKA-16394/16644), DELETE_KEY_NO_PROPAGATE from 4.1
[``fk_left_unsubscribe_no_propagate``, KAFKA-18713]; then always PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE
to fk(new), which is a null-key subscription for a null FK or a delete.

Inner join [``fk_inner_null_fk_transitions``, 4.1, KAFKA-16407/16434]: a new value whose FK is null
is dropped (NULL_FOREIGN_KEY) but unsubscribes a non-null fk(o) with DELETE_KEY_AND_PROPAGATE
(retracting the result); an update from a null fk(o) subscribes with
PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE; an update that keeps its FK sends PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE
(no unnecessary ``(k, null)``); an FK change still sends DELETE_KEY_NO_PROPAGATE +
PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE, a delete DELETE_KEY_AND_PROPAGATE to a non-null fk(o)
(a delete whose fk(o) is null sends nothing). The 4.2 refactoring (PR #20605) sends the same.

Versioned LHS [``versioned_tables``, 3.5, KIP-914]: a change that is not the key's latest version
is dropped before all this (OUT_OF_ORDER_VERSIONED_UPDATE), by the join module.
"""
from __future__ import annotations

from kssim.reference.foreign_key.instructions import (DELETE_KEY_AND_PROPAGATE, DELETE_KEY_NO_PROPAGATE,
                                                PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE,
                                                PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE, SUBSCRIPTION_TOPIC,
                                                Subscription)
from kssim.reference.foreign_key.value_hash import short
from kssim.reference.model.codes import DropReason
from kssim.reference.model.keys import key_identity
from kssim.reference.model.topology import extract_key
from kssim.reference.runtime.explain import Why, show


def make_extractor(spec):
    """``fk(key, value)``: the join's FK extractor (a value field on the hot path)."""
    extractor = spec.foreign_key
    if extractor.source == "value" and extractor.field is not None:
        field = extractor.field

        def from_value(key, value):
            try:
                return value[field]
            except (KeyError, TypeError, IndexError):
                return extract_key(extractor, key, value)  # raises ExtractorError naming the field

        return from_value
    return lambda key, value: extract_key(extractor, key, value)


def _same_fk(a, b) -> bool:
    # the serialized FKs compared byte for byte (kssim: key identity, which keeps types apart;
    # a null FK serializes to null, unequal to any FK)
    return key_identity(a) == key_identity(b)


class SubscriptionSend:
    """The subscription-send processor of one LHS task."""

    __slots__ = ("fk", "left", "plan", "_unsubscribe", "routing", "hashes", "rule", "unsubscribe_rule")

    def __init__(self, spec, profile, routing, hashes):
        self.fk = make_extractor(spec)
        self.left = spec.join == "left"
        # the instruction table in force, and the rule that chose it (named in explanations)
        if self.left and profile.fk_left_join_null_foreign_key:
            self.plan, self.rule = self._left_kip962, "fk_left_join_null_foreign_key, KIP-962"
        elif not self.left and profile.fk_inner_null_fk_transitions:
            self.plan, self.rule = self._inner_null_fk_transitions, "fk_inner_null_fk_transitions, KAFKA-16407/16434"
        else:
            self.plan, self.rule = self._default, "foreign_key_joins, KIP-213 default instructions"
        self._unsubscribe = (DELETE_KEY_NO_PROPAGATE if profile.fk_left_unsubscribe_no_propagate
                             else DELETE_KEY_AND_PROPAGATE) if self.left else None
        self.unsubscribe_rule = (
            "fk_left_unsubscribe_no_propagate, KAFKA-18713: the old FK is unsubscribed without a result"
            if profile.fk_left_unsubscribe_no_propagate else
            "3.7-4.0: the old FK's unsubscribe propagates a second result, KAFKA-16394/16644; "
            "4.1+ sends DELETE_KEY_NO_PROPAGATE, fk_left_unsubscribe_no_propagate, KAFKA-18713")
        self.routing = routing
        self.hashes = hashes

    def process(self, key, key_id, new, old, ts, ctx):
        """Send the subscriptions of the LHS change ``(new, old)`` of ``key`` at ``ts``."""
        plan = self.plan(key, new, old, ts, ctx)
        if not plan:
            return
        value_hash = self.hashes.of(key_id, new)
        task = ctx.task_id
        routing = self.routing
        explain = ctx.explain
        for entry in plan:
            fk, instruction = entry
            partition = routing.subscription_partition(fk, task)
            trace = self._trace(plan, entry, key, new, ts, value_hash, partition, ctx) if explain else None
            ctx.send(SUBSCRIPTION_TOPIC, fk, Subscription(value_hash, instruction, key, key_id, task, trace), ts,
                     partition)

    def _trace(self, plan, entry, key, new, ts, value_hash, partition, ctx):
        """The explanation hops of one subscription: ``([hop texts], [stored records used])``."""
        fk, instruction = entry
        also = ""
        rule = self.rule
        if len(plan) > 1:  # an FK change: name the other subscription too
            first = plan[0] is entry
            other_fk, other = plan[1 if first else 0]
            also = f" ({'before' if first else 'after'} {other.name} for FK {show(other_fk)})"
            if self.plan == self._left_kip962:  # both results of the move exist because of the unsubscribe rule
                rule = f"{rule}; {self.unsubscribe_rule}"
        return ([f"left {show(key)}:{show(new)}@{ts} (input {ctx.input_index}) sent {instruction.name} for FK "
                 f"{show(fk)} with hash {short(value_hash)} to subscription partition {partition}{also} [{rule}]"], [])

    # --- the instruction tables (see the module docstring) ----------------------------------------
    def _default(self, key, new, old, ts, ctx):
        fk = self.fk
        if old is not None:
            old_fk = fk(key, old)
            if old_fk is None:
                return self._null_fk(ctx, key, new, old, ts, "old")
            if new is None:
                return ((old_fk, DELETE_KEY_AND_PROPAGATE),)
            new_fk = fk(key, new)
            if new_fk is None:
                return self._null_fk(ctx, key, new, old, ts, "new")
            if _same_fk(new_fk, old_fk):
                return ((new_fk, PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE),)
            return ((old_fk, DELETE_KEY_NO_PROPAGATE), (new_fk, PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE))
        if new is None:
            return ()
        new_fk = fk(key, new)
        if new_fk is None:
            return self._null_fk(ctx, key, new, old, ts, "new")
        return ((new_fk, PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE if self.left else PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE),)

    def _left_kip962(self, key, new, old, ts, ctx):
        if old is None:
            if new is None:
                return ()
            return ((self.fk(key, new), PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE),)
        old_fk = self.fk(key, old)
        new_fk = None if new is None else self.fk(key, new)
        if old_fk is not None and not _same_fk(new_fk, old_fk):
            return ((old_fk, self._unsubscribe), (new_fk, PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE))
        return ((new_fk, PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE),)

    def _inner_null_fk_transitions(self, key, new, old, ts, ctx):
        old_fk = None if old is None else self.fk(key, old)
        if new is None:
            return () if old_fk is None else ((old_fk, DELETE_KEY_AND_PROPAGATE),)
        new_fk = self.fk(key, new)
        if new_fk is None:
            self._null_fk(ctx, key, new, old, ts, "new", unsubscribes=old_fk)
            return () if old_fk is None else ((old_fk, DELETE_KEY_AND_PROPAGATE),)
        if old_fk is None:
            return ((new_fk, PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE),)
        if _same_fk(new_fk, old_fk):
            return ((new_fk, PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE),)
        return ((old_fk, DELETE_KEY_NO_PROPAGATE), (new_fk, PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE))

    # --- drops ---------------------------------------------------------------------------------
    def _null_fk(self, ctx, key, new, old, ts, which, unsubscribes=None):
        why = None
        if ctx.explain:
            value = new if which == "new" else old
            if unsubscribes is not None:
                effect = (f"the old FK {show(unsubscribes)} is still unsubscribed with DELETE_KEY_AND_PROPAGATE "
                          "(KAFKA-16407)")
            elif which == "old" or old is not None:
                effect = "nothing is sent: the old subscription and any old result stay (KAFKA-16434)"
            else:
                effect = "nothing is sent"
            why = Why("null_foreign_key",
                      f"left {show(key)}:{show(new)}@{ts}: the {which} value {show(value)} has a null foreign key: "
                      f"'Skipping record due to null foreign key'; {effect}",
                      ref="SubscriptionSendProcessorSupplier")
        ctx.drop(DropReason.NULL_FOREIGN_KEY, why)
        return ()
