"""Foreign-key table joins (KIP-213, ``fk_join``, Kafka 2.4 to 4.3) in Spark, set-based.

The same semantics as the reference engine's ``reference/foreign_key`` (which this package never
imports: only the shared model), for **synchronous** delivery, TopologyTestDriver's order: after
each input, the records it sent to the subscription and response topics are processed, in the
order they were produced, before the next input. So every internal record has a place in the
processing order: right after the input that caused it (that input's ``g1..g4``), and within it
the order Kafka forwards in. Every store (LHS table, RHS table, subscription store) is keyed, and
every lookup is *as of* such a place: a window over one key's updates and lookups in processing
order, or an interval join. ``delivery: interleaved`` (any interleaving of the internal topics'
partitions, seeded) is the reference's alone: the runner gives those scenarios an
``UnsupportedOperator`` ("interleaved delivery is not supported by engine spark").

Modules (Kafka's classes, 3.5+ names) and how each is computed:

- ``tables``: the two ``KTableSource``s, materialized with old values: the rules of
  ``spark_backend.joins.table_source``, windows per key, the versioned-store replay;
- ``subscription_send``: ``SubscriptionSendProcessorSupplier`` and the subscription sink's
  partitioner: each LHS change expanded into 0-2 rows (no window);
- ``subscription_join``: ``SubscriptionReceiveProcessorSupplier`` + ``SubscriptionJoinProcessorSupplier``:
  the as-of lookup of the RHS, a window ``last`` per (task, FK);
- ``foreign_table_join``: ``ForeignTableJoinProcessorSupplier`` and the subscription store: live
  intervals (a window ``lead``) and an interval join;
- ``response_join``: ``ResponseJoinProcessorSupplier`` and the result ``KTableSource``: the as-of
  lookup of the LHS, a window ``last`` per (task, PK);
- ``join``: ``KTableImpl#doJoinOnForeignKey``, the wiring and the events; ``keys``: FK extraction
  and murmur2 partitions (Arrow UDFs over the shared model); ``rows``: shared columns;
  ``settings``: the config columns.

Rules, by profile name (``reference.model.profiles.RULES``; the config columns carry the names):
``foreign_key_joins`` (2.4; the loader rejects fk_join before), ``fk_result_old_values`` (2.4.1;
``send_old_values`` rejected before, so ``send_old`` implies it: ``response_join``),
``ktable_emit_on_change`` (2.6.0-2.7.0: the LHS, RHS and, with old values, result tables skip
idempotent updates: ``tables``, ``response_join``), ``fk_response_to_primary_partition`` (3.3:
``subscription_send.routed``), ``versioned_tables`` (3.5: versioned sources, out-of-order drops:
``tables``, ``join``), ``fk_left_join_null_foreign_key`` (3.7), ``fk_left_unsubscribe_no_propagate``
and ``fk_inner_null_fk_transitions`` (4.1: all three in ``subscription_send.instructions``),
``fk_extractor_with_key`` (4.0: ``keys.foreign_key``). The only per-key sequential code is the
shared versioned-store replay (``spark_backend.stores.versioned_store``, only in batches with
versioned tables); the Python steps are the FK extractor (``reference.model.topology.extract_key``:
Spark's JSON functions cannot tell ``"1"`` from ``1``) for the values whose FK cannot be cut out
of their text exactly (``keys``: a plain scalar member is cut natively) and, only in batches with
several partitions, Kafka's murmur2 partitioner.

Hashes and when the check fails. Kafka's Murmur3 hash of the serialized LHS value is only ever
compared for equality, so a subscription here carries the value's JSON text (compact, document
order: equal text is equal serialized bytes) and the check is text equality, null equal to null
(a deleted row). Under synchronous delivery a response can be stale only if

- it answers a subscription the store still holds although the LHS value changed since: an LHS
  update dropped for a null FK (``null_foreign_key``) leaves the old subscription registered
  (KAFKA-16434: the inner join before 4.1, the left join before 3.7), and a later RHS change
  answers it with the old value's hash: ``stale_fk_response`` (unless the value came back
  byte-identical since: ABA, then it passes, as in Kafka); or
- before 3.3 it is routed by the default partitioner over the PK and reaches a task other than the
  LHS record's (an LHS topic not partitioned by murmur2 over the PK): that task's row (usually
  absent) decides.

A response to an LHS change always passes in the task that sent it (the current value is the
one just sent), so in 3.7+ left joins and 4.1+ joins (every FK transition unsubscribes; the
responses go to ``primaryPartition``) no response is ever stale under synchronous delivery, on
any number of partitions; the races of the digest's A.10 need interleaved delivery. (Checked
against the reference on generated cases: ``tests/spark/test_spark_fk_join.py``.)

Order of the results: the processing order of the input that caused them (``g1..g4``), then,
within an LHS input, the order its subscriptions were sent (``f1``: the old FK's first), within an
RHS input the prefix scan's order, ascending serialized PK bytes (``f2``). Output partition: the
task the response was routed to. Drops are attributed to the input that caused them.
"""
