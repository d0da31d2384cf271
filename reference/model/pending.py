"""What a run still holds in state at its end (``kssim run --pending``): the answer to "why didn't
it come out?" when nothing was dropped.

Stateful operators hold records or windows until a task's (or a processor's) stream time passes a
release point: an unmatched stream-stream join record waits in the outer-join store, an
emit-on-window-close window waits for its close, suppress buffers results until the window closes
or the time limit passes, a stream-table join with a grace period buffers stream records. Stream
time moves only with records, so at the end of a run (or of a quiet input) these items stay
held, however long one waits.

The protocol: a task processor (or a graph node's processor) may expose ``pending(task)``,
returning a tuple of :class:`Pending`; the runtime asks every task once, at the end of a run and
only when asked (``run_records(..., pending=True)``), so the hot path never pays for it. Each
engine builds these records; this module only describes them, so the model imports no engine.
"""
from __future__ import annotations

import enum
from typing import Optional

import attrs

from kssim.reference.model.render import show


class PendingKind(enum.Enum):
    """What kind of thing is held, with the one-line description users read."""

    #: an unmatched record of a left/outer stream-stream join with the spurious-result fix (3.1+,
    #: KAFKA-10847): emitted padded with null once the join's stream time passes its window + grace
    OUTER_JOIN_RECORD = ("outer_join_record", "unmatched join record held in the outer-join store")
    #: an emit-on-window-close window (KIP-825) whose close time has not come: its final result is
    #: emitted when the aggregation's stream time reaches its end + grace
    OPEN_WINDOW = ("open_window", "open window of an emit-on-window-close aggregation")
    #: an emit-on-window-close window the store already hides and no close check fetched
    #: (window_fetch_hides_expired, KAFKA-12960): its final result will never be emitted
    LOST_WINDOW = ("lost_window", "lost window: expired from its store before its close was checked, never emitted")
    #: a result in a suppress buffer (KIP-328): untilWindowCloses or untilTimeLimit
    SUPPRESSED = ("suppressed", "result held in the suppress buffer")
    #: a stream record in a stream-table join's grace buffer (KIP-923, 3.6+)
    GRACE_BUFFERED = ("grace_buffered", "stream record held in the stream-table join's grace buffer")

    def __init__(self, code: str, text: str):
        self.code = code
        self.text = text

    def __str__(self) -> str:
        return self.code


@attrs.frozen(slots=True)
class Pending:
    """One held item at the end of a run.

    ``what``: the item as users read it (``left k1:A@1`` or ``window [0,10) of k``); ``key``,
    ``value``, ``ts``: the held record's (a window's: its key, latest aggregate and max record ts);
    ``window``: ``(key, start, end)`` for a window, else (); ``input_index``: the input that put it
    there (the latest update for a window or suppressed result; -1 when unknown);
    ``release_at``: the smallest stream time that releases it (None: never, a lost window);
    ``release_rule``: that time's formula with its numbers; ``stream_time``: the clock that
    decides now; ``clock``: whose clock that is (Kafka's rule: the task's, the join's, the
    suppress processor's, the grace buffer's); ``node``: the graph node (``graph[3] join``) or
    None for a single operator."""

    kind: PendingKind
    task: int
    what: str
    key: object
    value: object
    ts: int
    release_at: Optional[int]
    release_rule: str
    stream_time: int
    clock: str
    window: tuple = ()
    input_index: int = -1
    node: Optional[str] = None

    def describe(self) -> str:
        """The ``--pending`` line (without the task, which the listing groups by)."""
        where = f"{self.node}: " if self.node is not None else ""
        source = f" (input {self.input_index})" if self.input_index >= 0 else ""
        if self.release_at is None:
            release = f"never released ({self.release_rule})"
        else:
            release = (f"released when {self.clock} stream time reaches {self.release_at} ({self.release_rule}); "
                       f"it is {self.stream_time} now")
        return f"{where}{self.kind.text}: {self.what}{source}: {release}"

    def as_json(self) -> dict:
        """The ``--format jsonl`` object of this item."""
        obj = {"pending": self.kind.code, "task": self.task, "what": self.what, "key": self.key,
               "value": self.value, "ts": self.ts, "release_at": self.release_at,
               "release_rule": self.release_rule, "stream_time": self.stream_time, "clock": self.clock,
               "input": self.input_index}
        if self.window:
            key, start, end = self.window
            obj["window"] = {"key": key, "start": start, "end": end}
        if self.node is not None:
            obj["node"] = self.node
        return obj


def record_text(side: str, key, value, ts: int) -> str:
    """A held record as ``--pending`` names it: ``left k1:A@1``."""
    prefix = f"{side} " if side else ""
    return f"{prefix}{show(key)}:{show(value)}@{ts}"


def window_text(key, start: int, end: int, end_inclusive: bool = False) -> str:
    """A window as ``--pending`` and ``--drops`` name it: ``window [0,10) of k`` (time windows:
    end exclusive; session and sliding windows: ``[s,e]``)."""
    return f"window [{start},{end}{']' if end_inclusive else ')'} of {show(key)}"


def with_node(items, node: Optional[str]) -> tuple:
    """``items`` attributed to the graph node ``node`` (a graph node wraps a format-1 operator)."""
    return tuple(attrs.evolve(p, node=node) for p in items)


def pending_of(processor, task: int) -> tuple:
    """What ``processor`` holds: its ``pending(task)`` if it has one, else () (a stateless or
    always-emitting operator holds nothing that waits for stream time)."""
    method = getattr(processor, "pending", None)
    return () if method is None else tuple(method(task))


#: what ``--pending`` prints when a run holds nothing
NOTHING_HELD = "nothing held: every record and window was emitted or dropped (no state waits for stream time)"


def pending_lines(items) -> list:
    """``--pending``'s text: a heading, then one line per held item, task by task (the order the
    runtime gathered them in), or :data:`NOTHING_HELD`."""
    if not items:
        return [f"held in state at the end: {NOTHING_HELD}"]
    lines = [f"held in state at the end ({len(items)}): released only when a newer record moves the stream "
             "time named (stream time never moves with the wall clock)"]
    lines.extend(f"  task {p.task}: {p.describe()}" for p in items)
    return lines
