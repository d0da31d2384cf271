"""Which module builds which operator.

Every operator module exposes ``build(spec, profile, config, instance_state)`` returning a task
processor: an object with ``process(topic, key, value, ts, ctx)``. One is built per task (per
partition); ``instance_state`` is a dict shared by all tasks of one run, for the rare state Kafka
kept per application instance (the 3.1-3.4.0 stream-stream clock, KAFKA-14862).
"""
from __future__ import annotations

import importlib

from reference.model.errors import UnsupportedOperator

_MODULES = {
    "stream_stream_join": "reference.joins.stream_stream",
    "stream_table_join": "reference.joins.stream_table",
    "table_table_join": "reference.joins.table_table",
}


def supported_operators():
    return tuple(_MODULES)


def builder_for(operator: str):
    module = _MODULES.get(operator)
    if module is None:
        raise UnsupportedOperator(f"the reference engine does not implement operator {operator!r} yet")
    return importlib.import_module(module).build
