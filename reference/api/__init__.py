"""Kafka Streams' DSL and test driver, in Python, for the joins kssim models.

Names mirror Kafka's in snake_case; each class and method says which Kafka class or method it
mirrors. A topology is one join reading topics ``left`` and ``right`` and writing ``output``::

    from reference.api import StreamsBuilder, JoinWindows, TopologyTestDriver

    b = StreamsBuilder()
    b.stream("left").left_join(b.stream("right"), lambda l, r: f"{l}+{r}",
                               JoinWindows.of_time_difference_and_grace(15, 5)).to("output")
    driver = TopologyTestDriver(b.build(), release="3.9", store="rocksdb")
    driver.create_input_topic("left").pipe_input("k", "A", ts=3)
    driver.create_output_topic("output").read_records_to_list()

- building: :class:`StreamsBuilder`, :class:`KStream`, :class:`KTable`, :class:`Topology`
  (``.spec`` is the topology spec a scenario file parses to; ``.to_scenario(...)`` and
  ``.describe()`` write it back as a scenario document or as Python code);
- options: :class:`JoinWindows`, :class:`Joined`, :class:`Materialized`, :class:`Stores`,
  :class:`ValueJoiner` (joiners are also Python callables or the names ``"pair"`` / ``"concat"``);
- running: :class:`TopologyTestDriver`, :class:`TestInputTopic`, :class:`TestOutputTopic`,
  :class:`TestRecord`, :class:`KeyValue`, through :class:`reference.runtime.engine.Engine`.

Topologies Kafka rejects raise :class:`reference.model.errors.TopologyError`; other misuse raises the
classes of :mod:`reference.api.errors`, named after Kafka's Java exceptions. A record on which
Kafka Streams would die raises :class:`reference.model.errors.KafkaWouldFail` (its ``code`` a
:class:`FailureCode`); ``TopologyTestDriver.drops()`` gives each dropped input's :class:`DropReason`.
"""
from reference.model.codes import DropReason, FailureCode
from reference.model.errors import KafkaWouldFail, TopologyError
from reference.api.builder import KStream, KTable, StreamsBuilder, Topology
from reference.api.driver import KeyValue, TestInputTopic, TestOutputTopic, TestRecord, TopologyTestDriver
from reference.api.errors import IllegalArgumentError, IllegalStateError, NoSuchElementError, UnsavableTopologyError
from reference.api.options import JoinWindows, Joined, KeyValueBytesStoreSupplier, Materialized, Stores, ValueJoiner

__all__ = [
    "StreamsBuilder", "KStream", "KTable", "Topology",
    "JoinWindows", "Joined", "Materialized", "Stores", "KeyValueBytesStoreSupplier", "ValueJoiner",
    "TopologyTestDriver", "TestInputTopic", "TestOutputTopic", "TestRecord", "KeyValue",
    "TopologyError", "KafkaWouldFail", "FailureCode", "DropReason", "IllegalArgumentError", "IllegalStateError",
    "NoSuchElementError", "UnsavableTopologyError",
]
