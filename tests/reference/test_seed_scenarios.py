"""The seed scenarios (scenarios/seeds): every worked join table of the seed documents passes on
the reference engine, in its era's first release and in the other releases of the era the file
lists (``x-also-semantics``), with RocksDB and in-memory stores, and the folder covers every table,
join type and era the documents show.

The inventory below is read off the documents (shared/seeds/002_..., 004_...; 003 has no worked
table for these joins); a new or missing table, join type or era makes the coverage tests fail.
"""
import os
import re

import pytest

from kssim.reference.model.profiles import profile_for
from kssim.reference.model.scenario import find_scenario_files, load_scenario, read_document, scenario_from_dict

from kssim_testing import ROOT
SEEDS = os.path.join(ROOT, "scenarios", "seeds")
SEED_FILES = find_scenario_files([SEEDS]) if os.path.isdir(SEEDS) else []

SS, ST, TT = "stream_stream_join", "stream_table_join", "table_table_join"
PRE, KIP77, FIX, KIP77_ON = "0.10.0-0.10.1", "0.10.2-3.0", "3.1+", "0.10.2+"

#: The first release of each era: the release a seed file of that era declares as `semantics`.
ERA_FIRST_RELEASE = {PRE: "0.10.0", KIP77: "0.10.2", KIP77_ON: "0.10.2", FIX: "3.1"}

#: Every worked table of the seed documents, per join type and era: (table, operator, join, era).
#: 002: the join semantics page (sections "Improved ... v3.1.x", "New ... v0.10.2.x", "Old ...
#: v0.10.0.x and v0.10.1.x"); 004: KIP-77 (the "Proposed Changes" examples of the then current
#: semantics, and the "Suggested semantics" before/after tables).
_ALL3, _ST_KIP77 = ("inner", "left", "outer"), (("left", KIP77_ON), ("inner", KIP77_ON))
TABLE_INVENTORY = frozenset(
    [("002/improved/kstream-kstream", SS, j, FIX) for j in _ALL3]
    + [("002/new/kstream-kstream", SS, j, KIP77) for j in _ALL3]
    + [("002/new/kstream-ktable", ST, j, e) for j, e in _ST_KIP77]
    + [("002/new/ktable-ktable", TT, j, KIP77_ON) for j in _ALL3]
    + [("002/old/kstream-kstream", SS, j, PRE) for j in _ALL3]
    + [("002/old/kstream-ktable", ST, "left", PRE)]
    + [("002/old/ktable-ktable", TT, j, PRE) for j in _ALL3]
    + [("004/example/kstream-kstream", SS, j, PRE) for j in _ALL3]
    + [("004/example/kstream-ktable", ST, "left", PRE)]
    + [("004/example/ktable-ktable", TT, j, PRE) for j in _ALL3]
    + [(f"004/compare/kstream-kstream-{j}", SS, j, e) for j in _ALL3 for e in (PRE, KIP77)]
    + [("004/compare/kstream-ktable", ST, "left", PRE)]
    + [("004/compare/kstream-ktable", ST, j, e) for j, e in _ST_KIP77]
    + [("004/compare/ktable-ktable", TT, j, e) for j in _ALL3 for e in (PRE, KIP77_ON)]
)

#: (operator, join, era) combinations the documents show: stream-stream joins in three eras,
#: stream-table left join before and after KIP-77 (inner only after, KIP-77 added it), table-table
#: joins before and after KIP-77.
DOCUMENT_COMBINATIONS = frozenset(
    [(SS, j, e) for j in _ALL3 for e in (PRE, KIP77, FIX)]
    + [(ST, "left", PRE), (ST, "left", KIP77_ON), (ST, "inner", KIP77_ON)]
    + [(TT, j, e) for j in _ALL3 for e in (PRE, KIP77_ON)]
)

SEED_DOCUMENTS = ("002_9f8c28d01b5cad65.txt", "004_47b3376171c693f3.txt")
NAME_PATTERN = re.compile(r"^seed(002|004)-(improved|new|old|example|compare)-"
                          r"(stream-stream|stream-table|table-table)-(inner|left|outer)-(\d+\.\d+(?:\.\d+)?)$")


def _param(path):
    return pytest.param(path, id=os.path.splitext(os.path.basename(path))[0])


#: Stream-stream joins get in-memory window stores through StreamJoined (KIP-479) since 2.4.
STREAM_JOIN_IN_MEMORY_SINCE = "2.4"


def _store_types(operator, release):
    if operator == SS and not profile_for(release).at_least(STREAM_JOIN_IN_MEMORY_SINCE):
        return ("rocksdb",)
    return ("rocksdb", "in_memory")


def _era_params():
    """(file, release, store) for the other releases of each file's era, and for its own release
    with the other store type: the tables hold for both of Kafka's window/key-value stores."""
    params = []
    for path in SEED_FILES:
        doc = read_document(path)
        name = os.path.splitext(os.path.basename(path))[0]
        for release in [doc["semantics"]] + doc.get("x-also-semantics", []):
            for store in _store_types(doc["topology"]["operator"], release):
                if release == doc["semantics"] and store == doc.get("config", {}).get("store", "rocksdb"):
                    continue  # the file as written: test_seed_scenario_passes
                params.append(pytest.param(path, release, store, id=f"{name}@{release}-{store}"))
    return params


@pytest.mark.parametrize("path", [_param(p) for p in SEED_FILES])
def test_seed_scenario_passes(path, assert_scenario_passes):
    assert_scenario_passes(load_scenario(path))


@pytest.mark.parametrize("path,release,store", _era_params())
def test_seed_scenario_holds_in_every_listed_release_of_its_era_and_both_stores(path, release, store,
                                                                               assert_scenario_passes):
    doc = read_document(path)
    doc["semantics"] = release
    doc["config"] = {**doc.get("config", {}), "store": store}
    assert_scenario_passes(scenario_from_dict(doc, path=path))


@pytest.mark.parametrize("path", [_param(p) for p in SEED_FILES])
def test_seed_file_follows_the_conventions(path):
    doc = read_document(path)
    scenario = load_scenario(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    assert path.endswith(".yaml"), "seed scenarios are written in YAML"
    assert scenario.name == stem, "the scenario's name is its file name"
    match = NAME_PATTERN.match(stem)
    assert match, f"{stem} does not follow seed<doc>-<section>-<operator>-<join>-<release>"
    doc_number, _, operator_slug, join, release = match.groups()
    assert operator_slug.replace("-", "_") + "_join" == scenario.topology.operator
    assert join == scenario.topology.join and release == doc["semantics"]
    assert release == ERA_FIRST_RELEASE[doc["x-era"]], "a seed file declares the first release of its era"
    assert doc["x-table"].startswith(doc_number + "/")
    assert any(d in scenario.source for d in SEED_DOCUMENTS if d.startswith(doc_number)), \
        "source names the seed document"
    assert scenario.description.strip() and doc.get("x-notes", "").strip()
    # read after every input, and every record pinned to the input (table row) that emits it
    assert scenario.checkpoints == tuple(range(len(scenario.inputs)))
    assert scenario.expected and all(e.after_input is not None for e in scenario.expected)
    assert all(r.key == "k" for r in scenario.inputs), "the tables use one key for every record"
    also = doc.get("x-also-semantics", [])
    assert also and release not in also and len(set(also)) == len(also)


def _covered():
    out = set()
    for path in SEED_FILES:
        doc = read_document(path)
        topology = doc["topology"]
        out.add((doc["x-table"], topology["operator"], topology["join"], doc["x-era"]))
    return out


def test_seed_folder_holds_one_file_per_worked_table_era_and_join():
    covered = _covered()
    assert len(covered) == len(SEED_FILES), "two seed files claim the same table, join and era"
    assert not TABLE_INVENTORY - covered, f"worked tables without a scenario: {sorted(TABLE_INVENTORY - covered)}"
    assert not covered - TABLE_INVENTORY, f"seed files for no known table: {sorted(covered - TABLE_INVENTORY)}"


def test_seed_folder_covers_every_operator_join_and_era_of_the_documents():
    combinations = {(op, join, era) for _, op, join, era in _covered()}
    assert combinations == DOCUMENT_COMBINATIONS
