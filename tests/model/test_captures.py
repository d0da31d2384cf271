"""The capture readers (``reference.model.captures``): kcat -C -J, kafka-console-consumer text,
kssim JSONL and Parquet; detection, topic mapping, ignored topics, and every bad input named by
file, record and field."""
import json

import pytest

from kssim.reference.model.captures import (CaptureOptions, InputFormat, TextFormat, default_text_formats, open_captures,
                                      split_input)
from kssim.reference.model.captures.detect import detect_format
from kssim.reference.model.captures.lines import loads_strict
from kssim.reference.model.errors import KssimError, ScenarioError
from kssim.reference.model.record_files import MAX_LONG, NotJson, parse_json
from kssim.reference.model.scenario import load_topology_file

FK_TOPOLOGY = """format: kssim-scenario/1
name: fk
semantics: "3.9"
topology: {operator: fk_join, join: left, foreign_key: {field: customer}, joiner: pair}
"""
JOIN_TOPOLOGY = """format: kssim-scenario/1
name: join
semantics: "3.9"
topology: {operator: stream_stream_join, join: left, window_api: time_difference,
           window: {before_ms: 5, after_ms: 5, grace_ms: 0}, joiner: concat}
"""
SUM_TOPOLOGY = """format: kssim-scenario/1
name: sum
semantics: "3.9"
topology: {operator: window_aggregate, size_ms: 10, grace_ms: 0, aggregation: sum}
"""


def topology(tmp_path, text=JOIN_TOPOLOGY):
    path = tmp_path / "topo.yaml"
    path.write_text(text)
    return load_topology_file(str(path)).topology


def write(tmp_path, name, text, mode="w"):
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return str(path)


def kcat_line(**fields):
    envelope = {"topic": "left", "partition": 0, "offset": 0, "tstype": "create", "ts": 10, "broker": 1,
                "key": "k", "payload": "1"}
    envelope.update(fields)
    return json.dumps({k: v for k, v in envelope.items() if v is not DROP}) + "\n"


DROP = object()


def read(paths, options=None, topo=None, **kwargs):
    return list(open_captures(paths, options or CaptureOptions(), topo, **kwargs).records())


def error_of(paths, options=None, topo=None, **kwargs) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        read(paths, options, topo, **kwargs)
    return info.value


# --- kcat -C -J ------------------------------------------------------------------------------------

def test_kcat_records_with_mapped_topics_and_text_values(tmp_path):
    path = write(tmp_path, "all.json",
                 kcat_line(topic="orders", headers=["trace", "abc", "empty", None], key="o1", payload="5")
                 + kcat_line(topic="customers", offset=0, tstype="logappend", ts=11, key="c1", payload=None)
                 + kcat_line(topic="orders", offset=1, ts=12, key=None, payload="x y", headers=DROP))
    options = CaptureOptions(topics={"left": "orders", "right": "customers"})
    recs = read([path], options)
    assert [(r.topic, r.key, r.value, r.ts, r.partition, r.index) for r in recs] == [
        ("left", "o1", "5", 10, 0, 0), ("right", "c1", None, 11, 0, 1), ("left", None, "x y", 12, 0, 2)]


def test_kcat_json_values_and_deserialized_payloads(tmp_path):
    path = write(tmp_path, "c.json", kcat_line(payload='{"customer": "c1", "n": 2}')
                 + kcat_line(offset=1, payload={"customer": "c2"}, value_schema_id=7, headers={"h": ["1"]}))
    recs = read([path], CaptureOptions(value_format=TextFormat.JSON))
    assert [r.value for r in recs] == [{"customer": "c1", "n": 2}, {"customer": "c2"}]


@pytest.mark.parametrize("fields, where, says", [
    ({"payload_error": "Invalid magic byte", "payload": None}, "line 2, field payload", "could not deserialize"),
    ({"key_error": "bad schema", "key": None}, "line 2, field key", "could not deserialize the key"),
    ({"tstype": DROP, "ts": DROP}, "line 2, field ts", "no timestamp"),
    ({"tstype": "unknown", "ts": 0}, "line 2, field ts", "no timestamp"),
    ({"ts": MAX_LONG + 1}, "line 2, field ts", "non-negative integer timestamp"),
    ({"ts": -1}, "line 2, field ts", "non-negative integer timestamp"),
    ({"offset": MAX_LONG + 1}, "line 2, field offset", "non-negative integer"),
    ({"partition": DROP}, "line 2, field partition", "missing field"),
    ({"flags": 3}, "line 2, field flags", "unknown kcat field"),
    ({"payload": "{oops"}, "line 2, field payload", "not valid JSON"),
    ({"payload": 5}, "line 2, field payload", "bytes as text"),
    ({"topic": "elsewhere"}, "line 2, field topic", "--ignore-topic elsewhere"),
])
def test_kcat_bad_records_name_file_line_and_field(tmp_path, fields, where, says):
    path = write(tmp_path, "c.json", kcat_line(offset=0) + kcat_line(**{"offset": 1, **fields}))
    err = error_of([path], CaptureOptions(value_format=TextFormat.JSON))
    assert (err.path, err.where) == (path, where) and says in err.message


def test_a_value_that_is_not_json_suggests_reading_it_as_text(tmp_path):
    path = write(tmp_path, "c.json", kcat_line(payload="plain words"))
    err = error_of([path], CaptureOptions(value_format=TextFormat.JSON))
    assert "--value-format string" in err.message and "plain words" in err.message


# --- kafka-console-consumer --------------------------------------------------------------------------

def test_console_with_every_printed_field(tmp_path):
    path = write(tmp_path, "orders.txt",
                 "CreateTime:10\tPartition:1\tOffset:7\tNO_HEADERS\tk1\t{\"customer\": \"c1\"}\n"
                 "LogAppendTime:11\tPartition:0\tOffset:3\th:1,g:2\tnull\tnull\n")
    recs = read(["left=" + path], CaptureOptions(), None, partitions={"left": 2})
    assert [(r.topic, r.partition, r.key, r.value, r.ts) for r in recs] == [
        ("left", 1, "k1", '{"customer": "c1"}', 10), ("left", 0, None, None, 11)]


def test_console_topic_from_the_file_name_and_a_value_holding_the_separator(tmp_path):
    path = write(tmp_path, "orders.log", "CreateTime:5\tk\ta\tb\n\n")
    recs = read([path], CaptureOptions(topics={"left": "orders"}))
    assert [(r.topic, r.key, r.value, r.ts, r.partition) for r in recs] == [("left", "k", "a\tb", 5, 0)]


def test_console_key_separator_headers_flag_and_json_values(tmp_path):
    path = write(tmp_path, "left.txt", "CreateTime:5|Offset:0|trace:1|k|[1, 2]\nCreateTime:6|Offset:1|NO_HEADERS|j|3\n")
    options = CaptureOptions(console_key_separator="|", console_headers=True, value_format=TextFormat.JSON)
    assert [(r.key, r.value) for r in read([path], options)] == [("k", [1, 2]), ("j", 3)]


@pytest.mark.parametrize("text, where, says", [
    ("CreateTime:1\tk\t1\nNO_TIMESTAMP\tk\t1\n", "line 2, field timestamp", "no timestamp (NO_TIMESTAMP)"),
    ("CreateTime:1\tk\t1\nCreateTime:x\tk\t1\n", "line 2, field timestamp", "expected CreateTime:N"),
    (f"CreateTime:1\tk\t1\nCreateTime:{MAX_LONG + 1}\tk\t1\n", "line 2, field timestamp", "Java long"),
    ("CreateTime:1\tk\t1\nCreateTime:2\tjust-a-value\n", "line 2, field key", "print.key=true"),
    ("CreateTime:1\tPartition:0\tk\t1\nCreateTime:2\tk\t1\n", "line 2, field partition", "Partition:N"),
    ("CreateTime:1\tOffset:0\tk\t1\nCreateTime:2\tOffset:-4\tk\t1\n", "line 2, field offset", "Java long"),
    ("CreateTime:1\tk\t1\nCreateTime:2\tNO_HEADERS\tk\t1\n", "line 2, field headers", "--console-headers"),
    ("CreateTime:1\tk\t1\nCreateTime:2\tk\t{x\n", "line 2, field value", "not valid JSON"),
])
def test_console_bad_lines_name_line_and_field(tmp_path, text, where, says):
    path = write(tmp_path, "left.txt", text)
    err = error_of([path], CaptureOptions(value_format=TextFormat.JSON))
    assert (err.path, err.where) == (path, where) and says in err.message


def test_console_without_timestamps_says_how_to_capture(tmp_path):
    path = write(tmp_path, "left.txt", "k\tv\n")
    err = error_of([path], CaptureOptions(input_format=InputFormat.CONSOLE))
    assert err.where == "line 1, field timestamp" and "--property print.timestamp=true" in err.message
    err = error_of([path])  # auto: no format fits the first line
    assert err.where == "line 1" and "print.timestamp=true" in err.message and "--input-format" in err.message


# --- kssim JSONL and Parquet ------------------------------------------------------------------------

def test_jsonl_records_are_read_as_before(tmp_path):
    path = write(tmp_path, "in.jsonl", '{"topic":"left","ts":1,"key":"a:b","value":{"x":"1:2"}}\n\n'
                                       '{"topic":"right","partition":0,"offset":4,"ts":2,"key":null,"value":[1]}\n')
    recs = read([path])
    assert [(r.topic, r.key, r.value, r.index) for r in recs] == [("left", "a:b", {"x": "1:2"}, 0),
                                                                  ("right", None, [1], 1)]


@pytest.mark.parametrize("line, says", [
    ('{"topic":"left","ts":1,"key":"k","value":{"x":1,"x":2}}', "repeated object key 'x'"),
    ('{"topic":"left","ts":1,"key":"a:b","value":{"x":1,"x":2}}', "repeated object key 'x'"),  # a colon in a string
    ('{"topic":"left","ts":1,"key":"\\u003a","value":{"x":1,"x":2}}', "repeated object key 'x'"),  # an escaped one
    ('{"topic":"left","ts":1,"ts":1,"key":"k","value":1}', "repeated object key 'ts'"),
    ('{"topic":"left","ts":1,"key":"k","value":' + "[" * 100000 + "]" * 100000 + "}", "nested deeper than"),
    ('{"topic":"left","ts":1,"key":"k","value":NaN}', "NaN is not a JSON value"),
    ('{"topic":"left","ts":1,"key":"\\ud800","value":1}', "lone surrogate"),
    ('{"topic":"left","ts":1,"key":"k","value":{"\\uDC00":1}}', "lone surrogate"),
])
def test_jsonl_strict_json_on_the_fast_path(tmp_path, line, says):
    path = write(tmp_path, "in.jsonl", line + "\n")
    err = error_of([path])
    assert err.where == "line 1" and says in err.message


def test_integers_beyond_64_bits_stay_integers(tmp_path):
    path = write(tmp_path, "in.jsonl", '{"topic":"left","ts":18446744073709551616,"key":"k","value":1}\n')
    err = error_of([path])
    assert err.where == "line 1, field ts" and "18446744073709551616" in err.message


@pytest.mark.parametrize("text", [
    '{"a":1}', '{"a:":"b:","c":{"d":[1,{"e":"::"}]}}', '{"a":1,"a":2}', '{"a":{"b":1},"c":{"b":2,"b":3}}',
    '{"\\u003a":1,"\\u003a":2}', '{"x":"\\u003a","y":1,"y":2}', "[1e400]", "18446744073709551616",
    '"\\ud800"', '{"k":"\\ud800:","k":1}', "[1.5, -0, 2E3]", "NaN", "[Infinity]", "1 2", "", '{"a":1}{}',
    '{"a" : 1, "b" :2}', "\ufeff1", "[" * 600 + "]" * 600, '"a\tb"',
])
def test_the_fast_parser_agrees_with_the_strict_one(text):
    def outcome(parse, arg):
        try:
            value = parse(arg)
        except NotJson:
            return "NotJson"
        return json.dumps(value), repr(value)

    assert outcome(loads_strict, text) == outcome(parse_json, text)
    assert outcome(loads_strict, text.encode("utf-8", "surrogatepass")) == outcome(parse_json, text)


def test_parse_json_refuses_deep_nesting_without_recursion_error():
    with pytest.raises(NotJson, match="nested deeper than"):
        parse_json("[" * 100000)
    assert parse_json('"' + "[" * 2000 + '"') == "[" * 2000  # brackets inside a string are text


def parquet_file(tmp_path, rows, name="in.parquet"):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / name
    pq.write_table(pa.Table.from_pylist(rows), path)
    return str(path)


def test_parquet_records_and_a_truncated_file(tmp_path):
    path = parquet_file(tmp_path, [{"topic": "left", "ts": i, "key": '"k"', "value": str(i)} for i in range(3)])
    assert [(r.key, r.value, r.index) for r in read([path])] == [("k", 0, 0), ("k", 1, 1), ("k", 2, 2)]
    data = open(path, "rb").read()
    cut = write(tmp_path, "cut.parquet", data[: len(data) // 2])
    err = error_of([cut])
    assert err.path == cut and "truncated or damaged" in err.message


# --- encodings -------------------------------------------------------------------------------------

@pytest.mark.parametrize("data, where, says", [
    ('{"topic":"left","ts":1,"key":"k","value":1}\n'.encode("utf-16"), "line 1", "UTF-16"),
    ('{"topic":"left","ts":1,"key":"k","value":1}\n'.encode("utf-16-le"), "line 1", "NUL bytes"),
    (b'\xef\xbb\xbf{"topic":"left","ts":1,"key":"k","value":1}\n', "line 1", "byte-order mark"),
    (b'{"topic":"left","ts":1,"key":"k","value":1}\n{"topic":"left","ts":2,"key":"\xe9","value":1}\n', "line 2",
     "not UTF-8"),
    (b"CreateTime:1\tk\tv\nCreateTime:2\tk\t\xff\n", "line 2", "not UTF-8"),
    (kcat_line().encode() + b'{"topic":"left","partition":0,"offset":1,"tstype":"create","ts":1,"key":"\xc3",'
                            b'"payload":"v"}\n', "line 2", "not UTF-8"),
])
def test_files_that_are_not_utf8_are_errors_naming_the_line(tmp_path, data, where, says):
    path = write(tmp_path, "left.txt", data)
    err = error_of([path])
    assert (err.path, err.where) == (path, where) and says in err.message


# --- detection and folders ---------------------------------------------------------------------------

def test_formats_are_detected_from_the_content(tmp_path):
    assert detect_format(write(tmp_path, "a.txt", "\n" + kcat_line())) is InputFormat.KCAT
    assert detect_format(write(tmp_path, "b.txt", '{"topic":"left","ts":1,"key":1,"value":1}\n')) is InputFormat.JSONL
    assert detect_format(write(tmp_path, "c.json", "LogAppendTime:1\tk\tv\n")) is InputFormat.CONSOLE
    assert detect_format(write(tmp_path, "d", "NO_TIMESTAMP\tk\tv\n")) is InputFormat.CONSOLE
    assert detect_format(parquet_file(tmp_path, [{"topic": "left", "ts": 1, "key": "1", "value": "1"}],
                                      name="e.bin")) is InputFormat.PARQUET
    assert detect_format(write(tmp_path, "f.jsonl", "\n  \n")) is None


def test_a_forced_format_is_used(tmp_path):
    path = write(tmp_path, "left.txt", kcat_line())
    err = error_of([path], CaptureOptions(input_format=InputFormat.JSONL))
    assert err.where == "line 1, field tstype"  # read as a kssim record: kcat's fields are unknown there


def test_a_folder_is_its_files_in_name_order_in_one_format(tmp_path):
    folder = tmp_path / "cap"
    folder.mkdir()
    write(folder, "b.json", kcat_line(offset=1, ts=20))
    write(folder, "a.json", kcat_line(offset=0, ts=10))
    write(folder, "_SUCCESS", "")
    captures = open_captures([str(folder)], CaptureOptions(), None)
    assert [s.path.rsplit("/", 1)[1] for s in captures.sources] == ["a.json", "b.json"]
    assert [r.ts for r in captures.records()] == [10, 20]
    write(folder, "c.jsonl", '{"topic":"left","ts":1,"key":1,"value":1}\n')
    err = error_of([str(folder)])
    assert err.path == str(folder) and "mixes capture formats" in err.message and "c.jsonl is jsonl" in err.message


def test_sources_are_counted_up_front_and_numbered_across_files(tmp_path):
    one = write(tmp_path, "one.json", kcat_line() + "\n" + kcat_line(offset=1))
    two = write(tmp_path, "right.txt", "CreateTime:1\tk\tv\n")
    captures = open_captures([one, two], CaptureOptions(), None)
    assert [(s.format, s.topic, s.count, s.first_index) for s in captures.sources] == [
        (InputFormat.KCAT, None, 2, 0), (InputFormat.CONSOLE, "right", 1, 2)]
    assert captures.total == 3
    assert [(r.topic, r.index) for r in captures.records_of(captures.sources[1])] == [("right", 2)]


def test_missing_files_and_topic_prefixes_on_formats_that_name_topics(tmp_path):
    err = error_of([str(tmp_path / "nope.json")])
    assert "no such file" in err.message
    path = write(tmp_path, "c.json", kcat_line())
    err = error_of(["left=" + path])
    assert "TOPIC=PATH names the topic of a console capture" in err.message
    assert split_input("left=" + path) == ("left", path) and split_input(path) == (None, path)


# --- topics ------------------------------------------------------------------------------------------

def test_ignored_topics_and_the_output_topic_are_skipped_and_keep_their_numbers(tmp_path):
    path = write(tmp_path, "all.json", kcat_line(topic="audit") + kcat_line(topic="orders", offset=1)
                 + kcat_line(topic="enriched", offset=2) + kcat_line(topic="orders", offset=3))
    options = CaptureOptions(topics={"left": "orders", "output": "enriched"}, ignore_topics=frozenset({"audit"}))
    captures = open_captures([path], options, None)
    assert [(r.topic, r.index) for r in captures.records()] == [("left", 1), ("left", 3)]
    assert captures.ignored == {"audit": 1, "enriched": 1}
    # reading the output for diff: the inputs are skipped
    captures = open_captures([path], options, None, reading="output")
    assert [(r.topic, r.index) for r in read_all(captures)] == [("output", 2)]
    assert captures.ignored == {"audit": 1, "orders": 2}


def read_all(captures):
    return list(captures.records())


@pytest.mark.parametrize("options, says", [
    (CaptureOptions(topics={"middle": "x"}), "the topology has no topic 'middle'"),
    (CaptureOptions(topics={"left": "x", "right": "x"}), "both read captured topic 'x'"),
    (CaptureOptions(topics={"left": "orders"}, ignore_topics=frozenset({"orders"})), "the topology reads that topic"),
    (CaptureOptions(value_format=TextFormat.JSON), "apply to kcat and console captures"),
])
def test_bad_capture_options(tmp_path, options, says):
    path = write(tmp_path, "in.jsonl", '{"topic":"left","ts":1,"key":1,"value":1}\n')
    with pytest.raises(KssimError) as info:
        read([path], options)
    assert says in str(info.value)


def test_an_unknown_topic_names_file_line_and_topic(tmp_path):
    path = write(tmp_path, "in.jsonl", '{"topic":"left","ts":1,"key":1,"value":1}\n'
                                       '{"topic":"payments","ts":1,"key":1,"value":1}\n')
    err = error_of([path])
    assert (err.path, err.where) == (path, "line 2, field topic")
    assert "'payments'" in err.message and "--topic left=payments" in err.message
    assert "--ignore-topic payments" in err.message


def test_captured_names_can_swap_topology_names(tmp_path):
    path = write(tmp_path, "in.jsonl", '{"topic":"left","ts":1,"key":1,"value":1}\n'
                                       '{"topic":"payments","ts":1,"key":1,"value":1}\n')
    recs = read([path], CaptureOptions(topics={"left": "payments", "right": "left"}))
    assert [(r.topic, r.index) for r in recs] == [("right", 0), ("left", 1)]


# --- formats the topology needs ------------------------------------------------------------------------

def test_default_formats_follow_what_the_topology_reads(tmp_path):
    def formats(text):
        return {topic: fmts[:2] for topic, fmts in default_text_formats(topology(tmp_path, text)).items()}

    string, json_ = TextFormat.STRING, TextFormat.JSON
    assert formats(JOIN_TOPOLOGY) == {"left": (string, string), "right": (string, string), "output": (string, string)}
    assert formats(FK_TOPOLOGY) == {"left": (string, json_), "right": (string, string), "output": (string, json_)}
    assert formats(SUM_TOPOLOGY) == {"input": (string, json_), "output": (string, json_)}
    assert "'customer'" in default_text_formats(topology(tmp_path, FK_TOPOLOGY))["left"][2]


def test_formats_per_topic_from_the_options(tmp_path):
    path = write(tmp_path, "c.json", kcat_line(key="1", payload="[1]") + kcat_line(topic="right", key="2", payload="[2]"))
    recs = read([path], CaptureOptions(value_format={"right": TextFormat.JSON}, key_format=TextFormat.JSON))
    assert [(r.key, r.value) for r in recs] == [(1, "[1]"), (2, [2])]
    with pytest.raises(KssimError, match="the topology has no topic .middle. .its topics: left, right, output"):
        read([path], CaptureOptions(value_format={"middle": TextFormat.JSON}))


def test_an_fk_capture_is_read_as_json_and_checked_by_the_extractor(tmp_path):
    topo = topology(tmp_path, FK_TOPOLOGY)
    path = write(tmp_path, "c.json", kcat_line(payload='{"customer": "c1"}') + kcat_line(offset=1, payload='{"x": 1}'))
    err = error_of([path], CaptureOptions(), topo)
    assert err.where == "line 2, field value.customer"
    path = write(tmp_path, "c.json", kcat_line(payload='{"customer": "c1"}'))
    assert read([path], CaptureOptions(), topo)[0].value == {"customer": "c1"}


def test_a_second_pass_reads_the_same_records_without_offset_checks(tmp_path):
    path = write(tmp_path, "c.json", kcat_line(offset=5) + kcat_line(offset=3))
    captures = open_captures([path], CaptureOptions(), None, offsets_matter=False)
    again = captures.reopened(offsets_matter=True)
    assert again.sources is captures.sources
    assert [r.index for r in captures.records()] == [0, 1]
    err = error_of_records(again)
    assert err.where == "line 2, field offset" and "comes after offset 5" in err.message


def error_of_records(captures) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        list(captures.records())
    return info.value


def test_a_named_folder_of_console_files(tmp_path):
    folder = tmp_path / "orders"
    folder.mkdir()
    write(folder, "part-0.txt", "CreateTime:1\tPartition:0\ta\t1\n")
    write(folder, "part-1.txt", "CreateTime:2\tPartition:1\tb\t2\n")
    recs = read(["left=" + str(folder)], CaptureOptions(), None, partitions={"left": 2})
    assert [(r.topic, r.partition, r.key, r.index) for r in recs] == [("left", 0, "a", 0), ("left", 1, "b", 1)]


def _json_texts():
    """JSON texts written by hand: objects may repeat keys, strings hold ``:`` (plain or escaped
    as ``\\u003a``), integers run past 64 bits."""
    from hypothesis import strategies as st

    def string(text, escape_colons):
        body = json.dumps(text)[1:-1]
        return '"' + (body.replace(":", "\\u003a") if escape_colons else body) + '"'

    strings = st.builds(string, st.text(alphabet="ab:é\"\\", max_size=4), st.booleans())
    scalars = st.one_of(st.integers(min_value=-(1 << 70), max_value=1 << 70).map(str), strings,
                        st.sampled_from(["null", "true", "1.5", "-0", "2e3"]))

    def containers(children):
        arrays = st.lists(children, max_size=3).map(lambda items: "[" + ",".join(items) + "]")
        objects = st.lists(st.tuples(st.sampled_from(['"a"', '"b"', '"a:"', '"\\u003a"']), children), max_size=3) \
            .map(lambda pairs: "{" + ",".join(f"{k}:{v}" for k, v in pairs) + "}")
        return st.one_of(arrays, objects)

    return st.recursive(scalars, containers, max_leaves=8)


def test_the_fast_parser_agrees_with_the_strict_one_on_generated_texts():
    from hypothesis import given, settings

    @settings(max_examples=400, deadline=None, derandomize=True)
    @given(_json_texts())
    def agree(text):
        test_the_fast_parser_agrees_with_the_strict_one(text)

    agree()


def test_a_console_capture_of_the_output_topic_for_diff(tmp_path):
    path = write(tmp_path, "enriched.txt", 'CreateTime:5\tPartition:0\tk\t["A", "a"]\nCreateTime:6\tPartition:0\tj\tnull\n')
    captures = open_captures([path], CaptureOptions(topics={"output": "enriched"}), topology(tmp_path, FK_TOPOLOGY),
                             reading="output")
    assert [(r.topic, r.key, r.value, r.ts) for r in captures.records()] == [("output", "k", ["A", "a"], 5),
                                                                              ("output", "j", None, 6)]


@pytest.mark.parametrize("argv, complaint", [
    (["--console-key-separator", ""], "--console-key-separator '': the separator cannot be empty"),
    (["--topic", "left"], "--topic left: expected TOPOLOGY_TOPIC=CAPTURED_TOPIC"),
    (["--topic", "left=a", "--topic", "left=b"], "--topic left=b: topic left is already mapped to a"),
])
def test_capture_options_that_cannot_be_meant_are_refused(argv, complaint):
    import argparse

    from kssim.reference.model.captures.options import add_capture_options, capture_options_from

    parser = argparse.ArgumentParser()
    add_capture_options(parser)
    with pytest.raises(KssimError, match=complaint.replace("(", r"\(")):
        capture_options_from(parser.parse_args(argv))


def test_the_console_separator_is_read_with_escapes():
    import argparse

    from kssim.reference.model.captures.options import add_capture_options, capture_options_from

    parser = argparse.ArgumentParser()
    add_capture_options(parser)
    assert capture_options_from(parser.parse_args([])).console_key_separator == "\t"
    assert capture_options_from(parser.parse_args(["--console-key-separator", "|"])).console_key_separator == "|"
    assert capture_options_from(parser.parse_args(["--console-key-separator", "\\t"])).console_key_separator == "\t"
