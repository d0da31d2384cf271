"""Replay captures through a topology on the reference engine, into one output file.

``replay(scenario, inputs, output, options=None, drops=None, progress=None)``: the scenario
supplies topology, release and run config (its inputs are not used); ``inputs`` are captures
(``--input`` values, read by ``reference.model.captures`` as ``options`` say); ``output`` is a
``.jsonl`` or ``.parquet`` file with the records of ``kssim run --format jsonl``. The output path
(and the drops file) is checked before any work (not an input, its folder exists) and written
atomically: if the run stops on an error or Ctrl-C, nothing partial is left and an existing file
is untouched. If Kafka Streams would fail, the output holds what was emitted before the failing
input and the summary names it; a bad record anywhere is exit 2 and no output.

Topologies: a format-1 operator reads its topics (``left``/``right``, ``input``) and writes
``output``; a topology graph reads its source topics and writes the records of every sink topic,
each with its ``topic``, to the one output file, in the order produced. A graph is processed as
listed (TopologyTestDriver's order; ``timestamp_sync`` is refused: ``record_files.replay_order``),
and its drops name the node that dropped them (``node`` in the drops file).

The replay streams: memory is bounded by the topology's live state, not by the input.

- Records are read one by one; outputs go to the writer in batches as they are produced; drops
  are counted per reason (and, with ``drops``, written one JSONL line each to that file), never
  kept. Input indexes are the records of all files in the order given.
- ``as_listed``: one pass over the files in order. After a failure the rest is still read, so a
  bad record is reported whatever the run did.
- ``timestamp_sync``: every record is read and checked in file order and spilled, decoded, to
  one file per (capture file, topic partition) in a hidden folder beside the output (pickled
  chunks; removed when the replay ends, however it ends; disk: about the size of the decoded
  input). The merge (``engine.merge_heads``) takes each partition's records from its spills, in
  file order, holding one chunk per partition in memory.
- Two processes (:data:`READ_ASIDE_MIN` records or more, where the platform forks): a forked
  child reads and checks (and, in ``timestamp_sync``, spills) while this process merges, runs
  the topology and writes (:func:`read_aside`, :class:`FollowedSpills`), so a replay uses two
  cores. Otherwise one process reads everything first (``timestamp_sync``: a bad record is then
  reported before any processing), then merges the spills (``engine.stream_processing_order``).
  Releases before 2.1 (a partition's priority depends on all its records) take that way too.
- ``progress(total, phase)``, when given, makes a progress bar (an object with ``update(n)`` and
  ``close()``, e.g. ``tools.progress``) per pass (``reading``, ``replay``), advanced every few
  thousand records.
"""
from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import shutil
import tempfile
from bisect import bisect_right
from functools import partial
from heapq import merge as heapq_merge
from itertools import chain
from operator import itemgetter
from typing import Callable, Iterator, Optional, Sequence

import orjson

from kssim.reference.model.captures import input_paths, open_captures
from kssim.reference.model.errors import KssimError, ScenarioError
from kssim.reference.model.record_files import (ReplaySummary, atomic_path, check_drops_path, check_output_path,
                                          counted, open_output, replay_order)
from kssim.reference.model.render import sends_old_values
from kssim.reference.model.topology import input_topics
from kssim.reference.runtime.engine import merge_heads, run_records, stream_processing_order

#: records per pickled chunk of a spill file (and of the chunks :func:`read_aside` sends)
SPILL_CHUNK = 8192
#: read the captures in a second process where the platform forks (:func:`read_aside`), for
#: captures of at least this many records (below, a fork costs more than it saves)
PIPELINE = True
READ_ASIDE_MIN = 50_000


def replay(scenario, inputs: Sequence, output, options=None, drops=None,
           progress: Optional[Callable[..., object]] = None) -> ReplaySummary:
    """Run the records of the captures ``inputs`` (``--input`` values, read as ``options``, a
    ``captures.CaptureOptions``, says) through ``scenario``'s topology, write the outputs to
    ``output`` (and every drop to ``drops``, a ``.jsonl`` file, when given); returns the counts
    (outputs written, drops per reason, captured records skipped per topic) and the failure."""
    inputs = [os.fspath(p) for p in inputs]
    paths = input_paths(inputs)
    check_output_path(output, paths)
    replay_order(scenario.topology, scenario.config.order)  # a graph runs as listed
    if drops is not None:
        check_drops_path(drops, paths, output)
    keep_freed_memory()
    plan = ReplayPlan(scenario, inputs, options)
    bar = None
    try:
        counts = None
        if scenario.config.order == "timestamp_sync" and plan.can_follow():
            counts = plan.spill_aside(output)  # read in a second process, merged here as it reads
        elif scenario.config.order == "timestamp_sync":
            bar = progress(plan.total, "reading") if progress is not None else None
            counts = plan.count_queues(output, bar)
            if bar is not None:
                bar.close()
        if progress is not None:
            bar = progress(plan.total, "replay")
        with open_output(output, sends_old_values(scenario)) as writer:
            if drops is None:
                drop_counts, failure = plan.run(counts, writer, bar, None)
            else:
                with atomic_path(drops) as temp, open(temp, "wb", buffering=1 << 20) as drop_file:
                    drop_counts, failure = plan.run(counts, writer, bar, drop_file)
    finally:
        if bar is not None:
            bar.close()
        plan.remove_spills()
    return ReplaySummary(writer.count, drop_counts, failure, dict(sorted(plan.ignored.items())))


class ReplayPlan:
    """The captures of one replay and how to read them (``reference.model.captures``): the
    sources (files, each with its record count and first input index, known up front), ``total``
    records, ``ignored`` records per captured topic (counted by the pass that checks every record)."""

    def __init__(self, scenario, inputs, options):
        self.scenario = scenario
        self.inputs = inputs
        self.options = options
        self.topics = input_topics(scenario.topology)
        self.ignored: dict = {}
        first = self.open()  # every file found and counted, the options checked
        self.sources, self.total = first.sources, first.total
        self._unread = first
        self.spill_folder: Optional[str] = None
        self.follower: Optional[FollowedSpills] = None

    def open(self):
        """Open the captures for reading with every rule (in ``timestamp_sync``, offsets that
        increase per topic partition across the files)."""
        config = self.scenario.config
        return open_captures(self.inputs, self.options, self.scenario.topology, config.partitions,
                             offsets_matter=config.order == "timestamp_sync")

    def _checked(self):
        """The captures, opened for one pass (a GlobalKTable bootstrap in ``as_listed`` makes two)."""
        captures = self._unread or self.open()
        self._unread = None
        self.ignored = captures.ignored  # filled as the records are read
        return captures

    def checked_records(self) -> Iterator:
        """Every record, checked, in file order (read in a second process for large captures)."""
        captures = self._checked()
        if not can_read_aside(self.total):
            return captures.records()
        self.ignored = {}
        return read_aside(captures.records, on_done=self.ignored.update, finish=lambda: dict(captures.ignored))

    def count_queues(self, output, bar=None) -> list:
        """Read and check every record (a bad one is reported before any output); per source,
        its records per ``(partition, topic)``. The records, decoded, are spilled to one file per
        source in a hidden folder beside ``output`` (:meth:`source_streams` reads them back:
        reading pickled tuples costs a fraction of parsing the capture again)."""
        folder = os.path.dirname(os.path.abspath(os.fspath(output)))
        self.spill_folder = tempfile.mkdtemp(prefix=f".{os.path.basename(os.fspath(output))}.",
                                             suffix=".kssim-spill", dir=folder)
        starts = [s.first_index for s in self.sources] + [self.total]
        counts = [dict() for _ in self.sources]
        source, next_start = -1, -1
        file_counts, spill, chunk = None, None, []
        records = self.checked_records()
        for rec in (records if bar is None else counted(records, bar)):
            index = rec[5]
            if index >= next_start:  # the first record of a later source: sources come in order
                if spill is not None:
                    _spill_chunk(chunk, spill)
                    spill.close()
                source = bisect_right(starts, index) - 1
                next_start = starts[source + 1]
                file_counts, spill = counts[source], open(self._spill_path(source), "wb")
            q = (rec[4], rec[0])
            file_counts[q] = file_counts.get(q, 0) + 1
            chunk.append(rec)
            if len(chunk) == SPILL_CHUNK:
                _spill_chunk(chunk, spill)
        if spill is not None:
            _spill_chunk(chunk, spill)
            spill.close()
        return counts

    def _spill_path(self, source: int) -> str:
        return os.path.join(self.spill_folder, f"{source}.records")

    def can_follow(self) -> bool:
        """Whether ``timestamp_sync`` reads in a second process while this one merges and runs
        the engine (:class:`FollowedSpills`): large captures where the platform forks, releases
        2.1+ (before, a partition's priority depends on all its records)."""
        profile = self.scenario.profile
        return can_read_aside(self.total) and (profile.partition_choice_raw_head or profile.partition_choice_max_head)

    def spill_aside(self, output) -> "FollowedSpills":
        """Start the reading process: it reads and checks every record in file order and spills
        it to its (source, topic partition) file beside ``output``; returns the spills as this
        process follows them."""
        folder = os.path.dirname(os.path.abspath(os.fspath(output)))
        self.spill_folder = tempfile.mkdtemp(prefix=f".{os.path.basename(os.fspath(output))}.",
                                             suffix=".kssim-spill", dir=folder)
        captures = self._checked()
        self.ignored = {}
        starts = [s.first_index for s in self.sources] + [self.total]
        context = multiprocessing.get_context("fork")
        receiver, sender = context.Pipe(duplex=False)
        args = (captures.records, starts, self.spill_folder, sender, lambda: dict(captures.ignored))
        child = context.Process(target=_spill_into, args=args, daemon=True)
        child.start()
        sender.close()
        config = self.scenario.config
        queues = [(p, t) for t in self.topics for p in range(config.partitions.get(t, 1))]
        self.follower = FollowedSpills(self.spill_folder, len(self.sources), queues, receiver, child, self.ignored)
        return self.follower

    def source_streams(self) -> list:
        """One stream of input records per source, read back from the spill (records already
        checked, in file order, numbered), as plain tuples in :class:`InputRecord` field order."""
        return [_unspilled(self._spill_path(source)) for source in range(len(self.sources))]

    def remove_spills(self) -> None:
        if self.follower is not None:
            self.follower.close()
        if self.spill_folder is not None:
            shutil.rmtree(self.spill_folder, ignore_errors=True)
            self.spill_folder = None

    def run(self, counts, writer, bar, drop_file):
        """Process the records (``counts``: per source, from :meth:`count_queues`; None for
        ``as_listed``) into ``writer``; returns (drops per reason code, failure or None)."""
        scenario = self.scenario
        drop_counts: dict = {}
        current = [None]  # the input being processed, for the drops file

        def on_drop(index, reason, task, node=None):
            drop_counts[reason] = drop_counts.get(reason, 0) + 1
            if drop_file is not None:
                rec = current[0]
                mine = rec is not None and rec[5] == index
                line = {"input": index, "drop": reason.code, "topic": rec[0] if mine else None,
                        "partition": rec[4] if mine else task, "key": rec[1] if mine else None}
                if node is not None:  # a graph: the node that dropped it (kssim run's JSONL ``node``)
                    line["node"] = node
                drop_file.write(orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE))

        opened = []

        def checked_stream():
            opened.append(self.checked_records())
            return [opened[-1]]

        if counts is None:  # as_listed: one checked stream in file order
            records = stream_processing_order(checked_stream, [], scenario.config, scenario.profile, self.topics)
        elif isinstance(counts, FollowedSpills):
            records = counts.processing_order(scenario.config, scenario.profile, self.topics)
        elif can_read_aside(self.total):  # the merge beside the engine
            records = read_aside(lambda: stream_processing_order(self.source_streams, counts, scenario.config,
                                                                 scenario.profile, self.topics))
        else:
            records = stream_processing_order(self.source_streams, counts, scenario.config, scenario.profile,
                                              self.topics)
        if bar is not None:
            records = counted(records, bar)
        if drop_file is not None:
            records = _tracked(records, current)
        result = run_records(scenario.topology, scenario.profile, scenario.config, records,
                             on_outputs=writer.write_many, on_drop=on_drop, ordered=True)
        if result.failure is not None and opened:
            for _ in opened[-1]:  # a bad record later in the files is still bad input
                pass
        if isinstance(counts, FollowedSpills):
            counts.finish()  # the reading process's verdict on the records the run did not need
        return {reason.code: n for reason, n in sorted(drop_counts.items(), key=lambda kv: kv[0].code)}, result.failure


def keep_freed_memory(trim_threshold: int = 32 << 20, mmap_threshold: int = 4 << 20) -> bool:
    """Ask glibc's malloc to keep up to ``trim_threshold`` bytes of freed memory rather than give
    it back to the system at once, and to serve blocks below ``mmap_threshold`` from its heap: a
    replay frees and allocates the same few hundred kilobytes (record chunks, output batches)
    thousands of times a second, and giving them back each time costs a page fault per page when
    they return (a fifth of a replay's time went to the kernel). Bounded: at most
    ``trim_threshold`` more resident memory. False where there is no glibc (nothing changes)."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3  # glibc's malloc.h
    return bool(mallopt(m_trim_threshold, trim_threshold)) and bool(mallopt(m_mmap_threshold, mmap_threshold))


# --- reading in a second process ------------------------------------------------------------------

def can_read_aside(total: int) -> bool:
    """Whether the ``total`` records are read in a forked process (POSIX), so that reading the
    captures and running the engine use two cores."""
    return PIPELINE and total >= READ_ASIDE_MIN and "fork" in multiprocessing.get_all_start_methods()


def read_aside(make_records: Callable[[], Iterator], on_done: Optional[Callable[[object], None]] = None,
               finish: Optional[Callable[[], object]] = None) -> Iterator[tuple]:
    """The records of ``make_records()`` (tuples in :class:`InputRecord` field order), produced
    by a forked child process and sent here in pickled chunks, as they are read: reading and
    checking (the child) run beside what the caller does with them (this process). A bad record
    raises here, after the records before it, as reading in this process would; ``finish()`` (in
    the child, after the last record) gives a value handed to ``on_done`` here (e.g. the skipped
    record counts). The child stops when the stream is closed or abandoned (Ctrl-C, an error)."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_read_into, args=(make_records, sender, finish), daemon=True)
    child.start()
    sender.close()
    try:
        while True:
            try:
                kind, payload = pickle.loads(receiver.recv_bytes())
            except EOFError:
                raise KssimError("the reading process ended without a word (killed? out of memory?)") from None
            if kind == "records":
                yield from payload
            elif kind == "done":
                if on_done is not None:
                    on_done(payload)
                return
            else:
                raise _rebuilt_error(payload)
    finally:
        receiver.close()
        if child.is_alive():
            child.terminate()
        child.join()


def _read_into(make_records, sender, finish) -> None:
    """The child of :func:`read_aside`: send the records in chunks, then ``done`` or the error."""

    def send_chunks():
        chunk = []
        for rec in make_records():
            chunk.append(tuple(rec))
            if len(chunk) == SPILL_CHUNK:
                _send(sender, "records", chunk)
                chunk = []
        if chunk:
            _send(sender, "records", chunk)

    _as_reading_process(send_chunks, sender, finish)


def _send(sender, kind: str, payload) -> None:
    sender.send_bytes(pickle.dumps((kind, payload), protocol=pickle.HIGHEST_PROTOCOL))


def _as_reading_process(work, sender, finish) -> None:
    """Run ``work()`` as the body of a reading process: then ``done`` (with ``finish()``) or the
    error, handed to the parent, which raises it; the process ends here whatever happens."""
    try:
        try:
            work()
            _send(sender, "done", finish() if finish is not None else None)
        except (KeyboardInterrupt, BrokenPipeError, EOFError):
            pass  # the parent stopped reading, or Ctrl-C: the parent reports it
        except BaseException as exc:  # noqa: BLE001 - handed to the parent, which raises it
            with contextlib.suppress(BrokenPipeError, OSError):
                _send(sender, "error", _portable_error(exc))
        sender.close()
    finally:
        os._exit(0)  # no atexit handlers, no flushing of the parent's inherited buffers


def _portable_error(exc: BaseException) -> tuple:
    if isinstance(exc, ScenarioError):
        return ("scenario", exc.path, exc.where, exc.message)
    if isinstance(exc, OSError):  # a full disk while spilling, an unreadable file
        return ("os", exc.errno, exc.strerror or str(exc), exc.filename)
    if isinstance(exc, KssimError):
        try:
            return ("pickled", pickle.dumps(exc))
        except Exception:  # noqa: BLE001 - an error class whose arguments do not pickle
            return ("kssim", str(exc))
    import traceback

    return ("bug", "".join(traceback.format_exception(exc)))


def _rebuilt_error(payload) -> BaseException:
    kind = payload[0]
    if kind == "scenario":
        return ScenarioError(*payload[1:])
    if kind == "pickled":
        try:
            return pickle.loads(payload[1])
        except Exception:  # noqa: BLE001
            return KssimError("reading the captures failed")
    if kind == "kssim":
        return KssimError(payload[1])
    if kind == "os":
        return OSError(*payload[1:])
    return RuntimeError("reading the captures failed in the reading process:\n" + payload[1])


# --- timestamp_sync: reading in a second process, merging here as it reads ----------------------------

#: the reading process makes what it read available (flushes its spill chunks) this often, in records
FLUSH_EVERY = 8192


def _spill_file(folder, source: int, queue) -> str:
    return os.path.join(folder, f"{source}-{queue[0]}-{queue[1]}.records")


def _spill_into(make_records, starts, folder, sender, finish) -> None:
    """The reading process of :meth:`ReplayPlan.spill_aside`: every checked record, in file
    order, appended to the spill file of its (source, queue); every :data:`FLUSH_EVERY` records
    and at the end of each source the buffered chunks are written and the totals announced
    (``flushed``: records on disk per queue of the current source; ``source``: a source's final
    counts), then ``done`` (with ``finish()``) or the error."""

    def spill_all():
        state = _SpillState(starts, folder, sender)
        state.add_all(make_records())
        state.end_sources(len(starts) - 1)

    _as_reading_process(spill_all, sender, finish)


class _SpillState:
    """What the reading process holds: the current source, its per-queue buffers, open files and
    totals (O(queues + one chunk per queue))."""

    def __init__(self, starts, folder, sender):
        self.starts, self.folder, self.sender = starts, folder, sender
        self.source, self.next_start, self.done_through = -1, -1, -1
        self.buffers: dict = {}
        self.files: dict = {}
        self.totals: dict = {}

    def add_all(self, records) -> None:
        """Buffer every record in its queue's chunk (the reading process's loop: locals only)."""
        buffers, next_start, unflushed = self.buffers, self.next_start, 0
        for rec in records:
            if rec[5] >= next_start:  # the first record of a later source
                source = bisect_right(self.starts, rec[5]) - 1
                self.end_sources(source)
                self.source, next_start = source, self.starts[source + 1]
                buffers = self.buffers
            q = (rec[4], rec[0])
            buffer = buffers.get(q)
            if buffer is None:
                buffer = buffers[q] = []
            buffer.append(rec)
            unflushed += 1
            if unflushed == FLUSH_EVERY:
                self.flush()
                self._send("flushed", (self.source, dict(self.totals)))
                unflushed = 0
        self.next_start = next_start

    def flush(self) -> None:
        for q, buffer in self.buffers.items():
            if buffer:
                spill = self.files.get(q)
                if spill is None:
                    spill = self.files[q] = open(_spill_file(self.folder, self.source, q), "wb")
                # plain tuples: a NamedTuple would pickle as a class call per record
                pickle.dump(list(map(tuple, buffer)), spill, protocol=pickle.HIGHEST_PROTOCOL)
                spill.flush()
                self.totals[q] = self.totals.get(q, 0) + len(buffer)
                buffer.clear()

    def end_sources(self, before: int) -> None:
        """The current source is complete, and so is every source before ``before`` (those
        without records too): write out, announce each one's final counts."""
        if self.source >= 0 and self.source > self.done_through:
            self.flush()
            for spill in self.files.values():
                spill.close()
            self._send("source", (self.source, dict(self.totals)))
            self.done_through = self.source
            self.buffers, self.files, self.totals = {}, {}, {}
        for empty in range(self.done_through + 1, before):
            self._send("source", (empty, {}))
            self.done_through = empty

    def _send(self, kind, payload) -> None:
        _send(self.sender, kind, payload)


class FollowedSpills:
    """The spill files of a reading process, followed as it writes them: :meth:`take` gives a
    queue's next record (the queue's records are those of the sources in order), waiting for the
    reading process only when it has not written that far yet. Memory: one loaded chunk per
    (source, queue) being read. A queue is known to have no more records in a source only when
    the source is complete: a partition whose records sit in a later file than another's waits
    for the files before it to be read (to disk, not to memory)."""

    def __init__(self, folder, sources: int, queues, receiver, child, ignored: dict):
        self.folder, self.sources, self.queues = folder, sources, queues
        self.receiver, self.child, self.ignored = receiver, child, ignored
        self.available: dict = {}  # (source, queue) -> records on disk
        self.final: list = [None] * sources  # per source: its counts per queue, once complete
        self.cursor: dict = {}  # queue -> the source its next record comes from
        self.reading: dict = {}  # (source, queue) -> [records loaded, file]
        self.current: dict = {}  # queue -> an iterator over the rest of its loaded chunk (the hot path)
        self.finished = False

    def processing_order(self, config, profile, topics):
        """The records in ``config``'s processing order (``timestamp_sync``; a GlobalKTable
        bootstrap: every ``right`` record first, in file order)."""
        if config.global_table != "bootstrap":
            return merge_heads(self.queues, self.take, profile, topics)
        table = [q for q in self.queues if q[1] == "right"]
        stream = [q for q in self.queues if q[1] != "right"]
        return chain(self._in_file_order(table), merge_heads(stream, self.take, profile, topics))

    def _in_file_order(self, queues):
        """The records of ``queues`` in input index order (each queue's are in that order)."""
        return heapq_merge(*(iter(partial(self.take, q), None) for q in queues), key=itemgetter(5))

    def take(self, q):
        """The next record of queue ``q``, or None when it has no more. O(1) but for a chunk load."""
        rest = self.current.get(q)
        if rest is not None:
            rec = next(rest, None)
            if rec is not None:
                return rec
        return self._take_slowly(q)

    def _take_slowly(self, q):
        s = self.cursor.get(q, 0)
        while s < self.sources:
            key = (s, q)
            reading = self.reading.get(key)
            loaded = reading[0] if reading is not None else 0
            if self.available.get(key, 0) > loaded:
                if reading is None:
                    reading = self.reading[key] = [0, open(_spill_file(self.folder, s, q), "rb")]
                chunk = pickle.load(reading[1])
                reading[0] = loaded + len(chunk)
                rest = self.current[q] = iter(chunk)
                return next(rest)
            final = self.final[s]
            if final is not None:  # the source is complete and its records of q all taken
                if reading is not None:
                    reading[1].close()
                    del self.reading[key]
                self.current.pop(q, None)
                s += 1
                self.cursor[q] = s
                continue
            self._note()  # not written yet: wait for the reading process
        return None

    def _note(self) -> None:
        """Wait for the reading process's next note and take it in (raising its error)."""
        try:
            kind, payload = pickle.loads(self.receiver.recv_bytes())
        except EOFError:
            raise KssimError("the reading process ended without a word (killed? out of memory?)") from None
        if kind == "flushed":
            source, totals = payload
            for q, n in totals.items():
                self.available[(source, q)] = n
        elif kind == "source":
            source, counts = payload
            for q, n in counts.items():
                self.available[(source, q)] = n
            self.final[source] = counts
        elif kind == "done":
            self.ignored.update(payload or {})
            self.finished = True
        else:
            self.close()
            raise _rebuilt_error(payload)

    def finish(self) -> None:
        """Wait for the reading process to finish (its verdict on every record: a bad one raises)."""
        while not self.finished:
            self._note()
        self.close()

    def close(self) -> None:
        for reading in self.reading.values():
            reading[1].close()
        self.reading = {}
        if self.child is not None:
            self.receiver.close()
            if self.child.is_alive():
                self.child.terminate()
            self.child.join()
            self.child = None


def _spill_chunk(chunk: list, spill) -> None:
    # plain tuples: a NamedTuple would pickle as a class call per record
    pickle.dump(list(map(tuple, chunk)), spill, protocol=pickle.HIGHEST_PROTOCOL)
    chunk.clear()


def _unspilled(path):
    """The records of one spill file, chunk by chunk (O(chunk) memory)."""
    if not os.path.exists(path):  # a source without records
        return
    with open(path, "rb") as spill:
        while True:
            try:
                chunk = pickle.load(spill)
            except EOFError:
                return
            yield from chunk


def _tracked(records, current):
    for rec in records:
        current[0] = rec
        yield rec
