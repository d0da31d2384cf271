"""Compare an engine's output with a scenario's ``expected`` records (every ``compare`` mode).

Shared by every engine: it only reads records, it models no Kafka rule. Keys are compared as
Kafka compares them, by serialized bytes (:func:`reference.model.keys.key_text`: ``1``, ``1.0``,
``true`` and ``"1"`` are four keys, and so are objects whose fields come in another order);
values are compared as JSON (``1`` is not ``true`` nor ``1.0``; object fields in any order). A mismatch names the
output partition, the position, the expected and the actual record with their neighbours, and the
input whose processing emitted (or should have emitted) the record. :func:`judge` turns one
engine's result for a scenario into a :class:`Judgement` (pass, fail or unsupported), the verdict
of ``kssim check``.
"""
from __future__ import annotations

import bisect
import enum
import json
from typing import Optional

import attrs

from kssim.reference.model.errors import UnsupportedOperator
from kssim.reference.model.keys import key_text
from kssim.reference.model.render import describe_input, show
from kssim.reference.model.records import NO_OLD_VALUE


def canonical(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@attrs.frozen
class Mismatch:
    """The first difference between expected and actual output."""

    message: str
    partition: int = 0
    position: int = -1
    input_index: Optional[int] = None
    context: tuple = ()

    def describe(self) -> str:
        lines = [self.message]
        lines.extend("    " + c for c in self.context)
        return "\n".join(lines)


def fmt_record(rec, with_input=True) -> str:
    text = f"key={show(rec.key)} value={show(rec.value)} ts={rec.ts}"
    old = getattr(rec, "old_value", NO_OLD_VALUE)
    if old is not NO_OLD_VALUE:
        text += f" old_value={show(old)}"
    if with_input:
        if hasattr(rec, "input_index"):
            text += f" (emitted at input {rec.input_index})"
        elif getattr(rec, "after_input", None) is not None:
            text += f" (expected by input {rec.after_input})"
    return text


def compare_outputs(scenario, outputs) -> Optional[Mismatch]:
    """None when ``outputs`` satisfy ``scenario.expected`` (or there is none)."""
    if scenario.expected is None:
        return None
    checkpoints = scenario.effective_checkpoints()
    from kssim.reference.model.topology import output_topics

    sinks = output_topics(scenario.topology)
    actual = [o for o in outputs if o.topic in sinks]
    if checkpoints:
        last = checkpoints[-1]
        actual = [o for o in actual if o.input_index <= last]
    expected = list(scenario.expected)
    mode = scenario.compare
    if mode == "distinct_set":
        return _compare_sets(expected, actual)
    if mode == "latest_value_per_key":
        return _compare_latest(expected, actual, checkpoints)
    if mode == "sorted_by_key_and_window_start":
        expected = sorted(expected, key=_window_sort_key)
        actual = sorted(actual, key=_window_sort_key)
    return compare_records(expected, actual, checkpoints)


def _window_sort_key(rec):
    key = rec.key
    if isinstance(key, dict) and "key" in key:
        return (canonical(key["key"]), key.get("start", 0))
    return (canonical(key), 0)


def _by_partition(records):
    """Records per (topic, partition): the order that exists (records of different topics or
    partitions are not ordered against each other)."""
    parts = {}
    for r in records:
        parts.setdefault((r.topic, r.partition), []).append(r)
    return parts


def _place(topic_partition) -> str:
    topic, partition = topic_partition
    return f"partition {partition}" if topic == "output" else f"topic {topic} partition {partition}"


def _same(exp, act) -> bool:
    if key_text(exp.key) != key_text(act.key) or canonical(exp.value) != canonical(act.value) or exp.ts != act.ts:
        return False
    if exp.old_value is not NO_OLD_VALUE:
        if act.old_value is NO_OLD_VALUE or canonical(exp.old_value) != canonical(act.old_value):
            return False
    return True


def _window_of(after_input, checkpoints):
    """The inputs (lo, hi] during which a record read at checkpoint ``after_input`` may be emitted."""
    if not checkpoints:
        return (-1, after_input)
    i = bisect.bisect_left(checkpoints, after_input)
    lo = checkpoints[i - 1] if i > 0 else -1
    return (lo, after_input)


def _neighbours(records, i, radius=2):
    lo, hi = max(0, i - radius), min(len(records), i + radius + 1)
    return [f"{'>' if j == i else ' '} #{j}: {fmt_record(records[j])}" for j in range(lo, hi)]


def compare_records(expected, actual, checkpoints) -> Optional[Mismatch]:
    """The first difference (record for record, per partition) between ``expected`` and
    ``actual`` output records, or None. ``checkpoints``: the inputs after which the expected
    records were read (an expected record's ``after_input`` bounds when it may be emitted)."""
    exp_parts, act_parts = _by_partition(expected), _by_partition(actual)
    for place in sorted(set(exp_parts) | set(act_parts)):
        exp, act = exp_parts.get(place, []), act_parts.get(place, [])
        partition, where = place[1], _place(place)
        for i in range(max(len(exp), len(act))):
            e = exp[i] if i < len(exp) else None
            a = act[i] if i < len(act) else None
            if e is None:
                return Mismatch(f"{where}, record #{i}: unexpected extra output {fmt_record(a)}",
                                partition, i, a.input_index, tuple(["actual:"] + _neighbours(act, i)))
            if a is None:
                return Mismatch(f"{where}, record #{i}: missing output {fmt_record(e)}",
                                partition, i, e.after_input, tuple(["expected:"] + _neighbours(exp, i)))
            if not _same(e, a):
                ctx = ["expected:"] + _neighbours(exp, i) + ["actual:"] + _neighbours(act, i)
                return Mismatch(f"{where}, record #{i}: expected {fmt_record(e)}, got {fmt_record(a)}",
                                partition, i, a.input_index, tuple(ctx))
            if e.after_input is not None:
                lo, hi = _window_of(e.after_input, checkpoints)
                if not lo < a.input_index <= hi:
                    ctx = ["expected:"] + _neighbours(exp, i) + ["actual:"] + _neighbours(act, i)
                    return Mismatch(
                        f"{where}, record #{i}: {fmt_record(a, False)} was emitted while processing input "
                        f"{a.input_index}, but must be emitted after input {lo} and no later than input {hi}",
                        partition, i, a.input_index, tuple(ctx))
    return None


def _compare_sets(expected, actual) -> Optional[Mismatch]:
    def as_set(records):
        return {(key_text(r.key), canonical(r.value), r.ts) for r in records}

    exp, act = as_set(expected), as_set(actual)
    if exp == act:
        return None
    missing, extra = sorted(exp - act), sorted(act - exp)
    ctx = [f"missing: key={k} value={v} ts={t}" for k, v, t in missing[:5]]
    ctx += [f"extra:   key={k} value={v} ts={t}" for k, v, t in extra[:5]]
    return Mismatch(f"distinct output set differs: {len(missing)} missing, {len(extra)} extra", context=tuple(ctx))


def _compare_latest(expected, actual, checkpoints) -> Optional[Mismatch]:
    def groups(records, point_of):
        out = {}
        for r in records:
            out.setdefault((r.partition, point_of(r)), {})[key_text(r.key)] = canonical(r.value)
        return out

    def actual_group(rec):
        if not checkpoints:
            return None
        i = bisect.bisect_left(checkpoints, rec.input_index)
        return checkpoints[i] if i < len(checkpoints) else None

    exp = groups(expected, (lambda r: r.after_input) if checkpoints else (lambda r: None))
    act = groups(actual, actual_group)
    for group in sorted(set(exp) | set(act), key=lambda g: (g[0], -1 if g[1] is None else g[1])):
        e, a = exp.get(group, {}), act.get(group, {})
        if e != a:
            where = f"partition {group[0]}" + (f", read after input {group[1]}" if group[1] is not None else "")
            ctx = [f"key {k}: expected {e.get(k, '(absent)')}, got {a.get(k, '(absent)')}"
                   for k in sorted(set(e) | set(a)) if e.get(k) != a.get(k)]
            return Mismatch(f"{where}: latest value per key differs", group[0], -1, group[1], tuple(ctx[:8]))
    return None


def check_failure(scenario, failure) -> Optional[str]:
    """Compare the engine's failure (a KafkaWouldFail or None) with ``expected_failure``."""
    want = scenario.expected_failure
    if want is None:
        return None if failure is None else str(failure)
    if failure is None:
        return f"expected Kafka Streams to fail at input {want.input}, but the run completed"
    if failure.input_index != want.input:
        return f"expected Kafka Streams to fail at input {want.input}, got: {failure}"
    if want.message_contains and want.message_contains not in failure.message:
        return f"failure message {failure.message!r} does not contain {want.message_contains!r}"
    return None


class Status(enum.Enum):
    """The verdict on one scenario's run."""

    PASS = "pass"
    FAIL = "fail"
    #: the engine does not implement the scenario's operator (``kssim check`` skips it)
    UNSUPPORTED = "unsupported"


@attrs.frozen
class Judgement:
    """:func:`judge`'s verdict: ``status`` and, unless it passed, ``detail`` (what differs, on
    one or more lines)."""

    status: Status
    detail: str = ""


def judge(scenario, result) -> Judgement:
    """The verdict on ``result`` (a RunResult, or the exception that stopped the run, e.g.
    UnsupportedOperator) against the scenario's ``expected`` and ``expected_failure``."""
    if isinstance(result, UnsupportedOperator):
        return Judgement(Status.UNSUPPORTED, str(result))
    if isinstance(result, Exception):
        return Judgement(Status.FAIL, f"{type(result).__name__}: {result}")
    failure_problem = check_failure(scenario, result.failure)
    if failure_problem and scenario.expected_failure is not None:
        return Judgement(Status.FAIL, failure_problem)
    mismatch = compare_outputs(scenario, result.outputs)
    if mismatch is not None:
        detail = mismatch.describe()
        if mismatch.input_index is not None and 0 <= mismatch.input_index < len(scenario.inputs):
            detail += f"\n    at {describe_input(scenario, mismatch.input_index)}"
        if result.failure is not None:
            detail += f"\n    {result.failure}"
        return Judgement(Status.FAIL, detail)
    if failure_problem:
        return Judgement(Status.FAIL, failure_problem)
    return Judgement(Status.PASS)
