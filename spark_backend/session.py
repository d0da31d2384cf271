"""The one place that creates and configures the SparkSession of the Spark backend.

- Embedded default: local Spark in this process (``local[*]``), started once per process and
  reused, quiet logs. Two workloads, chosen by the first caller (they differ in JVM options, which
  are fixed at start):

  * ``small`` (tests, ``kssim check`` / ``run`` / ``difftest``: many tiny jobs): few shuffle
    partitions, adaptive execution off, a JVM tuned for start-up (serial GC, C1 JIT only), which
    roughly halves the CPU time of a test run;
  * ``bulk`` (``replay`` and the benchmarks: millions of records): the full JIT (C2 doubles the
    throughput of long jobs), the JVM's default collector, a larger heap, file splits of at
    most 32 MB so a large record file is read by every core, and four shuffle partitions per core.

  These defaults apply only when we start a local JVM ourselves.
- A cluster: pass ``master`` (``spark://...``, ``yarn``, ``k8s://...``) or set ``SPARK_MASTER``;
  the executors get ``reference`` and ``spark_backend`` as a zip (``addPyFile``), so nothing needs
  installing there. Under ``spark-submit`` the session spark-submit configured is used as it is
  (ship the packages with ``--py-files``). Tested with a standalone master and worker on one
  machine (``kssim check --master spark://127.0.0.1:7077``, ``spark-submit`` of ``replay.py``).

Nothing else in ``spark_backend`` builds a session; every entry point takes an optional ``spark``
and falls back to :func:`get_spark`.
"""
from __future__ import annotations

import contextlib
import os
import threading
from typing import Mapping, Optional

_LOCK = threading.Lock()
_LOG4J2 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2-quiet.properties")

#: Options for a Spark we start in-process. Determinism never depends on them (every result is
#: sorted on a total order), only speed and noise do.
_CORES = str(max(1, os.cpu_count() or 1))
#: HotSpot leaves methods over 8,000 bytes of bytecode to its interpreter. Whole-stage codegen
#: makes such methods (a graph level's routing and mappers in one ``processNext``): interpreted,
#: they cost 3x the CPU (a 1M-record graph replay's level 0: 16.7 s against 5.9 s compiled)
_JIT = "-XX:-DontCompileHugeMethods"
LOCAL_DEFAULTS = {
    "spark.sql.shuffle.partitions": _CORES,
    "spark.default.parallelism": _CORES,
    "spark.sql.adaptive.enabled": "false",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "2g",
    # a broadcast hash relation holds a whole memory page, even for the few rows of a settings
    # frame (measured: "data size 64.0 MiB" for one row), until its plan is collected. A graph
    # batch broadcasts dozens per level: with the default page (heap / cores / 16, up to 64 MB)
    # 58 corpus graphs ran 261 s, 132 s of it in 321 full GCs; with 1 MB pages 143 s, 9 full GCs
    # (the bulk workload keeps them: its sorts lose nothing, 2 MB pages timed the same at 1M)
    "spark.buffer.pageSize": "1m",
    "spark.driver.extraJavaOptions": (
        # a graph batch compiles many plans: the default code cache fills up (the JVM then
        # warns on stderr and stops compiling)
        f"-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=512m {_JIT} "
        f"-Dlog4j2.configurationFile=file:{_LOG4J2}"
    ),
    "spark.executor.extraJavaOptions": f"-XX:+UseSerialGC {_JIT}",
}

_GIB = 1 << 30


def _bulk_memory() -> str:
    """Driver (= executor, in local mode) heap for bulk jobs: half the machine, 2-16 GB."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 8 * _GIB
    return f"{max(2, min(16, total // 2 // _GIB))}g"


BULK_DEFAULTS = {
    **LOCAL_DEFAULTS,
    "spark.driver.memory": _bulk_memory(),
    "spark.driver.extraJavaOptions": f"{_JIT} -Dlog4j2.configurationFile=file:{_LOG4J2}",
    "spark.executor.extraJavaOptions": _JIT,
    "spark.sql.files.maxPartitionBytes": str(32 << 20),
    # four shuffle partitions per core: a shuffled hash join (the stream-stream join's matches)
    # builds one hash map per partition, which at 10M records must stay well inside the heap
    "spark.sql.shuffle.partitions": str(4 * int(_CORES)),
}
WORKLOADS = {"small": LOCAL_DEFAULTS, "bulk": BULK_DEFAULTS}


#: Options for a driver JVM we start, whatever the master (a cluster's driver runs here too): the
#: quiet logs, else Spark's default profile prints its banner and warnings on every command's
#: stderr (the local workloads' options include this one); huge generated methods compiled
#: (:data:`_JIT`), on a cluster's executors too
DRIVER_STARTED_HERE = {"spark.driver.extraJavaOptions": f"{_JIT} -Dlog4j2.configurationFile=file:{_LOG4J2}",
                       "spark.executor.extraJavaOptions": _JIT}

#: Options for every session, local or not: PySpark 4 records the Python call site of every
#: Column call (several JVM round trips each) unless told not to; our plans are built from
#: thousands of such calls.
ALWAYS = {
    "spark.python.sql.dataFrameDebugging.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}


def _launched_by_spark_submit() -> bool:
    # spark-submit starts the JVM first and hands the Python driver its gateway port
    return "PYSPARK_GATEWAY_PORT" in os.environ


def get_spark(master: Optional[str] = None, conf: Optional[Mapping[str, str]] = None, app_name: str = "kssim-spark",
              workload: str = "small"):
    """The process-wide SparkSession, created on first use.

    ``master`` (else ``SPARK_MASTER``, else ``local[*]``) and ``workload`` (``small`` or ``bulk``,
    see above) are only used when no session exists yet. ``conf`` adds or overrides options
    (e.g. ``{"spark.sql.shuffle.partitions": "200"}``) at start.
    """
    if workload not in WORKLOADS:
        raise ValueError(f"unknown Spark workload {workload!r} (workloads: {', '.join(WORKLOADS)})")
    from pyspark.sql import SparkSession

    with _LOCK:
        active = SparkSession.getActiveSession()
        if active is not None:
            return active
        if _launched_by_spark_submit():
            # spark-submit (or a pyspark shell) configured the JVM already: keep its master and
            # options, set only what can change at run time
            spark = SparkSession.builder.getOrCreate()
            for name, value in ALWAYS.items():
                if spark.conf.get(name, None) == value or not spark.conf.isModifiable(name):
                    continue  # static options come from spark-submit's --conf
                spark.conf.set(name, value)
            for name, value in (conf or {}).items():
                spark.conf.set(name, value)
            return spark
        master = master or os.environ.get("SPARK_MASTER") or "local[*]"
        options = {"spark.app.name": app_name, "spark.master": master, **DRIVER_STARTED_HERE}
        if master.startswith("local"):
            options.update(WORKLOADS[workload])
        options.update({**ALWAYS, **(conf or {})})
        _start_quiet_jvm(options)
        builder = SparkSession.builder
        for name, value in options.items():
            builder = builder.config(name, value)
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        if not master.startswith("local"):
            _ship_packages(spark)
        return spark


#: what the JVM prints at every start since Spark 4's launcher adds ``--add-modules
#: jdk.incubator.vector``: noise on every command's stderr
_JVM_NOISE = (b"WARNING: Using incubator modules: jdk.incubator.vector",)


def forward_jvm_stderr(stream, target) -> None:
    """Copy the JVM's standard error (``stream``, bytes) line by line to ``target()`` (the text
    stream of the moment: a test may have swapped ``sys.stderr``), except :data:`_JVM_NOISE`."""
    for line in iter(stream.readline, b""):
        if line.rstrip(b"\r\n") not in _JVM_NOISE:
            out = target()
            out.write(line.decode("utf-8", "replace"))
            out.flush()


def _start_quiet_jvm(options: Mapping[str, str]) -> None:
    """Start Spark's JVM (as ``SparkContext`` would, with ``options`` as its ``--conf``) with its
    standard error read by a thread that passes every line on except :data:`_JVM_NOISE`."""
    import subprocess
    import sys

    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:
        return
    spark_conf = SparkConf(loadDefaults=False)
    for name, value in options.items():
        spark_conf.set(name, value)
    imports = threading.Thread(target=_import_what_pyspark_imports_next, name="kssim-warm-imports", daemon=True)
    imports.start()
    gateway = launch_gateway(spark_conf, popen_kwargs={"stderr": subprocess.PIPE})
    imports.join()  # before this thread imports anything itself: no two threads import at once
    threading.Thread(target=forward_jvm_stderr, args=(gateway.proc.stderr, lambda: sys.stderr),
                     name="kssim-jvm-stderr", daemon=True).start()
    SparkContext._gateway = gateway
    SparkContext._jvm = gateway.jvm


#: what pyspark imports on its first call into the JVM with arguments (``NumpyArrayConverter``
#: asks ``pyspark.testing.utils`` whether numpy is there, which imports pandas, pyarrow and
#: numpy): about a second of work that can run while the JVM starts, instead of after
_PYSPARK_FIRST_CALL_IMPORTS = ("pyspark.testing.utils",)


def _import_what_pyspark_imports_next() -> None:
    """Import :data:`_PYSPARK_FIRST_CALL_IMPORTS` (in a thread, while ``launch_gateway`` waits for
    the JVM). Nothing depends on it succeeding: pyspark imports them again when it needs them."""
    import importlib

    for name in _PYSPARK_FIRST_CALL_IMPORTS:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - an optional dependency missing is pyspark's to report
            pass


def _ship_packages(spark) -> None:
    """On a cluster the executors run our Python UDFs (joined values, the versioned-store and
    outer-join replays): send them ``kssim.spark_backend`` and the shared model
    (``kssim.reference.model``, the only part of ``reference`` the backend uses) as one zip, as
    ``spark-submit --py-files`` would."""
    import tempfile
    import zipfile

    import kssim.reference.model as shared_model

    model_dir = os.path.dirname(os.path.abspath(shared_model.__file__))
    reference_dir = os.path.dirname(model_dir)
    backend_dir = os.path.dirname(os.path.abspath(__file__))
    folder = tempfile.mkdtemp(prefix="kssim-pyfiles-")
    path = os.path.join(folder, "kssim.zip")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        # the installed layout, kssim/reference/..., kssim/spark_backend/... (kssim is a namespace
        # package when installed; in the zip it is a plain one, for zipimport)
        archive.writestr(os.path.join("kssim", "__init__.py"), "")
        archive.write(os.path.join(reference_dir, "__init__.py"), os.path.join("kssim", "reference", "__init__.py"))
        for package in (model_dir, backend_dir):
            root = os.path.dirname(reference_dir) if package == model_dir else os.path.dirname(package)
            for here, _, files in os.walk(package):
                for name in sorted(files):
                    if name.endswith((".py", ".properties")):
                        full = os.path.join(here, name)
                        archive.write(full, os.path.join("kssim", os.path.relpath(full, root)))
    spark.sparkContext.addPyFile(path)


@contextlib.contextmanager
def session_conf(spark, key: str, value: str):
    """The session's setting ``key`` set to ``value`` for a block (restored after: the session is
    shared)."""
    before = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


def stop_spark() -> None:
    """Stop the process-wide session (tests and tools that want the memory back)."""
    from pyspark.sql import SparkSession

    with _LOCK:
        active = SparkSession.getActiveSession()
        if active is not None:
            active.stop()
