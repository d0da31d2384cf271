"""Which module builds which operator: the reference engine's operator registry.

Every operator module exposes ``build(spec, profile, config, instance_state)`` returning a task
processor: an object with ``process(topic, key, value, ts, ctx)``. One is built per task (per
partition); ``instance_state`` is a dict shared by all tasks of one run, for the rare state Kafka
kept per application instance (the 3.1-3.4.0 stream-stream clock, KAFKA-14862). The modules are
imported by their dotted path when a run first asks for the operator.

Adding an operator family (FK joins, windowed aggregations, ...): put its modules in a new
subpackage of ``reference/`` (as the joins live in :mod:`reference.joins`); its stores go to
:mod:`reference.stores`. Then add its row to the table of operators,
``reference.model.topology.OPERATOR_KINDS`` (spec, fields, topics, result, module), and its checks
to :mod:`reference.model.topology`.
"""
from __future__ import annotations

import importlib

from kssim.reference.model.errors import UnsupportedOperator
from kssim.reference.model.topology import OPERATOR_KINDS

#: operator name -> the module whose ``build`` makes its task processor (the model's table of
#: operators, plus topology graphs)
_MODULES = {name: kind.reference_module for name, kind in OPERATOR_KINDS.items()}
_MODULES["graph"] = "kssim.reference.graph.engine"


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
    from kssim.reference.suppress import suppressed

    return suppressed(importlib.import_module(module).build)
