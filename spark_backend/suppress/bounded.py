"""Stage 2 (sequential): the suppress processor of each task in one pass, for bounded buffers.

A bounded buffer evicts early (``emitEarlyWhenFull``) or fails (``shutDownWhenFull``) when it holds
more than ``max_records`` keys or more than ``max_bytes`` bytes (strictly): whether change ``r``
overflows depends on every key buffered then and their sizes, so the buffer is replayed change by
change per (scenario, task): one ``mapInArrow`` over the changes sorted by ``(sid, task, r)``. The
same pass serves a negative wait, whose expiry (stream time - wait, a Java ``long``) may wrap.

For each change (key, new, old, ts), with the stream time ``st`` of ``changes.with_stream_time``:

1. put: a key not buffered enters at its buffer time (the ts, or the window end) and its key
   bytes, with its prior value (the change's old value, 2.3+ [``suppress_enables_old_values``]);
   a buffered key keeps its place and prior value, its record is replaced;
2. evict while the smallest buffer time ``<= st - wait`` (wrapped as a Java ``long``);
3. over capacity: ``emit_early`` evicts first entries until it is not; ``shut_down`` is a
   ``suppress_buffer_full`` failure at this change (what it evicted before stays emitted) and the
   task's pass stops there (Kafka Streams dies).

An entry's size is the shared model's :func:`reference.model.suppression.buffered_record_size`
(per release: [``suppress_buffer_compact_values``] from 2.4) of the key bytes, the prior, old and
new value bytes (the value serde's bytes of the *result* value: the joiner is applied here, or
the aggregate as it is) and the topic of the record being processed (``settings.record_topics``).
The serde is the scenario's: format 1's per-type serdes, or a topology graph's one JSON serde
(``sup_json_serde``), which writes the bytes the buffer measures and orders keys by.
Buffer order and key identity are those of ``time_eviction``: (buffer time, key bytes, JSON type),
the key text. Evicted entries are forwarded as there (``f1 = q``, ``f3`` = eviction count).
"""
from __future__ import annotations

import json

from kssim.reference.model.codes import FailureCode
from kssim.reference.model.keys import set_json_key_serde
from kssim.reference.model.suppression import (JAVA_LONG_MAX, buffer_key_bytes, buffer_time, buffered_record_size,
                                         java_long, value_bytes)

from kssim.spark_backend.runtime.outputs import FAILURE, OLD_JOINED, OLD_NONE, OUTPUT, JoinedValues
from kssim.spark_backend.windows.replay_rows import arrow_batch

#: what the pass reads of each change
IN_COLUMNS = ("sid", "task", "r", "q", "idx", "g1", "g2", "g3", "g4", "key", "ts", "st", "side", "n_null", "n_l", "n_r",
              "o_kind", "o_l", "o_r", "sup_report_old")
#: what it writes: events (``outputs.EVENT_DDL``)
OUT_DDL = ("etype INT, sid INT, task INT, idx BIGINT, g1 BIGINT, g2 BIGINT, g3 BIGINT, g4 BIGINT, "
           "f1 BIGINT, f2 BINARY, f3 BIGINT, key STRING, ts BIGINT, n_null BOOLEAN, n_l STRING, n_r STRING, "
           "o_kind INT, o_l STRING, o_r STRING, text STRING")


def _load(text):
    return None if text is None else json.loads(text)


class ResultValues:
    """The result value of a change's joiner arguments (what the value serde serializes)."""

    def __init__(self, joiner, separator):
        self.joiner, self.separator = joiner, separator
        self.named = JoinedValues()

    def of(self, is_null, left, right):
        if is_null:
            return None
        if callable(self.joiner):  # a Python API joiner
            return self.joiner(_load(left), _load(right))
        return self.named.value(self.joiner, self.separator, False, left, right)


class TaskBuffer:
    """One task's suppress buffer (``InMemoryTimeOrderedKeyValueChangeBuffer``): entries by key
    text, ordered by (buffer time, key bytes, JSON type) in a ``SortedDict``. N = buffered keys."""

    def __init__(self, scenario):
        from sortedcontainers import SortedDict

        self.scenario = scenario
        self.plan = scenario.plan
        self.values = ResultValues(scenario.joiner, scenario.separator)
        self.measures = self.plan.max_bytes < JAVA_LONG_MAX  # sizes matter only to a byte bound
        self.places = {}  # key text -> place
        self.entries = SortedDict()  # place -> entry
        self.size = 0
        self.failed = False

    def put(self, change: dict) -> None:
        """Buffer a change, non-resetting (see the module docstring). Cost: O(log N) for a new
        key, O(1) for a buffered one (plus the joiner and serializations when sizes matter)."""
        plan = self.plan
        key_text = change["key"]
        place = self.places.get(key_text)
        old = self.values.of(False, change["o_l"], change["o_r"]) if change["o_kind"] == OLD_JOINED else None
        old_bytes = value_bytes(old) if self.measures else None
        if place is None:
            key = json.loads(key_text)
            place = (buffer_time(plan, key, change["ts"]), buffer_key_bytes(key, plan.key_kind), type(key).__name__)
            prior = old_bytes if plan.prior_value else None
        else:
            prior = self.entries[place]["prior"]
            self.size -= self.entries[place]["size"]
        size = 0
        if self.measures:
            new = self.values.of(change["n_null"], change["n_l"], change["n_r"])
            topic = self.scenario.topics[change["side"] or 0]
            size = buffered_record_size(plan, place[1], prior, old_bytes, value_bytes(new), topic)
        self.places[key_text] = place
        self.entries[place] = dict(change, prior=prior, size=size)
        self.size += size

    def min_time(self) -> int:
        """The smallest buffer time (``Long.MAX_VALUE`` when empty). Cost: O(1)."""
        return self.entries.peekitem(0)[0][0] if self.entries else JAVA_LONG_MAX

    def over_capacity(self) -> bool:
        """Cost: O(1)."""
        return len(self.entries) > self.plan.max_records or self.size > self.plan.max_bytes

    def evict_first(self) -> dict:
        """Remove and return the first entry in buffer order. Cost: O(log N)."""
        _, entry = self.entries.popitem(0)
        del self.places[entry["key"]]
        self.size -= entry["size"]
        return entry


def _event(etype, at, f3, key=None, ts=None, entry=None, text=None):
    """An event row (``OUT_DDL``) attributed to the change ``at`` is processed."""
    values = (None, None, None, OLD_NONE, None, None)
    if entry is not None:
        report = at["sup_report_old"]
        values = (entry["n_null"], entry["n_l"], entry["n_r"], entry["o_kind"] if report else OLD_NONE,
                  entry["o_l"] if report else None, entry["o_r"] if report else None)
    return (etype, at["sid"], at["task"], at["idx"], at["g1"], at["g2"], at["g3"], at["g4"], at["q"], b"", f3,
            key, ts) + values + (text,)


def _evictions(buffer: TaskBuffer, change: dict):
    """The events of one change (see the module docstring, steps 1-3)."""
    plan = buffer.plan
    buffer.put(change)
    out = []
    evicted = 0

    def forward(entry):
        nonlocal evicted
        evicted += 1
        if entry["n_null"] and plan.safe_to_drop_tombstones:
            return  # no final result was ever forwarded for that window: no tombstone needed
        out.append(_event(OUTPUT, change, evicted, entry["key"], entry["ts"], entry))

    expiry = java_long(change["st"] - plan.duration_ms)
    while buffer.entries and buffer.min_time() <= expiry:
        forward(buffer.evict_first())
    if buffer.over_capacity():
        if plan.when_full == "emit_early":
            while buffer.entries and buffer.over_capacity():
                forward(buffer.evict_first())
        else:
            buffer.failed = True
            out.append(_event(FAILURE, change, evicted + 1, text=FailureCode.SUPPRESS_BUFFER_FULL.code))
    return out


def _serialized_as_scenario(buffer: TaskBuffer, change: dict):
    """:func:`_evictions` with the scenario's serde writing key and value bytes (a graph's: the
    JSON serde); the worker may run format-1 scenarios next, so the serde is restored."""
    previous = set_json_key_serde(buffer.scenario.json_serde)
    try:
        return _evictions(buffer, change)
    finally:
        set_json_key_serde(previous)


def sequential_pass(scenarios):
    """The ``mapInArrow`` function; ``scenarios``: ``settings.SequentialScenario`` of the batch."""
    by_sid = {s.sid: s for s in scenarios}

    def run(batches):
        task, buffer = None, None
        for batch in batches:
            cols = {name: batch.column(name).to_pylist() for name in IN_COLUMNS}
            rows = []
            for i in range(batch.num_rows):
                change = {name: cols[name][i] for name in IN_COLUMNS}
                if (change["sid"], change["task"]) != task:
                    task = (change["sid"], change["task"])
                    buffer = TaskBuffer(by_sid[change["sid"]])
                if not buffer.failed:
                    rows.extend(_serialized_as_scenario(buffer, change))
            yield arrow_batch(rows, OUT_DDL)

    return run


def sequential_events(changes, scenarios):
    """Changes (ranked, with ``st`` and ``side``) of the sequential scenarios -> their events."""
    clustered = changes.select(*IN_COLUMNS).repartition("sid", "task").sortWithinPartitions("sid", "task", "r")
    return clustered.mapInArrow(sequential_pass(scenarios), OUT_DDL)
