"""What a run holds at its end (``RunResult.pending``, ``kssim run --pending``): each held item
is listed until exactly its release time, then no more; graph nodes name themselves; an empty
state says so; the protocol costs nothing unless asked for."""
from kssim.reference.model.pending import NOTHING_HELD, PendingKind, pending_lines
from kssim.reference.model.scenario import scenario_from_dict
from kssim.reference.runtime.engine import run_scenario


def scenario(topology, inputs, semantics="3.9", config=None):
    doc = {"format": "kssim-scenario/1", "name": "t", "semantics": semantics, "topology": topology,
           "inputs": [{"topic": t, "key": k, "value": v, "ts": ts} for t, k, v, ts in inputs]}
    if config is not None:
        doc["config"] = config
    return scenario_from_dict(doc)


def held(topology, inputs, **kw):
    return run_scenario(scenario(topology, inputs, **kw), pending=True).pending


OUTER = {"operator": "stream_stream_join", "join": "outer", "window_api": "time_difference",
         "window": {"before_ms": 10, "after_ms": 10, "grace_ms": 0}, "joiner": "concat"}


def test_outer_join_record_is_held_until_exactly_its_release_time():
    (item,) = held(OUTER, [("left", "a", "A", 1), ("right", "x", "X", 11)])[:1]
    assert (item.kind, item.key, item.ts, item.release_at, item.stream_time) == \
        (PendingKind.OUTER_JOIN_RECORD, "a", 1, 12, 11)
    # a record bringing the join's stream time to 12 (> 1 + after 10 + grace 0) flushes it
    after = held(OUTER, [("left", "a", "A", 1), ("right", "x", "X", 12)])
    assert [p.key for p in after] == ["x"]


def test_outer_join_before_3_8_names_both_scanning_sides():
    (a, _x) = held(dict(OUTER, window={"before_ms": 5, "after_ms": 10, "grace_ms": 0}),
                   [("left", "a", "A", 1), ("right", "x", "X", 2)], semantics="3.7")
    assert a.release_at == 7 and "after 10" in a.release_rule and "before 5" in a.release_rule


WINDOWED = {"operator": "window_aggregate", "size_ms": 10, "grace_ms": 2, "aggregation": "count"}


def test_suppressed_window_is_held_until_window_end_plus_grace():
    topology = dict(WINDOWED, suppress={"until": "window_close"})
    (item, _) = held(topology, [("input", "k", "A", 1), ("input", "t", "T", 11)])
    assert (item.kind, item.window, item.release_at, item.stream_time, item.task) == \
        (PendingKind.SUPPRESSED, ("k", 0, 10), 12, 11, 0)
    assert [p.window for p in held(topology, [("input", "k", "A", 1), ("input", "t", "T", 12)])] == [("t", 10, 20)]


def test_suppress_time_limit_holds_a_key_until_its_first_update_plus_the_limit():
    topology = {"operator": "table_table_join", "join": "left", "joiner": "pair",
                "suppress": {"until": "time_limit", "time_limit_ms": 5}}
    (item,) = held(topology, [("left", "k", "A", 1), ("left", "k", "B", 3)])
    assert (item.kind, item.key, item.value, item.release_at, item.stream_time) == \
        (PendingKind.SUPPRESSED, "k", ["B", None], 6, 3)
    assert held(topology, [("left", "k", "A", 1), ("left", "j", "C", 6)])[0].key == "j"


def test_emit_final_window_is_open_until_window_end_plus_grace():
    topology = dict(WINDOWED, emit="on_window_close")
    items = held(topology, [("input", "k", "A", 1), ("input", "k", "B", 11)])
    assert [(p.kind, p.window, p.release_at) for p in items] == \
        [(PendingKind.OPEN_WINDOW, ("k", 0, 10), 12), (PendingKind.OPEN_WINDOW, ("k", 10, 20), 22)]
    items = held(topology, [("input", "k", "A", 1), ("input", "k", "B", 12)])
    assert [p.window for p in items] == [("k", 10, 20)]


def test_session_is_open_until_its_end_plus_the_close_offset():
    topology = {"operator": "session_aggregate", "gap_ms": 10, "grace_ms": 5, "aggregation": "count",
                "emit": "on_window_close"}
    (item,) = held(topology, [("input", "k", "A", 100), ("input", "j", "B", 115)])[:1]
    assert (item.window, item.release_at) == (("k", 100, 100), 116)
    assert [p.key for p in held(topology, [("input", "k", "A", 100), ("input", "j", "B", 116)])] == ["j"]


def test_grace_buffered_stream_record_is_held_until_ts_plus_grace():
    topology = {"operator": "stream_table_join", "join": "left", "grace_ms": 5, "joiner": "pair",
                "table": {"versioned": True, "history_retention_ms": 100}}
    (item,) = held(topology, [("left", "k", "A", 20), ("left", "j", "B", 24)])[:1]
    assert (item.kind, item.key, item.release_at, item.stream_time) == (PendingKind.GRACE_BUFFERED, "k", 25, 24)
    assert [p.key for p in held(topology, [("left", "k", "A", 20), ("left", "j", "B", 25)])] == ["j"]


def test_graph_nodes_name_their_held_state():
    graph = [{"stream": "s"}, {"group_by_key": {}},
             {"windowed_by": {"time": {"size_ms": 10, "grace_ms": 0}}}, {"count": {}},
             {"suppress": {"until": "window_close"}}, {"to_stream": {}}, {"to": "o"}]
    (item,) = held({"graph": graph}, [("s", "k", "a", 3)])
    assert item.node == "graph[4] suppress" and item.window == ("k", 0, 10) and item.release_at == 10
    assert item.describe().startswith("graph[4] suppress: result held in the suppress buffer: window [0,10) of k")


def test_graph_stream_stream_outer_join_node():
    graph = [{"stream": "a", "id": "a"}, {"stream": "b", "id": "b"},
             {"outer_join": {"other": "b", "window": {"before_ms": 5, "after_ms": 5, "grace_ms": 0}}, "from": "a"},
             {"to": "o"}]
    (item,) = held({"graph": graph}, [("a", "k", "x", 3)])
    assert item.node.startswith("graph[2]") and item.kind is PendingKind.OUTER_JOIN_RECORD and item.release_at == 9


def test_nothing_held():
    assert held(OUTER, [("left", "a", "A", 1), ("right", "a", "B", 2)]) == ()
    assert pending_lines(()) == [f"held in state at the end: {NOTHING_HELD}"]


def test_pending_and_misses_only_when_asked():
    topology = {"operator": "stream_table_join", "join": "inner", "joiner": "pair"}
    plain = run_scenario(scenario(topology, [("left", "k", "A", 1)]))
    assert plain.pending is None and plain.drops == ()
    asked = run_scenario(scenario(topology, [("left", "k", "A", 1)]), misses=True)
    assert [d.reason.code for d in asked.drops] == ["no_match"] and asked.drops[0].why is None


def test_global_table_inner_join_miss():
    topology = {"operator": "global_table_join", "join": "inner", "joiner": "pair",
                "key_mapper": {"field": "fk"}}
    result = run_scenario(scenario(topology, [("left", "k", {"fk": "x"}, 1)]), explain=True, misses=True)
    (drop,) = result.drops
    assert drop.reason.code == "no_match" and "which the global table" in drop.why.text



def test_the_python_driver_lists_what_is_held():
    from kssim.reference.api import JoinWindows, StreamsBuilder, TopologyTestDriver

    b = StreamsBuilder()
    b.stream("left").outer_join(b.stream("right"), "pair", JoinWindows.of_time_difference_with_no_grace(10)).to("o")
    driver = TopologyTestDriver(b.build(), "3.9")
    driver.create_input_topic("left").pipe_input("k", "A", ts=3)
    (item,) = driver.pending()
    assert (item.kind, item.key, item.release_at, item.stream_time) == (PendingKind.OUTER_JOIN_RECORD, "k", 14, 3)
