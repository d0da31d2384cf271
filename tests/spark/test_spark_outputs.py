"""The file writers' joined values: built in Spark where that is plain string work, in Python
otherwise; both must give the reference joiners' JSON text."""
from __future__ import annotations

import json


TEXTS = [None, '"a"', '""', '"é ü"', '"a\\"b"', '"tab\\t"', '"</>"', "12", "-0", "0", "-7", "1.5", "1e3", "true",
         "false", '{"b":1,"a":[1,"x"]}', "[1,2]", '"12"', "12345678901234567890123"]
#: not JSON (a raw control character in a string): never built in Spark
RAW_NEWLINE = '"new\nline"'
SEPARATORS = [None, "+", "", " | ", '"', "\\", "é"]


def _reference(joiner, sep, left, right):
    from kssim.reference.model.joiners import make_joiner
    from kssim.spark_backend.runtime.inputs import json_text

    fn = make_joiner(joiner, sep if sep is not None else "+")
    return json_text(fn(None if left is None else json.loads(left), None if right is None else json.loads(right)))


def test_native_joined_values_equal_the_reference_joiners(spark):  # noqa: F811
    from pyspark.sql import functions as F

    from kssim.spark_backend.runtime.outputs import _native_joined

    rows = [(j, s, left, right) for j in ("concat", "pair") for s in SEPARATORS for left in TEXTS + [RAW_NEWLINE]
            for right in TEXTS[:8]]
    frame = spark.createDataFrame(rows, "joiner STRING, sep STRING, l STRING, r STRING")
    ok, value = _native_joined(F.col("joiner"), F.col("sep"), F.col("l"), F.col("r"))
    got = frame.select("*", ok.alias("ok"), value.alias("value")).collect()
    native = [r for r in got if r["ok"]]
    assert len(native) > len(got) // 3  # the common cases are built in Spark
    for r in native:
        assert r["value"] == _reference(r["joiner"], r["sep"], r["l"], r["r"]), r
    # what Spark leaves to Python: escapes, floats, objects, arrays, separators that need escaping
    assert not any(r["ok"] for r in got if r["l"] in ('"a\\"b"', "1.5", '{"b":1,"a":[1,"x"]}', "[1,2]", RAW_NEWLINE))
    assert not any(r["ok"] for r in got if r["joiner"] == "concat" and r["sep"] in ('"', "\\"))


def test_written_values_equal_the_reference_joiners(spark):  # noqa: F811
    """``output_frame`` end to end: native and Python values, old values, both joiners."""
    from kssim.spark_backend.runtime.outputs import OLD_JOINED, OLD_NONE, OLD_NULL, OUTPUT, EVENT_DDL, output_frame

    events, expected = [], []
    columns = [part.split()[0] for part in EVENT_DDL.split(", ")]
    i = 0
    for joiner in ("concat", "pair"):
        for left in TEXTS:
            for right in ('"x"', None, '{"k":[1.5]}'):
                for o_kind in (OLD_NONE, OLD_NULL, OLD_JOINED):
                    row = dict.fromkeys(columns)
                    row.update(etype=OUTPUT, sid=0 if joiner == "concat" else 1, task=0, idx=i, g1=i, g2=0, g3=0,
                               g4=0, f1=0, f2=b"", f3=0, key='"k"', ts=i, n_null=left is None and right is None,
                               n_l=left, n_r=right, o_kind=o_kind, o_l=right, o_r=left)
                    events.append(tuple(row[c] for c in columns))
                    value = None if row["n_null"] else _reference(joiner, " ~ ", left, right)
                    old = _reference(joiner, " ~ ", right, left) if o_kind == OLD_JOINED else None
                    expected.append((i, value, old))
                    i += 1
    configs = spark.createDataFrame([(0, "concat", " ~ ", True), (1, "pair", " ~ ", True)],
                                    "sid INT, joiner STRING, sep STRING, send_old BOOLEAN")
    out = output_frame(spark.createDataFrame(events, EVENT_DDL), configs).collect()
    assert sorted((r["input"], r["value"], r["old_value"]) for r in out) == expected


#: member names and values of flat objects: canonical ones, and the spellings that are not
_NAMES = ["a", "b", "ab", "", "é", '\\"q', "x:", "a\u2028"]
_MEMBER_VALUES = ["1", "0", "-0", '"a"', '""', "null", "true", "1.5", '"a,\\"b\\":1"', "[1]", "{}", '"x:"',
                  '"\u2028"', " 2"]


def test_flat_objects_spark_calls_canonical_are(spark):  # noqa: F811
    """``CANONICAL_FLAT_OBJECT`` (Java's regex): every text it matches is its own canonical text
    (a duplicate name, ``-0``, a float, an escape or a space is not), and plain objects match."""
    import random

    from pyspark.sql import functions as F

    from kssim.spark_backend.runtime.inputs import json_text
    from kssim.spark_backend.runtime.outputs import CANONICAL_FLAT_OBJECT

    rng = random.Random(7)
    texts = {'{"a":"\u2028","a":1}', '{"a":1,"b":2,"a":3}'}
    for _ in range(3000):
        members = [f'"{rng.choice(_NAMES)}":{rng.choice(_MEMBER_VALUES)}' for _ in range(rng.randint(0, 4))]
        texts.add("{" + ",".join(members) + "}")
    got = spark.createDataFrame([(t,) for t in sorted(texts)], "t STRING") \
        .select("t", F.col("t").rlike(CANONICAL_FLAT_OBJECT).alias("m")).collect()
    matched = {r["t"] for r in got if r["m"]}
    assert all(json_text(json.loads(t)) == t for t in matched)
    assert len(matched) > len(texts) // 10
    assert not matched & {'{"a":"\u2028","a":1}', '{"a":1,"b":2,"a":3}'}


def test_pair_of_flat_objects_is_built_in_spark(spark):  # noqa: F811
    from pyspark.sql import functions as F

    from kssim.spark_backend.runtime.outputs import _native_joined

    lefts = ['{"fk":"f1","v":"v3"}', '{"a":null,"b":-7,"c":true}', "{}", '{"a":1,"a":2}', '{"a":-0}', '{"a": 1}']
    frame = spark.createDataFrame([("pair", left, '"r"') for left in lefts], "joiner STRING, l STRING, r STRING")
    ok, value = _native_joined(F.col("joiner"), F.lit(None).cast("string"), F.col("l"), F.col("r"))
    got = {r["l"]: (r["ok"], r["value"]) for r in frame.select("l", ok.alias("ok"), value.alias("value")).collect()}
    assert {left for left, (native, _) in got.items() if native} == set(lefts[:3])
    assert all(value == _reference("pair", None, left, '"r"') for left, (native, value) in got.items() if native)
