"""Shrink candidates for topology graphs: the same document with a smaller or simpler graph.

Every candidate is an edit of the node list in its explicit form (every node with an id, every
non-source node with a ``from``: :func:`graph_strategies.explicit`), followed by a clean-up that
keeps the document self-consistent: nodes no sink depends on are removed (a branch whose sink
went), and so are the inputs of topics no source reads any more; the graph is then written back
in the spec's compact form. Whether a candidate is *valid* (kinds, windowed keys, release
checks) is the loader's to say: the shrinker's predicate asks it first, so an edit the kinds do
not allow (a ``to_stream`` reattached to a stream) is simply not taken.

The edits, from the largest to the smallest (:func:`structure_candidates`, then
:func:`simplify_candidates`):

- **drop nodes**: a node, or the chain from it up to (not including) one of its ancestors (up to
  four nodes: a ``group_by``/``windowed_by``/aggregation production, a ``to_stream`` with the
  aggregation before it), its readers reconnected to what is left upstream;
- **cut the chain** after a node: everything downstream of it goes, a sink takes its place;
- **drop a sink** (and with it the branch only it needed);
- **simplify an expression** to ``"$value"``, ``"$key"`` or one of its parts, a predicate to one
  of its parts or to ``{"and": []}`` (always true);
- **simplify options**: no versioned materialization, tumbling windows, emit on update, no
  suppress buffer, the ``pair`` joiner, ``count``; and drop one field from every input value.
"""
from __future__ import annotations

import copy
from typing import Iterator, List, Optional

from kssim.differential_tests.graph_strategies import JOINS, compact, explicit, operation_of, references

SOURCES = ("stream", "table")
#: how many nodes one "drop nodes" edit removes at most (the longest production is group_by,
#: windowed_by, the aggregation and its to_stream)
MAX_DROPPED_CHAIN = 4
#: the topic a cut's new sink writes to (no generated graph uses it)
CUT_TOPIC = "cut"


def is_graph(doc: dict) -> bool:
    return isinstance(doc.get("topology"), dict) and "graph" in doc["topology"]


def _with_graph(doc: dict, nodes: List[dict]) -> Optional[dict]:
    """``doc`` with the explicit node list ``nodes``, cleaned up (see the module docstring);
    None when nothing is left to write."""
    nodes = _live(nodes)
    if not nodes:
        return None
    out = copy.deepcopy(doc)
    out["topology"] = {"graph": compact(nodes)}
    read = {node[operation_of(node)] for node in nodes if operation_of(node) in SOURCES}
    out["inputs"] = [r for r in out["inputs"] if r["topic"] in read]
    return out if out["inputs"] else None


def _live(nodes: List[dict]) -> List[dict]:
    """The nodes some sink depends on (a node's references are earlier in the list)."""
    by_id = {node["id"]: node for node in nodes}
    needed = set()
    for node in reversed(nodes):
        if operation_of(node) == "to" or node["id"] in needed:
            needed.add(node["id"])
            needed.update(ref for ref in references(node) if ref in by_id)
    return [node for node in nodes if node["id"] in needed]


def _rewire(nodes: List[dict], removed: set, replacement: str) -> List[dict]:
    """``nodes`` without ``removed``, every reference to a removed node now to ``replacement``."""
    out = []
    for node in nodes:
        if node["id"] in removed:
            continue
        node = copy.deepcopy(node)
        if node.get("from") in removed:
            node["from"] = replacement
        name = operation_of(node)
        if name == "merge" and node[name] in removed:
            node[name] = replacement
        elif name in JOINS and node[name]["other"] in removed:
            node[name]["other"] = replacement
        out.append(node)
    return out


def _dropped_chains(doc, nodes) -> Iterator[dict]:
    by_id = {node["id"]: node for node in nodes}
    for node in reversed(nodes):  # downstream first: dropping a sink's branch is the biggest cut
        chain = {node["id"]}
        upstream = node.get("from")
        while upstream is not None and len(chain) <= MAX_DROPPED_CHAIN:
            candidate = _with_graph(doc, _rewire(nodes, chain, upstream))
            if candidate is not None:
                yield candidate
            chain.add(upstream)
            upstream = by_id[upstream].get("from")


def _descendants(nodes, start: str) -> set:
    found = {start}
    for node in nodes:  # readers come after what they read
        if any(ref in found for ref in references(node)):
            found.add(node["id"])
    return found - {start}


def _cuts(doc, nodes) -> Iterator[dict]:
    for node in nodes:
        name = operation_of(node)
        if name == "to":
            continue
        below = _descendants(nodes, node["id"])
        if not below or all(operation_of(n) == "to" for n in nodes if n["id"] in below):
            continue  # nothing to cut (only sinks below)
        kept = [n for n in nodes if n["id"] not in below]
        tail = node["id"]
        if _is_table(nodes, node):
            kept.append({"to_stream": {}, "id": f"{tail}-cut-stream", "from": tail})
            tail = f"{tail}-cut-stream"
        kept.append({"to": CUT_TOPIC, "id": f"{tail}-cut", "from": tail})
        candidate = _with_graph(doc, kept)
        if candidate is not None:
            yield candidate


#: operations whose result is a table (the kind a cut's sink needs a to_stream after)
_TABLE_RESULTS = ("table", "to_table", "count", "reduce", "aggregate", "suppress")


def _is_table(nodes, node) -> bool:
    """The node's kind, as far as a cut needs it: a table, or not (filters, mapValues and joins
    have their upstream's kind)."""
    by_id = {n["id"]: n for n in nodes}
    while True:
        name = operation_of(node)
        if name in _TABLE_RESULTS:
            return True
        if name in ("filter", "filter_not", "map_values") or name in JOINS:
            node = by_id[node["from"]]
            continue
        return False


def structure_candidates(doc: dict) -> List[dict]:
    """Smaller graphs: nodes dropped (their readers reconnected upstream), the chain cut after a
    node, a sink dropped with its branch."""
    nodes = explicit(doc["topology"]["graph"])
    out = list(_dropped_chains(doc, nodes)) + list(_cuts(doc, nodes))
    return _unique(out, doc)


# --- simpler expressions and options -----------------------------------------------------------------

def _expr_parts(expr) -> list:
    """Simpler expressions to try in place of ``expr`` (an object: ``"$key"`` and ``"$value"``
    are as simple as it gets): ``"$value"``, a constant null and its parts."""
    if not isinstance(expr, dict):
        return []
    out = ["$value", {"const": None}]
    if isinstance(expr, dict):
        (form, arg), = expr.items()
        if form in ("concat", "list"):
            out += list(arg)
        elif form == "object":
            out += list(arg.values())
        elif form in ("add", "mod"):
            out.append(arg[0])
    return [e for e in out if e != expr]


def _pred_parts(pred) -> list:
    """Simpler predicates: always true, and its parts."""
    out = [{"and": []}]
    (form, arg), = pred.items()
    if form == "not":
        out.append(arg)
    elif form in ("and", "or"):
        out += list(arg)
    return [p for p in out if p != pred]


#: per operation, where its expressions (EXPR) and predicates (PRED) are: a path into the argument
_EXPRESSIONS = {
    "map_values": ((), ), "select_key": ((),), "flat_map_values": ((),),
    "map": (("key",), ("value",)), "group_by": (("key",), ("value",)),
    "join": (("foreign_key",),), "left_join": (("foreign_key",),),
}
_PREDICATES = {"filter": ((),), "filter_not": ((),)}


def _get(arg, path):
    for step in path:
        if not isinstance(arg, dict) or step not in arg:
            return None
        arg = arg[step]
    return arg


def _put(node, name, path, value):
    if not path:
        node[name] = value
        return
    target = node[name]
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value


def _replacements(nodes) -> Iterator[List[dict]]:
    """Node lists with one expression or predicate simpler."""
    for index, node in enumerate(nodes):
        name = operation_of(node)
        for table, parts in ((_EXPRESSIONS, _expr_parts), (_PREDICATES, _pred_parts)):
            for path in table.get(name, ()):
                current = _get(node[name], path) if path else node[name]
                if current is None:
                    continue
                for simpler in parts(current):
                    changed = copy.deepcopy(nodes)
                    _put(changed[index], name, path, copy.deepcopy(simpler))
                    yield changed


def _option_edits(node: dict) -> Iterator[dict]:
    """The node with one optional part simpler (the default)."""
    name = operation_of(node)
    arg = node[name]

    def edited(change):
        changed = copy.deepcopy(node)
        change(changed)
        return changed

    if "materialized" in node:
        yield edited(lambda n: n.pop("materialized"))
    if name == "windowed_by":
        if "emit" in arg:
            yield edited(lambda n: n[name].pop("emit"))
        time = arg.get("time", {})
        if time.get("advance_ms", time.get("size_ms")) != time.get("size_ms"):
            yield edited(lambda n: n[name]["time"].pop("advance_ms"))
    if name in JOINS:
        for field in ("joiner", "joiner_separator", "window_api", "grace_ms"):
            if field in arg:
                yield edited(lambda n, field=field: n[name].pop(field))
    if name == "suppress" and "buffer" in arg:
        yield edited(lambda n: n[name].pop("buffer"))
    if name in ("reduce", "aggregate"):
        yield {**{k: v for k, v in node.items() if k != name}, "count": {}}


def _value_fields(doc) -> list:
    fields = []
    for record in doc["inputs"]:
        if isinstance(record["value"], dict):
            fields += [f for f in record["value"] if f not in fields]
    return fields


def _without_field(doc, field) -> dict:
    out = copy.deepcopy(doc)
    for record in out["inputs"]:
        if isinstance(record["value"], dict):
            record["value"].pop(field, None)
    return out


def simplify_candidates(doc: dict) -> List[dict]:
    """The same graph with one expression, predicate or option simpler, or one value field gone."""
    nodes = explicit(doc["topology"]["graph"])
    out = []
    for changed in _replacements(nodes):
        candidate = _with_graph(doc, changed)
        if candidate is not None:
            out.append(candidate)
    for index, node in enumerate(nodes):
        for simpler in _option_edits(node):
            candidate = _with_graph(doc, nodes[:index] + [simpler] + nodes[index + 1:])
            if candidate is not None:
                out.append(candidate)
    if doc.get("config", {}).get("caching"):
        c = copy.deepcopy(doc)
        c["config"].pop("caching")
        out.append(c)
    out += [_without_field(doc, field) for field in _value_fields(doc)]
    return _unique(out, doc)


def _unique(docs, original) -> List[dict]:
    """Candidates smaller than the original (:func:`size_of`: so shrinking ends) and different
    from each other."""
    seen = {repr(original)}
    out = []
    for doc in docs:
        text = repr(doc)
        if text not in seen and size_of(doc) < size_of(original):
            seen.add(text)
            out.append(doc)
    return out


def size_of(doc: dict) -> tuple:
    """How big a graph document is, for "did this round make it smaller": nodes, inputs, and the
    length of the whole text (simpler expressions and values are shorter)."""
    return (len(doc["topology"]["graph"]), len(doc["inputs"]), len(repr(doc)))
