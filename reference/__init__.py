"""kssim reference engine: the executable specification of Kafka Streams join semantics.

Public entry points:
- :func:`reference.model.scenario.load_scenario` reads a scenario file (format 1, JSON or YAML);
- :func:`reference.runtime.engine.run_scenario` runs it event at a time and returns outputs and drops;
- :mod:`reference.api` offers the same topologies in Kafka Streams' vocabulary.
"""
