"""``ResponseJoinProcessorSupplier`` (2.4-3.6: ``SubscriptionResolverJoinProcessorSupplier``) and the
result ``KTableSource``: every response, LHS- or RHS-triggered, set-based.

A response ``(hash, foreign value)`` with key PK and ts ``t`` is processed in the task it was
routed to, after the input that caused it (synchronous delivery). There the LHS table's value
getter gives the *current* LHS value: an as-of lookup, the last LHS change of the PK in that task
up to and including the causing input (a window ``last`` over the LHS changes and the responses of
one (scenario, task, PK), in processing order, changes first). A versioned LHS answers with its
latest version.

- Hash check: the response passes iff its hash equals the hash of the current value (null: no
  value; null equals null). Hashes here are the values' JSON text (equal text = equal serialized
  bytes, the only property Kafka's Murmur3 hash is used for), so the check is text equality; a
  failing response is dropped (``stale_fk_response``, attributed to the causing input).
- Result: a null foreign value in an inner join, or no current value, gives a tombstone; otherwise
  ``joiner(current, foreign value)`` (a left join's joiner sees a null RHS). Key = PK, ts = ``t``,
  in the output partition of the task (``task`` = the response's partition).
- The result ``KTableSource`` forwards ``Change(result, null)``; when old values are asked for
  (``send_old``; 2.4.1+, ``fk_result_old_values``, KAFKA-9500: the loader rejects them before, so
  ``send_old`` implies the rule) it is materialized and forwards the previous result of the key in
  its task as the old value (a window ``lag`` over the results of one (scenario, task, PK) in
  output order; null before the first, or after a tombstone), and in 2.6.0-2.7.0 skips idempotent
  results (``ktable_emit_on_change``, see ``_materialized_result``).

Output order within one input: LHS-triggered responses in the order their subscriptions were sent
(``f1``), RHS-triggered ones in serialized PK order (``f2``).
"""
from __future__ import annotations

from pyspark.sql import Window
from pyspark.sql import functions as F

from kssim.reference.model.codes import DropReason

from kssim.spark_backend.foreign_key.rows import ORDER, aligned, few
from kssim.spark_backend.runtime.outputs import DROP, OLD_JOINED, OLD_NONE, OLD_NULL, OUTPUT

UP_TO = (Window.unboundedPreceding, Window.currentRow)


def responses_joined(responses, lhs_changes, features, result_key=None):
    """``responses``: response rows (``rows.RESPONSE_COLUMNS``); ``lhs_changes``: ``(sid, r, pk,
    g1..g4, cur)``, the LHS changes in their task. Returns event-like rows: ``etype`` OUTPUT or
    DROP (``text``: ``stale_fk_response``, ``idempotent_update``), with ``task`` (the response's
    task), ``key``, ``ts``, ``n_null``, ``n_l``, ``n_r``, ``o_kind``, ``o_l``, ``o_r``, ``f1``, ``f2``.
    ``result_key(n_l, n_r)``: what a materialized result table compares results by (see
    :func:`_materialized_result`; default: the joiner's arguments)."""
    asks = responses.select("*", F.lit(1).alias("role"), F.lit(None).cast("string").alias("cur"))
    rows = few(asks.unionByName(aligned(lhs_changes.select("*", F.lit(0).alias("role")), asks)))
    per_pk = Window.partitionBy("sid", "r", "pk").orderBy(*ORDER, "role").rowsBetween(*UP_TO)
    current = F.last(F.when(F.col("role") == 0, F.struct(F.col("cur").alias("v"))), ignorenulls=True).over(per_pk)
    rows = rows.select(*[c for c in rows.columns if c != "cur"], current.getField("v").alias("cur")) \
        .filter(F.col("role") == 1)
    cur, fv = F.col("cur"), F.col("fv")
    passes = F.col("hash").eqNullSafe(cur)
    tombstone = fv.isNull() & ((F.col("join") == "inner") | cur.isNull())
    rows = rows.select("*", passes.alias("passes"), tombstone.alias("n_null"), cur.alias("n_l"), fv.alias("n_r"))
    if features.foreign_key.send_old:
        results = _materialized_result(rows, result_key)
    else:
        results = rows.select("*", F.lit(OUTPUT).alias("etype"), F.lit(None).cast("string").alias("text"),
                              F.lit(OLD_NONE).alias("o_kind"), F.lit(None).cast("string").alias("o_l"),
                              F.lit(None).cast("string").alias("o_r"))
    # the stale responses in the same pass (a union of two filters would compute the whole join,
    # windows and all, twice): a drop, no old value
    stale = ~F.col("passes")
    results = results.select(
        *[c for c in results.columns if c not in _RESULT_EVENT],
        F.when(stale, F.lit(DROP)).otherwise(F.col("etype")).alias("etype"),
        F.when(stale, F.lit(DropReason.STALE_FK_RESPONSE.code)).otherwise(F.col("text")).alias("text"),
        F.when(stale, F.lit(OLD_NONE)).otherwise(F.col("o_kind")).alias("o_kind"),
        *[F.when(~stale, F.col(c)).alias(c) for c in ("o_l", "o_r")])
    return results.withColumnRenamed("r", "task").withColumnRenamed("pk", "key")


#: what a response's event says besides the response itself: a stale one's overrides them
_RESULT_EVENT = ("etype", "text", "o_kind", "o_l", "o_r")


def _materialized_result(results, result_key=None):
    """The result ``KTableSource`` of scenarios that send old values: materialized, it forwards the
    key's previous result in its task as the old value, and in 2.6.0-2.7.0 skips idempotent results
    [ktable_emit_on_change] (KIP-557's ``putIfDifferentValues``: a result equal to the stored one
    with a ts not older than the stored ts, or a tombstone for an absent key: ``idempotent_update``).
    Results are compared by their joiner arguments (``n_l``, ``n_r``): the serialized result of the
    named ``pair`` joiner is equal exactly when they are (``concat`` could, in theory, join two
    different pairs into one string); a caller whose joiner is not ``pair`` (a graph's ``concat``
    or Python joiner) gives ``result_key``, a column of the joined value's serialized text."""
    # the passing responses only (``passes`` splits them off: a stale one never reaches the table)
    per_key = Window.partitionBy("sid", "r", "pk", "passes").orderBy(*ORDER, "f1", "f2")
    before = per_key.rowsBetween(Window.unboundedPreceding, -1)
    result = F.when(~F.col("n_null"), F.struct("n_l", "n_r"))
    # a stale response's arguments never reach a caller's joiner (a UDF sees every row, CASE or not)
    passing = F.col("passes")
    compared = result if result_key is None else F.when(~F.col("n_null"), result_key(
        F.when(passing, F.col("n_l")), F.when(passing, F.col("n_r"))))
    # the stored result before each put: skipped puts equal it, so it is the previous put's
    previous = F.lag(F.struct(result.alias("v"), compared.alias("c"))).over(per_key)
    rows = results.select("*", previous.alias("prev"), F.struct(*ORDER, "f1", "f2").alias("at"))
    stored = F.col("prev.v")
    same = F.when(F.col("n_null"), stored.isNull()) \
        .otherwise(stored.isNotNull() & F.col("prev.c").eqNullSafe(compared))
    watches = F.col("send_old") & F.col("ktable_emit_on_change")
    rows = rows.select("*", (watches & same).alias("same"))
    # the stored ts: the smallest ts of the current run of equal results so far (its first put and
    # every older one were applied, the others skipped)
    run = F.max(F.when(~F.col("same"), F.col("at"))).over(per_key.rowsBetween(Window.unboundedPreceding, 0))
    rows = rows.select("*", run.alias("run"))
    oldest = F.max(F.struct(F.col("run").alias("r"), (-F.col("ts")).alias("t"))).over(before)
    stored_ts = F.when(oldest.getField("r").eqNullSafe(F.col("run")), -oldest.getField("t"))
    skipped = F.col("same") & (F.col("n_null") | (F.col("ts") >= stored_ts))
    had = F.col("prev").isNotNull() & stored.isNotNull()
    o_kind = F.when(~F.col("send_old"), F.lit(OLD_NONE)).when(had, F.lit(OLD_JOINED)).otherwise(F.lit(OLD_NULL))
    return rows.select(
        *results.columns, F.when(skipped, F.lit(DROP)).otherwise(F.lit(OUTPUT)).alias("etype"),
        F.when(skipped, F.lit(DropReason.IDEMPOTENT_UPDATE.code)).alias("text"), o_kind.alias("o_kind"),
        F.when(had, stored.getField("n_l")).alias("o_l"), F.when(had, stored.getField("n_r")).alias("o_r"))
