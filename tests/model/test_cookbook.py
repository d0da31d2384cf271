"""The cookbook's conventions (``scenarios/cookbook/README.md``): every recipe file is named
``NN-<topic>-<release>.yaml`` with the release it models, asks its question in ``description``,
explains it in ``x-notes`` naming the rules of ``kssim rules`` it rests on, refers only to files
that exist, and is listed in the cookbook's README. Whether the files pass is checked by
``tests/reference/test_conformance.py`` (reference) and ``tests/spark/test_spark_cookbook.py``
(Spark, every recipe)."""
from __future__ import annotations

import os
import re

import pytest
from kssim_testing import BUNDLED

from kssim.reference.model.documents import read_document
from kssim.reference.model.profiles import RULES_BY_NAME
from kssim.reference.model.scenario import find_scenario_files, load_scenario

COOKBOOK = os.path.join(BUNDLED, "cookbook")
RECIPES = sorted(f for f in find_scenario_files([COOKBOOK]) if os.path.dirname(f) == COOKBOOK)
#: the recipes of the README, 01-13: 01-09 are single format-1 operators, 10-13 topology graphs
RECIPE_NUMBERS = {f"{n:02d}" for n in range(1, 14)}
GRAPH_RECIPES = {"10", "11", "12", "13"}
NAME = re.compile(r"^(?P<n>0[1-9]|1[0-3])-(?P<topic>[a-z0-9-]+)-(?P<release>\d+\.\d+(\.\d+)?)\.yaml$")
#: "rule NAME" in the notes must name a rule of `kssim rules`
RULE_MENTION = re.compile(r"\brules? ([a-z][a-z0-9_]*_[a-z0-9_]+)")
FILE_MENTION = re.compile(r"\b\d\d-[a-z0-9.-]+?\.yaml\b")


def _readme():
    with open(os.path.join(COOKBOOK, "README.md"), encoding="utf-8") as handle:
        return handle.read()


def _notes(path):
    notes = read_document(path).get("x-notes")
    return " ".join(notes) if isinstance(notes, list) else notes


def test_every_recipe_of_the_issue_has_files():
    names = [NAME.match(os.path.basename(f)) for f in RECIPES]
    assert all(names), [os.path.basename(f) for f, name in zip(RECIPES, names) if not name]
    assert {name.group("n") for name in names} == RECIPE_NUMBERS


def test_recipes_10_to_13_are_graphs_and_the_others_are_not():
    for path in RECIPES:
        n = NAME.match(os.path.basename(path)).group("n")
        is_graph = load_scenario(path).topology.operator == "graph"
        assert is_graph == (n in GRAPH_RECIPES), f"{path}: recipe {n} {'is' if is_graph else 'is not'} a graph"


@pytest.mark.parametrize("path", RECIPES, ids=[os.path.basename(f) for f in RECIPES])
def test_a_recipe_file_follows_the_conventions(path):
    name = NAME.match(os.path.basename(path))
    assert name, f"{path}: not NN-<topic>-<release>.yaml"
    scenario = load_scenario(path)
    assert scenario.release == name.group("release")
    assert scenario.expected is not None, "a recipe pins its output"
    assert len(scenario.description) > 40
    notes = _notes(path)
    assert isinstance(notes, str) and len(notes) > 200, "x-notes: one paragraph saying why"
    named = [rule for rule in RULES_BY_NAME if rule in notes]
    assert named, "x-notes name no rule of `kssim rules`"
    unknown = [m for m in RULE_MENTION.findall(notes) if m not in RULES_BY_NAME]
    assert not unknown, f"x-notes name rules kssim does not have: {unknown}"
    missing = [m for m in FILE_MENTION.findall(notes + " " + scenario.description)
               if not os.path.exists(os.path.join(COOKBOOK, m))]
    assert not missing, f"refers to files that do not exist: {missing}"


def test_the_readme_lists_every_recipe_file_and_the_diff_example():
    readme = _readme()
    unlisted = [os.path.basename(f) for f in RECIPES if os.path.basename(f) not in readme]
    assert not unlisted
    assert "diff-outer-join-3.6-to-3.9/" in readme
