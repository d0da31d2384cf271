"""``kssim replay --engine spark`` of a topology graph: the captures read on the driver by the
shared reader (every record checked as the reference checks it), the graph run as one batch
(:func:`spark_backend.graph.runner.run_graphs`), the outputs written by the reference's writer
(``record_files.open_output``: the same bytes, the file written atomically). Kafka Streams dying
at an input keeps what came before it, as a run does.
"""
from __future__ import annotations

import attrs

from kssim.reference.model.errors import UnsupportedOperator
from kssim.reference.model.record_files import ReplaySummary, open_output
from kssim.reference.model.render import sends_old_values

from kssim.spark_backend.graph.runner import run_graphs


def replay_graph(spark, scenario, captures, output) -> ReplaySummary:
    """Replay the opened ``captures`` (``reference.model.captures``) through ``scenario``'s graph."""
    inputs = tuple(captures.records())
    result = run_graphs([attrs.evolve(scenario, inputs=inputs)], [0], spark)[0]
    if isinstance(result, UnsupportedOperator):
        raise result
    counts: dict = {}
    for drop in result.drops:
        counts[drop.reason.code] = counts.get(drop.reason.code, 0) + 1
    with open_output(output, sends_old_values(scenario)) as writer:
        writer.write_many(result.outputs)
    return ReplaySummary(writer.count, dict(sorted(counts.items())), result.failure,
                         dict(sorted(captures.ignored.items())))

