"""The stages of table nodes: each reads table changes (``value`` the new value, ``old`` the old
one, None when null or not sent, ``latest``) and forwards changes.

Rules (profile rule names in brackets; the reference: ``reference/graph/table_nodes.py``,
``reference/joins/table_source.py``, ``docs/internals/graph-rules.md`` sections 1-5, 9, 11):

- ``table`` (``KTableSource``) and ``to_table`` (a non-versioned source fed by a stream): a null
  key is skipped (dropped, ``null_key``). Not materialized (``NodePlan.materialized``: since 2.2 a
  source gets a store only when something needs one, [``ktable_source_lazy_materialization``],
  settled by the plan), or with a
  store nothing reads (no old values, no emit-on-change, not versioned): every record is forwarded
  as ``Change(new, null)``, stateless. Otherwise a fold per key
  (:mod:`spark_backend.graph.keyed_fold`) reads the old value, then puts the new one (a tombstone
  deletes the row); the old value is forwarded when ``NodePlan.send_old_values``.
  - emit-on-change [``ktable_emit_on_change``, KIP-557, only 2.6.0-2.7.0]: an update whose
    serialized value equals the stored one at a ts not older than the stored one, and a tombstone
    for an absent key, are skipped (dropped, ``idempotent_update``; no put, no forward);
  - versioned (``TableSourceOp.versioned``, [``versioned_tables``], KIP-889/914): a put older than
    the store's observed stream time minus the history retention is not stored and not forwarded
    (dropped, ``expired_versioned_put``); the store's observed time is a running max of the node's
    earlier records (a window function: an expired put never raises it); otherwise the key's
    history (:class:`spark_backend.stores.versioned_store._KeyHistory`) says whether the put is
    the newest version, forwarded as ``latest`` (an out-of-order update: ``latest`` false); the
    old value is the key's newest version before the put, whatever the timestamps.
- ``filter`` on a table (``KTableFilter``): only non-null values reach the predicate; a new (old)
  value that fails becomes null; the old value is only kept when the node sends old values
  (``NodePlan.send_old_values``, settled by the plan: [``ktable_filter_old_values_if_materialized``],
  KAFKA-10077). With old values, a change whose new and old results are both null is dropped
  (``filtered``) [``ktable_filter_skips_null_changes``], unless the table descends from a
  versioned table (``NodePlan.versioned``, KIP-914).
- ``map_values`` on a table (``KTableMapValues``): only non-null values reach the mapper; the old
  value is mapped when the node sends old values.
- ``group_by`` of a table (``KTableRepartitionMap``): the old value's (key, value) pair is a
  subtract ``Change(null, v)``, the new value's an add ``Change(v, null)``; a pair with a null key
  or value is not sent (the change dropped once, ``null_group_key``, the other pair still sent).
  Both pairs under JSON-equal keys are one record ``Change(new, old)`` since 3.5
  [``table_group_by_single_record``, KIP-904]; else the subtract goes first
  [``table_group_by_subtract_first``] (0.10.0: the add first). Each record's order key is the
  change's followed by its position in that forwarding order, as two records of one change go on
  to the repartition topic. A versioned table's out-of-order update (``latest`` false) is dropped
  (``out_of_order_versioned_update``) [``versioned_tables``].

Costs: ``filter``, ``map_values`` and ``group_by`` are projections of native columns
(:mod:`spark_backend.graph.columns`; an Arrow Python UDF per arrival where an expression has none:
a Python API callable, rows whose numbers may be floats; ``group_by``'s pairs are an array of
structs, exploded); a source whose store is not read is a
projection; one whose store is read is a shuffle by key, a sort and one Python pass (a window max before it for
versioned tables), or, when its state is the key's last value alone (no emit-on-change, not versioned), a
``lag`` window (:mod:`spark_backend.graph.running_totals`). Record caches (``config.caching``) are
applied to what these stages emit by :mod:`spark_backend.graph.cache_stage`.
"""
from __future__ import annotations

import json
from typing import List

import attrs

from kssim.reference.model.codes import DropReason
from kssim.reference.model.graph import expressions as ex
from kssim.reference.model.graph.nodes import FilterOp, MapValuesOp, TableSourceOp
from kssim.reference.model.keys import key_text

from kssim.spark_backend.graph import flow, keyed_fold, mappers, running_totals
from kssim.spark_backend.graph.batch import Instance
from kssim.spark_backend.graph.keyed_fold import Drop, Emit, Folder
from kssim.spark_backend.stores.versioned_store import _KeyHistory, segment_interval

NO_TIMESTAMP = -1  # a versioned store's observed stream time before its first put


# --- sources ------------------------------------------------------------------------------------

@attrs.frozen
class PlainStore(Folder):
    """A materialized, unversioned ``KTableSource``: state is the key's row ``(value text, ts)``."""

    send_old: bool
    emit_on_change: bool

    def step(self, row, a):
        if self.emit_on_change and self._idempotent(row, a):
            return row, (Drop(DropReason.IDEMPOTENT_UPDATE.code),)
        old = row[0] if row is not None and self.send_old else None
        return (None if a.value is None else (a.value, a.ts)), (Emit(a.value, old, a.ts),)

    @staticmethod
    def _idempotent(row, a) -> bool:
        # KIP-557's putIfDifferentValues compares serialized bytes: compact JSON texts compare alike
        if row is None:
            return a.value is None
        return a.value is not None and a.ts >= row[1] and a.value == row[0]


@attrs.frozen
class VersionedStore(Folder):
    """A versioned ``KTableSource`` (KIP-889): state is the key's history; ``observed`` (extra
    column) the store's observed stream time before the record."""

    send_old: bool
    history_retention_ms: int

    def step(self, history, a):
        if a.ts < a.extra["observed"] - self.history_retention_ms:
            return history, (Drop(DropReason.EXPIRED_VERSIONED_PUT.code),)
        if history is None:
            history = _KeyHistory(segment_interval(self.history_retention_ms))
        old = history.latest[0] if self.send_old and history.latest is not None else None
        latest = history.put(a.value, a.ts)
        return history, (Emit(a.value, old, a.ts, latest),)


def _reads_store(inst: Instance) -> bool:
    """Does the source read its store before the put? Only for old values, emit-on-change or a
    versioned store; a store nobody reads changes nothing that is forwarded."""
    plan, op = inst.node_plan, inst.node.op
    versioned = isinstance(op, TableSourceOp) and op.versioned
    return plan.materialized and (plan.send_old_values or versioned or inst.profile.ktable_emit_on_change)


def _keeps_last_value(inst: Instance) -> bool:
    """A ``PlainStore`` without emit-on-change: its state is the key's last value alone."""
    return isinstance(_source_folder(inst), PlainStore) and not inst.profile.ktable_emit_on_change


def _source_folder(inst: Instance) -> Folder:
    op = inst.node.op
    if isinstance(op, TableSourceOp) and op.versioned:
        return VersionedStore(inst.node_plan.send_old_values, op.history_retention_ms)
    return PlainStore(inst.node_plan.send_old_values, inst.profile.ktable_emit_on_change)


def table_source(arrivals, instances: List[Instance], batch) -> flow.StageResult:
    """``table`` and ``to_table`` (see the module docstring)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    null_key = F.col("key").isNull()
    stored = [i for i in instances if _reads_store(i)]
    keyed = arrivals.filter(~null_key)
    parts = [flow.StageResult(drops=flow.drops(arrivals.filter(null_key), DropReason.NULL_KEY.code))]
    if len(stored) < len(instances):
        plain = batch.frame([(i.sid, i.index) for i in instances if not _reads_store(i)], "sid INT, node INT")
        passed = keyed.join(F.broadcast(plain), ["sid", "node"])
        parts.append(flow.StageResult(emitted=flow.records(passed, old=None, latest=F.lit(True))))
    last_value = [i for i in stored if _keeps_last_value(i)]
    if last_value:  # the old value is the key's previous value: a window, no Python
        settings = [(i.sid, i.index, i.node_plan.send_old_values) for i in last_value]
        settled = batch.settled(keyed, settings, "sid INT, node INT, send_old BOOLEAN")
        parts.append(running_totals.last_value_source(settled))
        stored = [i for i in stored if not _keeps_last_value(i)]
    if stored:
        folders = {(i.sid, i.index): _source_folder(i) for i in stored}
        chosen = batch.frame(list(folders), "sid INT, node INT")
        observed = F.lit(NO_TIMESTAMP).cast("bigint")
        if any(isinstance(f, VersionedStore) for f in folders.values()):
            # the store's clock: an expired put is older than it, so never raises it
            before = Window.partitionBy("sid", "node").orderBy(*flow.IN_ORDER).rowsBetween(Window.unboundedPreceding, -1)
            observed = F.coalesce(F.max("ts").over(before), observed)
        rows = keyed.join(F.broadcast(chosen), ["sid", "node"]).withColumn("observed", observed)
        parts.append(keyed_fold.split(keyed_fold.fold(rows, folders, ("observed",))))
    return _merged(parts)


_merged = flow.merged


# --- filter, map_values ---------------------------------------------------------------------------

def _passes(test, negate):
    return lambda k, v: v is not None and bool(test(k, v)) is not negate


def table_filter(arrivals, instances, batch) -> flow.StageResult:
    from pyspark.sql import functions as F

    tests, old_tests, skipping, forms, old_forms = {}, {}, [], {}, {}
    for inst in instances:
        op: FilterOp = inst.node.op
        plan = inst.node_plan
        test = _passes(ex.compile_pred(op.predicate), op.negate)
        tests[(inst.sid, inst.index)] = test
        # a parent may send old values this filter does not ask for: they are not forwarded
        old_tests[(inst.sid, inst.index)] = test if plan.send_old_values else (lambda k, v: False)
        forms[(inst.sid, inst.index)] = mappers.form(batch, inst, op.predicate, op.negate, non_null=True)
        old_forms[(inst.sid, inst.index)] = forms[(inst.sid, inst.index)] if plan.send_old_values \
            else mappers.Form(None)
        if plan.send_old_values and not plan.versioned and inst.profile.ktable_filter_skips_null_changes:
            skipping.append((inst.sid, inst.index))
    skips = batch.frame([(s, n, True) for s, n in skipping], "sid INT, node INT, skips BOOLEAN")
    tested = mappers.with_columns(
        arrivals.join(F.broadcast(skips), ["sid", "node"], "left"),
        new_passes=(mappers.native_predicate(forms), lambda: mappers.predicate(tests)),
        old_passes=(mappers.native_predicate(old_forms, value="old"),
                    lambda: mappers.predicate(old_tests, value="old")))
    new = F.when(F.col("new_passes"), F.col("value"))
    old = F.when(F.col("old_passes"), F.col("old"))
    skipped = F.coalesce(F.col("skips"), F.lit(False)) & ~F.col("new_passes") & ~F.col("old_passes")
    return flow.StageResult(
        emitted=flow.records(tested.filter(~skipped), value=new, old=old),
        drops=flow.drops(tested.filter(skipped), DropReason.FILTERED.code))


def _mapped(mapper, enabled=True):
    if not enabled:
        return lambda k, v: None
    return lambda k, v: None if v is None else mapper(k, v)


def table_map_values(arrivals, instances, batch) -> flow.StageResult:
    news, olds, forms, old_forms = {}, {}, {}, {}
    for inst in instances:
        op: MapValuesOp = inst.node.op
        mapper = ex.compile_expr(op.mapper)
        news[(inst.sid, inst.index)] = _mapped(mapper)
        olds[(inst.sid, inst.index)] = _mapped(mapper, inst.node_plan.send_old_values)
        forms[(inst.sid, inst.index)] = mappers.form(batch, inst, op.mapper, non_null=True)
        old_forms[(inst.sid, inst.index)] = forms[(inst.sid, inst.index)] if inst.node_plan.send_old_values \
            else mappers.Form(None)
    mapped = mappers.with_columns(
        arrivals, new_value=(mappers.native_expression(forms), lambda: mappers.expression(news)),
        new_old=(mappers.native_expression(old_forms, value="old"), lambda: mappers.expression(olds, value="old")))
    return flow.StageResult(emitted=flow.records(mapped, value="new_value", old="new_old"))


# --- group_by -------------------------------------------------------------------------------------

def _load(text):
    return None if text is None else json.loads(text)


@attrs.frozen
class RegroupRules:
    """How ``KTableRepartitionMap#process`` of one node sends a change's pairs on."""

    single_record: bool    # [table_group_by_single_record]
    subtract_first: bool   # [table_group_by_subtract_first]
    drop_not_latest: bool  # [versioned_tables] and a versioned lineage


def _regroup_rules(inst: Instance) -> RegroupRules:
    profile, plan = inst.profile, inst.node_plan
    versioned = plan.versioned or inst.plan.nodes[inst.node.upstream].versioned
    return RegroupRules(profile.table_group_by_single_record, profile.table_group_by_subtract_first,
                        profile.versioned_tables and versioned)


def _json_equal_texts(a, b) -> bool:
    return ex.json_equal(json.loads(a), json.loads(b))


def _same_group(new_key, old_key):
    """JSON equality of two group keys' texts (never null): equal texts, or objects whose members
    come in another order (rare: those rows alone go through Python)."""
    from pyspark.sql import functions as F

    maybe_reordered = F.coalesce((F.instr(new_key, "{") > 0) & (F.instr(old_key, "{") > 0) &
                                 (F.length(new_key) == F.length(old_key)) & (new_key != old_key), F.lit(False))
    return maybe_reordered, F.coalesce(new_key == old_key, F.lit(False))


def table_group_by(arrivals, instances, batch) -> flow.StageResult:
    """The group_by of a table: its key and value mappers on the new and on the old value (native
    columns where the expressions have them), then the pairs as records, all in the JVM."""
    from pyspark.sql import functions as F

    keys, values, forms, rules = {}, {}, {}, []
    for inst in instances:
        op, here = inst.node.op, (inst.sid, inst.index)
        keys[here] = _mapped(ex.compile_expr(op.key))
        values[here] = _mapped(ex.compile_expr(op.value))
        forms[here] = (mappers.form(batch, inst, op.key, non_null=True),
                       mappers.form(batch, inst, op.value, non_null=True))
        rules.append((inst.sid, inst.index) + attrs.astuple(_regroup_rules(inst)))
    settled = batch.settled(arrivals, rules, "sid INT, node INT, single_record BOOLEAN, subtract_first BOOLEAN, "
                                             "drop_not_latest BOOLEAN")
    key_forms = {here: pair[0] for here, pair in forms.items()}
    value_forms = {here: pair[1] for here, pair in forms.items()}
    natives = dict(new_group=mappers.native_expression(key_forms, as_key=True),
                   new_grouped=mappers.native_expression(value_forms),
                   old_group=mappers.native_expression(key_forms, as_key=True, value="old"),
                   old_grouped=mappers.native_expression(value_forms, value="old"))
    if any(native is None for native in natives.values()):
        # a Python API selector returns the pair in one call (its value is read right after its
        # key, KTableRepartitionMap): one call per value, as Kafka makes it
        return _regrouped(_pairs_by_python(settled, keys, values))
    # the expressions are pure: each column by itself, natively where exact
    mapped = mappers.with_columns(
        settled, new_group=(natives["new_group"], lambda: mappers.expression(keys, as_key=True)),
        new_grouped=(natives["new_grouped"], lambda: mappers.expression(values)),
        old_group=(natives["old_group"], lambda: mappers.expression(keys, as_key=True, value="old")),
        old_grouped=(natives["old_grouped"], lambda: mappers.expression(values, value="old")))
    # computed once: the split below and the record and drop branches of ``_regrouped`` each read
    # it (without, the four mappers' JSON paths ran six times per change)
    mapped = mapped.localCheckpoint(eager=False)
    new_key, old_key = F.col("new_group"), F.col("old_group")
    maybe_reordered, equal_texts = _same_group(new_key, old_key)
    if mapped.filter(maybe_reordered).limit(1).count() == 0:
        # the usual case (no group key is an object): one branch, and no Python worker started
        # for no rows (one small job on the checkpoint, which the level then reads)
        return _regrouped(mapped.withColumn("same_group", equal_texts))
    json_equal = F.udf(_json_equal_texts, "boolean", useArrow=True)
    compared = mapped.filter(~maybe_reordered).withColumn("same_group", equal_texts).unionByName(
        mapped.filter(maybe_reordered).withColumn("same_group", json_equal(new_key, old_key)))
    return _regrouped(compared)


def _pairs_by_python(rows, keys, values):
    """``rows`` with the four mapped columns and ``same_group`` from one Python call per row: the
    key mapper then the value mapper on the new value, then on the old one."""
    from pyspark.sql import functions as F

    def body(sid, node, k, v, o, a, b):
        key, key_of, value_of = mappers.seen_key(k, a, b), keys[(sid, node)], values[(sid, node)]
        pairs = []
        for text in (v, o):
            value = None if text is None else json.loads(text)
            pairs.append((key_of(key, value), value_of(key, value)))
        same = pairs[0][0] is not None and pairs[1][0] is not None and ex.json_equal(pairs[0][0], pairs[1][0])
        return ([key_text(pairs[0][0]), mappers.value_text(pairs[0][1]), key_text(pairs[1][0]),
                 mappers.value_text(pairs[1][1])], same)
    mapped = F.udf(body, "struct<texts:array<string>,same:boolean>", useArrow=True)(
        F.col("sid"), F.col("node"), F.col("key"), F.col("value"), F.col("old"), F.col("wstart"), F.col("wend"))
    with_pairs = rows.select("*", mapped.alias("mapped"))
    names = ("new_group", "new_grouped", "old_group", "old_grouped")
    return with_pairs.select(*rows.columns, *[F.col("mapped.texts")[i].alias(name) for i, name in enumerate(names)],
                             F.col("mapped.same").alias("same_group"))


def _regrouped(rows) -> flow.StageResult:
    """The records and drops of ``rows`` (arrivals with the mapped pairs, ``same_group`` and the
    node's :class:`RegroupRules` as columns)."""
    from pyspark.sql import functions as F

    nothing = F.lit(None).cast("string")
    new_sent, old_sent = F.col("value").isNotNull(), F.col("old").isNotNull()
    new_ok = new_sent & F.col("new_group").isNotNull() & F.col("new_grouped").isNotNull()
    old_ok = old_sent & F.col("old_group").isNotNull() & F.col("old_grouped").isNotNull()
    not_latest = F.coalesce(F.col("drop_not_latest") & (F.col("latest") == F.lit(False)), F.lit(False))
    null_group = ~not_latest & ((new_sent & ~new_ok) | (old_sent & ~old_ok))

    def pair(key, value, old, keep):
        return F.struct(key.alias("k"), value.alias("v"), old.alias("o"), keep.alias("keep"))
    add = pair(F.col("new_group"), F.col("new_grouped"), nothing, new_ok)
    subtract = pair(F.col("old_group"), nothing, F.col("old_grouped"), old_ok)
    both = pair(F.col("new_group"), F.col("new_grouped"), F.col("old_grouped"), F.lit(True))
    one_record = F.col("single_record") & new_ok & old_ok & F.col("same_group")
    in_order = F.when(F.col("subtract_first"), F.array(subtract, add)).otherwise(F.array(add, subtract))
    sent = F.when(not_latest, F.array().cast("array<struct<k:string,v:string,o:string,keep:boolean>>")) \
        .when(one_record, F.array(both)).otherwise(F.filter(in_order, lambda p: p["keep"]))
    records = rows.select("*", F.posexplode(sent).alias("position", "r"))
    return flow.StageResult(
        emitted=flow.records(records, ok=flow.extend(F.col("ok"), F.col("position")), key=F.col("r.k"),
                             value=F.col("r.v"), old=F.col("r.o"), latest=F.lit(True), wstart=F.lit(None),
                             wend=F.lit(None)),
        drops=flow.union_all([
            flow.drops(rows.filter(not_latest), DropReason.OUT_OF_ORDER_VERSIONED_UPDATE.code),
            flow.drops(rows.filter(null_group), DropReason.NULL_GROUP_KEY.code)]))


STAGES = {
    "table_source": table_source,
    "to_table": table_source,
    "table_filter": table_filter,
    "table_map_values": table_map_values,
    "table_group_by": table_group_by,
}
