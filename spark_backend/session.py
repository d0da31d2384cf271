"""The one place that creates and configures the SparkSession of the Spark backend.

- Embedded default: local Spark in this process (``local[*]``), started once per process and
  reused, quiet logs, and options that make small jobs cheap (few shuffle partitions, adaptive
  execution off, a JVM tuned for start-up: serial GC, C1 only). These defaults apply only when we
  start a local JVM ourselves.
- A cluster: pass ``master`` (``spark://...``, ``yarn``, ``k8s://...``) or set ``SPARK_MASTER``;
  under ``spark-submit`` the session spark-submit configured is used as it is.

Nothing else in ``spark_backend`` builds a session; every entry point takes an optional ``spark``
and falls back to :func:`get_spark`.
"""
from __future__ import annotations

import os
import threading
from typing import Mapping, Optional

_LOCK = threading.Lock()
_LOG4J2 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2-quiet.properties")

#: Options for a Spark we start in-process. Determinism never depends on them (every result is
#: sorted on a total order), only speed and noise do.
_CORES = str(max(1, os.cpu_count() or 1))
LOCAL_DEFAULTS = {
    "spark.sql.shuffle.partitions": _CORES,
    "spark.default.parallelism": _CORES,
    "spark.sql.adaptive.enabled": "false",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "2g",
    "spark.driver.extraJavaOptions": (
        "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 "
        f"-Dlog4j2.configurationFile=file:{_LOG4J2}"
    ),
    "spark.executor.extraJavaOptions": "-XX:+UseSerialGC",
}


#: Options for every session, local or not: PySpark 4 records the Python call site of every
#: Column call (several JVM round trips each) unless told not to; our plans are built from
#: thousands of such calls.
ALWAYS = {
    "spark.python.sql.dataFrameDebugging.enabled": "false",
}


def _launched_by_spark_submit() -> bool:
    # spark-submit starts the JVM first and hands the Python driver its gateway port
    return "PYSPARK_GATEWAY_PORT" in os.environ


def get_spark(master: Optional[str] = None, conf: Optional[Mapping[str, str]] = None, app_name: str = "kssim-spark"):
    """The process-wide SparkSession, created on first use.

    ``master`` (else ``SPARK_MASTER``, else ``local[*]``) is only used when no session exists yet.
    ``conf`` adds or overrides options (e.g. ``{"spark.sql.shuffle.partitions": "200"}``) at start.
    """
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
        builder = SparkSession.builder.appName(app_name).master(master)
        if master.startswith("local"):
            for name, value in LOCAL_DEFAULTS.items():
                builder = builder.config(name, value)
        for name, value in {**ALWAYS, **(conf or {})}.items():
            builder = builder.config(name, value)
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        return spark


def stop_spark() -> None:
    """Stop the process-wide session (tests and tools that want the memory back)."""
    from pyspark.sql import SparkSession

    with _LOCK:
        active = SparkSession.getActiveSession()
        if active is not None:
            active.stop()
