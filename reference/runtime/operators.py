"""Which module builds which operator: the reference engine's operator registry.

Every operator module exposes ``build(spec, profile, config, instance_state)`` returning a task
processor: an object with ``process(topic, key, value, ts, ctx)``. One is built per task (per
partition); ``instance_state`` is a dict shared by all tasks of one run, for the rare state Kafka
kept per application instance (the 3.1-3.4.0 stream-stream clock, KAFKA-14862). The modules are
imported by their dotted path when a run first asks for the operator.

Adding an operator family (FK joins, windowed aggregations, ...): put its modules in a new
subpackage of ``reference/`` (as the joins live in :mod:`reference.joins`), keyed by the operator
name of the scenario format (``reference.model.topology.OPERATOR_FIELDS``); its stores go to
:mod:`reference.stores`. Then register each operator here, ``"operator_name":
"reference.<family>.<module>"``, and add its spec and checks to :mod:`reference.model.topology`.
"""
from __future__ import annotations

import importlib

from reference.model.errors import UnsupportedOperator

#: operator name -> the module whose ``build`` makes its task processor
_MODULES = {
    "stream_stream_join": "reference.joins.stream_stream",
    "stream_table_join": "reference.joins.stream_table",
    "table_table_join": "reference.joins.table_table",
    "fk_join": "reference.foreign_key.join",
    "global_table_join": "reference.joins.global_table",
    "session_aggregate": "reference.windows.session",
    "window_aggregate": "reference.windows.time_window",
    "sliding_aggregate": "reference.windows.sliding",
    "windowed_table_join": "reference.windows.windowed_table_join",
    "graph": "reference.graph.engine",
}


def supported_operators():
    """The operator names the reference engine implements."""
    return tuple(_MODULES)


def builder_for(operator: str):
    """The ``build`` function of ``operator``'s module; UnsupportedOperator if none is registered.
    A spec with ``suppress`` (``KTable#suppress``) gets the operator's task processor followed by
    a suppress processor in the same task (:func:`reference.suppress.suppressed`)."""
    module = _MODULES.get(operator)
    if module is None:
        raise UnsupportedOperator(f"the reference engine does not implement operator {operator!r} yet")
    from reference.suppress import suppressed

    return suppressed(importlib.import_module(module).build)
