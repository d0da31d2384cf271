"""Every scenario of the cookbook (``scenarios/cookbook/``, recipes and the ``kssim diff`` worked
example) passes on the Spark backend, all of them in one batched Spark job; the reference engine
runs them in ``tests/reference/test_conformance.py`` (``test_bundled_scenario``)."""
from __future__ import annotations

import os

import pytest
from kssim_testing import BUNDLED, assert_conforms, load_all

from reference.model.scenario import find_scenario_files

COOKBOOK = os.path.join(BUNDLED, "cookbook")
FILES = find_scenario_files([COOKBOOK])


@pytest.fixture(scope="module")
def batch(spark):  # noqa: F811
    from spark_backend.runtime.runner import run_scenarios

    scenarios = load_all(FILES)
    return dict(zip(FILES, zip(scenarios, run_scenarios(scenarios, spark))))


def test_the_cookbook_is_all_there():
    # nine recipes (01-09), each one or more files, plus the two releases of the diff example
    recipes = {os.path.basename(f)[:2] for f in FILES if os.path.basename(f)[:2].isdigit()}
    assert recipes == {f"{n:02d}" for n in range(1, 10)}
    assert sum("diff-outer-join-3.6-to-3.9" in f for f in FILES) == 2


@pytest.mark.parametrize("path", FILES, ids=[os.path.relpath(f, COOKBOOK) for f in FILES])
def test_cookbook_scenario(batch, path):
    assert_conforms(*batch[path])
