"""Shrinking a diverging scenario: delta debugging over the scenario document.

Engine-agnostic and batched: every round builds all candidate documents first and asks the
predicate about the whole batch at once (one Spark job per round, not one per candidate). Steps,
repeated until nothing gets smaller:

1. simplify the run configuration (one partition, ``as_listed``, RocksDB) and the topology's
   optional parts (no suppress or a suppress with an unbounded buffer, no old values, default
   retention and merge separator, emit on update, no shift, tumbling windows, ``count``), each
   kept only while the divergence stays;
2. ddmin over the input records (Zeller's complement removal, granularity doubling);
3. shift timestamps down so the first is 0, and drop values to one-letter names.

A topology graph (:mod:`.graph_shrink`) is shrunk by the same loop with the graph's edits in
place of step 1's topology simplifications, inputs first (a shorter run makes every later
candidate cheaper): ddmin over the inputs, then smaller graphs (nodes dropped, the chain cut
after a node, a sink and its branch dropped), then simpler expressions, predicates, options and
values. A graph has many candidates, so they are asked about in batches of
:data:`GRAPH_BATCH`, the largest edits first, and the first that still fails is taken.
"""
from __future__ import annotations

import copy
from typing import Callable, List, Optional

from kssim.differential_tests import graph_shrink

Predicate = Callable[[List[dict]], List[bool]]
#: graph candidates asked about at once (a graph has tens of them; the first ones, the largest
#: edits, usually fail, so asking in batches saves most runs and costs a Spark engine few jobs)
GRAPH_BATCH = 16


def _first_failing(candidates: List[dict], still_fails: Predicate, batch: Optional[int] = None):
    batch = batch or max(1, len(candidates))
    for start in range(0, len(candidates), batch):
        chunk = candidates[start:start + batch]
        for doc, fails in zip(chunk, still_fails(chunk)):
            if fails:
                return doc
    return None


def _config_candidates(doc):
    out = []
    cfg = doc.get("config", {})
    if cfg.get("partitions"):
        c = copy.deepcopy(doc)
        c["config"].pop("partitions")
        for rec in c["inputs"]:
            rec.pop("partition", None)
        out.append(c)
    for field, simple in (("order", "as_listed"), ("store", "rocksdb")):
        if cfg.get(field, simple) != simple:
            c = copy.deepcopy(doc)
            c["config"][field] = simple
            out.append(c)
    return out


#: optional topology fields whose absence is the simpler (the default) topology
_OPTIONAL_FIELDS = ("suppress", "send_old_values", "retention_ms", "merge_separator", "emit", "shift_ms")
_AGGREGATIONS = ("aggregation", "left_aggregation", "right_aggregation")


def _topology_candidates(doc):
    """The document with one optional part of its topology simpler (see the module docstring)."""
    topology = doc.get("topology", {})
    out = []

    def variant(change):
        c = copy.deepcopy(doc)
        change(c["topology"])
        out.append(c)

    for field in _OPTIONAL_FIELDS:
        if field in topology:
            variant(lambda t, field=field: t.pop(field))
    if "buffer" in topology.get("suppress", {}):
        variant(lambda t: t["suppress"].pop("buffer"))
    for field in _AGGREGATIONS:
        if topology.get(field, "count") != "count":
            variant(lambda t, field=field: t.__setitem__(field, "count"))
    for window in (topology, topology.get("window", {})):
        if "advance_ms" in window and window["advance_ms"] != window.get("size_ms"):
            variant(lambda t, nested=window is not topology: (t["window"] if nested else t).pop("advance_ms"))
    return out


def _with_inputs(doc, inputs):
    c = copy.deepcopy(doc)
    c["inputs"] = inputs
    return c


def _ddmin(doc, still_fails: Predicate):
    inputs = doc["inputs"]
    n = 2
    while len(inputs) >= 2:
        size = max(1, len(inputs) // n)
        chunks = [inputs[i:i + size] for i in range(0, len(inputs), size)]
        complements = [_with_inputs(doc, [r for j, ch in enumerate(chunks) if j != i for r in ch]) for i in range(len(chunks))]
        found = _first_failing(complements, still_fails)
        if found is not None:
            doc, inputs = found, found["inputs"]
            n = max(n - 1, 2)
            continue
        if n >= len(inputs):
            break
        n = min(len(inputs), n * 2)
    return doc


def _normalise_candidates(doc):
    out = []
    low = min((r["ts"] for r in doc["inputs"]), default=0)
    if low > 0:
        c = copy.deepcopy(doc)
        for r in c["inputs"]:
            r["ts"] -= low
        out.append(c)
    return out


def shrink(doc: dict, still_fails: Predicate, max_rounds: int = 50) -> dict:
    """The smallest document found for which ``still_fails`` holds (``doc`` itself must fail)."""
    if graph_shrink.is_graph(doc):
        return _shrink_graph(doc, still_fails, max_rounds)
    for _ in range(max_rounds):
        before = (len(doc["inputs"]), repr(doc.get("config")), repr(doc["inputs"]))
        while True:
            found = _first_failing(_config_candidates(doc) + _topology_candidates(doc), still_fails)
            if found is None:
                break
            doc = found
        doc = _ddmin(doc, still_fails)
        found = _first_failing(_normalise_candidates(doc), still_fails)
        if found is not None:
            doc = found
        if (len(doc["inputs"]), repr(doc.get("config")), repr(doc["inputs"])) == before:
            return doc
    return doc


def _take_while_failing(doc, candidates_of, still_fails: Predicate) -> dict:
    while True:
        found = _first_failing(candidates_of(doc), still_fails, GRAPH_BATCH)
        if found is None:
            return doc
        doc = found


def _shrink_graph(doc: dict, still_fails: Predicate, max_rounds: int) -> dict:
    for _ in range(max_rounds):
        before = graph_shrink.size_of(doc)
        doc = _ddmin(doc, still_fails)
        doc = _take_while_failing(doc, graph_shrink.structure_candidates, still_fails)
        doc = _take_while_failing(doc, lambda d: _config_candidates(d) + graph_shrink.simplify_candidates(d),
                                  still_fails)
        found = _first_failing(_normalise_candidates(doc), still_fails)
        if found is not None:
            doc = found
        if graph_shrink.size_of(doc) == before:
            return doc
    return doc
