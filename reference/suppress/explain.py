"""Explanations of what suppress emits, and of the run it stops: each states the rule with its numbers.

Rules (``Why.rule``): ``suppress_window_closed`` (untilWindowCloses evicts a final result),
``suppress_time_limit`` (untilTimeLimit evicts a key), ``suppress_emit_early`` (a full
``emitEarlyWhenFull`` buffer evicts its oldest key), ``suppress_buffer_full`` (a full
``shutDownWhenFull`` buffer: Kafka would shut down). An emitted result keeps the explanation of the
operator's latest update (its text after "latest update:", its stored records in ``joined``).
"""
from __future__ import annotations

from kssim.reference.model.profiles import legacy_window_grace
from kssim.reference.model.render import show
from kssim.reference.runtime.explain import Why

_REF = "KTableSuppressProcessorSupplier, InMemoryTimeOrderedKeyValueChangeBuffer"


def delay_note(spec, plan) -> str:
    """What the suppress duration is made of, naming the release rule where one decides it."""
    if plan.until == "time_limit":
        return f"time limit {plan.duration_ms}"
    if spec.operator == "session_aggregate":
        grace = legacy_window_grace(spec.gap_ms) if spec.grace_ms is None else spec.grace_ms
        if plan.duration_ms == grace and spec.gap_ms != 0:
            return (f"close delay {plan.duration_ms} (the session grace only, before "
                    "suppress_session_close_includes_gap)")
        return f"close delay {plan.duration_ms} (gap {spec.gap_ms} + grace {grace}, suppress_session_close_includes_gap)"
    return f"close delay {plan.duration_ms} (the window grace)"


def _stream_time(plan, stream_time) -> str:
    if plan.observed_stream_time:
        return f"stream time {stream_time}"
    return f"the task's stream time {stream_time} (2.1, before suppress_observed_stream_time)"


def _size_rule(plan) -> str:
    if plan.compact_values:
        return "8 + key + prior, old (if unlike the prior) and new value bytes + record context; suppress_buffer_compact_values"
    if plan.prior_value:
        return ("8 + key + prior value + (4 + old + 4 + new) + record context; suppress_enables_old_values, before "
                "suppress_buffer_compact_values")
    return "8 + key + (4 + old + 4 + new) + record context; before suppress_enables_old_values"


def _history(entry) -> str:
    first = f"first buffered by input {entry.first_input_index}"
    if entry.input_index != entry.first_input_index:
        first += f", latest update by input {entry.input_index}"
    text = f"{first}, forwarded at that update's ts {entry.ts}"
    if entry.why is not None:
        text += f"; latest update: {entry.why.text}"
    return text


def _joined(entry):
    return entry.why.joined if entry.why is not None else ()


def _result(entry) -> str:
    return f"{show(entry.key)}:{show(entry.new)}"


def expired(processor, entry, place, stream_time) -> Why:
    """A key evicted because its buffer time reached stream time minus the suppress duration."""
    plan = processor.plan
    horizon = stream_time - plan.duration_ms
    if plan.time_definition == "window_end":
        text = (f"suppress untilWindowCloses: window end {place.time} <= {_stream_time(plan, stream_time)} - "
                f"{processor.delay_note} = {horizon}: final result {_result(entry)} emitted ({_history(entry)})")
        return Why("suppress_window_closed", text, _joined(entry), ref=f"{_REF}, GraphGraceSearchUtil")
    text = (f"suppress untilTimeLimit({plan.duration_ms} ms): buffer time {place.time} <= "
            f"{_stream_time(plan, stream_time)} - {plan.duration_ms} = {horizon}: {_result(entry)} emitted "
            f"({_history(entry)})")
    return Why("suppress_time_limit", text, _joined(entry), ref=_REF)


def emitted_early(processor, entry, place, stream_time) -> Why:
    """A key evicted early because the (emitEarlyWhenFull) buffer was over one of its bounds."""
    plan, buffer = processor.plan, processor.buffer
    # the numbers the buffer had before this eviction
    records, size = buffer.num_records + 1, buffer.buffer_size + entry.size
    text = (f"suppress buffer over capacity ({records}/{plan.max_records} records, {size}/{plan.max_bytes} bytes; "
            f"a record's size: {_size_rule(plan)}): emitEarlyWhenFull emits the oldest entry (buffer time "
            f"{place.time}) early: {_result(entry)} ({_history(entry)})")
    return Why("suppress_emit_early", text, _joined(entry), ref=f"{_REF}, EagerBufferConfigImpl")


def buffer_full(plan, buffer, key, ts) -> Why:
    """The (shutDownWhenFull) buffer is over a bound after buffering ``key``@``ts``."""
    text = (f"suppress buffer over capacity after buffering {show(key)}@{ts}: {buffer.num_records}/{plan.max_records} "
            f"records and {buffer.buffer_size}/{plan.max_bytes} bytes (a record's size: {_size_rule(plan)}); "
            f"the buffer is shutDownWhenFull: Kafka would shut down here "
            f"(StreamsException '... buffer exceeded its max capacity. Currently [{buffer.num_records}/"
            f"{plan.max_records}] records and [{buffer.buffer_size}/{plan.max_bytes}] bytes.')")
    return Why("suppress_buffer_full", text, ref=f"{_REF}, StrictBufferConfigImpl")
