"""kssim's ``reference`` package: the shared model and the reference engine, kept apart.

- :mod:`reference.model`: the shared model every package imports (scenario and topology model
  and loader, release profiles, records and results, serialized keys, drop and failure codes,
  record files, comparison, the engine table);
- the reference engine, the executable specification of Kafka Streams: :mod:`reference.runtime`
  (tasks, processing order, the run loop, explanations), :mod:`reference.stores` and
  :mod:`reference.joins`; :func:`reference.runtime.engine.run_scenario` runs a scenario event at
  a time;
- :mod:`reference.api`: the same topologies in Kafka Streams' vocabulary, and a TopologyTestDriver.
"""
