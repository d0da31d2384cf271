"""Topology graphs on the reference engine: processors with ``forward()``, as Kafka's
``ProcessorNode``s, built from the shared plan (:mod:`reference.model.graph.plan`).

- :mod:`.engine`: the task (every sub-topology in one task, as ``TopologyTestDriver`` runs them),
  its processing loop (an input, then the internal-topic records by :mod:`.queues`' heap, a commit
  after each record) and the processors built per plan node;
- :mod:`.queues`: the partition queues of internal topics and ``PartitionGroup``'s min-heap;
- :mod:`.stream_nodes`, :mod:`.table_nodes`, :mod:`.aggregations`, :mod:`.joins`: one small class
  per node kind (or an adapter over the format-1 operator that already implements it).
"""
