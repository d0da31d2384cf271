"""``KTable#suppress`` (KIP-328, Kafka 2.1+) after a table-result operator, as Kafka builds it.

Stages, in Kafka's terms:

- ``KTableImpl#suppress`` / ``#buildSuppress``: the spec's ``suppress`` becomes a
  :class:`~reference.model.suppression.SuppressionPlan` (``SuppressedInternal``; untilWindowCloses
  finds its close delay as ``GraphGraceSearchUtil`` does), shared with every engine in
  :mod:`reference.model.suppression`; the checks Kafka makes are in
  ``reference.model.topology.check_topology``.
- ``KTableSuppressProcessorSupplier``'s constructor: from 2.3 [``suppress_enables_old_values``,
  KAFKA-8199] suppress asks its parent for old values, which is what ``send_old_values`` asks of
  an operator; :func:`suppressed` builds the operator that way.
- :mod:`.node`: the operator's forwards reach the suppress processor depth-first, in the task.
- :mod:`.processor`: ``KTableSuppressProcessor`` (stream time, buffering, eviction, capacity).
- :mod:`reference.stores.suppress_buffer`: ``InMemoryTimeOrderedKeyValueChangeBuffer``.
- :mod:`.explain`: the explanations of what it emits, and of the failure of a full buffer.
"""
from __future__ import annotations

import attrs

from kssim.reference.model.suppression import suppression_plan
from kssim.reference.suppress.explain import delay_note
from kssim.reference.suppress.node import SuppressedTask
from kssim.reference.suppress.processor import KTableSuppressProcessor


def suppressed(build):
    """Wrap an operator module's ``build``: a spec with ``suppress`` gets the operator's task
    processor followed by a suppress processor; any other spec, the operator's own."""

    def build_maybe_suppressed(spec, profile, config, instance_state):
        if getattr(spec, "suppress", None) is None:
            return build(spec, profile, config, instance_state)
        plan = suppression_plan(spec, profile)
        upstream_spec = attrs.evolve(spec, suppress=None,
                                     send_old_values=spec.send_old_values or plan.upstream_sends_old_values)
        upstream = build(upstream_spec, profile, config, instance_state)
        processor = KTableSuppressProcessor(plan, report_old_values=spec.send_old_values,
                                            delay_note=delay_note(spec, plan))
        return SuppressedTask(upstream, processor)

    return build_maybe_suppressed
