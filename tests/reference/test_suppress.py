"""KTable#suppress in the reference engine: the buffer store and its size estimate per release,
eviction edges (exactly at the time limit, at window end + grace, at the record and byte bounds),
both buffer strategies, tombstones, ordering, depth-first forwarding, explanations, the topology
checks, and the release rules of the "suppress" section of ``RULES``."""
import pytest

from kssim.reference.model.codes import FailureCode
from kssim.reference.model.errors import KafkaWouldFail, TopologyError
from kssim.reference.model.profiles import profile_for
from kssim.reference.model.records import InputRecord
from kssim.reference.model.scenario import RunConfig
from kssim.reference.model.suppression import (JAVA_LONG_MAX, buffer_key_bytes, buffered_record_size, java_long,
                                         suppression_plan, window_close_delay_ms)
from kssim.reference.model.topology import (ForeignKeyJoinSpec, KeyExtractorSpec, SessionAggregateSpec, SuppressBufferSpec,
                                      SuppressSpec, TableTableJoinSpec, TimeWindowSpec, WindowAggregateSpec,
                                      check_topology)
from kssim.reference.runtime.engine import run_records
from kssim.reference.stores.suppress_buffer import BufferedChange, SuppressBuffer

L = "left"


def time_limit(ms, max_records=None, max_bytes=None, when_full="shut_down"):
    return SuppressSpec(until="time_limit", time_limit_ms=ms,
                        buffer=SuppressBufferSpec(max_records=max_records, max_bytes=max_bytes, when_full=when_full))


def table(suppress, join="left", send_old_values=False):
    """A left table-table join with only left records: a suppressible table of the left updates."""
    return TableTableJoinSpec(join=join, joiner="pair", send_old_values=send_old_values, suppress=suppress)


def windowed(suppress, size=10, grace=0, aggregation="count", send_old_values=False):
    return WindowAggregateSpec(window=TimeWindowSpec(size_ms=size, advance_ms=size, grace_ms=grace),
                               aggregation=aggregation, send_old_values=send_old_values, suppress=suppress)


def run(topology, records, release="3.9", explain=False):
    """records: (topic, key, value, ts) in processing order."""
    inputs = [InputRecord(r[0], r[1], r[2], r[3], 0, i) for i, r in enumerate(records)]
    return run_records(topology, profile_for(release), RunConfig(), inputs, explain=explain)


def outs(result):
    return [(o.key, o.value, o.ts, o.input_index) for o in result.outputs]


def left(*updates):
    return [(L, k, v, ts) for k, v, ts in updates]


def w(key, start, end):
    return {"key": key, "start": start, "end": end}


# --- the buffer store -------------------------------------------------------------------------------

def entry(key, new, size, ts=0, prior=None):
    return BufferedChange(key, key, new, None, prior, ts, L, 0, 0, None, size)


def test_buffer_put_is_non_resetting_and_keeps_the_prior_value():
    buffer = SuppressBuffer()
    buffer.put(5, b"a", entry("a", 1, 40, prior=b"p"))
    buffer.put(9, b"a", BufferedChange("a", "a", 2, 1, b"p", 9, L, 1, 0, None, 50))
    assert buffer.num_records == 1 and buffer.buffer_size == 50 and buffer.min_timestamp == 5
    assert buffer.buffered("a").new == 2 and buffer.buffered("a").prior == b"p"
    evicted = []
    buffer.evict_while(lambda: True, lambda place, e: evicted.append((place.time, e.new)))
    # the key kept the buffer time of its first put
    assert evicted == [(5, 2)]
    assert buffer.num_records == 0 and buffer.buffer_size == 0 and buffer.min_timestamp == JAVA_LONG_MAX


def test_buffer_orders_by_time_then_unsigned_key_bytes():
    buffer = SuppressBuffer()
    for time, key in ((3, "b"), (1, "z"), (3, "a")):
        buffer.put(time, key.encode(), entry(key, 1, 10))
    buffer.put(3, b"\xff", entry("\xff", 1, 10))  # 0xFF sorts after "b" unsigned
    order = []
    buffer.evict_while(lambda: True, lambda place, e: order.append(e.key))
    assert order == ["z", "a", "b", "\xff"]


def test_evict_while_asks_the_predicate_before_every_eviction():
    buffer = SuppressBuffer()
    for time in (1, 2, 3):
        buffer.put(time, bytes([time]), entry(str(time), time, 10))
    seen = []
    count = buffer.evict_while(lambda: buffer.min_timestamp <= 2, lambda place, e: seen.append(e.key))
    assert count == 2 and seen == ["1", "2"] and buffer.min_timestamp == 3 and buffer.buffer_size == 10


# --- the size estimate, per release ---------------------------------------------------------------

def plan_for(release, spec=None):
    return suppression_plan(spec or table(time_limit(0)), profile_for(release))


@pytest.mark.parametrize("release, expected", [
    # 3.9 (and 2.4+): 8 + key 3 + prior 8 + old (== prior: 0) + new 8 + context (8 + 8 + len("left") + 4 = 24)
    ("3.9", 8 + 3 + 8 + 0 + 8 + 24),
    ("2.4", 8 + 3 + 8 + 0 + 8 + 24),
    # 2.3: prior 8 + the serialized Change (4 + old 8 + 4 + new 8)
    ("2.3", 8 + 3 + 8 + (4 + 8 + 4 + 8) + 24),
    # 2.1-2.2: the serialized Change only
    ("2.2", 8 + 3 + (4 + 8 + 4 + 8) + 24),
    ("2.1", 8 + 3 + (4 + 8 + 4 + 8) + 24),
])
def test_record_size_estimate_per_release(release, expected):
    eight = (5).to_bytes(8, "big")
    assert buffered_record_size(plan_for(release), b"hey", eight, eight, (7).to_bytes(8, "big"), "left") == expected


def test_compact_estimate_counts_an_old_value_unlike_the_prior_one():
    plan = plan_for("3.9")
    prior, old, new = b"1" * 8, b"2" * 8, b"3" * 8
    assert buffered_record_size(plan, b"k", prior, old, new, "input") == 8 + 1 + 24 + 25
    assert buffered_record_size(plan, b"k", None, None, None, "input") == 8 + 1 + 25
    assert buffered_record_size(plan_for("2.2"), b"k", None, None, None, "input") == 8 + 1 + 8 + 25


def test_windowed_keys_are_serialized_as_kafkas_windowed_serdes():
    assert buffer_key_bytes("k", "plain") == b"k"
    assert buffer_key_bytes(w("k", 2, 12), "time_window") == b"k" + (2).to_bytes(8, "big")
    assert buffer_key_bytes(w("k", 2, 7), "session_window") == b"k" + (7).to_bytes(8, "big") + (2).to_bytes(8, "big")
    assert buffer_key_bytes(w(1, -1, 0), "time_window") == (1).to_bytes(8, "big") + b"\xff" * 8


def test_byte_bound_counts_the_buffer_through_a_run():
    # 3.9, topic "left": hey=[5,null] 8 + 3 + 8 + 24 = 43; j=[5,null] 8 + 1 + 8 + 24 = 41: 84 in all
    records = left(("hey", 5, 100), ("j", 5, 101))
    assert outs(run(table(time_limit(10 ** 9, max_bytes=84, when_full="emit_early")), records)) == []
    assert outs(run(table(time_limit(10 ** 9, max_bytes=83, when_full="emit_early")), records)) == \
        [("hey", [5, None], 100, 1)]


# --- time: exactly at the limit ---------------------------------------------------------------------

def test_time_limit_emits_when_stream_time_reaches_first_buffer_time_plus_limit():
    records = left(("a", 1, 10), ("a", 2, 12), ("b", 1, 14), ("b", 2, 15))
    # a entered at 10: still buffered at stream time 14, emitted (latest value, latest ts) at 15
    assert outs(run(table(time_limit(5)), records)) == [("a", [2, None], 12, 3)]


def test_zero_time_limit_emits_every_update_at_once_and_a_late_one_too():
    records = left(("a", 1, 10), ("b", 1, 3))
    assert outs(run(table(time_limit(0)), records)) == [("a", [1, None], 10, 0), ("b", [1, None], 3, 1)]


def test_stream_time_never_goes_back():
    records = left(("a", 1, 10), ("b", 1, 20), ("c", 1, 5))
    # c is older than stream time 20 - 8: emitted at once; a left at 20 (10 <= 12)
    assert outs(run(table(time_limit(8)), records)) == [("a", [1, None], 10, 1), ("c", [1, None], 5, 2)]


def test_negative_time_limit_is_accepted_and_emits_at_once():
    records = left(("a", 1, 10), ("b", 1, 3))
    assert outs(run(table(time_limit(-5)), records)) == [("a", [1, None], 10, 0), ("b", [1, None], 3, 1)]


def test_window_close_emits_at_window_end_plus_grace_exactly():
    spec = windowed(SuppressSpec(until="window_close"), size=10, grace=5)
    # window [0, 10) closes at stream time 15; the record at 14 keeps it buffered
    kept = run(spec, [("input", "k", "v", 3), ("input", "k", "v", 14)])
    assert outs(kept) == []
    closed = run(spec, [("input", "k", "v", 3), ("input", "k", "v", 15)])
    assert outs(closed) == [(w("k", 0, 10), 1, 3, 1)]


def test_time_limit_on_a_windowed_table_uses_the_record_time_not_the_window_end():
    spec = windowed(time_limit(2), size=100, grace=0)
    result = run(spec, [("input", "k", "v", 3), ("input", "j", "v", 5)])
    assert outs(result) == [(w("k", 0, 100), 1, 3, 1)]


# --- capacity: exactly at the bound, both strategies ---------------------------------------------------

def test_record_bound_is_exceeded_only_above_it():
    records = left(("a", 1, 1), ("b", 1, 2), ("c", 1, 3))
    assert outs(run(table(time_limit(100, max_records=3, when_full="emit_early")), records)) == []
    assert outs(run(table(time_limit(100, max_records=2, when_full="emit_early")), records)) == \
        [("a", [1, None], 1, 2)]


def test_emit_early_evicts_oldest_until_under_the_bound():
    records = left(("a", 1, 1), ("b", 1, 2), ("c", 1, 3))
    result = run(table(time_limit(100, max_records=0, when_full="emit_early")), records)
    assert outs(result) == [("a", [1, None], 1, 0), ("b", [1, None], 2, 1), ("c", [1, None], 3, 2)]


def test_negative_record_bound_is_always_exceeded():
    records = left(("a", 1, 1), ("b", 1, 2))
    assert outs(run(table(time_limit(100, max_records=-1, when_full="emit_early")), records)) == \
        [("a", [1, None], 1, 0), ("b", [1, None], 2, 1)]
    failed = run(table(time_limit(100, max_records=-1)), records)
    assert failed.failure.input_index == 0 and outs(failed) == []


def test_an_update_of_a_buffered_key_does_not_count_as_a_new_record():
    records = left(("a", 1, 1), ("a", 2, 2), ("a", 3, 3))
    result = run(table(time_limit(100, max_records=1)), records)
    assert result.failure is None and outs(result) == []


def test_shut_down_fails_at_the_overflowing_input_and_keeps_what_was_emitted_before():
    records = left(("a", 1, 1), ("b", 1, 5), ("c", 1, 12), ("d", 1, 13))
    # one record fits: b's arrival (input 1) overflows the buffer before anything was emitted
    result = run(table(time_limit(10, max_records=1)), records, explain=True)
    assert outs(result) == [] and result.failure.input_index == 1
    # two fit: input 2 evicts a (1 <= 12 - 10), input 3 makes b, c, d three records: Kafka dies there
    result = run(table(time_limit(10, max_records=2)), records, explain=True)
    assert outs(result) == [("a", [1, None], 1, 2)]
    failure = result.failure
    assert isinstance(failure, KafkaWouldFail) and failure.input_index == 3
    assert failure.code is FailureCode.SUPPRESS_BUFFER_FULL
    assert "buffer exceeded its max capacity" in failure.message
    assert failure.why.rule == "suppress_buffer_full"
    assert "Kafka would shut down here" in failure.why.text and "3/2 records" in failure.why.text


def test_shut_down_on_the_byte_bound_names_the_bytes():
    # 43 + 41 = 84 bytes (see test_byte_bound_counts_the_buffer_through_a_run)
    result = run(table(time_limit(10 ** 9, max_bytes=83)), left(("hey", 5, 100), ("j", 5, 101)), explain=True)
    assert result.failure.input_index == 1 and "84/83 bytes" in result.failure.why.text


def test_window_close_with_a_bounded_strict_buffer_shuts_down():
    spec = windowed(SuppressSpec(until="window_close", buffer=SuppressBufferSpec(max_records=1)), size=10)
    result = run(spec, [("input", "a", "v", 1), ("input", "b", "v", 2)])
    assert result.failure.code is FailureCode.SUPPRESS_BUFFER_FULL and result.failure.input_index == 1


# --- tombstones --------------------------------------------------------------------------------------

def test_time_limit_forwards_tombstones():
    records = left(("a", 1, 1), ("a", None, 2), ("b", 1, 10))
    assert outs(run(table(time_limit(5)), records)) == [("a", None, 2, 2)]


def test_a_tombstone_replaces_the_buffered_value_and_keeps_the_first_buffer_time():
    records = left(("a", 1, 1), ("a", None, 5), ("b", 1, 6))
    # a entered at 1: 1 <= 6 - 5 evicts its latest change, the tombstone at 5
    assert outs(run(table(time_limit(5), send_old_values=True), records)) == [("a", None, 5, 2)]
    assert [o.old_value for o in run(table(time_limit(5), send_old_values=True), records).outputs] == [[1, None]]


# --- old values --------------------------------------------------------------------------------------

def test_emitted_old_value_is_the_latest_changes_old_value():
    records = left(("a", 1, 1), ("a", 2, 2), ("a", 3, 3), ("b", 1, 20))
    result = run(table(time_limit(5), send_old_values=True), records)
    assert [(o.key, o.value, o.old_value) for o in result.outputs] == [("a", [3, None], [2, None])]


def test_without_send_old_values_outputs_carry_no_old_value():
    result = run(table(time_limit(0)), left(("a", 1, 1), ("a", 2, 2)))
    assert all(o.old_value is not o.value for o in result.outputs)
    from kssim.reference.model.records import NO_OLD_VALUE
    assert [o.old_value for o in result.outputs] == [NO_OLD_VALUE, NO_OLD_VALUE]


# --- ordering and forwarding -----------------------------------------------------------------------------

def test_keys_with_the_same_buffer_time_leave_in_key_byte_order():
    # integer keys are 8-byte big-endian longs: -1 (0xFF...) sorts after 1 unsigned
    records = left((-1, 1, 5), (1, 1, 5), ("tick", 1, 6))
    assert [o.key for o in run(table(time_limit(1)), records).outputs] == [1, -1]


def test_evictions_happen_inside_the_upstream_forward_and_belong_to_its_input():
    # hopping windows: one record forwards [0,10) then [5,15); with one-record capacity the second
    # forward pushes the first out while the aggregation is still forwarding
    spec = WindowAggregateSpec(window=TimeWindowSpec(size_ms=10, advance_ms=5, grace_ms=0),
                               suppress=time_limit(100, max_records=1, when_full="emit_early"))
    result = run(spec, [("input", "k", "v", 7)])
    assert outs(result) == [(w("k", 0, 10), 1, 7, 0)]


def test_a_suppress_buffer_per_task():
    records = [InputRecord(L, "a", 1, 1, 0, 0), InputRecord(L, "b", 1, 50, 1, 1), InputRecord(L, "c", 1, 9, 0, 2)]
    config = RunConfig(partitions={"left": 2, "right": 2})
    result = run_records(table(time_limit(5)), profile_for("3.9"), config, records)
    # task 1's stream time (50) does not evict task 0's record a; task 0's own time 9 does
    assert [(o.key, o.partition, o.input_index) for o in result.outputs] == [("a", 0, 2)]


def test_same_input_same_output_bytes():
    records = left(("b", 1, 5), ("a", 1, 5), ("c", 2, 9), ("a", 3, 11), ("z", 1, 30))
    spec = table(time_limit(3, max_bytes=100, when_full="emit_early"), send_old_values=True)
    first, second = run(spec, records), run(spec, records)
    assert first.outputs == second.outputs and first.outputs


# --- explanations --------------------------------------------------------------------------------------

def test_explanations_state_the_rule_with_its_numbers():
    result = run(table(time_limit(5)), left(("a", 1, 1), ("a", 2, 3), ("b", 1, 6)), explain=True)
    why = result.outputs[0].why
    assert why.rule == "suppress_time_limit"
    assert "buffer time 1 <= stream time 6 - 5 = 1" in why.text and "first buffered by input 0" in why.text
    assert "latest update by input 1" in why.text and "left join" in why.text
    early = run(table(time_limit(100, max_records=1, when_full="emit_early")), left(("a", 1, 1), ("b", 1, 2)),
                explain=True)
    assert early.outputs[0].why.rule == "suppress_emit_early" and "2/1 records" in early.outputs[0].why.text
    final = run(windowed(SuppressSpec(until="window_close"), grace=2), [("input", "k", "v", 1), ("input", "k", "v", 12)],
                explain=True)
    assert final.outputs[0].why.rule == "suppress_window_closed"
    assert "window end 10 <= stream time 12 - close delay 2 (the window grace) = 10" in final.outputs[0].why.text


def test_explanations_cite_the_release_rule_that_decides():
    # 2.1: the task's stream time; sessions: the close delay's make-up; sizes: the estimate in force
    old = run(table(time_limit(5)), left(("a", 1, 0), (None, 1, 10), ("b", 1, 1)), release="2.1", explain=True)
    assert "the task's stream time 10 (2.1, before suppress_observed_stream_time)" in old.outputs[0].why.text
    records = [("input", "k", "v", 0), ("input", "j", "v", 2), ("input", "z", "v", 7)]
    texts = {release: run(session(5, 1), records, release=release, explain=True).outputs[0].why.text
             for release in ("2.2", "2.2.1")}
    assert "close delay 1 (the session grace only, before suppress_session_close_includes_gap)" in texts["2.2"]
    assert "close delay 6 (gap 5 + grace 1, suppress_session_close_includes_gap)" in texts["2.2.1"]
    for release, rule in (("2.2", "before suppress_enables_old_values"), ("2.3", "before suppress_buffer_compact_values"),
                          ("3.9", "; suppress_buffer_compact_values")):
        full = run(table(time_limit(100, max_records=0)), left(("a", 1, 1)), release=release, explain=True)
        assert rule in full.failure.why.text


# --- plans: the close delay GraphGraceSearchUtil finds ----------------------------------------------

def session(gap, grace, suppress=SuppressSpec(until="window_close")):
    return SessionAggregateSpec(gap_ms=gap, grace_ms=grace, suppress=suppress)


def test_session_close_delay_is_gap_plus_grace_from_2_2_1():
    assert window_close_delay_ms(session(5, 3), profile_for("2.2")) == 3
    assert window_close_delay_ms(session(5, 3), profile_for("2.2.1")) == 8
    assert window_close_delay_ms(session(5, 3), profile_for("3.9")) == 8


def test_legacy_windows_take_the_default_grace():
    day = 24 * 3600 * 1000
    assert window_close_delay_ms(session(5, None), profile_for("2.8")) == day
    assert window_close_delay_ms(windowed(SuppressSpec(until="window_close"), size=10, grace=None),
                                 profile_for("3.9")) == day - 10


def test_plans():
    final = suppression_plan(windowed(SuppressSpec(until="window_close"), grace=4), profile_for("3.9"))
    assert (final.duration_ms, final.time_definition, final.safe_to_drop_tombstones, final.key_kind) == \
        (4, "window_end", True, "time_window")
    assert (final.max_records, final.max_bytes) == (JAVA_LONG_MAX, JAVA_LONG_MAX)
    limit = suppression_plan(table(time_limit(7, max_bytes=9, when_full="emit_early")), profile_for("3.9"))
    assert (limit.duration_ms, limit.time_definition, limit.safe_to_drop_tombstones, limit.key_kind) == \
        (7, "record_time", False, "plain")
    assert (limit.max_records, limit.max_bytes, limit.when_full) == (JAVA_LONG_MAX, 9, "emit_early")


def test_java_long_wraps():
    assert java_long(JAVA_LONG_MAX + 1) == -(1 << 63) and java_long(-1) == -1


# --- release rules ------------------------------------------------------------------------------------------

def test_2_1_reads_the_task_stream_time_which_dropped_records_advance():
    # the null-key record is dropped by the table source: in 2.1 it still advanced the task's
    # stream time to 10, so the next record that reaches suppress evicts everything up to 5
    records = left(("a", 1, 0), (None, 1, 10), ("b", 1, 1))
    assert outs(run(table(time_limit(5)), records, release="2.1")) == [("a", [1, None], 0, 2), ("b", [1, None], 1, 2)]
    assert outs(run(table(time_limit(5)), records, release="2.2")) == []  # KAFKA-7895
    assert outs(run(table(time_limit(5)), records, release="3.9")) == []


def test_2_1_task_stream_time_counts_both_topics():
    records = [(L, "a", 1, 0), ("right", "x", 1, 10), (L, "b", 1, 1)]
    assert outs(run(table(time_limit(5)), records, release="2.1")) == [("a", [1, None], 0, 2), ("b", [1, None], 1, 2)]
    assert outs(run(table(time_limit(5)), records, release="2.2")) == []


def test_suppress_enables_old_values_upstream_from_2_3():
    # an inner join sends no old values of its own; suppress asks for them from 2.3 (KAFKA-8199),
    # which the byte estimate shows: k's second change carries old [A, B] (10 bytes) from 2.3 on
    spec = table(time_limit(10 ** 9, max_bytes=10 ** 6), join="inner")
    plan = suppression_plan(spec, profile_for("2.3"))
    assert plan.upstream_sends_old_values and not suppression_plan(spec, profile_for("2.2")).upstream_sends_old_values
    records = [("right", "k", "B", 1), (L, "k", "A", 2), (L, "k", "C", 3)]

    def size_after(release, max_bytes):
        result = run(table(time_limit(10 ** 9, max_bytes=max_bytes), join="inner"), records, release=release)
        return result.failure

    # 2.2: '["C","B"]' (9 bytes) with no old value: 8 + 1 + (4 + 0 + 4 + 9) + 24 = 50 bytes
    # 2.3: prior null (k's first change had no old value), old '["A","B"]': 8 + 1 + (4 + 9 + 4 + 9) + 24 = 59
    assert size_after("2.2", 50) is None and size_after("2.2", 49) is not None
    assert size_after("2.3", 59) is None and size_after("2.3", 58) is not None


def test_send_old_values_with_suppress_needs_2_3():
    spec = table(time_limit(1), send_old_values=True)
    with pytest.raises(TopologyError, match="KAFKA-8199"):
        check_topology(spec, profile_for("2.2"))
    check_topology(spec, profile_for("2.3"))


def test_suppress_after_an_fk_join_needs_2_4_1():
    spec = ForeignKeyJoinSpec(join="inner", foreign_key=KeyExtractorSpec(field="fk"), suppress=time_limit(1))
    with pytest.raises(TopologyError, match="KAFKA-9500"):
        check_topology(spec, profile_for("2.4"))
    check_topology(spec, profile_for("2.4.1"))


def test_suppress_needs_2_1_and_window_close_needs_a_window():
    with pytest.raises(TopologyError, match="KIP-328"):
        check_topology(table(time_limit(1)), profile_for("2.0"))
    with pytest.raises(TopologyError, match="windowed"):
        check_topology(table(SuppressSpec(until="window_close")), profile_for("3.9"))
    with pytest.raises(TopologyError, match="strict buffer"):
        check_topology(windowed(SuppressSpec(until="window_close", buffer=SuppressBufferSpec(
            max_records=1, when_full="emit_early"))), profile_for("3.9"))


def test_kafka_validates_no_suppress_number():
    for spec in (table(time_limit(-1)), table(time_limit(1, max_records=-1)), table(time_limit(1, max_bytes=-5))):
        check_topology(spec, profile_for("3.9"))


@pytest.mark.parametrize("rule, last_without, first_with", [
    ("suppress_operator", "2.0", "2.1"),
    ("suppress_observed_stream_time", "2.1", "2.2"),
    ("suppress_session_close_includes_gap", "2.2", "2.2.1"),
    ("suppress_enables_old_values", "2.2", "2.3"),
    ("suppress_buffer_compact_values", "2.3", "2.4"),
])
def test_suppress_rules_arrive_in_their_release(rule, last_without, first_with):
    assert getattr(profile_for(last_without), rule) is False
    assert getattr(profile_for(first_with), rule) is True
    assert getattr(profile_for("4.3"), rule) is True


def test_session_results_wait_gap_plus_grace_from_2_2_1():
    # gap 5, grace 1: 2.2.0 waits the grace alone after a session's end, 2.2.1 (KAFKA-8289) gap + grace
    spec = session(5, 1)
    records = [("input", "k", "v", 0), ("input", "j", "v", 2), ("input", "z", "v", 7)]
    # 2.2.0: [k 0,0] final at stream time 2 - 1 >= 0, [j 2,2] at 7 - 1 >= 2
    assert outs(run(spec, records, release="2.2")) == [(w("k", 0, 0), 1, 0, 1), (w("j", 2, 2), 1, 2, 2)]
    # 2.2.1+: only [k 0,0], at stream time 7 - 6 >= 0
    assert outs(run(spec, records, release="2.2.1")) == [(w("k", 0, 0), 1, 0, 2)]
    assert outs(run(spec, records, release="3.9")) == [(w("k", 0, 0), 1, 0, 2)]


def test_window_close_drops_the_tombstones_of_merged_sessions():
    # k@0 then k@3 merge [0,0] into [0,3]: the tombstone for [0,0] is buffered at 0 and dropped
    spec = session(5, 0)
    records = [("input", "k", "v", 0), ("input", "k", "v", 3), ("input", "z", "v", 9)]
    assert outs(run(spec, records)) == [(w("k", 0, 3), 2, 3, 2)]
    limit = run(session(5, 0, suppress=time_limit(0)), records)
    assert (w("k", 0, 0), None, 0, 1) in outs(limit)


# --- every table-result operator -------------------------------------------------------------------------

def test_suppress_after_an_fk_join_holds_results_until_the_time_limit():
    spec = ForeignKeyJoinSpec(join="inner", foreign_key=KeyExtractorSpec(field="fk"), joiner="pair",
                              send_old_values=True, suppress=time_limit(5))
    records = [(L, "k", {"fk": "x"}, 1), ("right", "x", "B", 2), ("right", "x", "C", 3), (L, "k2", {"fk": "x"}, 9)]
    result = run(spec, records)
    # k's result entered at 2 (right x=B) and left when k2's result (at 9) moved stream time to 9
    assert [(o.key, o.value, o.ts, o.input_index, o.old_value) for o in result.outputs] == \
        [("k", [{"fk": "x"}, "C"], 3, 3, [{"fk": "x"}, "B"])]


def test_window_close_after_a_windowed_table_join_waits_for_the_window_end():
    from kssim.reference.model.topology import WindowedTableJoinSpec

    spec = WindowedTableJoinSpec(join="inner", window=TimeWindowSpec(size_ms=10, advance_ms=10, grace_ms=0),
                                 joiner="pair", suppress=SuppressSpec(until="window_close"))
    records = [(L, "k", "A", 1), ("right", "k", "B", 2), (L, "k", "C", 5), ("right", "j", "B", 12),
               (L, "j", "X", 21), ("right", "j", "Y", 22)]
    # only join results reach suppress: j's first result (at 22) is the first past k's window [0, 10)
    assert outs(run(spec, records)) == [(w("k", 0, 10), [2, 1], 5, 5)]
