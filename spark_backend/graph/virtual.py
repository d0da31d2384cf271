"""Virtual scenarios: how a graph stage runs a format-1 Spark operator. Each (scenario, node)
instance becomes a scenario of its own whose input records are the node's arrivals in order-key
order; its settings row is format 1's (``runtime.inputs.config_row``) for a :class:`VirtualScenario`.
Used by the join stages and the window and suppress stages."""
from __future__ import annotations

import attrs


@attrs.frozen
class VirtualScenario:
    """What format 1's settings modules read of a scenario (``topology``, ``profile``, ``config``)."""

    topology: object
    profile: object
    config: object


def operator_rows(records, configs, features):
    """Format 1's per-record frame of the virtual scenarios: settings and processing order."""
    from kssim.spark_backend.runtime.inputs import with_configs
    from kssim.spark_backend.runtime.processing_order import by_task, with_processing_order

    return with_processing_order(with_configs(by_task(records, features), configs, features), features)
