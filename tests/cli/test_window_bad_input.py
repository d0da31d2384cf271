"""Impossible windows and misplaced suppress: exit 2 with an error naming the file and the field,
on both engines alike (the topology is checked before any engine runs)."""
import json

import pytest

from kssim.tools.cli import main


def _document(topology, semantics="3.9", topic="input"):
    return {"format": "kssim-scenario/1", "name": "bad-window", "semantics": semantics, "topology": topology,
            "inputs": [{"topic": topic, "key": "k", "value": 1, "ts": 1}]}


BAD = {
    "size-zero": (_document({"operator": "window_aggregate", "size_ms": 0, "grace_ms": 0}),
                  "topology.size_ms", "above 0"),
    "size-negative": (_document({"operator": "window_aggregate", "size_ms": -5, "grace_ms": 0}),
                      "topology.size_ms", "above 0"),
    "advance-above-size": (_document({"operator": "window_aggregate", "size_ms": 10, "advance_ms": 11, "grace_ms": 0}),
                           "topology.advance_ms", "at most the window size"),
    "a-record-in-too-many-windows": (_document({"operator": "window_aggregate", "size_ms": 2 ** 62, "advance_ms": 1,
                                                "grace_ms": 0}), "topology.advance_ms", "KSSIM_MAX_WINDOWS_PER_RECORD"),
    "graph-record-in-too-many-windows": (_document({"graph": [
        {"stream": "input"}, {"group_by_key": {}},
        {"windowed_by": {"time": {"size_ms": 10 ** 9, "advance_ms": 10, "grace_ms": 0}}}, {"count": {}},
        {"to_stream": {}}, {"to": "out"}]}), "topology.graph[2].windowed_by.advance_ms", "100,000 windows per record"),
    "advance-zero": (_document({"operator": "window_aggregate", "size_ms": 10, "advance_ms": 0, "grace_ms": 0}),
                     "topology.advance_ms", "above 0"),
    "negative-grace": (_document({"operator": "window_aggregate", "size_ms": 10, "grace_ms": -1}),
                       "topology.grace_ms", "must not be negative"),
    "session-gap-zero": (_document({"operator": "session_aggregate", "gap_ms": 0, "grace_ms": 0}),
                         "topology.gap_ms", "above 0"),
    "session-negative-grace": (_document({"operator": "session_aggregate", "gap_ms": 5, "grace_ms": -3}),
                               "topology.grace_ms", "must not be negative"),
    "sliding-negative-difference": (_document({"operator": "sliding_aggregate", "time_difference_ms": -1,
                                               "grace_ms": 0}), "topology.time_difference_ms", "must not be negative"),
    "legacy-builder-on-4x": (_document({"operator": "window_aggregate", "size_ms": 10, "grace_ms": None},
                                       semantics="4.0"), "topology.grace_ms", "removed in Kafka 4.0"),
    "wtable-window-size-zero": (_document({"operator": "windowed_table_join", "join": "inner",
                                           "window": {"size_ms": 0, "grace_ms": 0}}, topic="left"),
                                "topology.window.size_ms", "above 0"),
    "suppress-on-a-stream-join": (_document({"operator": "stream_stream_join", "join": "inner",
                                             "window": {"before_ms": 5, "after_ms": 5, "grace_ms": 0},
                                             "window_api": "time_difference", "suppress": {"until": "time_limit",
                                                                                           "time_limit_ms": 5}},
                                            topic="left"), "topology.suppress", "KStream"),
    "window-close-on-an-unwindowed-table": (_document({"operator": "table_table_join", "join": "inner",
                                                       "suppress": {"until": "window_close"}}, topic="left"),
                                            "topology.suppress.until", "windowed"),
    "emit-final-before-3.3": (_document({"operator": "window_aggregate", "size_ms": 10, "grace_ms": 0,
                                         "emit": "on_window_close"}, semantics="3.2"), "topology.emit", "3.3"),
    "sliding-before-2.7": (_document({"operator": "sliding_aggregate", "time_difference_ms": 5, "grace_ms": 0},
                                     semantics="2.6"), "topology.operator", "2.7"),
}


@pytest.mark.parametrize("engine", ["reference", "spark"])
@pytest.mark.parametrize("case", sorted(BAD))
def test_an_impossible_window_exits_2_naming_file_and_field(case, engine, tmp_path, capsys):
    document, field, words = BAD[case]
    path = tmp_path / f"{case}.json"
    path.write_text(json.dumps(document))
    code = main(["run", "--engine", engine, str(path)])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{path}: {field}:" in err and words in err
    assert "Traceback" not in err


def test_the_windows_per_record_bound_can_be_raised(tmp_path, capsys, monkeypatch):
    path = tmp_path / "hopping.json"
    path.write_text(json.dumps(_document({"operator": "window_aggregate", "size_ms": 200_000, "advance_ms": 1,
                                          "grace_ms": 0})))
    assert main(["run", str(path)]) == 2
    monkeypatch.setenv("KSSIM_MAX_WINDOWS_PER_RECORD", "200000")
    capsys.readouterr()
    assert main(["run", str(path), "--format", "jsonl"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2  # the record at ts 1 is in windows starting 0 and 1


def test_a_sum_value_beyond_a_java_long_is_refused_naming_the_record(tmp_path, capsys):
    doc = _document({"operator": "window_aggregate", "size_ms": 10, "grace_ms": 0, "aggregation": "sum"})
    doc["inputs"][0]["value"] = 2 ** 63
    path = tmp_path / "big.json"
    path.write_text(json.dumps(doc))
    for engine in ("reference", "spark"):
        assert main(["run", str(path), "--engine", engine]) == 2
        err = capsys.readouterr().err
        assert f"{path}: inputs[0].value" in err and "Java longs" in err


def test_the_windows_per_record_bound_is_inclusive(tmp_path, capsys):
    for size, code in ((100_000, 0), (100_001, 2)):  # at the bound runs, one window more is refused
        path = tmp_path / f"hopping-{size}.json"
        path.write_text(json.dumps(_document({"operator": "window_aggregate", "size_ms": size, "advance_ms": 1,
                                              "grace_ms": 0})))
        assert main(["run", str(path), "--format", "jsonl"]) == code
        capsys.readouterr()
