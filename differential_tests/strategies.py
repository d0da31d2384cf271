"""Hypothesis strategies for scenarios that hit the hard cases on purpose.

Per operator: few keys (so records collide), keys that are equal in Python but different keys to
Kafka (see :data:`KEY_POOLS`), null keys and null values, equal timestamps,
out-of-order records, records later than grace, time jumps that close windows, several partitions,
both processing orders and both store types. Each strategy draws a scenario document (format 1)
that is valid in every release it is asked for: ``ofTimeDifference*`` windows only from 3.1,
versioned tables from 3.5, stream-table grace from 3.6, ``JoinWindows#grace`` from 2.1. The
windowed operators' strategies (timestamps on the window, grace and gap edges) are in
:mod:`differential_tests.window_strategies`.
"""
from __future__ import annotations

import copy

from hypothesis import assume, strategies as st

from kssim.reference.model.errors import KssimError
from kssim.reference.model.keys import serialized_key
from kssim.reference.model.topology import OPERATOR_KINDS
from kssim.reference.model.scenario import scenario_from_dict

from kssim.differential_tests.window_strategies import WINDOWED_OPERATORS, suppress_spec, window_caps, window_scenario

KEYS = ("k1", "k2", "k3")

#: Key families whose members Python takes for one value (``==`` and ``hash`` agree: ``1 == 1.0 ==
#: True``, dicts ignore field order, ``[1] == [True]``) while Kafka, which keys everything by the
#: serialized bytes (:mod:`reference.model.keys`), sees different keys. A case draws its keys from
#: one or two families, two to four keys in all, so that the same-in-Python keys meet often. No two
#: keys of a family serialize to the same bytes (``0`` and ``0.0`` both give eight zero bytes, so
#: they are in different families): byte-ordered stores never have to break a tie between keys of
#: different types, which no real topic (one key serde) could produce.
KEY_POOLS = {
    "strings": KEYS,
    "one": (1, 1.0, True, "1"),
    "zero": (0, -0.0, False, "0"),
    "float_zero": (0.0, -0.0, False, "0.0"),
    "objects": ({"a": 1, "b": 2}, {"b": 2, "a": 1}, {"a": 1.0, "b": 2}, {"a": True, "b": 2}),
    "lists": ([1], [1.0], [True], ["1"], [1, 2]),
    "nested": ({"k": [1]}, {"k": [True]}, [{"a": 1, "b": 0}], [{"b": 0, "a": 1}]),
}
OPERATORS = tuple(OPERATOR_KINDS)  # every format-1 operator, in the model's table order
#: operators whose result is a KTable that ``KTable#suppress`` (untilTimeLimit) can follow
TABLE_SUPPRESS_OPERATORS = ("table_table_join", "fk_join")


#: operator -> the rule that brought it (operators without one exist in every modelled release)
_INTRODUCED_BY = {
    "fk_join": "foreign_key_joins",
    "global_table_join": "global_table_joins",
    "session_aggregate": "session_windows",
    "sliding_aggregate": "sliding_windows",
}


def missing_in(operator: str, profiles) -> list:
    """The releases among ``profiles`` that do not have ``operator`` (nothing to generate there),
    each named once."""
    rule = _INTRODUCED_BY.get(operator)
    missing = [p.release for p in profiles if rule is not None and not getattr(p, rule)]
    return list(dict.fromkeys(missing))


def _common(profiles):
    """Capabilities every profile in ``profiles`` has."""
    return {
        "time_difference": all(p.time_difference_windows for p in profiles),
        "legacy_grace": all(p.join_window_grace for p in profiles),
        "versioned": all(p.versioned_tables for p in profiles),
        "st_grace": all(p.stream_table_grace for p in profiles),
        "in_memory_stream_join": all(p.stream_joined_store_suppliers for p in profiles),
        "extractor_with_key": all(p.fk_extractor_with_key for p in profiles),
    }


@st.composite
def timestamps(draw, n, base=0):
    """Mostly increasing with ties, some out-of-order records, and an occasional jump."""
    out, t = [], base
    for _ in range(n):
        step = draw(st.sampled_from((0, 0, 1, 2, 3, 5, 8, -4, -10, 30, 60)))
        t = max(0, t + step)
        out.append(t)
    return out


@st.composite
def key_pool(draw):
    """Two to four non-null keys for one case: the string keys (a third of the cases), or keys
    from one or two :data:`KEY_POOLS` families, at least two from one family (a collision in
    Python), all with different serialized bytes."""
    families = sorted(KEY_POOLS)
    if draw(st.integers(0, 2)) == 0:
        return list(KEYS)
    first = draw(st.sampled_from([f for f in families if f != "strings"]))
    keys = draw(st.lists(st.sampled_from(KEY_POOLS[first]), min_size=2, max_size=3, unique_by=serialized_key))
    if len(keys) < 4 and draw(st.booleans()):
        second = draw(st.sampled_from([f for f in families if f != first]))
        keys.append(draw(st.sampled_from(KEY_POOLS[second])))
    seen = set()
    unique = []
    for key in keys:
        if serialized_key(key) not in seen:
            seen.add(serialized_key(key))
            unique.append(key)
    return unique


@st.composite
def records(draw, topics, partitions, max_records=24, null_keys=True, keys=KEYS):
    n = draw(st.integers(1, max_records))
    ts = draw(timestamps(n))
    # a fresh copy per record: no two records share a (mutable) object or list key
    keys = st.sampled_from(tuple(keys) + ((None,) if null_keys else ())).map(copy.deepcopy)
    out = []
    letters = iter("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" * 4)
    for i in range(n):
        topic = draw(st.sampled_from(topics))
        value = None if draw(st.integers(0, 6)) == 0 else next(letters)
        rec = {"topic": topic, "key": draw(keys), "value": value, "ts": ts[i]}
        if partitions > 1:
            rec["partition"] = draw(st.integers(0, partitions - 1))
        out.append(rec)
    return out


@st.composite
def config(draw, topics, in_memory=True):
    partitions = draw(st.sampled_from((1, 1, 1, 2)))
    cfg = {"order": draw(st.sampled_from(("as_listed", "as_listed", "timestamp_sync"))),
           "store": draw(st.sampled_from(("rocksdb", "in_memory") if in_memory else ("rocksdb",)))}
    if partitions > 1:
        cfg["partitions"] = {t: partitions for t in topics}
    return cfg, partitions


def _table(draw, can_version):
    if can_version and draw(st.booleans()):
        return {"versioned": True, "history_retention_ms": draw(st.sampled_from((0, 5, 20, 100)))}
    return {"versioned": False}


@st.composite
def stream_stream_topology(draw, caps):
    api = "time_difference" if caps["time_difference"] and draw(st.booleans()) else "legacy"
    before = draw(st.sampled_from((0, 2, 5, 10)))
    after = before if draw(st.integers(0, 3)) else draw(st.sampled_from((0, 3, 10)))
    if api == "time_difference":
        grace = draw(st.sampled_from((0, 0, 3, 10)))
    else:
        grace = draw(st.sampled_from((None, 0, 5))) if caps["legacy_grace"] else None
    return {"operator": "stream_stream_join", "join": draw(st.sampled_from(("inner", "left", "outer"))),
            "window_api": api, "window": {"before_ms": before, "after_ms": after, "grace_ms": grace},
            "joiner": "concat", "joiner_separator": "-"}


@st.composite
def stream_table_topology(draw, caps):
    topo = {"operator": "stream_table_join", "join": draw(st.sampled_from(("inner", "left"))),
            "joiner": "concat", "joiner_separator": "-"}
    table = _table(draw, caps["versioned"])
    if table["versioned"] and caps["st_grace"] and draw(st.booleans()):
        grace = draw(st.sampled_from((0, 3, 10)))
        table["history_retention_ms"] = max(table["history_retention_ms"], grace)
        topo["grace_ms"] = grace
    topo["table"] = table
    return topo


@st.composite
def table_table_topology(draw, caps):
    return {"operator": "table_table_join", "join": draw(st.sampled_from(("inner", "left", "outer"))),
            "left_table": _table(draw, caps["versioned"]), "right_table": _table(draw, caps["versioned"]),
            "send_old_values": draw(st.booleans()), "joiner": "concat", "joiner_separator": "-"}


@st.composite
def fk_join_topology(draw, caps):
    return {"operator": "fk_join", "join": draw(st.sampled_from(("inner", "left"))),
            "foreign_key": {"field": "fk"},
            "left_table": _table(draw, caps["versioned"]), "right_table": _table(draw, caps["versioned"]),
            "send_old_values": draw(st.booleans()), "joiner": "pair"}


@st.composite
def global_table_topology(draw, caps):
    mapper = {"field": "to"} if draw(st.integers(0, 3)) else {"from": "key"}
    return {"operator": "global_table_join", "join": draw(st.sampled_from(("inner", "left"))),
            "key_mapper": mapper, "joiner": "concat", "joiner_separator": "-"}


@st.composite
def keyed_values_records(draw, partitions, primary_keys, foreign_keys, field, max_records=24):
    """Records of a join whose left values point at right keys (an FK join's LHS, a global join's
    stream): few primary and foreign keys, so FKs change back and forth and many subscribers share
    an FK; values from a small pool, so ABA updates (v1 -> v2 -> v1, byte-identical) happen; null
    FKs, left and right deletes (null values), null keys; right records keyed by the foreign keys."""
    n = draw(st.integers(1, max_records))
    ts = draw(timestamps(n))
    pks = st.sampled_from(tuple(primary_keys) + (None,)).map(copy.deepcopy)
    fks = st.sampled_from(tuple(foreign_keys) + (None,)).map(copy.deepcopy)
    payloads = st.sampled_from(("A", "B", "C"))
    out = []
    for i in range(n):
        topic = draw(st.sampled_from(("left", "left", "right")))
        if topic == "left":
            key = draw(pks)
            value = None if draw(st.integers(0, 6)) == 0 else {field: draw(fks), "v": draw(payloads)}
        else:
            key = draw(fks)
            value = None if draw(st.integers(0, 5)) == 0 else draw(st.sampled_from(("a", "b", "c")))
        rec = {"topic": topic, "key": key, "value": value, "ts": ts[i]}
        if partitions > 1:
            rec["partition"] = draw(st.integers(0, partitions - 1))
        out.append(rec)
    return out


_FOREIGN_KEYS = ("x", "y", "z")

_TOPOLOGIES = {
    "stream_stream_join": stream_stream_topology,
    "stream_table_join": stream_table_topology,
    "table_table_join": table_table_topology,
    "fk_join": fk_join_topology,
    "global_table_join": global_table_topology,
}


@st.composite
def scenarios(draw, operator: str, profiles: tuple, max_records: int = 24, suppress: bool = False):
    """A scenario document for ``operator`` valid in every profile of ``profiles``; ``suppress``:
    table results may be suppressed (``KTable#suppress``, where every profile has it)."""
    if operator in WINDOWED_OPERATORS:
        doc = draw(window_scenario(operator, window_caps(profiles), draw(key_pool()), suppress, min(max_records, 20)))
        assume(all(_valid(doc, p.release) for p in profiles))
        return doc
    caps = _common(profiles)
    topology = draw(_TOPOLOGIES[operator](caps))
    if suppress and operator in TABLE_SUPPRESS_OPERATORS and all(p.suppress_operator for p in profiles) \
            and draw(st.integers(0, 4)) == 0:
        topology["suppress"] = draw(suppress_spec(windowed=False))
    in_memory = operator != "stream_stream_join" or caps["in_memory_stream_join"]
    cfg, partitions = draw(config(("left", "right"), in_memory))
    if operator == "fk_join":
        foreign = draw(st.sampled_from((_FOREIGN_KEYS, tuple(draw(key_pool())))))
        inputs = draw(keyed_values_records(partitions, draw(key_pool()), foreign, "fk", max_records))
    elif operator == "global_table_join":
        foreign = draw(st.sampled_from((_FOREIGN_KEYS, tuple(draw(key_pool())))))
        inputs = draw(keyed_values_records(partitions, foreign if "from" in topology["key_mapper"] else draw(key_pool()),
                                           foreign, "to", max_records))
        if draw(st.integers(0, 3)) == 0:
            cfg["global_table"] = "bootstrap"
    else:
        inputs = draw(records(("left", "right"), partitions, max_records, keys=draw(key_pool())))
    doc = {"format": "kssim-scenario/1", "name": f"{operator}-generated", "topology": topology,
           "config": cfg, "inputs": inputs}
    # whatever else a release's API rejects (the loader knows every rule) is not generated
    assume(all(_valid(doc, p.release) for p in profiles))
    return doc


def _valid(doc, release) -> bool:
    try:
        scenario_from_dict({**doc, "semantics": release})
    except KssimError:
        return False
    return True
