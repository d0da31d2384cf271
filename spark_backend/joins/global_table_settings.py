"""Per-scenario settings of a KStream-GlobalKTable join, as ``configs`` columns (driver side, no Spark).

``config_fields(scenario)`` turns a scenario's key mapper, when the global table's records are
applied (``config.global_table``) and the release's GlobalKTable rules (read from the profile by
name, never by version) into plain columns, read per row by ``global_table.py`` (many scenarios per
job). A column that carries a release rule is named as the rule (``reference.model.profiles.RULES``).
Scenarios of other operators get nulls. ``CONFIG_DDL`` is their schema, appended to
``spark_backend.runtime.inputs.CONFIG_DDL``; ``null_key_outer_emit``, ``kip77_join_semantics`` and
``ktable_emit_on_change`` are the common columns there.
"""
from __future__ import annotations

from kssim.spark_backend.runtime.config_columns import config_columns

#: name, Spark type, and what the column means (a release rule's column is named as the rule)
_COLUMNS = (
    ("gt_source", "STRING", "what the key mapper reads: 'value' or 'key'"),
    ("gt_field", "STRING", "the field the key mapper reads (null: the whole value / key)"),
    ("gt_bootstrap", "BOOLEAN", "config.global_table = bootstrap: the table is restored before the stream runs"),
    ("global_table_joins", "BOOLEAN", "KIP-99"),
    ("global_join_null_mapped_key_throws", "BOOLEAN", "KAFKA-6378 (until 1.0.1)"),
    ("global_restore_skips_null_key", "BOOLEAN", "KAFKA-5047"),
    ("global_join_null_stream_key", "BOOLEAN", "KAFKA-10277"),
    ("global_left_join_null_mapped_key", "BOOLEAN", "KAFKA-6378 (1.0.1-2.6), KAFKA-19208 (4.1+)"),
)
#: the DDL, the column names, and the release-rule columns (read from the profile by their own name)
CONFIG_DDL, CONFIG_COLUMNS, RULE_COLUMNS = config_columns(_COLUMNS, first_rule="global_table_joins")


def config_fields(scenario) -> dict:
    """The global-table columns of one scenario (all null unless it is a ``global_table_join``)."""
    spec, profile, config = scenario.topology, scenario.profile, scenario.config
    if spec.operator != "global_table_join":
        return {name: None for name in CONFIG_COLUMNS}
    fields = {"gt_source": spec.key_mapper.source, "gt_field": spec.key_mapper.field,
              "gt_bootstrap": config.global_table == "bootstrap"}
    fields.update((rule, getattr(profile, rule)) for rule in RULE_COLUMNS)
    return fields
