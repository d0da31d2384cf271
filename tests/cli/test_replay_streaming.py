"""kssim replay streams on the reference engine: outputs reach the writer while the input is still
being read, drops are counted (and listed with --drops) rather than kept, the lazy timestamp
merge of several files processes exactly what the in-memory order does, the output bytes are
today's (``render.json_line``), and the progress bar never shows when stderr is not a terminal."""
import json
import random
import signal
import subprocess
import sys
import time

import pytest
from kssim_testing import FakeTerminal

import kssim.reference.runtime.replay as replay_module
from kssim.reference.model.captures import open_captures
from kssim.reference.model.profiles import profile_for
from kssim.reference.model.record_files import OutputWriter, jsonl_bytes, load_replay_topology, orjson_writes_alike
from kssim.reference.model.records import InputRecord
from kssim.reference.model.render import json_line, output_as_json, sends_old_values
from kssim.reference.runtime.engine import OUTPUT_BATCH, processing_order, run_records, stream_processing_order
from kssim.tools.cli import main
from kssim.tools.progress import NO_PROGRESS, progress_bar, shows_progress

STREAM_TABLE = """format: kssim-scenario/1
name: st
semantics: "3.9"
topology: {operator: stream_table_join, join: inner, joiner: concat, joiner_separator: "-"}
"""
# several partitions, the pair joiner (values kept as JSON: floats, nested objects, unicode)
TABLE_TABLE = """format: kssim-scenario/1
name: tt
semantics: "%s"
topology: {operator: table_table_join, join: outer, joiner: pair}
config: {partitions: {left: 3, right: 3}}
"""


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def topology(tmp_path, text, name="topo.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def stream_table_rows(n):
    rows = []
    for i in range(n):
        if i % 4 == 0:
            rows.append({"topic": "right", "ts": i, "key": f"k{i % 7}", "value": f"t{i}"})
        else:
            rows.append({"topic": "left", "ts": i, "key": f"k{i % 7}", "value": f"s{i}"})
    return rows


# --- streaming ------------------------------------------------------------------------------------

@pytest.mark.parametrize("order", ["as_listed", "timestamp_sync"])
def test_outputs_reach_the_writer_before_the_input_is_read_to_its_end(tmp_path, monkeypatch, order):
    n = 4 * OUTPUT_BATCH
    records = write_jsonl(tmp_path / "in.jsonl", stream_table_rows(n))
    written = []
    write_many = OutputWriter.write_many

    def counting_write_many(self, batch):
        written.append(len(batch))
        write_many(self, batch)

    monkeypatch.setattr(OutputWriter, "write_many", counting_write_many)
    real_run_records = replay_module.run_records
    seen_before_last = []

    def watching_run_records(topology_, profile, config, inputs, **kwargs):
        def watched():
            for rec in inputs:
                if rec[5] == n - 1:
                    seen_before_last.append(sum(written))
                yield rec
        return real_run_records(topology_, profile, config, watched(), **kwargs)

    monkeypatch.setattr(replay_module, "run_records", watching_run_records)
    out = tmp_path / "out.jsonl"
    assert main(["replay", topology(tmp_path, STREAM_TABLE), "-i", records, "-o", str(out), "--order", order]) == 0
    assert seen_before_last and seen_before_last[0] >= OUTPUT_BATCH  # written while reading
    assert sum(written) == len(out.read_text().splitlines()) > seen_before_last[0]


def test_a_streaming_run_keeps_neither_outputs_nor_drops():
    scenario_profile = profile_for("3.9")
    scenario = load_replay_topology_text(STREAM_TABLE)
    inputs = [InputRecord("left", None if i % 3 == 0 else "k", "v", i, 0, i) for i in range(10)]
    batches, drops = [], []
    result = run_records(scenario.topology, scenario_profile, scenario.config, inputs,
                         on_outputs=lambda b: batches.append(list(b)), on_drop=lambda *d: drops.append(d))
    assert result.outputs == () and result.drops == ()
    assert [d[0] for d in drops] == [0, 3, 6, 9] and {d[1].code for d in drops} == {"null_key"}


def load_replay_topology_text(text, order="timestamp_sync"):
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as handle:
        handle.write(text)
    return load_replay_topology(handle.name, order=order)


# --- drops ----------------------------------------------------------------------------------------

def test_drops_file_lists_every_drop_and_the_summary_counts_them(tmp_path, capsys):
    rows = [{"topic": "right", "ts": 1, "key": "k", "value": "t"},
            {"topic": "left", "ts": 2, "key": None, "value": "a"},
            {"topic": "left", "partition": 0, "ts": 3, "key": "k", "value": None},
            {"topic": "left", "ts": 4, "key": "k", "value": "b"},
            {"topic": "left", "ts": 5, "key": None, "value": "c"}]
    records = write_jsonl(tmp_path / "in.jsonl", rows)
    out, drops = tmp_path / "out.jsonl", tmp_path / "drops.jsonl"
    code = main(["replay", topology(tmp_path, STREAM_TABLE), "-i", records, "-o", str(out), "--drops", str(drops)])
    assert code == 0
    assert [json.loads(line) for line in drops.read_text().splitlines()] == [
        {"input": 1, "drop": "null_key", "topic": "left", "partition": 0, "key": None},
        {"input": 2, "drop": "null_value", "topic": "left", "partition": 0, "key": "k"},
        {"input": 4, "drop": "null_key", "topic": "left", "partition": 0, "key": None}]
    assert "3 drops" in capsys.readouterr().out
    assert [json.loads(line)["value"] for line in out.read_text().splitlines()] == ["b-t"]


@pytest.mark.parametrize("clash", ["input", "output", "extension"])
def test_a_drops_file_that_would_destroy_a_file_is_refused_before_any_work(tmp_path, capsys, monkeypatch, clash):
    records = write_jsonl(tmp_path / "in.jsonl", stream_table_rows(8))
    before = open(records, "rb").read()
    out = tmp_path / "out.jsonl"
    drops = {"input": records, "output": str(out), "extension": str(tmp_path / "drops.txt")}[clash]
    monkeypatch.setattr(replay_module, "run_records", lambda *a, **k: pytest.fail("the replay ran"))
    assert main(["replay", topology(tmp_path, STREAM_TABLE), "-i", records, "-o", str(out), "--drops", drops]) == 2
    err = capsys.readouterr().err
    assert f"drops file {drops}" in err and "Traceback" not in err
    assert open(records, "rb").read() == before and not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "topo.yaml"]


# --- the lazy merge -------------------------------------------------------------------------------

def _random_inputs(rng, n, partitions):
    recs = []
    for i in range(n):
        topic = rng.choice(("left", "right"))
        recs.append(InputRecord(topic, f"k{rng.randrange(5)}", rng.randrange(100), rng.randrange(50),
                                rng.randrange(partitions), i))
    return recs


def _split(records, cuts):
    files, start = [], 0
    for cut in list(cuts) + [len(records)]:
        files.append(records[start:cut])
        start = cut
    return files


def _queue_counts(files):
    counts = []
    for f in files:
        c = {}
        for r in f:
            c[(r.partition, r.topic)] = c.get((r.partition, r.topic), 0) + 1
        counts.append(c)
    return counts


def partition_group_order(records, profile, topics=("left", "right")):
    """The oracle: each step, the queue (topic partition) with the smallest priority key, scanning
    every queue (what ``processing_order`` did before it merged lazily)."""
    queues = {}
    for rec in records:
        queues.setdefault((rec.partition, rec.topic), []).append(rec)
    heads, mono = {q: 0 for q in queues}, {q: -1 for q in queues}
    rank = {t: i for i, t in enumerate(topics)}

    def priority(q):
        recs, head = queues[q], heads[q]
        if profile.partition_choice_raw_head:
            return recs[head].ts
        if profile.partition_choice_max_head:
            return max(mono[q], recs[head].ts)
        return max(mono[q], min(r.ts for r in recs[head:]))

    out = []
    while any(heads[q] < len(queues[q]) for q in queues):
        best = min((q for q in queues if heads[q] < len(queues[q])), key=lambda q: (priority(q), q[0], rank[q[1]]))
        mono[best] = priority(best)
        out.append(queues[best][heads[best]])
        heads[best] += 1
    return out


@pytest.mark.parametrize("release", ["2.0", "2.3", "3.9"])
@pytest.mark.parametrize("bootstrap", [False, True])
def test_the_lazy_merge_of_files_is_the_in_memory_order(release, bootstrap):
    import attrs

    scenario = load_replay_topology_text(TABLE_TABLE % release)
    config = attrs.evolve(scenario.config, global_table="bootstrap" if bootstrap else None)
    profile = profile_for(release)
    rng = random.Random(7)
    for case in range(40):
        records = _random_inputs(rng, rng.randrange(1, 60), 3)
        files = _split(records, sorted(rng.sample(range(len(records) + 1), rng.randrange(0, 3))))
        if bootstrap:
            expected = [r for r in records if r.topic == "right"] + partition_group_order(
                [r for r in records if r.topic != "right"], profile)
        else:
            expected = partition_group_order(records, profile)
        assert list(processing_order(records, config, profile, ("left", "right"))) == expected
        merged = list(stream_processing_order(lambda: [iter(f) for f in files], _queue_counts(files), config,
                                              profile, ("left", "right")))
        assert merged == expected, (release, case)


def test_the_merge_reads_ahead_only_what_it_needs():
    """One file per topic partition (timestamps out of order): the merge never holds more than
    the head of each partition."""
    rng = random.Random(3)
    records = sorted(_random_inputs(rng, 2000, 2), key=lambda r: (r.topic, r.partition, r.index))
    records = [r._replace(index=i) for i, r in enumerate(records)]
    files = [[r for r in records if (r.topic, r.partition) == q] for q in
             (("left", 0), ("left", 1), ("right", 0), ("right", 1))]
    read = [0]

    def counted(f):
        for r in f:
            read[0] += 1
            yield r

    scenario = load_replay_topology_text(TABLE_TABLE % "3.9")
    ahead = []
    for done, _ in enumerate(stream_processing_order(lambda: [counted(f) for f in files], _queue_counts(files),
                                                     scenario.config, profile_for("3.9"), ("left", "right")), 1):
        ahead.append(read[0] - done)
    assert len(ahead) == 2000 and max(ahead) <= 4  # the heads of the 4 topic partitions


# --- output bytes ---------------------------------------------------------------------------------

TRICKY = ["", "é", "日本", "\U0001f600", "\u2028\u2029", "\x00\x01\x1f\x7f", '"\\/', "\n\r\t\b\f", 0, -1,
          2 ** 63 - 1, 2 ** 63, 2 ** 64 - 1, 2 ** 64, -(2 ** 63), -(2 ** 63) - 1, 10 ** 30, True, False, None,
          0.0, -0.0, 1.5, 1e16, 1e-5, 2.5e-7, 1e300, 5e-324, 123456789.125, [], {}, [1, [2.5, {"a": None}]],
          {"x": {"y": [1e22, "z"]}, "": "empty key"}, {"b": 1, "a": 2}]


@pytest.mark.parametrize("value", TRICKY, ids=repr)
def test_output_lines_are_the_bytes_of_json_line(value):
    obj = {"topic": "output", "partition": 2, "key": value, "value": [value, value], "ts": 9, "input": 3}
    assert jsonl_bytes(obj, (value, [value, value])) == (json_line(obj) + "\n").encode("utf-8")


def test_orjson_is_used_only_where_it_writes_the_same_bytes():
    assert orjson_writes_alike({"a": ["x", 1, None, True]})
    assert not orjson_writes_alike(1.5) and not orjson_writes_alike([2 ** 64]) and not orjson_writes_alike({"a": 0.1})


def _varied_capture(tmp_path):
    rng = random.Random(11)
    values = [v for v in TRICKY if v is not None and not (isinstance(v, int) and abs(v) >= 2 ** 63)] + [None]
    files = []
    for f in range(3):
        rows = []
        for i in range(150):
            rows.append({"topic": rng.choice(("left", "right")), "partition": rng.randrange(3), "ts": rng.randrange(200),
                         "key": rng.choice(["k", "é", 7, 7.0, {"id": 1}, "\u2028"]), "value": rng.choice(values)})
        files.append(write_jsonl(tmp_path / f"part{f}.jsonl", rows))
    return files


@pytest.mark.parametrize("order", ["as_listed", "timestamp_sync"])
def test_replay_output_bytes_are_the_in_memory_runs(tmp_path, order):
    files = _varied_capture(tmp_path)
    topo = topology(tmp_path, TABLE_TABLE % "3.9")
    out = tmp_path / "out.jsonl"
    assert main(["replay", topo, *sum((["-i", f] for f in files), []), "-o", str(out), "--order", order]) == 0
    scenario = load_replay_topology(topo, order=order)
    records = list(open_captures(files, None, scenario.topology, scenario.config.partitions,
                                 offsets_matter=False).records())
    result = run_records(scenario.topology, scenario.profile, scenario.config, records)
    old = sends_old_values(scenario)
    expected = "".join(json_line(output_as_json(r, old)) + "\n" for r in result.outputs)
    assert len(result.outputs) > 100
    assert out.read_bytes() == expected.encode("utf-8")


# --- progress -------------------------------------------------------------------------------------

def test_no_progress_text_when_stderr_is_not_a_terminal(tmp_path, capsys):
    records = write_jsonl(tmp_path / "in.jsonl", stream_table_rows(5000))
    assert main(["replay", topology(tmp_path, STREAM_TABLE), "-i", records, "-o", str(tmp_path / "o.jsonl")]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert captured.out.startswith("replayed ") and captured.out.count("\n") == 1


def test_the_bar_shows_on_a_terminal_unless_quiet(monkeypatch):
    terminal = FakeTerminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert shows_progress() and not shows_progress(quiet=True)
    assert progress_bar(10, "records", "replay", quiet=True) is NO_PROGRESS
    bar = progress_bar(10, "records", "replay")
    bar.update(10)
    bar.close()
    assert "replay" in terminal.text and "records" in terminal.text


def test_quiet_replay_on_a_terminal_prints_no_bar(tmp_path, monkeypatch, capsys):
    terminal = FakeTerminal()
    records = write_jsonl(tmp_path / "in.jsonl", stream_table_rows(100))
    monkeypatch.setattr("sys.stderr", terminal)
    args = ["replay", topology(tmp_path, STREAM_TABLE), "-i", records, "-o", str(tmp_path / "o.jsonl")]
    assert main(args + ["--quiet"]) == 0
    assert terminal.text == ""
    assert main(args) == 0
    assert "records" in terminal.text
    assert "records" not in capsys.readouterr().out.replace("output records", "")


def test_a_timestamp_sync_replay_leaves_no_spill_even_when_it_stops(tmp_path, capsys):
    rows = stream_table_rows(50) + [{"topic": "left", "ts": 1, "key": "k", "value": "x", "extra": 1}]
    records = write_jsonl(tmp_path / "in.jsonl", stream_table_rows(50))
    bad = write_jsonl(tmp_path / "bad.jsonl", rows)
    topo = topology(tmp_path, STREAM_TABLE)
    assert main(["replay", topo, "-i", records, "-o", str(tmp_path / "out.jsonl")]) == 0
    assert main(["replay", topo, "-i", records, "-i", bad, "-o", str(tmp_path / "out2.jsonl")]) == 2
    assert "bad.jsonl: line 51, field extra" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl", "in.jsonl", "out.jsonl", "topo.yaml"]


# --- reading in a second process (large captures) ------------------------------------------------

@pytest.fixture
def read_aside_always(monkeypatch):
    if not replay_module.can_read_aside(replay_module.READ_ASIDE_MIN):
        pytest.fail("this platform cannot fork: the replay reads in one process")
    monkeypatch.setattr(replay_module, "READ_ASIDE_MIN", 0)


@pytest.mark.parametrize("order", ["as_listed", "timestamp_sync"])
def test_reading_aside_writes_the_same_bytes(tmp_path, read_aside_always, order):
    files = _varied_capture(tmp_path)
    topo = topology(tmp_path, TABLE_TABLE % "3.9")
    aside = tmp_path / "aside.jsonl"
    assert main(["replay", topo, *sum((["-i", f] for f in files), []), "-o", str(aside), "--order", order]) == 0
    replay_module.READ_ASIDE_MIN = 10 ** 12  # monkeypatch restores it
    here = tmp_path / "here.jsonl"
    assert main(["replay", topo, *sum((["-i", f] for f in files), []), "-o", str(here), "--order", order]) == 0
    assert aside.read_bytes() == here.read_bytes() and len(here.read_bytes()) > 1000


@pytest.mark.parametrize("order", ["as_listed", "timestamp_sync"])
def test_a_bad_record_read_aside_is_reported_with_its_place(tmp_path, capsys, read_aside_always, order):
    rows = stream_table_rows(3 * OUTPUT_BATCH) + [{"topic": "left", "ts": -1, "key": "k", "value": "x"}]
    records = write_jsonl(tmp_path / "in.jsonl", rows)
    assert main(["replay", topology(tmp_path, STREAM_TABLE), "-i", records, "-o", str(tmp_path / "out.jsonl"),
                 "--order", order]) == 2
    err = capsys.readouterr().err
    assert f"in.jsonl: line {len(rows)}, field ts: must be a non-negative integer timestamp, got -1" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "topo.yaml"]


def test_skipped_topics_read_aside_are_counted(tmp_path, capsys, read_aside_always):
    rows = stream_table_rows(40) + [{"topic": "audit", "ts": 1, "key": "k", "value": "x"}] * 3
    records = write_jsonl(tmp_path / "in.jsonl", rows)
    assert main(["replay", topology(tmp_path, STREAM_TABLE), "-i", records, "-o", str(tmp_path / "out.jsonl"),
                 "--ignore-topic", "audit"]) == 0
    assert "3 records of topic audit skipped" in capsys.readouterr().out


GLOBAL_BOOTSTRAP = """format: kssim-scenario/1
name: gt
semantics: "3.9"
topology: {operator: global_table_join, join: left, key_mapper: {field: to}, joiner: pair}
config: {global_table: bootstrap, partitions: {left: 2, right: 2}}
"""


@pytest.mark.parametrize("order", ["as_listed", "timestamp_sync"])
def test_a_global_table_bootstrap_reads_the_table_first_either_way(tmp_path, read_aside_always, order):
    rng = random.Random(5)
    files = []
    for f in range(2):
        rows = []
        for i in range(200):
            if rng.random() < 0.3:
                rows.append({"topic": "right", "partition": rng.randrange(2), "ts": rng.randrange(100),
                             "key": rng.choice("abc"), "value": rng.choice(["A", "B", None])})
            else:
                rows.append({"topic": "left", "partition": rng.randrange(2), "ts": rng.randrange(100),
                             "key": f"k{i}", "value": {"to": rng.choice("abc"), "v": i}})
        files.append(write_jsonl(tmp_path / f"gt{f}.jsonl", rows))
    topo = topology(tmp_path, GLOBAL_BOOTSTRAP)
    inputs = sum((["-i", f] for f in files), [])
    aside = tmp_path / "aside.jsonl"
    assert main(["replay", topo, *inputs, "-o", str(aside), "--order", order]) == 0
    scenario = load_replay_topology(topo, order=order)
    records = list(open_captures(files, None, scenario.topology, scenario.config.partitions,
                                 offsets_matter=False).records())
    result = run_records(scenario.topology, scenario.profile, scenario.config, records)
    expected = "".join(json_line(output_as_json(r, sends_old_values(scenario))) + "\n" for r in result.outputs)
    assert len(result.outputs) > 200 and aside.read_bytes() == expected.encode("utf-8")


@pytest.mark.parametrize("order", ["as_listed", "timestamp_sync"])
def test_drops_read_aside_are_the_same(tmp_path, read_aside_always, order):
    rows = [{"topic": "left" if i % 3 else "right", "partition": i % 2, "ts": i % 50,
             "key": None if i % 7 == 0 else f"k{i % 5}", "value": None if i % 11 == 0 else f"v{i}"}
            for i in range(600)]
    records = write_jsonl(tmp_path / "in.jsonl", rows)
    topo = topology(tmp_path, STREAM_TABLE.replace('semantics: "3.9"', 'semantics: "3.9"\nconfig: {partitions: {left: 2, right: 2}}'))
    listed = {}
    for how in ("aside", "here"):
        if how == "here":
            replay_module.READ_ASIDE_MIN = 10 ** 12
        drops = tmp_path / f"drops-{how}.jsonl"
        assert main(["replay", topo, "-i", records, "-o", str(tmp_path / f"out-{how}.jsonl"), "--order", order,
                     "--drops", str(drops)]) == 0
        listed[how] = drops.read_bytes()
    assert listed["aside"] == listed["here"] and listed["here"].count(b"\n") > 50
    assert (tmp_path / "out-aside.jsonl").read_bytes() == (tmp_path / "out-here.jsonl").read_bytes()


def test_no_progress_text_from_check_when_stderr_is_not_a_terminal(tmp_path, capsys):
    import os
    import shutil

    from kssim_testing import BUNDLED

    for name in ("global-table-left-bootstrap-3.9.yaml", "stream-table-left-grace-null-key-dropped-3.6.yaml"):
        shutil.copy(os.path.join(BUNDLED, "features", name), tmp_path / name)
    assert main(["check", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "2 passed" in captured.out


def test_difftest_shows_its_bar_on_a_terminal_unless_quiet(tmp_path, monkeypatch, capsys):
    args = ["difftest", "--a", "reference@3.6", "--b", "reference@3.7", "--operator", "stream_table_join",
            "--cases", "5", "--out", str(tmp_path)]
    terminal = FakeTerminal()
    monkeypatch.setattr("sys.stderr", terminal)
    main(args)
    assert "difftest" in terminal.text and "cases" in terminal.text
    quiet_terminal = FakeTerminal()
    monkeypatch.setattr("sys.stderr", quiet_terminal)
    main(args + ["--quiet"])
    assert quiet_terminal.text == ""
    assert "stream_table_join" in capsys.readouterr().out


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_sigterm_and_sighup_stop_a_replay_cleanly(tmp_path, signum, code):
    # a capture large enough to be read in a second process and spilled beside the output
    records = write_jsonl(tmp_path / "in.jsonl", stream_table_rows(400_000))
    topo = topology(tmp_path, STREAM_TABLE)
    out = tmp_path / "out.jsonl"
    replay = subprocess.Popen([sys.executable, "-m", "kssim.tools.cli", "replay", topo, "-i", records, "-o", str(out)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    children = []
    while time.monotonic() < deadline and replay.poll() is None:
        children = _children(replay.pid)
        if children and len(list(tmp_path.iterdir())) > 3:  # the reader runs, its spill folder exists
            break
        time.sleep(0.05)
    assert replay.poll() is None, "the replay ended before it could be stopped: make the capture larger"
    assert children, "no reading process was seen"
    replay.send_signal(signum)
    _, err = replay.communicate(timeout=60)
    assert replay.returncode == code and f"stopped by {signal.Signals(signum).name}" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "topo.yaml"]  # no output, no spill
    for child in children:
        assert not _alive(child), "the reading process outlived kssim"


def _children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as handle:
            return [int(c) for c in handle.read().split()]
    except OSError:
        return []


def _alive(pid) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().split()[2] != "Z"  # a zombie has ended
    except OSError:
        return False


def test_a_replay_writes_json_lines_to_standard_output_with_o_dash(tmp_path, capsys):
    records = write_jsonl(tmp_path / "in.jsonl", stream_table_rows(8))
    topo = topology(tmp_path, STREAM_TABLE)
    file_out = tmp_path / "out.jsonl"
    assert main(["replay", topo, "-i", records, "-o", str(file_out)]) == 0
    capsys.readouterr()
    assert main(["replay", topo, "-i", records, "-o", "-"]) == 0
    captured = capsys.readouterr()
    assert captured.out.encode() == file_out.read_bytes()  # the same bytes as the file
    assert "written to standard output" in captured.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl", "topo.yaml"]
    assert main(["replay", topo, "-i", records, "-o", "-", "--engine", "spark"]) == 2
