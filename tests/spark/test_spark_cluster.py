"""A real Spark cluster: a standalone master and two workers started on this machine (the classes
pyspark ships, ``org.apache.spark.deploy.master.Master`` / ``worker.Worker``), a topology graph
replayed through ``kssim replay --engine spark --master spark://...`` and through ``spark-submit``
of the replay entry point (``spark_backend/runtime/replay.py``), each giving the bytes of the
local-mode replay (which is the reference's, ``tests/cli/test_graph_replay.py``). Everything started here is stopped at the end (process groups)."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from kssim.spark_backend.runtime import replay as spark_replay

GRAPH = """format: kssim-scenario/1
name: orders-graph
semantics: "3.9"
topology:
  graph:
    - {stream: orders}
    - {filter: {cmp: [{field: amount}, ">", {const: 0}]}}
    - {select_key: {field: customer}, id: keyed}
    - {to: orders-by-customer}
    - {from: keyed, map_values: {field: amount}}
    - {group_by_key: {}}
    - {aggregate: sum}
    - {to_stream: {}}
    - {to: totals}
inputs: []
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spark_home() -> str:
    import pyspark

    return os.path.dirname(pyspark.__file__)


def _environment(tmp) -> dict:
    env = dict(os.environ, SPARK_HOME=_spark_home(), SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_LOG_DIR=str(tmp), SPARK_WORKER_DIR=str(tmp / "work"))
    env.pop("PYSPARK_GATEWAY_PORT", None)
    return env


def _start(args, env, log):
    return subprocess.Popen([os.path.join(_spark_home(), "bin", "spark-class"), *args], env=env,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def _alive_workers(ui_port) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as reply:
            return int(json.load(reply).get("aliveworkers", 0))
    except OSError:
        return 0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """``spark://127.0.0.1:PORT`` of a standalone master with two one-core workers."""
    tmp = tmp_path_factory.mktemp("cluster")
    env = _environment(tmp)
    port, ui = _free_port(), _free_port()
    log = open(tmp / "cluster.log", "wb")
    processes = [_start(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                         "--webui-port", str(ui)], env, log)]
    url = f"spark://127.0.0.1:{port}"
    try:
        for n in range(2):
            processes.append(_start(["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "1",
                                     "--memory", "1g", "--webui-port", str(_free_port()),
                                     "--work-dir", str(tmp / f"worker{n}"), url], env, log))
        deadline = time.monotonic() + 90
        while _alive_workers(ui) < 2:
            if time.monotonic() > deadline or any(p.poll() is not None for p in processes):
                pytest.fail("the standalone cluster did not start: " + (tmp / "cluster.log").read_text()[-2000:])
            time.sleep(0.5)
        yield url, env
    finally:
        for process in processes:  # a worker's executors are in its process group
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        log.close()


@pytest.fixture(scope="module")
def graph_capture(tmp_path_factory):
    """The graph and a capture of 2,000 orders over 50 customers (every 7th with amount 0)."""
    tmp = tmp_path_factory.mktemp("graph")
    topo = tmp / "graph.yaml"
    topo.write_text(GRAPH)
    capture = tmp / "orders.jsonl"
    capture.write_text("".join(json.dumps({"topic": "orders", "ts": n, "key": f"o{n}",
                                           "value": {"customer": f"c{n * 37 % 50}", "amount": n % 7}}) + "\n"
                               for n in range(2000)))
    return tmp, str(topo), str(capture)


def _replay(args, env, cwd):
    done = subprocess.run([sys.executable, "-m", "kssim.tools.cli", "replay", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done


def test_a_graph_replay_on_a_standalone_cluster_gives_the_local_bytes(cluster, graph_capture):
    url, env = cluster
    tmp, topo, capture = graph_capture
    # local mode gives the reference's bytes (tests/cli/test_graph_replay.py): the reference stands for it
    _replay([topo, "-i", capture, "-o", str(tmp / "reference.jsonl")], env, tmp)
    remote = _replay([topo, "-i", capture, "-o", str(tmp / "cluster.jsonl"), "--engine", "spark", "--master", url],
                     env, tmp)
    assert "through graph" in remote.stdout
    assert remote.stderr == ""  # the driver we start logs quietly on a cluster too (no log4j banner, no WARN)
    local = (tmp / "reference.jsonl").read_bytes()
    assert local.count(b"\n") > 2000 and (tmp / "cluster.jsonl").read_bytes() == local


def test_spark_submit_of_the_replay_entry_point_runs_a_graph_on_the_cluster(cluster, graph_capture):
    url, env = cluster
    tmp, topo, capture = graph_capture
    out = tmp / "submitted"
    done = subprocess.run([os.path.join(_spark_home(), "bin", "spark-submit"), "--master", url,
                           "--conf", "spark.sql.shuffle.partitions=2",
                           spark_replay.__file__, topo, "--input", capture, "--output", str(out)],
                          env=env, cwd=tmp, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, "\n".join(line for line in done.stderr.splitlines() if " INFO " not in line)[-4000:]
    joined = tmp / "joined.jsonl"
    spark_replay.join_parts(str(out), str(joined), "jsonl")
    if not (tmp / "reference.jsonl").exists():
        _replay([topo, "-i", capture, "-o", str(tmp / "reference.jsonl")], env, tmp)
    assert joined.read_bytes() == (tmp / "reference.jsonl").read_bytes()
