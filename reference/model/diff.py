"""``kssim diff``: compare kssim's predicted output with a captured output topic, streaming.

Shared by every engine: it reads records, it models no Kafka rule. The engine's outputs are
pushed in output order (:meth:`ExactDiff.add_expected`, from the reference's ``on_output`` or
from the Spark backend's output file); the captured output topic is pulled from its files in
file order (:func:`captured_records`, over ``reference.model.captures``: kcat, console, JSONL,
Parquet). Keys compare as Kafka compares them, by serialized bytes
(:func:`reference.model.keys.key_identity`); values as JSON (:func:`reference.model.compare.canonical`:
object fields in any order). Old values are not compared: a sink writes only the new value.

Compare modes (as in the scenario format):

- ``exact`` (:class:`ExactDiff`): per output partition, record by record, in order. Each
  difference gets a :class:`Divergence` class. The alignment is greedy with a bounded lookahead
  of ``lookahead`` records per side and partition: equal heads match at once, and differing
  heads are settled only when both sides show ``lookahead`` records past them (or have ended).
  Settling the heads ``e`` (kssim) and ``c`` (captured) of a partition: when both also occur
  later on the other side,
  the one whose twin lies farther is ``order`` (it moved); when only ``e`` occurs later in the
  capture, ``c`` is ``extra``, and when only ``c`` occurs later in kssim's output, ``e`` is
  ``missing``; with no twin at all, the same key makes a ``value`` (or, same value too,
  ``timestamp``) pair, a key absent from the other side's lookahead makes ``missing``/``extra``,
  and otherwise ``e`` pairs with the first captured record of its key (a reordered, changed
  record). Memory: at most ``buffer`` records are held (default :data:`BUFFER`), whatever the
  sizes of the two streams. Past the bounds the comparison stays correct about counts of records
  but not about their classes: a record whose counterpart lies more than ``lookahead`` records
  away in its partition, or beyond the ``buffer`` (a capture that lists its partitions one after
  another rather than interleaved as they were consumed), is reported ``missing`` on one side
  and ``extra`` on the other rather than ``order``.
- ``latest_value_per_key`` (:class:`LatestDiff`): for outputs captured with record caching on,
  which kssim does not model: only the final value of each key (per partition) is compared; a
  final null (tombstone) and no record at all both mean "no row". Classes ``missing``,
  ``extra``, ``value``, ``timestamp`` (the final value agrees, its timestamp does not). Memory:
  one record per key and side.

The result (:class:`DiffResult`) holds the counts per class, the records matched, the first
divergence (:class:`FirstDivergence`) with neighbours on both sides and the first few
divergences (``listed``); :func:`report_text` and
:func:`report_json` render it. Invariants: kssim's records = matched + missing + value +
timestamp + order; captured records = matched + extra + value + timestamp + order (exact mode).
"""
from __future__ import annotations

import enum
import os
from collections import deque
from typing import Callable, Dict, Iterable, Iterator, List, NamedTuple, Optional, Tuple

import attrs
import orjson

from kssim.reference.model.compare import canonical
from kssim.reference.model.keys import key_identity
from kssim.reference.model.render import show

#: records each side shows past a record before it is settled (per partition)
LOOKAHEAD = 1000
#: most records held, both sides and every partition together
BUFFER = 200_000
#: neighbours shown on each side of the first divergence
NEIGHBOURS = 2
#: divergences listed (one line each) after the first one's details
LISTED = 10


class Divergence(enum.Enum):
    """How kssim's prediction and the captured output differ at one place."""

    #: Kafka Streams should have produced it (kssim predicts it); the capture lacks it
    MISSING = "missing"
    #: the capture has a record kssim does not predict
    EXTRA = "extra"
    #: same key at the same place, another value
    VALUE = "value"
    #: same key and value, another timestamp
    TIMESTAMP = "timestamp"
    #: the record is there, but elsewhere in its partition
    ORDER = "order"


class CompareMode(enum.Enum):
    """What ``kssim diff --compare`` compares."""

    #: every record, in order, per output partition
    EXACT = "exact"
    #: the final value of each key (outputs captured with record caching on)
    LATEST_VALUE_PER_KEY = "latest_value_per_key"


@attrs.frozen
class CapturedAt:
    """Where a captured record is: its file and ``record N`` (the N-th record of that file, from
    1), and its offset when known."""

    path: str
    where: str
    offset: Optional[int] = None

    def describe(self) -> str:
        offset = f", offset {self.offset}" if self.offset is not None else ""
        return f"{self.path} {self.where}{offset}"


class Rec(NamedTuple):
    """One output record on one side. ``position``: its index in its partition on its side;
    ``source``: kssim's input index (int), or where the captured record is (CapturedAt);
    ``key_id``/``value_id``: what the key and value compare by (``keys.key_identity``,
    :func:`value_identity`)."""

    partition: int
    position: int
    key: object
    value: object
    ts: int
    key_id: object
    value_id: object
    source: object

    @property
    def ident(self):
        return (self.key_id, self.value_id, self.ts)

    def describe(self) -> str:
        return f"key={show(self.key)} value={show(self.value)} ts={self.ts}"


class CapturedRecord(NamedTuple):
    """A record of the captured output topic, as :func:`captured_records` yields it."""

    partition: int
    key: object
    value: object
    ts: int
    source: CapturedAt


def captured_records(captures) -> Iterator[CapturedRecord]:
    """The records of the captured output topic, streamed in file order, from open captures
    (``reference.model.captures.open_captures(..., reading="output")``: they check every record
    and name file, line and field of a bad one). Each is located by its file and its number there."""
    sources = list(captures.sources)
    n = 0
    for rec in captures.records():
        while rec.index >= sources[n].first_index + sources[n].count:
            n += 1
        source = sources[n]
        yield CapturedRecord(rec.partition, rec.key, rec.value, rec.ts,
                             CapturedAt(source.path, f"record {rec.index - source.first_index + 1}"))


# --- the result ----------------------------------------------------------------------------------

@attrs.frozen
class FirstDivergence:
    """The first difference found: its class, partition, the kssim and captured records (None
    on the side that lacks one) and a few neighbours on each side (``(rec, is_the_one)`` in
    position order)."""

    kind: Divergence
    partition: int
    expected: Optional[Rec]
    captured: Optional[Rec]
    expected_context: Tuple[Tuple[Rec, bool], ...] = ()
    captured_context: Tuple[Tuple[Rec, bool], ...] = ()
    #: for an extra record: kssim's record just before the place (else just after), if any
    nearest_expected: Optional[Rec] = None

    @property
    def input_index(self) -> Optional[int]:
        """The input whose processing should have produced the record (kssim's side), or, for
        an extra record, the input behind kssim's nearest record in the partition."""
        if self.expected is not None:
            return self.expected.source
        return self.nearest_expected.source if self.nearest_expected is not None else None


@attrs.frozen
class DiffResult:
    """The comparison of a whole run: ``counts`` per class, ``matched`` records (keys in
    ``latest_value_per_key``), the totals of each side and the first divergence (None: they match)."""

    mode: CompareMode
    counts: Dict[Divergence, int]
    matched: int
    expected_total: int
    captured_total: int
    first: Optional[FirstDivergence]
    #: the first divergences (at most the ``listed`` asked for): ``(class, partition, kssim's
    #: record or None, the captured record or None)``, in the order found
    listed: Tuple[tuple, ...] = ()

    @property
    def diverged(self) -> bool:
        return any(self.counts.values())


def value_identity(value):
    """What values compare by: a string is itself; any other value its canonical JSON (sorted
    object fields) in a tuple, which never equals a string. Equal exactly when
    ``compare.canonical`` is equal (orjson for speed, ``canonical`` for what orjson refuses)."""
    if value.__class__ is str:
        return value
    try:
        return ("json", orjson.dumps(value, option=orjson.OPT_SORT_KEYS))
    except TypeError:  # orjson.JSONEncodeError: e.g. an integer beyond 64 bits
        return ("json", canonical(value).encode("utf-8"))


def expected_rec(partition, position, key, value, ts, input_index) -> Rec:
    return Rec(partition, position, key, value, ts, key_identity(key), value_identity(value), input_index)


def captured_rec(rec: CapturedRecord, position: int) -> Rec:
    return Rec(rec.partition, position, rec.key, rec.value, rec.ts, key_identity(rec.key), value_identity(rec.value),
               rec.source)


# --- exact: streaming alignment ------------------------------------------------------------------

class _Side:
    """One side's unsettled records of one partition, in order, with counts of their identities
    and keys. ``push``, ``take(0)``: O(1); ``take(i)``, ``index_of``: O(i) (divergences only)."""

    __slots__ = ("records", "idents", "keys", "next_position", "recent")

    def __init__(self):
        self.records: deque = deque()
        self.idents: Dict[tuple, int] = {}  # identity -> how many unsettled records have it
        self.keys: Dict[object, int] = {}
        self.next_position = 0
        self.recent: deque = deque(maxlen=NEIGHBOURS)  # the last settled records, for context

    def __len__(self):
        return len(self.records)

    def push(self, rec: Rec) -> None:
        self.records.append(rec)
        idents, keys, ident, key = self.idents, self.keys, rec.ident, rec.key_id
        idents[ident] = idents.get(ident, 0) + 1
        keys[key] = keys.get(key, 0) + 1

    def take(self, i: int) -> Rec:
        if i == 0:
            rec = self.records.popleft()
        else:
            rec = self.records[i]
            del self.records[i]
        for counter, item in ((self.idents, rec.ident), (self.keys, rec.key_id)):
            left = counter[item] - 1
            if left:
                counter[item] = left
            else:
                del counter[item]
        self.recent.append(rec)
        return rec

    def index_of(self, test: Callable[[Rec], bool]) -> int:
        return next(i for i, r in enumerate(self.records) if test(r))

    def around(self, i: int) -> Tuple[Tuple[Rec, bool], ...]:
        """The records near unsettled record ``i``: settled ones before it if it is near the head."""
        before = list(self.recent)[max(0, len(self.recent) - (NEIGHBOURS - i)):] if i < NEIGHBOURS else []
        lo, hi = max(0, i - NEIGHBOURS), min(len(self.records), i + NEIGHBOURS + 1)
        near = [(r, False) for r in before] + [(self.records[j], j == i) for j in range(lo, hi)]
        return tuple(sorted(near, key=lambda item: item[0].position))

    def nearest(self) -> Optional[Rec]:
        """The last settled record, else the first unsettled one, else None."""
        if self.recent:
            return self.recent[-1]
        return self.records[0] if self.records else None

    def after_head(self) -> Tuple[Tuple[Rec, bool], ...]:
        """Context where this side has no record at the divergence: settled ones, then the next."""
        near = [(r, False) for r in self.recent] + [(r, False) for r in list(self.records)[:NEIGHBOURS]]
        return tuple(sorted(near, key=lambda item: item[0].position))


class ExactDiff:
    """The ``exact`` comparison (see the module docstring): kssim's records pushed with
    :meth:`add_expected`, the capture pulled from ``captured`` as lookahead requires;
    :meth:`finish` settles the rest and returns the :class:`DiffResult`. Cost: O(1) per record
    that matches in place, O(lookahead) per divergence; memory at most ``buffer`` records."""

    def __init__(self, captured: Iterable[CapturedRecord], lookahead: int = LOOKAHEAD, buffer: int = BUFFER,
                 listed: int = LISTED):
        if lookahead < 1 or buffer < 2 * (lookahead + 1):
            raise ValueError("lookahead must be at least 1 and buffer at least 2 * (lookahead + 1)")
        self._captured = iter(captured)
        self.lookahead, self.buffer = lookahead, buffer
        self._expected: Dict[int, _Side] = {}
        self._capture: Dict[int, _Side] = {}
        self._expected_done = self._captured_done = False
        self._held = 0
        self.counts = {kind: 0 for kind in Divergence}
        self.matched = self.expected_total = self.captured_total = 0
        self.first: Optional[FirstDivergence] = None
        self.listed: List[tuple] = []
        self._listing = listed

    @property
    def held(self) -> int:
        """Records held now (both sides, every partition); never more than ``buffer``."""
        return self._held

    def _sides(self, partition) -> Tuple[_Side, _Side]:
        if partition not in self._expected:
            self._expected[partition], self._capture[partition] = _Side(), _Side()
        return self._expected[partition], self._capture[partition]

    def add_expected(self, partition: int, key, value, ts: int, input_index: int) -> None:
        """kssim's next output record (in output order)."""
        mine, theirs = self._sides(partition)
        rec = expected_rec(partition, mine.next_position, key, value, ts, input_index)
        mine.next_position += 1
        self.expected_total += 1
        if not mine.records:
            # the usual case: the capture's next record in the partition is this one (matched
            # without being buffered when it is also the next record read)
            while not theirs.records and not self._captured_done and self._held < self.buffer:
                captured = self._read()
                if captured is None:
                    break
                if captured.partition == partition and captured.ident == rec.ident:
                    mine.recent.append(rec)
                    theirs.recent.append(captured)
                    self.matched += 1
                    return
                self._hold(captured)
            if theirs.records and theirs.records[0].ident == rec.ident:
                theirs.take(0)
                mine.recent.append(rec)
                self.matched += 1
                self._held -= 1
                return
        mine.push(rec)
        self._held += 1
        # a difference at the heads needs the capture's lookahead to be classified
        while len(theirs) <= self.lookahead and not self._captured_done and self._held < self.buffer:
            self._pull()
        self._settle(partition)
        self._keep_within_buffer()

    def _read(self) -> Optional[Rec]:
        """The next captured record (None at the end), numbered in its partition."""
        rec = next(self._captured, None)
        if rec is None:
            self._captured_done = True
            return None
        theirs = self._sides(rec.partition)[1]
        captured = captured_rec(rec, theirs.next_position)
        theirs.next_position += 1
        self.captured_total += 1
        return captured

    def _hold(self, captured: Rec) -> None:
        """Buffer a captured record in its partition (settling it once it has its lookahead)."""
        theirs = self._capture[captured.partition]
        theirs.push(captured)
        self._held += 1
        if len(theirs) > self.lookahead:
            self._settle(captured.partition)

    def _pull(self) -> None:
        """Read the next captured record into its partition's buffer."""
        captured = self._read()
        if captured is not None:
            self._hold(captured)

    def _ready(self, side: _Side, done: bool) -> bool:
        return done or len(side) > self.lookahead

    def _settle(self, partition, force: bool = False) -> None:
        exp, cap = self._expected[partition], self._capture[partition]
        while exp or cap:
            if exp and cap and exp.records[0].ident == cap.records[0].ident:
                self._match(exp, cap)  # equal heads match whatever follows them
            elif force or (self._ready(exp, self._expected_done) and self._ready(cap, self._captured_done)):
                self._decide(partition, exp, cap)
            else:
                return

    def _match(self, exp: _Side, cap: _Side) -> None:
        exp.take(0), cap.take(0)
        self.matched += 1
        self._held -= 2

    def _keep_within_buffer(self) -> None:
        # past the buffer, settle the fullest partition with what it holds (see the module docstring)
        while self._held >= self.buffer:
            fullest = max(self._expected, key=lambda p: len(self._expected[p]) + len(self._capture[p]))
            exp, cap = self._expected[fullest], self._capture[fullest]
            while (exp or cap) and self._held > self.buffer - self.lookahead:
                self._decide(fullest, exp, cap)

    def finish(self) -> DiffResult:
        """kssim's output is complete: read the rest of the capture, settle everything."""
        self._expected_done = True
        for partition in list(self._expected):
            self._settle(partition)
        while not self._captured_done:
            self._pull()
        for partition in sorted(self._expected):
            self._settle(partition, force=True)
        return DiffResult(CompareMode.EXACT, dict(self.counts), self.matched, self.expected_total, self.captured_total,
                          self.first, tuple(self.listed))

    # the greedy step: settle the heads of one partition (rules in the module docstring)
    def _decide(self, partition, exp: _Side, cap: _Side) -> None:
        if not cap:
            return self._diverge(Divergence.MISSING, partition, exp, 0, cap, None)
        if not exp:
            return self._diverge(Divergence.EXTRA, partition, exp, None, cap, 0)
        e, c = exp.records[0], cap.records[0]
        if e.ident == c.ident:
            return self._match(exp, cap)
        e_later, c_later = e.ident in cap.idents, c.ident in exp.idents
        if e_later and c_later:
            i, j = cap.index_of(lambda r: r.ident == e.ident), exp.index_of(lambda r: r.ident == c.ident)
            if i >= j:  # e's twin lies farther: e moved
                return self._diverge(Divergence.ORDER, partition, exp, 0, cap, i)
            return self._diverge(Divergence.ORDER, partition, exp, j, cap, 0)
        if e_later:
            return self._diverge(Divergence.EXTRA, partition, exp, None, cap, 0)
        if c_later:
            return self._diverge(Divergence.MISSING, partition, exp, 0, cap, None)
        if e.key_id == c.key_id:
            return self._diverge(self._changed(e, c), partition, exp, 0, cap, 0)
        if e.key_id not in cap.keys:
            return self._diverge(Divergence.MISSING, partition, exp, 0, cap, None)
        if c.key_id not in exp.keys:
            return self._diverge(Divergence.EXTRA, partition, exp, None, cap, 0)
        i = cap.index_of(lambda r: r.key_id == e.key_id)
        return self._diverge(self._changed(e, cap.records[i]), partition, exp, 0, cap, i)

    @staticmethod
    def _changed(e: Rec, c: Rec) -> Divergence:
        return Divergence.TIMESTAMP if e.value_id == c.value_id else Divergence.VALUE

    def _diverge(self, kind, partition, exp: _Side, i, cap: _Side, j) -> None:
        """Count a divergence between kssim's unsettled record ``i`` and the captured ``j`` (None:
        that side has none) and settle them; the first one is kept with its neighbours."""
        if self.first is None:
            self.first = FirstDivergence(
                kind, partition, exp.records[i] if i is not None else None, cap.records[j] if j is not None else None,
                exp.around(i) if i is not None else exp.after_head(), cap.around(j) if j is not None else cap.after_head(),
                exp.nearest() if i is None else None)
        self.counts[kind] += 1
        if len(self.listed) < self._listing:
            self.listed.append((kind, partition, exp.records[i] if i is not None else None,
                                cap.records[j] if j is not None else None))
        for side, index in ((exp, i), (cap, j)):
            if index is not None:
                side.take(index)
                self._held -= 1


# --- latest value per key ------------------------------------------------------------------------

class LatestDiff:
    """The ``latest_value_per_key`` comparison (see the module docstring): kssim's records pushed
    with :meth:`add_expected`; :meth:`finish` reads the capture and compares the final value of
    each (partition, key). Cost: O(1) per record; memory one record per key and side."""

    def __init__(self, captured: Iterable[CapturedRecord], listed: int = LISTED):
        self._captured = captured
        self._listing = listed
        self._expected: Dict[tuple, Rec] = {}
        self._positions: Dict[int, int] = {}
        self.expected_total = 0

    def add_expected(self, partition: int, key, value, ts: int, input_index: int) -> None:
        position = self._positions.get(partition, 0)
        self._positions[partition] = position + 1
        rec = expected_rec(partition, position, key, value, ts, input_index)
        self._expected[(partition, rec.key_id)] = rec
        self.expected_total += 1

    def finish(self) -> DiffResult:
        captured: Dict[tuple, Rec] = {}
        positions: Dict[int, int] = {}
        total = 0
        for rec in self._captured:
            position = positions.get(rec.partition, 0)
            positions[rec.partition] = position + 1
            c = captured_rec(rec, position)
            captured[(c.partition, c.key_id)] = c
            total += 1
        counts = {kind: 0 for kind in Divergence}
        matched = 0
        found = []
        for where in set(self._expected) | set(captured):
            e, c = self._expected.get(where), captured.get(where)
            kind = _final_difference(e, c)
            if kind is None:
                matched += 1
                continue
            counts[kind] += 1
            found.append((kind, where, e, c))
        # in the order kssim reaches them, per partition (by its last record of the key), then the
        # extra keys of the capture
        found.sort(key=lambda f: (f[2] is None, f[1][0], (f[2] or f[3]).position))
        first = FirstDivergence(found[0][0], found[0][1][0], found[0][2], found[0][3]) if found else None
        listed = tuple((kind, where[0], e, c) for kind, where, e, c in found[:self._listing])
        return DiffResult(CompareMode.LATEST_VALUE_PER_KEY, counts, matched, self.expected_total, total, first,
                          listed)


def _final_difference(e: Optional[Rec], c: Optional[Rec]) -> Optional[Divergence]:
    # a final tombstone and no record at all both mean the key has no row
    e = e if e is not None and e.value is not None else None
    c = c if c is not None and c.value is not None else None
    if e is None and c is None:
        return None
    if c is None:
        return Divergence.MISSING
    if e is None:
        return Divergence.EXTRA
    if e.value_id != c.value_id:
        return Divergence.VALUE
    if e.ts != c.ts:
        return Divergence.TIMESTAMP
    return None


def new_diff(mode: CompareMode, captured: Iterable[CapturedRecord], lookahead: int = LOOKAHEAD, buffer: int = BUFFER,
             listed: int = LISTED):
    """The comparison of ``mode`` over the captured records (``add_expected`` ..., ``finish``),
    keeping the first ``listed`` divergences."""
    if mode is CompareMode.EXACT:
        return ExactDiff(captured, lookahead, buffer, listed)
    return LatestDiff(captured, listed)


# --- the report ----------------------------------------------------------------------------------

#: the note a latest_value_per_key report starts with
CACHING_NOTE = ("compare latest_value_per_key: kssim does not model record caching, so only the final value of "
                "each key is compared (a final null and no record both mean no row)")


def _counts_line(result: DiffResult) -> str:
    unit = "keys" if result.mode is CompareMode.LATEST_VALUE_PER_KEY else "records"
    classes = ", ".join(f"{result.counts[kind]} {kind.value}" for kind in Divergence)
    return (f"counts: {result.matched} {unit} matched, {classes} "
            f"(kssim {result.expected_total} records, capture {result.captured_total})")


def _source(rec: Rec) -> str:
    if isinstance(rec.source, CapturedAt):
        return rec.source.describe()
    return f"emitted while processing input {rec.source}"


def report_text(result: DiffResult, header: str, input_text: Optional[str] = None,
                explanation: Iterable[str] = ()) -> List[str]:
    """The report as lines: ``header``, the first divergence with its neighbours, the input that
    explains it (``input_text``) and the ``explanation`` lines, then the counts."""
    lines = [header]
    if result.mode is CompareMode.LATEST_VALUE_PER_KEY:
        lines.append(CACHING_NOTE)
    first = result.first
    if first is None:
        lines.append("no divergence: the capture is what kssim predicts")
        lines.append(_counts_line(result))
        return lines
    place = []
    if first.expected is not None:
        place.append(f"kssim record #{first.expected.position}")
    if first.captured is not None:
        place.append(f"captured record #{first.captured.position}")
    lines.append(f"first divergence: {first.kind.value} in partition {first.partition}, {', '.join(place)}")
    lines.append("  kssim predicts: " + (f"{first.expected.describe()} ({_source(first.expected)})"
                                         if first.expected is not None else "(nothing here)"))
    lines.append("  captured:       " + (f"{first.captured.describe()} ({_source(first.captured)})"
                                         if first.captured is not None else "(nothing: the capture lacks it)"))
    for name, context in (("kssim", first.expected_context), ("captured", first.captured_context)):
        if context:
            lines.append(f"  {name}, partition {first.partition}:")
            lines.extend(f"    {'>' if mark else ' '} #{rec.position}: {rec.describe()}" for rec, mark in context)
    if input_text:
        lines.append(f"  input that should have produced it: {input_text}")
    lines.extend("  " + line for line in explanation)
    total = sum(result.counts.values())
    if result.listed:
        lines.append(f"divergences ({len(result.listed)} of {total}, in the order found):")
        lines.extend("  " + _listed_line(item) for item in result.listed)
    lines.append(_counts_line(result))
    return lines


def _listed_line(item) -> str:
    kind, partition, e, c = item
    text = f"{kind.value:<9} partition {partition}"
    if e is not None:
        text += f", kssim #{e.position}: {e.describe()} (input {e.source})"
    if c is not None:
        text += f"{';' if e is not None else ','} captured #{c.position}: {c.describe()} ({c.source.describe()})"
    return text


def _rec_json(rec: Optional[Rec]):
    if rec is None:
        return None
    obj = {"partition": rec.partition, "position": rec.position, "key": rec.key, "value": rec.value, "ts": rec.ts}
    if isinstance(rec.source, CapturedAt):
        obj.update(file=rec.source.path, where=rec.source.where, offset=rec.source.offset)
    else:
        obj["input"] = rec.source
    return obj


def report_json(result: DiffResult, extra: Optional[dict] = None) -> dict:
    """The report as one JSON object: mode, match, counts, totals, first divergence (or null)."""
    obj = {"compare": result.mode.value, "match": not result.diverged,
           "counts": {"matched": result.matched, **{kind.value: result.counts[kind] for kind in Divergence}},
           "kssim_records": result.expected_total, "captured_records": result.captured_total, "first": None}
    first = result.first
    if first is not None:
        obj["first"] = {"class": first.kind.value, "partition": first.partition,
                        "kssim": _rec_json(first.expected), "captured": _rec_json(first.captured),
                        "input": first.input_index}
    obj["divergences"] = [{"class": kind.value, "partition": partition, "kssim": _rec_json(e), "captured": _rec_json(c)}
                          for kind, partition, e, c in result.listed]
    if extra:
        obj.update(extra)
    return obj


# --- kssim's side from a file, and the input behind a record -------------------------------------

def read_predicted(path, topic: Optional[str] = None) -> Iterator[tuple]:
    """``(partition, key, value, ts, input)`` of each record of an output file kssim wrote
    (``kssim replay``'s JSONL or Parquet, e.g. the Spark backend's replay), in file order; only
    those of ``topic`` when given (a graph's output file holds every sink topic's records)."""
    import json

    path = os.fspath(path)
    if path.endswith(".parquet"):
        import pyarrow.parquet as pq

        columns = ["topic", "partition", "key", "value", "ts", "input"]
        for batch in pq.ParquetFile(path).iter_batches(columns=columns):
            for row in batch.to_pylist():
                if topic is not None and row["topic"] != topic:
                    continue
                key, value = (None if row[name] is None else json.loads(row[name]) for name in ("key", "value"))
                yield row["partition"], key, value, row["ts"], row["input"]
        return
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            obj = json.loads(line)
            if topic is not None and obj["topic"] != topic:
                continue
            yield obj["partition"], obj["key"], obj["value"], obj["ts"], obj["input"]
