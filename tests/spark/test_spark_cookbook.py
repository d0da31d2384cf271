"""Every scenario of the cookbook (``scenarios/cookbook/``: the format-1 recipes 01-09, the topology
graphs of recipes 10-13 and the ``kssim diff`` worked example) passes on the Spark backend, all of
them in one batched run, as on the reference engine (``tests/reference/test_conformance.py``)."""
from __future__ import annotations

import os

import pytest
from kssim_testing import BUNDLED, assert_conforms, load_all

from kssim.reference.model.scenario import find_scenario_files, load_scenario
from kssim.spark_backend.runtime.inputs import IMPLEMENTED

COOKBOOK = os.path.join(BUNDLED, "cookbook")
ALL_FILES = find_scenario_files([COOKBOOK])
#: the files whose topology is a topology graph (recipes 10-13)
GRAPH_FILES = [f for f in ALL_FILES if load_scenario(f).topology.operator == "graph"]
FILES = ALL_FILES


@pytest.fixture(scope="module")
def batch(spark):  # noqa: F811
    from kssim.spark_backend.runtime.runner import run_scenarios

    scenarios = load_all(FILES)
    return dict(zip(FILES, zip(scenarios, run_scenarios(scenarios, spark))))


def test_the_cookbook_is_all_there():
    # thirteen recipes, each one or more files (10-13 are graphs), plus the two releases of the
    # diff example
    recipes = {os.path.basename(f)[:2] for f in FILES if os.path.basename(f)[:2].isdigit()}
    assert recipes == {f"{n:02d}" for n in range(1, 14)}
    assert sum("diff-outer-join-3.6-to-3.9" in f for f in FILES) == 2
    assert {os.path.basename(f)[:2] for f in GRAPH_FILES} == {"10", "11", "12", "13"}


def test_spark_claims_every_format_1_recipe():
    format_1 = [f for f in ALL_FILES if f not in GRAPH_FILES]
    assert all(load_scenario(f).topology.operator in IMPLEMENTED for f in format_1)


@pytest.mark.parametrize("path", FILES, ids=[os.path.relpath(f, COOKBOOK) for f in FILES])
def test_cookbook_scenario(batch, path):
    assert_conforms(*batch[path])
