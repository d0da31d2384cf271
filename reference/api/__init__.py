"""Kafka Streams' DSL and test driver, in Python, for the topologies kssim models.

Names mirror Kafka's in snake_case; each class and method says which Kafka class or method it
mirrors. A topology is one of format 1's operators (a join reading topics ``left`` and
``right``, or a windowed aggregation reading topic ``input``, writing ``output``) or, for any
other program, a topology graph (:mod:`reference.api.builder` says which)::

    from kssim.reference.api import StreamsBuilder, JoinWindows, TopologyTestDriver

    b = StreamsBuilder()
    b.stream("left").left_join(b.stream("right"), lambda l, r: f"{l}+{r}",
                               JoinWindows.of_time_difference_and_grace(15, 5)).to("output")
    driver = TopologyTestDriver(b.build(), release="3.9", store="rocksdb")
    driver.create_input_topic("left").pipe_input("k", "A", ts=3)
    driver.create_output_topic("output").read_records_to_list()

    b = StreamsBuilder()
    (b.stream("input").group_by_key().windowed_by(TimeWindows.of_size_and_grace(10, 3).advance_by(5))
      .count().suppress(Suppressed.until_window_closes(BufferConfig.unbounded())).to_stream().to("output"))

    b = StreamsBuilder()
    b.stream("pageViews").group_by_key().count().to_stream().to("pageViewCounts")   # a graph

- building: :class:`StreamsBuilder`, :class:`KStream`, :class:`KTable`, :class:`KGroupedStream`,
  :class:`KGroupedTable`, :class:`TimeWindowedKStream`, :class:`SessionWindowedKStream`,
  :class:`Topology` (``.spec`` is the topology spec a scenario file parses to; ``.to_scenario(...)``
  writes it back as a scenario document; ``.describe()`` is Kafka's ``Topology#describe()`` text
  for a graph, Python code for format 1's operators);
- options: :class:`JoinWindows`, :class:`Joined`, :class:`Materialized`, :class:`Stores`,
  :class:`ValueJoiner` (joiners are also Python callables or the names ``"pair"`` / ``"concat"``),
  :class:`TimeWindows`, :class:`SessionWindows`, :class:`SlidingWindows`, :class:`EmitStrategy`,
  :class:`Suppressed`, :class:`BufferConfig`, :class:`KeyValueMapper` (aggregations are Python
  callables, as in Kafka, or the scenario contract's names: ``aggregate("sum")``,
  ``reduce("string_reduce")``);
- running: :class:`TopologyTestDriver`, :class:`TestInputTopic`, :class:`TestOutputTopic`,
  :class:`TestRecord`, :class:`KeyValue`, :class:`Windowed`, through
  :class:`reference.runtime.engine.Engine`.

Topologies Kafka rejects raise :class:`reference.model.errors.TopologyError`; other misuse raises the
classes of :mod:`reference.api.errors`, named after Kafka's Java exceptions. A record on which
Kafka Streams would die raises :class:`reference.model.errors.KafkaWouldFail` (its ``code`` a
:class:`FailureCode`); ``TopologyTestDriver.drops()`` gives each dropped input's :class:`DropReason`.
"""
from kssim.reference.model.codes import DropReason, FailureCode
from kssim.reference.model.errors import KafkaWouldFail, TopologyError
from kssim.reference.api.builder import (
    KGroupedStream, KGroupedTable, KStream, KTable, SessionWindowedKStream, StreamsBuilder, TimeWindowedKStream,
    Topology,
)
from kssim.reference.api.driver import KeyValue, TestInputTopic, TestOutputTopic, TestRecord, TopologyTestDriver, Windowed
from kssim.reference.api.errors import IllegalArgumentError, IllegalStateError, NoSuchElementError, UnsavableTopologyError
from kssim.reference.api.options import (
    BufferConfig, EmitStrategy, JoinWindows, Joined, KeyValueBytesStoreSupplier, KeyValueMapper, Materialized,
    SessionWindows, SlidingWindows, Stores, Suppressed, TimeWindows, ValueJoiner,
)

__all__ = [
    "StreamsBuilder", "KStream", "KTable", "KGroupedStream", "KGroupedTable", "TimeWindowedKStream", "SessionWindowedKStream", "Topology",
    "JoinWindows", "Joined", "Materialized", "Stores", "KeyValueBytesStoreSupplier", "ValueJoiner",
    "TimeWindows", "SessionWindows", "SlidingWindows", "EmitStrategy", "Suppressed", "BufferConfig", "KeyValueMapper",
    "TopologyTestDriver", "TestInputTopic", "TestOutputTopic", "TestRecord", "KeyValue", "Windowed",
    "TopologyError", "KafkaWouldFail", "FailureCode", "DropReason", "IllegalArgumentError", "IllegalStateError",
    "NoSuchElementError", "UnsavableTopologyError",
]
