"""Hypothesis strategies for scenarios that hit the hard cases on purpose.

Per operator: few keys (so records collide), null keys and null values, equal timestamps,
out-of-order records, records later than grace, time jumps that close windows, several partitions,
both processing orders and both store types. Each strategy draws a scenario document (format 1)
that is valid in every release it is asked for: ``ofTimeDifference*`` windows only from 3.1,
versioned tables from 3.5, stream-table grace from 3.6, ``JoinWindows#grace`` from 2.1.
"""
from __future__ import annotations

from hypothesis import assume, strategies as st

from reference.model.errors import KssimError
from reference.model.scenario import scenario_from_dict

KEYS = ("k1", "k2", "k3")
OPERATORS = ("stream_stream_join", "stream_table_join", "table_table_join")


def _common(profiles):
    """Capabilities every profile in ``profiles`` has."""
    return {
        "time_difference": all(p.time_difference_windows for p in profiles),
        "legacy_grace": all(p.join_window_grace for p in profiles),
        "versioned": all(p.versioned_tables for p in profiles),
        "st_grace": all(p.stream_table_grace for p in profiles),
        "in_memory_stream_join": all(p.stream_joined_store_suppliers for p in profiles),
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
def records(draw, topics, partitions, max_records=24, null_keys=True):
    n = draw(st.integers(1, max_records))
    ts = draw(timestamps(n))
    keys = st.sampled_from(KEYS + ((None,) if null_keys else ()))
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


_TOPOLOGIES = {
    "stream_stream_join": stream_stream_topology,
    "stream_table_join": stream_table_topology,
    "table_table_join": table_table_topology,
}


@st.composite
def scenarios(draw, operator: str, profiles: tuple, max_records: int = 24):
    """A scenario document for ``operator`` valid in every profile of ``profiles``."""
    caps = _common(profiles)
    topology = draw(_TOPOLOGIES[operator](caps))
    in_memory = operator != "stream_stream_join" or caps["in_memory_stream_join"]
    cfg, partitions = draw(config(("left", "right"), in_memory))
    inputs = draw(records(("left", "right"), partitions, max_records))
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
