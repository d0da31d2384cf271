"""Every conformance scenario (expectations from real Kafka Streams) and every bundled scenario
passes on the reference engine, for each operator the reference implements."""
import os

import pytest

from kssim.reference.runtime.operators import supported_operators
from kssim.reference.model.scenario import find_scenario_files, load_scenario

from kssim_testing import BUNDLED, CONFORMANCE, CONFORMANCE_GRAPHS


def _files(folder):
    return find_scenario_files([folder]) if os.path.isdir(folder) else []


def _supported(files):
    out = []
    for f in files:
        s = load_scenario(f)
        if s.topology.operator in supported_operators():
            out.append(pytest.param(f, id=os.path.relpath(f, os.path.dirname(folder_of(f)))))
    return out


def folder_of(path):
    for folder in (CONFORMANCE_GRAPHS, CONFORMANCE):
        if os.path.abspath(path).startswith(os.path.abspath(folder) + os.sep):
            return folder
    return BUNDLED


CONFORMANCE_FILES = _supported(_files(CONFORMANCE))
GRAPH_FILES = _supported(_files(CONFORMANCE_GRAPHS))
BUNDLED_FILES = _supported(_files(BUNDLED))


def test_the_conformance_corpus_is_there():
    # the shared corpus sits beside the checkout; 957 files cover the three classic joins
    assert len(CONFORMANCE_FILES) >= 957


@pytest.mark.parametrize("path", CONFORMANCE_FILES)
def test_conformance(path, assert_scenario_passes):
    assert_scenario_passes(load_scenario(path))


def test_the_graph_corpus_is_there():
    # 375 topology graphs run through real Kafka Streams 3.9, every family of the spec
    assert len(GRAPH_FILES) >= 375


@pytest.mark.parametrize("path", GRAPH_FILES)
def test_graph_conformance(path, assert_scenario_passes):
    assert_scenario_passes(load_scenario(path))


@pytest.mark.parametrize("path", BUNDLED_FILES)
def test_bundled_scenario(path, assert_scenario_passes):
    assert_scenario_passes(load_scenario(path))
