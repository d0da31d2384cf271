"""KTable-KTable joins (``KTableKTableInnerJoin`` / ``LeftJoin`` / ``RightJoin`` / ``OuterJoin``).

Topic ``left`` is the left table, ``right`` the right table. Each update goes through its table's
source (:mod:`reference.joins.table_source`), then through its side's join processor, which looks up
the other table's newest value (no as-of lookups here, versioned or not):

| join  | left-side update      | right-side update                      |
| inner | inner                 | inner (reversed joiner)                |
| left  | left                  | "right join" (reversed joiner)         |
| outer | outer                 | outer (reversed joiner)                |

Rules since KIP-77 [``kip77_join_semantics``, 0.10.2] (``new``/``old`` = the incoming Change,
``other`` = the other table's value):
- null key: dropped (KAFKA-4613, with KIP-77; before, the application dies).
- inner: nothing when other is absent; else ``new ? joiner(new, other) : tombstone``.
- left, left side: nothing when other, new and old are all null (the unnecessary tombstone of
  KIP-77); else ``new ? joiner(new, other) : tombstone``.
- left, right side: nothing when the left value is absent; else ``joiner(left, new)``, computed
  even for a right-side delete, which therefore gives ``L-null``, not a tombstone.
- outer: nothing when other, new and old are all null; else ``joiner(new, other)`` when new or
  other exists, a tombstone otherwise.
- old values: ``leftJoin`` enables them on the left source, ``outerJoin`` on both, ``join`` on
  neither (``KTableImpl#doJoin``); ``send_old_values`` (the result's downstream asks for them)
  enables them on both sources and makes the result carry its old value: ``joiner(old, other)``
  under the same presence conditions as the new value (the right join always computes it).
Before KIP-77 (0.10.0/0.10.1) every update forwards a Change: the result when the joiner is
called, a tombstone otherwise; old values exist only when ``send_old_values`` asks for them.
Output ts [``output_ts_max``, 2.3, KAFKA-6455]: ``max(ts, other ts)`` when the other value exists,
else the record's ts; before 2.3 always the triggering record's ts.
Versioned parents [``versioned_tables``, 3.5, KIP-914]: an update that is not the newest version
of its key in a versioned table is dropped by that side's join processor.
Keys: both stores and the lookups use the key's identity (:func:`reference.model.keys.key_identity`):
an update finds the other table's row exactly when their serialized keys are equal (``1``, ``1.0``,
``true`` and ``"1"`` are four keys); outputs keep the update's own key.
"""
from __future__ import annotations

from kssim.reference.model.codes import DropReason
from kssim.reference.model.keys import key_identity
from kssim.reference.runtime.explain import Stored, Why, show
from kssim.reference.model.joiners import make_joiner
from kssim.reference.joins.table_source import TableSource, make_store

def build(spec, profile, config, instance_state):
    return TableTableJoin(spec, profile)


class TableTableJoin:
    """Both table sources, their stores, and one join processor per side, of one task."""

    __slots__ = ("left", "right", "joiner", "ts_max", "send_old")

    def __init__(self, spec, profile):
        kip77 = profile.kip77_join_semantics
        joiner = make_joiner(spec.joiner, spec.joiner_separator)
        # KTableImpl#doJoin (KIP-77): leftOuter -> left source sends old values, rightOuter -> right;
        # a downstream that asks for old values enables them on both (KTableKTableAbstractJoin)
        left_old = spec.send_old_values or (kip77 and spec.join in ("left", "outer"))
        right_old = spec.send_old_values or (kip77 and spec.join == "outer")
        sources = {}
        for side, table, old in (("left", spec.left_table, left_old), ("right", spec.right_table, right_old)):
            sources[side] = TableSource(side, make_store(table), old, emit_on_change=profile.ktable_emit_on_change,
                                        null_key_fatal=not kip77)
        left_rule, right_rule = (_KIP77_RULES if kip77 else _LEGACY_RULES)[spec.join]
        self.left = JoinSide("left", "right", sources["left"], sources["right"].store, left_rule, spec, profile)
        self.right = JoinSide("right", "left", sources["right"], sources["left"].store, right_rule, spec, profile)
        self.joiner = joiner
        self.ts_max = profile.output_ts_max  # KAFKA-6455 (2.3)
        self.send_old = spec.send_old_values

    def process(self, topic, key, value, ts, ctx):
        side = self.left if topic == "left" else self.right
        # an ASCII string is its own identity (the hot path); key_identity for the rest (None stays None)
        key_id = key if key.__class__ is str and key.isascii() else key_identity(key)
        change = side.source.update(key, key_id, value, ts, ctx)
        if change is None:
            return  # dropped by the table source (reason recorded there)
        if side.drop_not_latest and not change[1]:
            side.drop_out_of_order(key, key_id, value, ts, ctx)
            return
        other = side.other_get(key_id)
        result = side.rule(self.joiner, side.is_left, value, change[0], other, self.send_old)
        if result is None:
            return  # nothing to forward by design (no partner, or KIP-77's unnecessary tombstone)
        new_out, old_out, rule = result
        out_ts = ts if other is None or not self.ts_max or other[1] <= ts else other[1]
        why = side.why(key, ts, out_ts, other, new_out, rule) if ctx.explain else None
        if self.send_old:
            ctx.emit(key, new_out, out_ts, why, old_out)
        else:
            ctx.emit(key, new_out, out_ts, why)


class JoinSide:
    """One side's path: its table source, then its join processor (``rule``) against the other store."""

    __slots__ = ("name", "is_left", "other_name", "source", "other_store", "other_get", "rule", "join_kind",
                 "drop_not_latest", "ts_max")

    def __init__(self, name, other_name, source, other_store, rule, spec, profile):
        self.name = name
        self.is_left = name == "left"  # the right side's processor uses Kafka's reverse joiner
        self.other_name = other_name
        self.source = source
        self.other_store = other_store
        # the other table's newest row; a plain dict lookup for an unversioned store (hot path)
        self.other_get = other_store.get if other_store.versioned else other_store.rows.get
        self.rule = rule
        self.join_kind = spec.join
        # KIP-914 (3.5): only a side whose parent table is versioned drops out-of-order updates
        self.drop_not_latest = profile.versioned_tables and source.store.versioned
        self.ts_max = profile.output_ts_max

    def drop_out_of_order(self, key, key_id, value, ts, ctx):
        why = None
        if ctx.explain:
            newest = self.source.store.newest_ts(key_id)
            why = Why("out_of_order_versioned_update",
                      f"{self.name} table {show(key)}:{show(value)}@{ts} is not the newest version of its key "
                      f"(newest ts {newest}): stored as history, dropped by the join "
                      "('Skipping out-of-order record from versioned table')", ref="KTableKTable*Join, KIP-914")
        ctx.drop(DropReason.OUT_OF_ORDER_VERSIONED_UPDATE, why)

    def why(self, key, ts, out_ts, other, new_out, rule):
        text, ref = _RULE_TEXTS[rule]
        if other is None:
            where, joined = f"no {self.other_name} value for {show(key)}", ()
        else:
            where = f"{self.other_name} {show(key)}:{show(other[0])}@{other[1]}"
            joined = (Stored(self.other_name, key, other[0], other[1], other[2]),)
        if other is not None and self.ts_max:
            ts_text = f"at max({ts}, {other[1]}) = {out_ts} (KAFKA-6455)"
        else:
            ts_text = f"at the update's ts {ts}"
        result = "tombstone" if new_out is None else show(new_out)
        return Why(rule, f"{self.join_kind} join, {self.name} update {show(key)}@{ts} with {where}: {text} -> "
                         f"{result} {ts_text}", joined, ref=ref)


# --- the join processors ------------------------------------------------------------------------
# Each takes (joiner, this_is_left, new, old, other, send_old): ``joiner(left, right)`` is the user
# joiner (the right side calls it with the values swapped back: Kafka's reverseJoiner), ``new`` /
# ``old`` the incoming Change, ``other`` the other table's stored row (value, ts, input_index) or
# None. It returns None (nothing forwarded) or (new result, old result, rule name); the old result
# only matters when send_old is set.

def _inner(joiner, this_is_left, new, old, other, send_old):  # KTableKTableInnerJoin (0.10.2+)
    if other is None:
        return None
    ov = other[0]
    new_out = None if new is None else (joiner(new, ov) if this_is_left else joiner(ov, new))
    old_out = (joiner(old, ov) if this_is_left else joiner(ov, old)) if send_old and old is not None else None
    return new_out, old_out, "inner_match" if new is not None else "inner_delete"


def _left(joiner, this_is_left, new, old, other, send_old):  # KTableKTableLeftJoin (0.10.2+), left side
    if other is None:
        if new is None and old is None:
            return None  # KIP-77: no tombstone for a result that never existed
        ov = None
    else:
        ov = other[0]
    new_out = None if new is None else joiner(new, ov)
    old_out = joiner(old, ov) if send_old and old is not None else None
    return new_out, old_out, "left_update" if new is not None else "left_delete"


def _right_of_left(joiner, this_is_left, new, old, other, send_old):  # KTableKTableRightJoin (0.10.2+)
    if other is None:
        return None
    ov = other[0]
    # the joiner is called even for a right-side delete: L-null, not a tombstone
    return joiner(ov, new), joiner(ov, old) if send_old else None, \
        "right_update" if new is not None else "right_delete"


def _outer(joiner, this_is_left, new, old, other, send_old):  # KTableKTableOuterJoin (0.10.2+)
    if other is None:
        if new is None and old is None:
            return None  # KIP-77: no tombstone for a result that never existed
        ov = None
    else:
        ov = other[0]
    if new is not None or other is not None:
        new_out = joiner(new, ov) if this_is_left else joiner(ov, new)
    else:
        new_out = None
    if send_old and (old is not None or other is not None):
        old_out = joiner(old, ov) if this_is_left else joiner(ov, old)
    else:
        old_out = None
    return new_out, old_out, "outer_update" if new_out is not None else "outer_delete"


_KIP77_RULES = {
    "inner": (_inner, _inner),
    "left": (_left, _right_of_left),
    "outer": (_outer, _outer),
}


# Before KIP-77 (0.10.0, 0.10.1) every update forwards a Change: the joiner's result where it is
# called, a tombstone otherwise.

def _legacy_inner(joiner, this_is_left, new, old, other, send_old):
    ov = None if other is None else other[0]
    new_out = old_out = None
    if new is not None and other is not None:
        new_out = joiner(new, ov) if this_is_left else joiner(ov, new)
    if send_old and old is not None and other is not None:
        old_out = joiner(old, ov) if this_is_left else joiner(ov, old)
    return new_out, old_out, "legacy_inner"


def _legacy_left(joiner, this_is_left, new, old, other, send_old):
    ov = None if other is None else other[0]
    new_out = joiner(new, ov) if new is not None else None
    old_out = joiner(old, ov) if send_old and old is not None else None
    return new_out, old_out, "legacy_left"


def _legacy_right_of_left(joiner, this_is_left, new, old, other, send_old):
    if other is None:
        return None, None, "legacy_right"
    return joiner(other[0], new), joiner(other[0], old) if send_old else None, "legacy_right"


def _legacy_outer(joiner, this_is_left, new, old, other, send_old):
    ov = None if other is None else other[0]
    new_out = old_out = None
    if new is not None or other is not None:
        new_out = joiner(new, ov) if this_is_left else joiner(ov, new)
    if send_old and (old is not None or other is not None):
        old_out = joiner(old, ov) if this_is_left else joiner(ov, old)
    return new_out, old_out, "legacy_outer"


_LEGACY_RULES = {
    "inner": (_legacy_inner, _legacy_inner),
    "left": (_legacy_left, _legacy_right_of_left),
    "outer": (_legacy_outer, _legacy_outer),
}

# rule name -> (what happened, where the rule lives), for explanations
_RULE_TEXTS = {
    "inner_match": ("both values present", "KTableKTableInnerJoin"),
    "inner_delete": ("a delete while the other value exists is forwarded (no old values in inner joins)",
                     "KTableKTableInnerJoin"),
    "left_update": ("left value joined", "KTableKTableLeftJoin"),
    "left_delete": ("left delete of an existing result", "KTableKTableLeftJoin, KIP-77"),
    "right_update": ("right value joined to the left value", "KTableKTableRightJoin"),
    "right_delete": ("a right delete is joined as null, not a tombstone", "KTableKTableRightJoin"),
    "outer_update": ("joined, missing side null", "KTableKTableOuterJoin"),
    "outer_delete": ("both values gone, the existing result is deleted", "KTableKTableOuterJoin, KIP-77"),
    "legacy_inner": ("forwarded on every update before KIP-77", "KTableKTableJoin (0.10.0/0.10.1)"),
    "legacy_left": ("forwarded on every update before KIP-77", "KTableKTableLeftJoin (0.10.0/0.10.1)"),
    "legacy_right": ("forwarded on every update before KIP-77", "KTableKTableRightJoin (0.10.0/0.10.1)"),
    "legacy_outer": ("forwarded on every update before KIP-77", "KTableKTableOuterJoin (0.10.0/0.10.1)"),
}
