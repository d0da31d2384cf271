"""The foreign-key table join (KIP-213, Kafka 2.4+), modelled on Kafka's ``foreignkeyjoin`` package.

``KTable#join/leftJoin(other, foreignKeyExtractor, joiner)``: the ``left`` table (key PK) joins
the ``right`` table (key FK) on the FK its extractor reads from each left value. One module per
stage, in processing order:

| module | Kafka class (3.5+ name) | task |
| :mod:`.subscription_send` | SubscriptionSendProcessorSupplier | LHS |
| :mod:`.routing` | the two sinks' partitioners | - |
| :mod:`.subscription_receive` | SubscriptionReceiveProcessorSupplier (+ the subscription store, :mod:`reference.stores.subscription_store`) | foreign |
| :mod:`.subscription_join` | SubscriptionJoinProcessorSupplier | foreign |
| :mod:`.foreign_table_join` | ForeignTableJoinProcessorSupplier | foreign |
| :mod:`.response_join` | ResponseJoinProcessorSupplier + the result KTableSource | LHS |

:mod:`.instructions` has the wrappers and the instruction enum, :mod:`.value_hash` the LHS value
hash, :mod:`.join` wires the stages per partition (``build``, registered as ``fk_join``).

Rules by profile name (``reference.model.profiles``): ``foreign_key_joins`` (2.4),
``fk_result_old_values`` (2.4.1, checked by the loader: ``send_old_values``),
``ktable_emit_on_change`` (2.6.0-2.7.0, the materialized left, right and result tables),
``fk_response_to_primary_partition`` (3.3), ``versioned_tables`` (3.5),
``fk_left_join_null_foreign_key`` (3.7), ``fk_extractor_with_key`` (4.0, checked by the loader),
``fk_left_unsubscribe_no_propagate`` and ``fk_inner_null_fk_transitions`` (4.1).
"""
