"""``kssim describe`` for topology graphs (``reference.model.graph.describe``): the text must be
what Kafka Streams 3.9's ``Topology#describe()`` printed for the same DSL program, as recorded in
every Kafka-oracle corpus file (``x-topology-description``).

A processor's ``(stores: [...])`` list is a Java ``HashSet``; the model reproduces its order too,
but the comparison sorts the names inside each list, so only the order within that list is free.
"""
from __future__ import annotations

import glob
import json
import os
import re

import pytest

from kssim.reference.model.graph.describe import build_topology, describe_graph

CORPUS = os.environ.get("KSSIM_GRAPH_ORACLE", "/work/shared/conformance-graphs/kafka-oracle")
FILES = sorted(glob.glob(os.path.join(CORPUS, "*", "*.json")))

_STORES = re.compile(r"\(stores: \[([^\]]*)\]\)")


def sort_store_lists(description: str) -> str:
    """The description with the names inside each ``(stores: [...])`` list sorted."""
    return _STORES.sub(lambda m: "(stores: [" + ", ".join(sorted(filter(None, m.group(1).split(", ")))) + "])",
                       description)


@pytest.mark.skipif(not FILES, reason=f"no corpus at {CORPUS}")
@pytest.mark.parametrize("path", FILES, ids=[os.path.relpath(f, CORPUS) for f in FILES])
def test_description_matches_kafka(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    expected = doc["x-topology-description"]
    actual = describe_graph(doc["topology"]["graph"])
    assert sort_store_lists(actual) == sort_store_lists(expected)


def test_model_names_subtopologies_topics_and_stores():
    """The built topology answers a runtime's questions: which sub-topology, topic and store."""
    graph = [
        {"stream": "s1"},
        {"group_by": {"key": {"field": "g"}}},
        {"count": {}, "id": "counts"},
        {"table": "t1", "id": "t"},
        {"from": "counts", "join": {"other": "t"}},
        {"to_stream": {}},
        {"to": "out"},
    ]
    topology = build_topology(graph)
    assert [s.id for s in topology.subtopologies] == [0, 1]
    assert topology.subtopology_of("KSTREAM-KEY-SELECT-0000000001") == 0
    # count(Materialized) takes a store name it never uses (index 2), kept for compatibility
    assert topology.subtopology_of("KSTREAM-AGGREGATE-0000000004") == 1
    repartition = "KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition"
    assert list(topology.internal_topics) == [repartition]
    assert topology.made_by(2) == {
        "nodes": ["KSTREAM-FILTER-0000000006", "KSTREAM-SINK-0000000005", "KSTREAM-SOURCE-0000000007",
                  "KSTREAM-AGGREGATE-0000000004"],
        "stores": ["KSTREAM-AGGREGATE-STATE-STORE-0000000003"],
        "internal_topics": [repartition],
    }
    assert topology.stores["t1-STATE-STORE-0000000008"].processors == [
        "KTABLE-SOURCE-0000000010", "KTABLE-JOINTHIS-0000000012"]
    assert topology.nodes["KTABLE-MERGE-0000000011"].predecessors == (
        "KTABLE-JOINTHIS-0000000012", "KTABLE-JOINOTHER-0000000013")
    with pytest.raises(KeyError):
        topology.subtopology_of("no-such-node")
