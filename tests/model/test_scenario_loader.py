"""The scenario loader: every field of format 1, and clear errors naming file, record and field."""
import json

import pytest

from kssim.reference.model.errors import ScenarioError
from kssim.reference.model.scenario import find_scenario_files, load_scenario, scenario_from_dict
from kssim.reference.model.topology import JoinWindowSpec, StreamStreamJoinSpec, TableSpec


def base(**overrides):
    doc = {
        "format": "kssim-scenario/1",
        "name": "t",
        "semantics": "3.9",
        "topology": {"operator": "stream_stream_join", "join": "inner", "window_api": "time_difference",
                     "window": {"before_ms": 10, "after_ms": 10, "grace_ms": 0}},
        "inputs": [{"topic": "left", "key": "k", "value": "A", "ts": 1}],
    }
    doc.update(overrides)
    return doc


def error_of(doc, path="f.json"):
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict(doc, path=path)
    return info.value


def test_minimal_scenario_reads_defaults():
    s = scenario_from_dict(base())
    assert s.topology == StreamStreamJoinSpec(join="inner", window=JoinWindowSpec(10, 10, 0), window_api="time_difference")
    assert s.config.order == "as_listed" and s.config.store == "rocksdb" and s.config.task_count == 1
    assert s.compare == "exact" and s.expected is None and s.release == "3.9"
    assert s.inputs[0].index == 0 and s.inputs[0].partition == 0


def test_absent_semantics_is_the_newest_modelled_release():
    doc = base()
    del doc["semantics"]
    assert scenario_from_dict(doc).release == "4.3"


def test_yaml_and_json_read_the_same(tmp_path):
    import yaml

    doc = base(expected=[{"topic": "output", "key": "k", "value": ["A", "a"], "ts": 2, "after_input": 0}])
    (tmp_path / "a.json").write_text(json.dumps(doc))
    (tmp_path / "b.yaml").write_text(yaml.safe_dump(doc))
    a, b = load_scenario(tmp_path / "a.json"), load_scenario(tmp_path / "b.yaml")
    assert a.topology == b.topology and a.inputs == b.inputs and a.expected == b.expected


def test_unknown_top_level_field_is_named():
    err = error_of(base(colour="red"))
    assert err.path == "f.json" and err.where == "colour" and "unknown" in err.message


def test_x_annotations_are_kept():
    s = scenario_from_dict(base(**{"x-notes": ["a", "b"]}))
    assert s.annotations == {"x-notes": ["a", "b"]}


@pytest.mark.parametrize("record, where", [
    ({"topic": "left", "key": "k", "value": "A", "ts": "1"}, "inputs[1].ts"),
    ({"topic": "left", "key": "k", "value": "A", "ts": 1.5}, "inputs[1].ts"),
    ({"topic": "left", "key": "k", "value": "A", "ts": True}, "inputs[1].ts"),
    ({"topic": "left", "key": "k", "value": "A", "ts": -1}, "inputs[1].ts"),
    ({"topic": "middle", "key": "k", "value": "A", "ts": 1}, "inputs[1].topic"),
    ({"topic": "left", "key": "k", "ts": 1}, "inputs[1].value"),
    ({"topic": "left", "key": "k", "value": "A", "ts": 1, "offset": 3}, "inputs[1].offset"),
    ({"topic": "left", "key": "k", "value": "A", "ts": 1, "partition": 1}, "inputs[1].partition"),
    ("not a record", "inputs[1]"),
])
def test_bad_input_record_names_record_and_field(record, where):
    doc = base()
    doc["inputs"].append(record)
    assert error_of(doc).where == where


def test_error_message_names_file_record_and_field(tmp_path):
    doc = base()
    doc["inputs"].append({"topic": "left", "key": "k", "value": "A", "ts": "soon"})
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value).startswith(f"{path}: inputs[1].ts: must be an integer")


def test_malformed_json_names_line(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"format": "kssim-scenario/1",\n "name": }')
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert info.value.where.startswith("line 2") and "not valid JSON" in info.value.message


def test_malformed_yaml_names_line(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("format: kssim-scenario/1\nname: [unclosed\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert "line" in info.value.where and "YAML" in info.value.message


@pytest.mark.parametrize("topology, where", [
    ({"operator": "stream_stream_join", "join": "inner", "window": {"before_ms": -10, "after_ms": 5}}, "topology.window"),
    ({"operator": "stream_stream_join", "join": "inner", "window_api": "time_difference",
      "window": {"before_ms": 10, "after_ms": 10, "grace_ms": -1}}, "topology.window.grace_ms"),
    ({"operator": "stream_stream_join", "join": "inner", "window_api": "time_difference",
      "window": {"before_ms": 10, "after_ms": 10}}, "topology.window.grace_ms"),
    ({"operator": "stream_stream_join", "join": "full", "window": {"before_ms": 1, "after_ms": 1}}, "topology.join"),
    ({"operator": "stream_stream_join", "join": "inner", "window": {"before_ms": 1, "after_ms": 1, "size": 3}}, "topology.window.size"),
    ({"operator": "stream_table_join", "join": "left", "grace_ms": 5, "table": {"versioned": False}}, "topology.grace_ms"),
    ({"operator": "stream_table_join", "join": "left", "grace_ms": 50,
      "table": {"versioned": True, "history_retention_ms": 10}}, "topology.table.history_retention_ms"),
    ({"operator": "stream_table_join", "join": "left", "table": {"versioned": True}}, "topology.table.history_retention_ms"),
    ({"operator": "table_table_join", "join": "outer", "joiner": "sum"}, "topology.joiner"),
    ({"operator": "tumbling_join", "join": "outer"}, "topology.operator"),
])
def test_impossible_topology_is_rejected_with_its_field(topology, where):
    assert error_of(base(topology=topology)).where == where


def test_windows_of_a_negative_sum_are_rejected_but_asymmetric_ones_are_fine():
    doc = base(topology={"operator": "stream_stream_join", "join": "inner",
                         "window": {"before_ms": -5, "after_ms": 10, "grace_ms": 0}})
    assert scenario_from_dict(doc).topology.window == JoinWindowSpec(-5, 10, 0)


@pytest.mark.parametrize("release, topology, where", [
    ("3.0", {"operator": "stream_stream_join", "join": "left", "window_api": "time_difference",
             "window": {"before_ms": 1, "after_ms": 1, "grace_ms": 0}}, "topology.window_api"),
    ("2.0", {"operator": "stream_stream_join", "join": "left", "window_api": "legacy",
             "window": {"before_ms": 1, "after_ms": 1, "grace_ms": 0}}, "topology.window.grace_ms"),
    ("3.4", {"operator": "stream_table_join", "join": "left",
             "table": {"versioned": True, "history_retention_ms": 10}}, "topology.table.versioned"),
    ("3.5", {"operator": "stream_table_join", "join": "left", "grace_ms": 1,
             "table": {"versioned": True, "history_retention_ms": 10}}, "topology.grace_ms"),
])
def test_apis_that_did_not_exist_in_the_release_are_rejected(release, topology, where):
    assert error_of(base(semantics=release, topology=topology)).where == where


@pytest.mark.parametrize("semantics", ["4.4", "0.9.0", "3", "latest", 3.9])
def test_unknown_or_future_release_is_an_error(semantics):
    assert error_of(base(semantics=semantics)).where == "semantics"


def test_config_fields():
    s = scenario_from_dict(base(config={"order": "timestamp_sync", "store": "in_memory",
                                        "partitions": {"left": 2, "right": 2}, "emit_interval_ms": 1000}))
    assert (s.config.order, s.config.store, s.config.task_count, s.config.emit_interval_ms) == ("timestamp_sync", "in_memory", 2, 1000)


@pytest.mark.parametrize("config, where", [
    ({"order": "by_time"}, "config.order"),
    ({"store": "lmdb"}, "config.store"),
    ({"partitions": {"left": 2}}, "config.partitions"),  # not co-partitioned
    ({"partitions": {"left": 0, "right": 0}}, "config.partitions.left"),
    ({"partitions": {"input": 2}}, "config.partitions.input"),
    ({"cache": True}, "config.cache"),
    ({"emit_interval_ms": -1}, "config.emit_interval_ms"),
])
def test_bad_config_is_named(config, where):
    assert error_of(base(config=config)).where == where


@pytest.mark.parametrize("extra, where", [
    ({"expected": [{"topic": "output", "key": "k", "value": 1, "ts": 1, "after_input": 5}]}, "expected[0].after_input"),
    ({"expected": [{"topic": "left", "key": "k", "value": 1, "ts": 1}]}, "expected[0].topic"),
    ({"checkpoints": [0, 0]}, "checkpoints[1]"),
    ({"checkpoints": [3]}, "checkpoints[0]"),
    ({"compare": "fuzzy"}, "compare"),
    ({"expected_failure": {"input": 9}}, "expected_failure.input"),
])
def test_bad_expectations_are_named(extra, where):
    assert error_of(base(**extra)).where == where


def test_checkpoints_default_to_distinct_after_input_values():
    s = scenario_from_dict(base(inputs=[{"topic": "left", "key": "k", "value": "A", "ts": t} for t in range(4)],
                                expected=[{"topic": "output", "key": "k", "value": 1, "ts": 1, "after_input": i} for i in (3, 1, 3)]))
    assert s.effective_checkpoints() == (1, 3)


def test_every_conformance_file_loads():
    files = find_scenario_files(["../shared/conformance"]) if __import__("os").path.isdir("../shared/conformance") else []
    assert len(files) > 1800
    for f in files:
        load_scenario(f)


def test_output_has_one_partition_per_task():
    two = {"partitions": {"left": 2, "right": 2}}
    rec = {"topic": "output", "partition": 1, "key": "k", "value": 1, "ts": 1}
    assert scenario_from_dict(base(config=two, expected=[rec])).expected[0].partition == 1
    assert error_of(base(expected=[rec])).where == "expected[0].partition"


FK = {"operator": "fk_join", "join": "left", "foreign_key": {"field": "fk"}}


def fk_doc(inputs, semantics="3.9", topology=FK, **config):
    doc = base(semantics=semantics, topology=topology, inputs=inputs)
    if config:
        doc["config"] = config
    return doc


@pytest.mark.parametrize("value, message", [
    ({"v": 1}, "missing field 'fk'"),
    ("plain", "must be an object, got 'plain'"),
    ([1, 2], "must be an object"),
])
def test_a_left_value_the_fk_extractor_cannot_read_names_record_and_field(value, message):
    err = error_of(fk_doc([{"topic": "right", "key": "x", "value": "r", "ts": 0},
                           {"topic": "left", "key": "k", "value": value, "ts": 1}]))
    assert err.path == "f.json" and err.where == "inputs[1].value.fk" and message in err.message


@pytest.mark.parametrize("topology, role", [
    (FK, "the foreign-key extractor reads field 'fk'"),
    ({"operator": "global_table_join", "join": "left", "key_mapper": {"field": "fk"}}, "the key mapper reads field 'fk'"),
])
def test_an_extractor_is_named_for_what_it_is(topology, role):
    err = error_of(fk_doc([{"topic": "left", "key": "k", "value": "plain", "ts": 1}], topology=topology))
    assert err.where == "inputs[0].value.fk" and role in err.message
    missing = error_of(fk_doc([{"topic": "left", "key": "k", "value": {"v": 1}, "ts": 1}], topology=topology))
    assert ("foreign-key extractor" in missing.message) == (topology is FK), missing.message


def test_a_null_fk_and_a_left_tombstone_are_valid():
    s = scenario_from_dict(fk_doc([{"topic": "left", "key": "k", "value": {"fk": None}, "ts": 1},
                                   {"topic": "left", "key": "k", "value": None, "ts": 2}]))
    assert len(s.inputs) == 2


def test_fk_joins_before_2_4_and_key_extractors_before_4_0_are_errors():
    err = error_of(fk_doc([], semantics="2.3"))
    assert err.where == "topology.operator" and "before Kafka 2.4" in err.message
    err = error_of(fk_doc([], semantics="3.9", topology={**FK, "foreign_key": {"from": "key"}}))
    assert err.where == "topology.foreign_key.from" and "4.0" in err.message
    assert scenario_from_dict(fk_doc([], semantics="4.0", topology={**FK, "foreign_key": {"from": "key"}}))


def test_interleaved_delivery_needs_a_seed_or_a_schedule():
    err = error_of(fk_doc([], delivery="interleaved"))
    assert err.where == "config.seed" and "needs a seed" in err.message
    assert scenario_from_dict(fk_doc([], delivery="interleaved", seed=3)).config.seed == 3
    assert scenario_from_dict(fk_doc([], delivery="interleaved", schedule=[0, 1])).config.schedule == (0, 1)
    assert error_of(fk_doc([], seed=3)).where == "config.delivery"
    assert error_of(fk_doc([], delivery="interleaved", schedule=[0, -1])).where == "config.schedule"


def test_a_global_table_join_mapper_reading_the_key_and_the_bootstrap_order():
    topology = {"operator": "global_table_join", "join": "inner", "key_mapper": {"from": "key"}}
    s = scenario_from_dict(fk_doc([{"topic": "left", "key": "k", "value": "v", "ts": 1}], semantics="3.9",
                                  topology=topology, global_table="bootstrap"))
    assert s.config.global_table == "bootstrap" and s.topology.key_mapper.source == "key"
    assert error_of(base(config={"global_table": "bootstrap"})).where == "config.global_table"
