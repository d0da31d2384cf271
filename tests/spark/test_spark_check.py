"""``kssim check --engine spark`` on a folder: one Spark job for the runnable scenarios; an invalid
file and a scenario the backend cannot run are reported and the check goes on."""
import glob
import os
import shutil

from kssim.tools.cli import main

from kssim_testing import CONFORMANCE, CONFORMANCE_GRAPHS, ROOT

LEFT_31 = os.path.join(CONFORMANCE, "seeds", "seed-stream-stream-left-3.1.json")
INTERLEAVED = os.path.join(ROOT, "scenarios", "features", "fk-inner-stale-hash-response-dropped-3.9.yaml")


def test_spark_check_reports_invalid_and_skipped_files_and_goes_on(spark, tmp_path, capsys):
    shutil.copy(LEFT_31, tmp_path / "a.json")
    shutil.copy(INTERLEAVED, tmp_path / "b.yaml")  # interleaved delivery: the reference engine's alone
    (tmp_path / "c.yaml").write_text("format: kssim-scenario/1\nname: c\nsemantics: 3.1.9\n")
    code = main(["check", str(tmp_path), "--engine", "spark"])
    out = capsys.readouterr().out
    assert code == 2
    assert f"PASS seed-stream-stream-left-3.1 ({tmp_path / 'a.json'})" in out
    assert f"({tmp_path / 'b.yaml'}): interleaved delivery is not supported by engine spark" in out
    # invalid files are reported as they are loaded, before the one Spark job
    assert [line.split()[0] for line in out.splitlines()] == ["INVALID", "PASS", "SKIP", "1"]
    assert f"INVALID {tmp_path / 'c.yaml'}: semantics:" in out and "3.1.0, 3.1.1, 3.1.2" in out
    assert out.splitlines()[-1].startswith("1 passed, 0 failed, 1 invalid, 1 skipped (not supported by engine spark)")


def test_spark_checks_topology_graphs_with_and_without_record_caches(tmp_path, capsys):
    graph = os.path.join(ROOT, "scenarios", "cookbook", "13-orders-per-customer-3.9.yaml")
    assert main(["check", graph, "--engine", "spark"]) == 0
    assert "PASS cookbook-13-orders-per-customer-3.9" in capsys.readouterr().out
    cached = sorted(glob.glob(os.path.join(CONFORMANCE_GRAPHS, "kafka-oracle", "caching", "*.json")))[0]
    assert main(["check", cached, "--engine", "spark"]) == 0  # record caches run on Spark (cache_stage)
    assert "PASS graph-caching" in capsys.readouterr().out


REFUSED_GRAPH = """\
format: kssim-scenario/1
name: same-table-both-sides
semantics: "3.9"
topology:
  graph:
    - {table: t1, id: l}
    - {from: l, map_values: {field: r}, id: r}
    - {from: l, join: {other: r, foreign_key: {field: fk}}}
    - {to_stream: {}}
    - {to: out}
inputs:
  - {topic: t1, key: k, value: {fk: k, r: 1}, ts: 1}
expected:
  - {topic: out, key: k, value: [{fk: k, r: 1}, 1], ts: 1}
"""


def test_spark_check_skips_a_graph_it_refuses_and_says_why(tmp_path, capsys):
    """A graph shape the Spark backend does not run exactly (here an FK join whose two sides are
    one table) is a SKIP naming the node and the reason, exit 1 (0 with --allow-skip); the
    reference engine checks the same file."""
    path = tmp_path / "refused.yaml"
    path.write_text(REFUSED_GRAPH)
    assert main(["check", str(path), "--engine", "spark"]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"SKIP same-table-both-sides ({path}): ")
    assert "graph node topology.graph[2] (join: foreign-key join)" in out and "reaches both of its sides" in out
    assert main(["check", str(path), "--engine", "spark", "--allow-skip"]) == 0
    capsys.readouterr()
    assert main(["check", str(path)]) == 0
    assert "PASS same-table-both-sides" in capsys.readouterr().out
