"""Per-scenario settings of a foreign-key table join, as ``configs`` columns (driver side, no Spark).

``config_fields(scenario)`` turns a scenario's FK extractor, partition count and the release's FK
rules (read from the profile by name, never by version) into plain columns, so the set-based code of
this package reads them per row (many scenarios per job). A column that carries a release rule is
named as the rule (``reference.model.profiles.RULES``). Scenarios of other operators get nulls.
``CONFIG_DDL`` is their schema, appended to ``spark_backend.runtime.inputs.CONFIG_DDL``; the
tables' settings (``lver``/``lret``/``rver``/``rret``) and ``send_old`` are the table joins' columns.
"""
from __future__ import annotations

import attrs

from kssim.spark_backend.runtime.config_columns import config_columns

#: name, Spark type, and what the column means (a release rule's column is named as the rule)
_COLUMNS = (
    ("fk_source", "STRING", "what the FK extractor reads: 'value' (value[field]) or 'key' (KIP-1104)"),
    ("fk_field", "STRING", "the field the extractor reads (null: the whole value / key)"),
    ("fk_tasks", "INT", "partitions of every topic = tasks (subscription and response routing)"),
    ("foreign_key_joins", "BOOLEAN", "KIP-213"),
    ("fk_result_old_values", "BOOLEAN", "KAFKA-9500 (the loader rejects send_old_values before 2.4.1)"),
    ("fk_response_to_primary_partition", "BOOLEAN", "KAFKA-13769"),
    ("fk_left_join_null_foreign_key", "BOOLEAN", "KIP-962 (KAFKA-14748)"),
    ("fk_extractor_with_key", "BOOLEAN", "KIP-1104"),
    ("fk_left_unsubscribe_no_propagate", "BOOLEAN", "KAFKA-18713"),
    ("fk_inner_null_fk_transitions", "BOOLEAN", "KAFKA-16407, KAFKA-16434"),
)
#: the DDL, the column names, and the release-rule columns (read from the profile by their own name)
CONFIG_DDL, CONFIG_COLUMNS, RULE_COLUMNS = config_columns(_COLUMNS, first_rule="foreign_key_joins")


def config_fields(scenario) -> dict:
    """The FK columns of one scenario (all null unless it is an ``fk_join``)."""
    spec, profile, config = scenario.topology, scenario.profile, scenario.config
    if spec.operator != "fk_join":
        return {name: None for name in CONFIG_COLUMNS}
    fields = {"fk_source": spec.foreign_key.source, "fk_field": spec.foreign_key.field,
              "fk_tasks": config.task_count}
    fields.update((rule, getattr(profile, rule)) for rule in RULE_COLUMNS)
    return fields


@attrs.frozen
class Features:
    """Which optional parts of the FK join a batch needs (read on the driver from the config rows)."""

    #: some FK scenario has several partitions: subscriptions (and, before 3.3, responses) are
    #: routed by Kafka's murmur2 partitioner, a Python UDF that single-partition batches skip
    partitioned: bool = True
    #: some FK scenario sends old values: the result table is materialized (old values, and in
    #: 2.6.0-2.7.0 its emit-on-change skips), windows the other batches skip
    send_old: bool = True

    @classmethod
    def of(cls, config_rows):
        rows = [r for r in config_rows if r.get("fk_source") is not None]
        return cls(partitioned=any(r["fk_tasks"] > 1 for r in rows), send_old=any(r["send_old"] for r in rows))
