"""Replay record files through a scenario's topology on Spark; ``spark-submit``-able.

    python -m kssim.spark_backend.runtime.replay SCENARIO --input RECORDS... --output OUT [--format jsonl|parquet]
    spark-submit --master spark://host:7077 --py-files kssim.zip spark_backend/runtime/replay.py SCENARIO ...

On a cluster the executors import ``kssim.spark_backend`` and ``kssim.reference`` (Python UDFs):
install the package there (a wheel: ``pip wheel --no-deps .``) or ship it with ``--py-files`` (a zip
of the installed layout, ``kssim/reference/...`` and ``kssim/spark_backend/...``).

``SCENARIO`` supplies the topology, release (``semantics``) and run config (order, store,
partitions); its ``inputs`` are used only when no ``--input`` is given. ``RECORDS`` are JSONL or
Parquet record files (``topic, partition, offset, ts, key, value``; see ``record_files.py``). The output
records are written in output order (part files under ``OUT``), with the fields of
``kssim run --format jsonl``. Drops are counted per reason (a ``reference.model.codes.DropReason``
code; ``--drops`` writes them as JSONL), and if real Kafka Streams would die, the failing input is
reported with its ``FailureCode``'s message and the output stops before it.
Exit codes: 0 success, 1 Kafka Streams would fail, 2 bad input (an output folder that is, holds or
lies in an input is refused before any work: Spark's overwrite would delete the capture).

``replay_to_file`` is ``kssim replay --engine spark``: the same replay of captures (any format
``reference.model.captures`` reads) into one ``.jsonl`` or ``.parquet`` file, checked and written
as the reference's replay writes its file (``reference.model.record_files.check_output_path``
and ``atomic_path``). Small captures, and those Spark cannot scan, are read on the driver by the
shared reader and replayed by one Spark job whose events stream back to the reference's writer
(``replay_collected``: session start plus a few seconds); large JSONL/Parquet record files are
scanned by Spark and written as part files joined in order. A bad record is the shared reader's
ScenarioError either way (after a failed scan, the reader names the record: ``raise_readers_verdict``).
"""
from __future__ import annotations

import argparse
import contextlib
import glob
import json
import os
import re
import shutil
import sys
import tempfile

import attrs

from kssim.reference.model.captures import CaptureOptions, InputFormat, input_paths, open_captures
from kssim.reference.model.codes import FailureCode
from kssim.reference.model.errors import KafkaWouldFail, KssimError, ScenarioError, UnsupportedOperator
from kssim.reference.model.record_files import (OutputPathError, ReplaySummary, atomic_path, check_output_path,
                                          clashing_input, counted, open_output)
from kssim.reference.model.render import sends_old_values
from kssim.reference.model.scenario import load_scenario
from kssim.reference.model.topology import input_topics, key_extractor_of, summed_topics

# absolute imports: spark-submit runs this file as a script
from kssim.spark_backend.runtime.inputs import IMPLEMENTED, Features, config_frame, config_row, json_text, scenarios_to_frames
from kssim.spark_backend.runtime.outputs import (DROP, FAILURE, OUTPUT, OUTPUT_ORDER, SIMPLE_JSON, joined_values, jsonl_line,
                                           output_columns, output_frame, to_output_records, with_joiners, write_jsonl,
                                           write_parquet)
from kssim.spark_backend.runtime.processing_order import ORDER_KEY
from kssim.spark_backend.runtime.record_files import RecordStats, read_record_files, records_from_reader
from kssim.spark_backend.runtime.runner import batch_events, unsupported_delivery
from kssim.spark_backend.session import get_spark, session_conf


def open_inputs(scenario, inputs, options=None):
    """The captures ``inputs`` (``--input`` values) opened as the reference's replay opens them
    (``reference.model.captures.open_captures``: every format, the same numbering, checks and
    messages); files are found, their formats known and records counted here."""
    return open_captures(list(inputs), options, scenario.topology, scenario.config.partitions,
                         offsets_matter=scenario.config.order == "timestamp_sync")


def shared_reader(scenario, record_paths, options=None):
    """The input records of ``record_paths`` as the reference's replay reads them, lazily."""
    return open_inputs(scenario, record_paths, options).records()


def _check_supported(scenario):
    if scenario.topology.operator == "graph":
        return  # the graph runner says which nodes it cannot run (spark_backend.graph.runner.unsupported)
    if scenario.topology.operator not in IMPLEMENTED:
        raise UnsupportedOperator(f"the Spark backend does not implement operator {scenario.topology.operator!r} yet")
    if unsupported_delivery(scenario) is not None:
        raise unsupported_delivery(scenario)


def replay_frames(spark, scenario, record_paths=None, inputs=None, folder=None, fmt=None):
    """``(events, configs, features, stats)`` for one scenario over record files scanned by Spark
    (``record_paths``), input records read on the driver (``inputs``: an iterable of
    InputRecords, e.g. :func:`shared_reader`; ``folder``: a work folder for a large one, see
    ``record_files.records_from_reader``) or its own inputs; ``stats`` is a
    ``record_files.RecordStats``; ``fmt``: the record files' format (``jsonl``/``parquet``;
    default: from the paths)."""
    _check_supported(scenario)
    if inputs is not None:
        configs_rows = [config_row(0, scenario)]
        records, stats = records_from_reader(spark, inputs, folder)
        configs, features = config_frame(spark, configs_rows), Features.of(configs_rows)
        if scenario.config.order != "timestamp_sync":
            features = attrs.evolve(features, scan_block=_scan_block(spark, stats.records))
    elif record_paths:
        configs_rows = [config_row(0, scenario)]
        as_listed = scenario.config.order != "timestamp_sync"
        # KIP-557's idempotence check compares value bytes [ktable_emit_on_change], and so does
        # an FK join's hash check (spark_backend.foreign_key.response_join)
        records, stats = read_record_files(spark, record_paths, partitions=scenario.config.partitions, fmt=fmt,
                                           with_offsets=not as_listed,
                                           canonical_values=bool(configs_rows[0]["ktable_emit_on_change"])
                                           or scenario.topology.operator == "fk_join",
                                           extractor=key_extractor_of(scenario.topology),
                                           topics=input_topics(scenario.topology),
                                           sum_topics=summed_topics(scenario.topology))
        configs, features = config_frame(spark, configs_rows), Features.of(configs_rows)
        if as_listed:
            features = attrs.evolve(features, scan_block=_scan_block(spark, stats.records))
    else:
        records, configs, features = scenarios_to_frames(spark, [scenario], [0])
        values = [rec.value for rec in scenario.inputs if rec.value is not None]
        stats = RecordStats(len(scenario.inputs), sum(1 for v in values if not _simple(v)))
    return batch_events(records, configs, features), configs, features, stats


#: the smallest block of a parallel task scan (``prefix_scan``): below this a window per task is cheaper
MIN_SCAN_BLOCK = 100_000


def _scan_block(spark, records):
    """Positions per block of the parallel task scans: about four blocks per shuffle partition
    (so both cores stay busy), or None when the input is too small to split."""
    partitions = max(1, int(spark.conf.get("spark.sql.shuffle.partitions")))
    size = max(MIN_SCAN_BLOCK, -(-records // (4 * partitions)))
    return size if records > size else None


def _simple(value) -> bool:
    return re.fullmatch(SIMPLE_JSON, json_text(value)) is not None


# --- one pass: outputs, drops and failures written side by side ---------------------------------

KINDS = {OUTPUT: "output", DROP: "drop", FAILURE: "failure"}


def _staged_rows(events, configs, features, stats, fmt):
    """Every event as a row of the output file format plus ``kind``: outputs as output records,
    drops and failures as JSON text (``input`` and ``reason``, a drop code; ``order``, ``input``
    and ``code``, a failure code) in the ``value`` column."""
    from pyspark.sql import functions as F

    frame = with_joiners(events, configs, features)
    value, old_value = joined_values(python_values=stats.complex_values > 0)
    is_output = F.col("etype") == OUTPUT
    notice = F.when(F.col("etype") == DROP, F.to_json(F.struct(F.col("idx").alias("input"), F.col("text").alias("reason")))) \
        .otherwise(F.to_json(F.struct(F.array(*[F.col(c) for c in ORDER_KEY], F.col("idx")).alias("order"),
                                      F.col("idx").alias("input"), F.col("text").alias("code"))))
    kind = F.element_at(F.create_map(*[F.lit(x) for k, name in KINDS.items() for x in (k, name)]), F.col("etype"))
    order = [F.col(c) for c in OUTPUT_ORDER]
    rows = frame.select(kind.alias("kind"), *order, *output_columns(F.when(is_output, value).otherwise(notice), old_value))
    if fmt == "jsonl":
        return rows.select("kind", *OUTPUT_ORDER, F.when(F.col("kind") == "output", jsonl_line())
                           .otherwise(F.col("value")).alias("value"))
    # the columns of the reference's Parquet output (reference.model.record_files.output_parquet_schema)
    return rows.drop("has_old_value", *(() if _sends_old(features) else ("old_value",)))


def _sends_old(features) -> bool:
    return bool(dict(features.constants).get("send_old", True))


def _write(fmt, features, frame, path, single_file):
    """Output records (``outputs.output_frame``) in the output format (JSONL lines carry the old
    value where the scenario sends one; Parquet has the column only then)."""
    if fmt == "parquet":
        write_parquet(frame, path, single_file=single_file, with_old_value=_sends_old(features))
    else:
        write_jsonl(frame, path, single_file=single_file)


def _partition_keys(spark, partitions):
    """For each output partition p a long ``k`` that Spark's hash partitioning sends to p, so
    ``repartition(n, key)`` puts the rows of range p into partition p: in order, without the
    sampling job of a range sort (which would compute the whole join twice)."""
    from pyspark.sql import functions as F

    found = {}
    for row in spark.range(0, 64 * partitions).select("id", F.pmod(F.hash("id"), F.lit(partitions)).alias("p")).collect():
        found.setdefault(row["p"], row["id"])
    return [found[p] for p in range(partitions)] if len(found) == partitions else None


def _in_output_order(spark, rows, features, stats, partitions):
    """``rows`` in output order (:data:`REPLAY_ORDER`) across ``partitions`` partitions (part
    files in name order). ``as_listed`` outputs are ordered by the index of the input that emitted
    them, so partition p takes a range of input indexes; ``timestamp_sync`` needs a range sort.
    Not sorted by ``kind``: the write keeps one file per kind open (:func:`_kinds_written_apart`)."""
    from pyspark.sql import functions as F

    keys = _partition_keys(spark, partitions) if not features.ts_sync and partitions > 1 else None
    if keys is not None:
        bucket = F.least((F.col("g1") * partitions / F.lit(max(stats.records, 1))).cast("bigint"), F.lit(partitions - 1))
        key = F.element_at(F.array(*[F.lit(k).cast("bigint") for k in keys]), (bucket + 1).cast("int"))
        rows = rows.repartition(partitions, key)
    elif partitions > 1:
        rows = rows.repartitionByRange(partitions, *REPLAY_ORDER)
    else:
        rows = rows.repartition(1)
    return rows.sortWithinPartitions(*REPLAY_ORDER).drop(*OUTPUT_ORDER)


#: The output order of a replay. A replay is one scenario (``sid`` 0), so its order starts with
#: ``g1``: Spark's sort compares a 64-bit prefix of the first key and compares whole rows only
#: on a tie, and a constant first key (``sid``, or the ``kind`` of a partitioned write, "output"
#: on nearly every row) ties every time: at 10M rows most of the output stage's CPU.
REPLAY_ORDER = tuple(c for c in OUTPUT_ORDER if c != "sid")


@contextlib.contextmanager
def _kinds_written_apart(spark):
    """A write partitioned by ``kind`` that writes each row to its kind's file in the order the
    rows come: Spark's partitioned write sorts its input by the partition column unless it is
    sorted by it already (a sort by ``kind`` alone, which would lose the output order); with
    ``spark.sql.maxConcurrentOutputFileWriters`` > 0 it asks no order and keeps one file per
    partition value open (up to that many: the three kinds, so it never falls back to sorting).
    Each kind's file holds its rows in output order, as a sort by (kind, output order) did."""
    with session_conf(spark, "spark.sql.maxConcurrentOutputFileWriters", str(len(KINDS))):
        yield


def _read_notices(spark, folder, fmt, schema):
    from pyspark.sql import functions as F

    frame = spark.read.text(folder) if fmt == "jsonl" else spark.read.parquet(folder).select("value")
    return frame.select(F.from_json("value", schema).alias("n")).select("n.*")


def _hadoop(spark, path):
    jvm = spark._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    return hadoop_path.getFileSystem(spark._jsc.hadoopConfiguration()), hadoop_path


def _single_pass(spark, events, configs, features, stats, output, fmt, drops_path, single_file):
    """Write the outputs and read back drop counts in one computation of the join; returns
    ``(counts, failed)`` where ``failed`` is the first failing input's notice (nothing was
    published then: Kafka Streams would have stopped there, ``_until_failure`` cuts the output)."""
    staging = output.rstrip("/") + ".kssim-staging"
    fs, staging_path = _hadoop(spark, staging)
    partitions = 1 if single_file else max(1, int(spark.conf.get("spark.sql.shuffle.partitions")))
    try:
        rows = _in_output_order(spark, _staged_rows(events, configs, features, stats, fmt), features, stats, partitions)
        writer = rows.write.mode("overwrite").partitionBy("kind")
        with _kinds_written_apart(spark):
            (writer.text(staging) if fmt == "jsonl" else writer.parquet(staging))
        kinds = {name: staging + f"/kind={name}" for name in KINDS.values()
                 if fs.exists(_hadoop(spark, staging + f"/kind={name}")[1])}
        if "failure" in kinds:
            notices = _read_notices(spark, kinds["failure"], fmt, "order ARRAY<BIGINT>, input BIGINT, code STRING")
            failed = min(notices.collect(), key=lambda r: tuple(r["order"]))
            return None, failed
        counts = {}
        if "drop" in kinds:
            drops = _read_notices(spark, kinds["drop"], fmt, "input BIGINT, reason STRING")
            counts = {r["reason"]: r["count"] for r in drops.groupBy("reason").count().collect()}
            if drops_path:
                drops.orderBy("input").write.mode("overwrite").json(drops_path)
        out_fs, out_path = _hadoop(spark, output)
        out_fs.delete(out_path, True)
        if "output" in kinds:
            out_fs.mkdirs(out_path.getParent())
            if not fs.rename(_hadoop(spark, kinds["output"])[1], out_path):
                raise KssimError(f"could not move the outputs from {kinds['output']} to {output}")
        else:
            empty = output_frame(events.limit(0), configs, features, python_values=False)
            _write(fmt, features, empty, output, single_file=True)
        return counts, None
    finally:
        fs.delete(staging_path, True)


def _until_failure(events, configs, features, stats, failed, output, fmt, drops_path, single_file):
    """Kafka Streams would die at input ``failed``: write what the tasks emitted before it."""
    from pyspark.sql import functions as F

    at = F.struct(*[F.col(c) for c in ORDER_KEY], F.col("idx"))
    stop = F.struct(*[F.lit(v).cast("bigint") for v in failed["order"]])
    events = events.filter(at < stop)
    counts = {r["text"]: r["count"] for r in events.filter(F.col("etype") == DROP).groupBy("text").count().collect()}
    _write(fmt, features, output_frame(events, configs, features, python_values=stats.complex_values > 0), output,
           single_file=single_file)
    if drops_path:
        events.filter(F.col("etype") == DROP).orderBy("idx") \
            .select(F.col("idx").alias("input"), F.col("text").alias("reason")).write.mode("overwrite").json(drops_path)
    return counts, KafkaWouldFail(failed["input"], FailureCode.from_code(failed["code"]))


def replay(scenario, record_paths, output, fmt="jsonl", drops_path=None, spark=None, single_file=False,
           driver_read=False, input_format=None):
    """Run the replay; returns ``(drop counts by reason, failure or None)``.

    One computation of the join writes the outputs, drops and failures side by side (in output
    order, partitioned by kind), and the drop counts are read back from the small drop part. If
    Kafka Streams would fail (rare: a release that dies on some input), the events before the
    failing input are written by a second pass. ``driver_read``: read the record files with the
    shared reader on the driver rather than scanning them with Spark; ``input_format``: their
    format for Spark's scan (``jsonl``/``parquet``; default: from the paths)."""
    clash = clashing_input(output, record_paths or (), either_way=True)
    if clash is not None:  # Spark's overwrite would delete the input
        raise OutputPathError(f"output {output} overlaps the input {clash}: refusing to overwrite a capture")
    spark = spark or get_spark()
    if scenario.topology.operator == "graph":
        return _graph_part(scenario, record_paths, output, fmt, drops_path, spark)
    folder = tempfile.mkdtemp(prefix="kssim-replay-") if driver_read else None
    try:
        if driver_read:
            _check_supported(scenario)
            frames = replay_frames(spark, scenario, inputs=shared_reader(scenario, record_paths), folder=folder)
        else:
            frames = replay_frames(spark, scenario, record_paths, fmt=input_format)
        events, configs, features, stats = frames
        counts, failed = _single_pass(spark, events, configs, features, stats, output, fmt, drops_path, single_file)
        if failed is None:
            return counts, None
        return _until_failure(events, configs, features, stats, failed, output, fmt, drops_path, single_file)
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def _graph_part(scenario, record_paths, output, fmt, drops_path, spark):
    """:func:`replay` of a topology graph: its records come back to the driver in processing
    order (``graph.replay``), so the output folder gets one part file, ``part-00000.<fmt>``,
    which :func:`join_parts` reads like any other."""
    if drops_path is not None:
        raise KssimError("--drops: a topology graph's drops file is written by `kssim replay --engine spark` "
                         "and the reference engine, not by this entry point yet")
    captures = open_inputs(scenario, record_paths or ())
    os.makedirs(output, exist_ok=True)
    part = os.path.join(output, f"part-00000.{fmt}")
    summary = _graph_replay(spark, scenario, record_paths, None, captures, part, scans_with_spark(captures))
    return summary.drops, summary.failure


def replay_to_file(scenario, inputs, output, spark=None, master=None, options=None, progress=None,
                   shuffle_partitions=None) -> ReplaySummary:
    """``kssim replay --engine spark``: replay the captures ``inputs`` (``--input`` values, read
    as ``options``, a ``captures.CaptureOptions``, says) into one output file (``.jsonl`` or
    ``.parquet``). The path is checked and the captures opened (files found, formats known,
    options checked) before any work; the file is written atomically (``atomic_path``: on an
    error or Ctrl-C nothing partial is left).

    Two ways (:func:`scans_with_spark`):

    - small captures, and captures Spark cannot scan (kcat, console, topic mapping, skipped
      topics): :func:`replay_collected`, the records read by the shared reader on the driver;
      the session, if we start it, is the ``small`` workload (a JVM that starts fast);
    - large JSONL/Parquet record files with the default options: Spark scans them and writes
      part files into a work folder beside ``output``, joined in order into the file (``bulk``).

    ``spark``: a session (default: ``get_spark(master, workload=...)``); ``progress(total) ->
    bar`` (``tools.progress``): advanced as the driver reads records; ``shuffle_partitions``: for
    the driver way (default: ``replay_collected``'s)."""
    inputs = [os.fspath(p) for p in inputs]
    paths = input_paths(inputs)
    fmt = check_output_path(output, paths)
    _check_supported(scenario)
    captures = open_inputs(scenario, inputs, options)
    scan = scans_with_spark(captures, options)
    if scenario.topology.operator == "graph":
        return _graph_replay(spark or get_spark(master, workload="bulk" if scan else "small"), scenario, inputs,
                             options, captures, output, scan)
    spark = spark or get_spark(master, workload="bulk" if scan else "small")
    if scan:
        summary, captures = _scan_or_reopen(lambda: _scanned_replay(spark, scenario, captures, output, fmt),
                                            scenario, inputs, options)
        if summary is not None:
            return summary
    bar = progress(captures.total) if progress is not None else None
    try:
        records = captures.records() if bar is None else counted(captures.records(), bar)
        summary = replay_collected(spark, scenario, records, output, fmt, shuffle_partitions)
    finally:
        if bar is not None:
            bar.close()
    return attrs.evolve(summary, ignored=dict(sorted(captures.ignored.items())))


def _scan_or_reopen(scanned, scenario, inputs, options):
    """``(summary, None)`` of the replay ``scanned()`` in which Spark scans the record files; if
    the scan refuses a row, the shared reader names it as the reference does, and if it accepts
    every record (the scan's rules are stricter: a record of an output topic, which the reader
    skips) ``(None, captures reopened)``: the driver way replays what the reader reads."""
    try:
        return scanned(), None
    except ScenarioError:
        raise_readers_verdict(scenario, inputs, options)
        return None, open_inputs(scenario, inputs, options)
    except _SCAN_ERRORS:
        raise_readers_verdict(scenario, inputs, options)
        raise


def _graph_replay(spark, scenario, inputs, options, captures, output, scan) -> ReplaySummary:
    """A topology graph's replay (``graph.replay``); a scan that finds a bad record hands the
    verdict to the shared reader, as format 1's does."""
    from kssim.spark_backend.graph.replay import replay_graph

    if scan:
        summary, captures = _scan_or_reopen(lambda: replay_graph(spark, scenario, captures, output, scan=True),
                                            scenario, inputs, options)
        if summary is not None:
            return summary
    # a small capture's levels run one task per stage (a task costs tens of ms even when empty;
    # a cluster's default is 200 shuffle partitions)
    small = captures.total <= SMALL_REPLAY_RECORDS
    with _shuffle_partitions(spark, 1 if small else int(spark.conf.get("spark.sql.shuffle.partitions"))):
        return replay_graph(spark, scenario, captures, output)


def _scanned_replay(spark, scenario, captures, output, fmt) -> ReplaySummary:
    """Spark scans the record files of ``captures`` and writes part files into a work folder
    beside ``output``, joined in order into the file."""
    folder = tempfile.mkdtemp(prefix=f".{os.path.basename(output)}.", suffix=".kssim-parts",
                              dir=os.path.dirname(os.path.abspath(output)))
    try:
        parts = os.path.join(folder, "out")
        files = [source.path for source in captures.sources]
        with atomic_path(output) as temp:
            counts, failure = replay(scenario, files, parts, fmt, spark=spark, driver_read=False,
                                     input_format=captures.sources[0].format.value)
            written = join_parts(parts, temp, fmt, with_old_value=sends_old_values(scenario))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return ReplaySummary(written, counts, failure)


def _scan_errors():
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    return (ScenarioError, Py4JJavaError, PySparkException)


#: what a Spark scan of a bad record file raises: our ScenarioError (a row it found bad, named by
#: input record) or Spark's own error (a file its readers cannot decode: bad UTF-8, a damaged
#: Parquet footer, ...)
_SCAN_ERRORS = _scan_errors()


def raise_readers_verdict(scenario, inputs, options=None) -> None:
    """After Spark's scan of record files failed: read them with the shared reader (on the
    driver, up to the first bad record) and raise its ScenarioError, so the user gets the
    reference's message (file, line or row, field) whichever engine ran; returns if the reader
    finds every record good (the scan's error stands)."""
    for _ in open_inputs(scenario, inputs, options).records():
        pass


def scans_with_spark(captures, options=None) -> bool:
    """Does Spark scan these captures itself (``record_files.read_record_files``)? Only large
    kssim record files (JSONL or Parquet, more than :data:`DRIVER_READ_RECORDS` records) read
    with the default options; everything else is read on the driver by the shared reader."""
    if options is not None and options != CaptureOptions(input_format=options.input_format):
        return False
    if options is not None and options.input_format not in (InputFormat.AUTO, InputFormat.JSONL, InputFormat.PARQUET):
        return False
    formats = {source.format for source in captures.sources}
    if not formats or len(formats) > 1 or not formats <= {InputFormat.JSONL, InputFormat.PARQUET}:
        return False  # one format: Spark reads a folder in one format
    return captures.total > DRIVER_READ_RECORDS


#: captures of at most this many records are read on the driver (measured on 2 cores: the driver
#: way is 1.5x faster at 150k records of JSONL, as fast at 600k)
DRIVER_READ_RECORDS = 300_000


def _shuffle_partitions(spark, n):
    """The session's shuffle partitions set to ``n`` for a block (restored after: the session is
    shared). Results never depend on it, only the number of tasks."""
    return session_conf(spark, "spark.sql.shuffle.partitions", str(n))


def replay_collected(spark, scenario, inputs, output, fmt, shuffle_partitions=None) -> ReplaySummary:
    """A replay of input records read on the driver (every record read and checked before any
    Spark job: a bad one is the reader's ScenarioError), its events computed by one Spark job and
    streamed back in output order; the joiner runs here, on the driver (no Python worker), and
    the records go to the reference's writer (``record_files.open_output``: the same bytes, the
    file written atomically). No part files, no staging, no second pass when Kafka Streams would
    fail (the stream stops at the failing input). ``shuffle_partitions``: default 1 for a small
    input (a few tiny tasks), the session's for a large one (a capture Spark cannot scan)."""
    folder = tempfile.mkdtemp(prefix="kssim-replay-")
    try:
        events, _, features, stats = replay_frames(spark, scenario, inputs=inputs, folder=folder)
        if shuffle_partitions is None:
            small = stats.records <= SMALL_REPLAY_RECORDS
            shuffle_partitions = 1 if small else int(spark.conf.get("spark.sql.shuffle.partitions"))
        with _shuffle_partitions(spark, shuffle_partitions):
            rows = _sorted_events(events, shuffle_partitions).toLocalIterator(prefetchPartitions=False)
            constants = dict(features.constants)
            with open_output(output, sends_old_values(scenario)) as writer:
                counts, failure = _write_events(rows, writer, (constants.get("joiner"), constants.get("sep")))
        return ReplaySummary(writer.count, counts, failure)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


#: inputs up to this many records are replayed with one shuffle partition
SMALL_REPLAY_RECORDS = 200_000


def _sorted_events(events, partitions):
    """The events in output order: one partition, or ranges of the output order (streamed back
    partition by partition: the driver holds one at a time)."""
    if partitions <= 1:
        return events.repartition(1).sortWithinPartitions(*REPLAY_ORDER)
    return events.repartitionByRange(partitions, *REPLAY_ORDER).sortWithinPartitions(*REPLAY_ORDER)


def _write_events(rows, writer, joiner):
    """Write the outputs of the sorted event stream ``rows`` (``outputs.EVENT_COLUMNS``) with
    ``writer`` (an ``OutputWriter``; ``joiner``: the scenario's (name, separator)); returns
    ``(drop counts by reason, failure or None)``. The events of one input are held until the next
    input starts, so those of a failing input (Kafka Streams dies there: it publishes none of
    them, and counts no drop of it) are never written."""
    counts, held, current = {}, [], None

    def flush():
        outputs = []
        for row in held:
            if row["etype"] == DROP:
                counts[row["text"]] = counts.get(row["text"], 0) + 1
            else:
                outputs.append(row)
        if outputs:
            writer.write_many(to_output_records(outputs, lambda sid: joiner))

    for row in rows:
        at = (row["sid"], row["g1"], row["g2"], row["g3"], row["g4"])
        if at != current:
            flush()
            held, current = [], at
        if row["etype"] == FAILURE:
            return counts, KafkaWouldFail(row["idx"], FailureCode.from_code(row["text"]))
        held.append(row)
    flush()
    return counts, None


def _part_files(folder) -> list:
    return sorted(p for p in glob.glob(os.path.join(folder, "part-*")) if not p.endswith(".crc"))


def _copy_parts(folder, sink) -> int:
    """Copy the JSONL part files under ``folder`` (in name order: output order) to the open
    binary ``sink``; returns the number of lines."""
    lines = 0
    for part in _part_files(folder):
        with open(part, "rb") as source:
            for chunk in iter(lambda: source.read(1 << 20), b""):
                lines += chunk.count(b"\n")
                sink.write(chunk)
    return lines


def join_parts(folder, output, fmt, with_old_value=False) -> int:
    """Concatenate Spark's part files under ``folder`` (named in output order) into the file
    ``output``; returns the number of records."""
    parts = _part_files(folder)
    if fmt == "jsonl":
        with open(output, "wb") as sink:
            return _copy_parts(folder, sink)
    import pyarrow.parquet as pq

    from kssim.reference.model.record_files import output_parquet_schema

    writer, rows = None, 0
    try:
        for part in parts:
            source = pq.ParquetFile(part)
            writer = writer or pq.ParquetWriter(output, source.schema_arrow)
            for batch in source.iter_batches():
                writer.write_batch(batch)
                rows += batch.num_rows
        if writer is None:  # no part file: an empty file with the output columns
            writer = pq.ParquetWriter(output, output_parquet_schema(with_old_value))
    finally:
        if writer is not None:
            writer.close()
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kssim.spark_backend.runtime.replay", description=__doc__.split("\n\n")[0])
    parser.add_argument("scenario", help="scenario file: topology, semantics and config (its inputs unless --input)")
    parser.add_argument("--input", nargs="*", default=None, help="JSONL or Parquet record files")
    parser.add_argument("--output", required=True, help="output folder (Spark part files)")
    parser.add_argument("--format", choices=("jsonl", "parquet"), default="jsonl")
    parser.add_argument("--drops", default=None, help="write the drops (input, reason) as JSONL here")
    parser.add_argument("--single-file", action="store_true", help="one part file (small outputs)")
    parser.add_argument("--master", default=None, help="Spark master URL (default: SPARK_MASTER, spark-submit's, or local[*])")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark options")
    args = parser.parse_args(argv)
    try:
        scenario = load_scenario(args.scenario)
        conf = dict(item.split("=", 1) for item in args.conf)
        spark = get_spark(master=args.master, conf=conf, workload="bulk")
        counts, failure = replay(scenario, args.input, args.output, args.format, args.drops, spark, args.single_file)
    except (KssimError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({"scenario": scenario.name, "drops": counts}), file=sys.stderr)
    if failure is not None:
        print(f"{scenario.name}: Kafka Streams would fail while processing input {failure.input_index}: "
              f"{failure.message}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

