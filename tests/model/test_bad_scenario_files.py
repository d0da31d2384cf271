"""Malformed scenario files: every command that loads one exits 2 with one message naming the file
and the place (line, record, field), on both engines, and never with a traceback."""
import json

import pytest

from kssim.reference.model.documents import MAX_NESTING
from kssim.reference.model.scenario import load_scenario
from kssim.tools.cli import main

GOOD = {
    "format": "kssim-scenario/1", "name": "t", "semantics": "3.9",
    "topology": {"operator": "stream_stream_join", "join": "inner", "window_api": "time_difference",
                 "window": {"before_ms": 10, "after_ms": 10, "grace_ms": 0}},
    "inputs": [{"topic": "left", "key": "k", "value": "A", "ts": 1}],
}
GOOD_JSON = json.dumps(GOOD)
GOOD_YAML = """format: kssim-scenario/1
name: t
semantics: "3.9"
topology:
  operator: stream_stream_join
  join: inner
  window_api: time_difference
  window: {before_ms: 10, after_ms: 10, grace_ms: 0}
inputs:
  - {topic: left, key: KEY, value: A, ts: 1}
"""


def with_input_key(yaml_scalar):
    return GOOD_YAML.replace("key: KEY", f"key: {yaml_scalar}")


def with_field(**fields):
    doc = json.loads(GOOD_JSON)
    for dotted, value in fields.items():
        obj = doc
        *parents, last = dotted.split("__")
        for p in parents:
            obj = obj[int(p)] if isinstance(obj, list) else obj[p]
        obj[last] = value
    return json.dumps(doc)


def deep_json(levels):
    return GOOD_JSON.replace('"value": "A"', '"value": ' + "[" * levels + "]" * levels)


TOO_BIG = 2 ** 63

#: (case id, file name, content (text is UTF-8), words the message must hold)
BAD_FILES = [
    ("json-nested-5000", "deep.json", deep_json(5000), ["deep.json", "line 1", f"nested more than {MAX_NESTING}"]),
    ("json-nested-300", "deep.json", deep_json(300), ["deep.json", "inputs[0].value", "nested more than"]),
    ("yaml-nested-5000", "deep.yaml", with_input_key("[" * 5000 + "]" * 5000), ["deep.yaml", "nested more than"]),
    ("utf16-bom", "u.json", GOOD_JSON.encode("utf-16"), ["u.json", "UTF-16", "UTF-8"]),
    ("utf16-le-no-bom", "u.json", GOOD_JSON.encode("utf-16-le"), ["u.json", "UTF-16 (little-endian)", "UTF-8"]),
    ("utf16-be-no-bom-yaml", "u.yaml", GOOD_YAML.encode("utf-16-be"), ["u.yaml", "UTF-16 (big-endian)"]),
    ("latin1", "l.json", GOOD_JSON.replace('"A"', '"caf\u00e9"').encode("latin-1"),
     ["l.json", "line 1, column", "not UTF-8", "0xe9"]),
    ("latin1-yaml-line", "l.yaml", with_input_key("caf\u00e9").encode("latin-1"), ["l.yaml", "line 10", "not UTF-8"]),
    ("json-duplicate-key", "d.json", GOOD_JSON.replace('"ts": 1}', '"ts": 1, "ts": 2}'),
     ["d.json", "inputs[0]", "duplicate key 'ts'"]),
    ("yaml-duplicate-key", "d.yaml", GOOD_YAML.replace("name: t\n", "name: t\nname: u\n"),
     ["d.yaml", "line 3", "duplicate key 'name'"]),
    ("yaml-NO", "y.yaml", with_input_key("NO"), ["y.yaml", "inputs[0].key", "line 10", "'NO'", "False", "quote it"]),
    ("yaml-yes", "y.yaml", with_input_key("yes"), ["inputs[0].key", "True", "quote it"]),
    ("yaml-on-key", "y.yaml", GOOD_YAML + "on: 1\n", ["y.yaml", "line 11", "on", "quote it"]),
    ("yaml-sexagesimal", "y.yaml", with_input_key("1:30"), ["inputs[0].key", "1:30", "90", "quote it"]),
    ("yaml-date", "y.yaml", with_input_key("2024-01-01"), ["inputs[0].key", "datetime.date", "quote it"]),
    ("yaml-octal-017", "y.yaml", with_input_key("017"), ["inputs[0].key", "17", "15", "quote it"]),
    ("yaml-octal-0o17", "y.yaml", with_input_key("0o17"), ["inputs[0].key", "15", "'0o17'"]),
    ("yaml-underscore", "y.yaml", with_input_key("1_000"), ["inputs[0].key", "1000", "quote it"]),
    ("yaml-binary-tag", "y.yaml", with_input_key("!!binary aGVsbG8="), ["inputs[0].key", "bytes", "no JSON value"]),
    ("yaml-set-tag", "y.yaml", with_input_key("!!set {a, b}"), ["inputs[0].key", "set", "no JSON value"]),
    ("yaml-bad-int-tag", "y.yaml", with_input_key("!!int abc"), ["line 10", "'abc' is not a valid int"]),
    ("json-nan", "n.json", GOOD_JSON.replace('"A"', "NaN"), ["n.json", "inputs[0].value", "NaN"]),
    ("yaml-alias-bomb", "b.yaml", GOOD_YAML + "x-a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"x-{n}: &{n} [{', '.join(['*' + p] * 10)}]\n" for p, n in zip("abcdef", "bcdefg")), ["b.yaml", "aliases"]),
    ("ts-beyond-long", "t.json", with_field(inputs__0__ts=TOO_BIG), ["inputs[0].ts", "Java long"]),
    ("window-size-beyond-long", "t.json", with_field(topology__window__before_ms=TOO_BIG),
     ["topology.window.before_ms", "Java long"]),
    ("grace-beyond-long", "t.json", with_field(topology__window__grace_ms=-TOO_BIG - 1),
     ["topology.window.grace_ms", "Java long"]),
    ("partitions-beyond-int", "t.json", with_field(config={"partitions": {"left": 2 ** 31, "right": 2 ** 31}}),
     ["config.partitions.left", "Java int"]),
    ("emit-interval-beyond-long", "t.json", with_field(config={"emit_interval_ms": TOO_BIG}),
     ["config.emit_interval_ms", "Java long"]),
    ("unquoted-release-yaml", "r.yaml", GOOD_YAML.replace('semantics: "3.9"', "semantics: 3.10"),
     ["semantics", "the number 3.1", "quote it"]),
    ("unknown-patch-release", "r.json", with_field(semantics="3.1.9"), ["semantics", "3.1.9", "3.1.0, 3.1.1, 3.1.2"]),
]

GAP_SESSION = json.dumps({
    "format": "kssim-scenario/1", "name": "s", "semantics": "3.9",
    "topology": {"operator": "session_aggregate", "gap_ms": TOO_BIG, "grace_ms": 0, "aggregation": "count"},
    "inputs": [{"topic": "input", "key": "k", "value": "a", "ts": 1}]})
RETENTION = json.dumps({
    "format": "kssim-scenario/1", "name": "s", "semantics": "3.9",
    "topology": {"operator": "session_aggregate", "gap_ms": 5, "grace_ms": 0, "retention_ms": TOO_BIG,
                 "aggregation": "count"},
    "inputs": [{"topic": "input", "key": "k", "value": "a", "ts": 1}]})
BAD_FILES += [
    ("window-sum-beyond-long", "t.json", with_field(topology__window__before_ms=2 ** 62, topology__window__after_ms=2 ** 62),
     ["topology.window.after_ms", "before_ms + after_ms = 9223372036854775808", "Java long"]),
    ("gap-beyond-long", "g.json", GAP_SESSION, ["topology.gap_ms", "Java long"]),
    ("retention-beyond-long", "g.json", RETENTION, ["topology.retention_ms", "Java long"]),
    ("key-lone-surrogate", "s.json", json.dumps({
        "format": "kssim-scenario/1", "name": "s", "semantics": "3.9",
        "topology": {"operator": "stream_table_join", "join": "left", "joiner": "concat"},
        "inputs": [{"topic": "left", "key": "\ud800", "value": "a", "ts": 1}]}),
     ["s.json", "inputs[0].key", "lone surrogate"]),
]


def write(folder, name, content):
    path = folder / name
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    return path


def test_the_good_files_load(tmp_path):
    assert load_scenario(write(tmp_path, "g.json", GOOD_JSON)).inputs[0].key == "k"
    assert load_scenario(write(tmp_path, "g.yaml", GOOD_YAML)).inputs[0].key == "KEY"


@pytest.mark.parametrize("name, content, words", [c[1:] for c in BAD_FILES], ids=[c[0] for c in BAD_FILES])
def test_bad_file_exits_2_naming_file_and_place_on_every_command(tmp_path, capsys, name, content, words):
    path = str(write(tmp_path, name, content))
    capture = write(tmp_path, "capture.jsonl", "")
    commands = {
        "run": ["run", path],
        "run spark": ["run", path, "--engine", "spark"],  # the loader fails before any Spark session
        "replay": ["replay", path, "-i", str(capture), "-o", str(tmp_path / "out.jsonl")],
    }
    for label, argv in commands.items():
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 2, (label, err)
        assert err.count("\n") == 1 and "Traceback" not in err, (label, err)
        for word in words:
            assert word in err, (label, word, err)
    code = main(["check", path, "--engine", "spark"])
    out = capsys.readouterr().out
    assert code == 2 and out.startswith(f"INVALID {path}: ") and all(w in out for w in words)
    assert out.splitlines()[-1].startswith("0 passed, 0 failed, 1 invalid")
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("scalar, value", [("'NO'", "NO"), ('"1:30"', "1:30"), ("true", True), ("false", False),
                                            ("null", None), ("~", None), ("0x1F", 31), ("-3", -3), ("2.5", 2.5),
                                            ("hello", "hello"), ("'2024-01-01'", "2024-01-01"), ("|\n      NO", "NO\n")])
def test_yaml_reads_unambiguous_scalars_by_the_core_schema(tmp_path, scalar, value):
    text = GOOD_YAML.replace("  - {topic: left, key: KEY, value: A, ts: 1}",
                             f"  - topic: left\n    value: A\n    ts: 1\n    key: {scalar}")
    key = load_scenario(write(tmp_path, "s.yaml", text)).inputs[0].key
    assert key == value and type(key) is type(value)


def test_a_utf8_bom_is_accepted(tmp_path):
    assert load_scenario(write(tmp_path, "b.json", b"\xef\xbb\xbf" + GOOD_JSON.encode())).name == "t"


def test_values_nested_up_to_the_limit_load(tmp_path):
    levels = MAX_NESTING - 3  # the value sits at depth 3: inputs, [0], value
    assert load_scenario(write(tmp_path, "d.json", deep_json(levels))).inputs[0].value is not None


def test_the_bundled_yaml_files_read_as_pyyaml_reads_them():
    """Files without YAML 1.1 ambiguities mean the same under both readers."""
    import glob
    import os

    import yaml

    from kssim_testing import ROOT
    from kssim.reference.model.documents import read_document

    files = glob.glob(os.path.join(ROOT, "scenarios", "**", "*.yaml"), recursive=True)
    assert files
    for path in files:
        with open(path, encoding="utf-8") as handle:
            assert read_document(path) == yaml.safe_load(handle), path


@pytest.mark.parametrize("field, value, says", [
    ("max_records", 1.5, "topology.suppress.buffer.max_records: must be an integer number of records, got 1.5"),
    ("max_bytes", "10", "topology.suppress.buffer.max_bytes: must be an integer number of bytes, got '10'"),
])
def test_a_buffer_size_is_not_called_a_duration(tmp_path, capsys, field, value, says):
    doc = {"format": "kssim-scenario/1", "name": "t", "semantics": "3.9",
           "topology": {"operator": "window_aggregate", "size_ms": 10, "grace_ms": 0,
                        "suppress": {"until": "window_close", "buffer": {field: value}}},
           "inputs": [{"topic": "input", "key": "k", "value": 1, "ts": 1}]}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert says in err and "milliseconds" not in err, err
