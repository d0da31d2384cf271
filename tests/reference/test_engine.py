"""The runtime on its own: tasks, internal (repartition) topics, attribution, Kafka's partitioner."""
import pytest

from kssim.reference.runtime import operators
from kssim.reference.runtime.engine import Engine, run_records
from kssim.reference.model.keys import murmur2, partition_for
from kssim.reference.model.profiles import profile_for
from kssim.reference.model.records import InputRecord
from kssim.reference.model.scenario import RunConfig
from kssim.reference.model.topology import TableTableJoinSpec


class Repartitioner:
    """A toy two-stage processor: 'left' records are re-keyed by value and sent to the internal
    topic 'by-value'; records arriving there are emitted with the task that received them."""

    def __init__(self, task_id_holder):
        self.seen = task_id_holder

    def process(self, topic, key, value, ts, ctx):
        if topic == "left":
            ctx.send("by-value", value, key, ts)
            ctx.send("by-value", value, key + "-again", ts + 1)
        else:
            ctx.emit(key, (value, ctx.task_id), ts)


@pytest.fixture
def toy_operator(monkeypatch):
    monkeypatch.setattr(operators, "builder_for", lambda op: lambda spec, profile, config, state: Repartitioner(state))
    monkeypatch.setattr("kssim.reference.runtime.engine.builder_for", operators.builder_for)


def test_internal_records_go_to_the_task_of_their_key_and_keep_the_input_attribution(toy_operator):
    config = RunConfig(partitions={"left": 4, "right": 4})
    inputs = [InputRecord("left", "a", "x", 1, 0, 0), InputRecord("left", "b", "y", 2, 3, 1)]
    result = run_records(TableTableJoinSpec(join="inner"), profile_for("3.9"), config, inputs)
    got = [(o.key, o.value, o.ts, o.partition, o.input_index) for o in result.outputs]
    px, py = partition_for("x", 4), partition_for("y", 4)
    assert got == [("x", ("a", px), 1, px, 0), ("x", ("a-again", px), 2, px, 0),
                   ("y", ("b", py), 2, py, 1), ("y", ("b-again", py), 3, py, 1)]


def test_engine_process_returns_internal_results_too(toy_operator):
    engine = Engine(TableTableJoinSpec(join="inner"), profile_for("3.9"), RunConfig())
    out = engine.process(InputRecord("left", "a", "x", 5, 0, 7))
    assert [(o.key, o.input_index) for o in out] == [("x", 7), ("x", 7)]


def test_murmur2_matches_kafka_reference_values():
    # Kafka's UtilsTest#testMurmur2 pins these (string bytes -> hash)
    cases = {"21": -973932308, "foobar": -790332482, "a-little-bit-long-string": -985981536,
             "a-little-bit-longer-string": -1486304829, "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
             "abc": 479470107}
    for text, expected in cases.items():
        assert murmur2(text.encode()) == expected


def test_default_partitioner_is_positive_modulo():
    assert all(0 <= partition_for(f"k{i}", 3) < 3 for i in range(100))
    assert partition_for("foobar", 7) == (-790332482 & 0x7FFFFFFF) % 7


def test_every_operator_of_the_model_table_and_graphs_have_a_reference_module():
    from kssim.reference.model.errors import UnsupportedOperator
    from kssim.reference.model.topology import OPERATOR_KINDS

    assert set(operators.supported_operators()) == set(OPERATOR_KINDS) | {"graph"}
    for name in operators.supported_operators():
        assert operators._MODULES[name].startswith("kssim.reference.")
        assert callable(operators.builder_for(name))
    with pytest.raises(UnsupportedOperator):
        operators.builder_for("no_such_operator")
