"""kssim installs under one name, ``kssim`` (``kssim.reference``, ``kssim.tools``, ...): a user's
project with its own ``tools`` (or ``reference``) package keeps it, and pytest starts with kssim's
plugin. The repository keeps its top-level folders; pyproject.toml maps them into the namespace."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile

import pytest

from kssim_testing import BUNDLED, ROOT

FOLDERS = ("reference", "spark_backend", "differential_tests", "tools")


def _pyproject():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as handle:
        return tomllib.load(handle)


def test_every_package_folder_is_installed_under_the_kssim_namespace():
    listed = set(_pyproject()["tool"]["setuptools"]["packages"])
    folders = set()
    for top in FOLDERS:
        for here, dirs, files in os.walk(os.path.join(ROOT, top)):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            if "__init__.py" in files:
                folders.add("kssim." + os.path.relpath(here, ROOT).replace(os.sep, "."))
    assert listed == folders
    assert _pyproject()["project"]["scripts"]["kssim"] == "kssim.tools.cli:main"
    assert _pyproject()["project"]["entry-points"]["pytest11"]["kssim"] == "kssim.tools.pytest_plugin"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    # built from a copy of the sources: the checkout gets no build/ folder, and no stale one is packaged
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(os.path.join(ROOT, name), source / name)
    for folder in FOLDERS:
        shutil.copytree(os.path.join(ROOT, folder), source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(source)],
                   check=True, capture_output=True)
    (path,) = [os.path.join(out, f) for f in os.listdir(out) if f.endswith(".whl")]
    return path


def test_the_wheel_installs_one_top_level_name(wheel):
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/")[0] for name in archive.namelist()}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"kssim"}


def test_a_project_with_its_own_tools_package_runs_pytest_with_the_plugin(wheel, tmp_path):
    # a fresh virtual environment (its dependencies from this interpreter's site-packages)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-deps", wheel], check=True, capture_output=True)
    project = tmp_path / "project"
    (project / "tools").mkdir(parents=True)
    (project / "tools" / "__init__.py").write_text('WHO = "the project"\n')
    (project / "tests").mkdir()
    (project / "tests" / "test_own.py").write_text(
        "import tools\n\n\ndef test_the_projects_own_tools_package():\n    assert tools.WHO == 'the project'\n")
    (project / "scenarios").mkdir()
    with open(os.path.join(BUNDLED, "cookbook", "11-table-group-by-update-3.5.yaml"), encoding="utf-8") as f:
        (project / "scenarios" / "group-by.yaml").write_text(f.read())
    (project / "pyproject.toml").write_text('[tool.pytest.ini_options]\nkssim_scenarios = ["scenarios"]\n'
                                            'testpaths = ["tests", "scenarios"]\n')
    where = subprocess.run([python, "-c", "import kssim.tools.cli as c; print(c.__file__)"], cwd=project,
                           capture_output=True, text=True, check=True).stdout.strip()
    assert where.startswith(str(venv))  # the installed wheel, not the checkout
    run = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=project,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 passed" in run.stdout  # the project's own test and the scenario file
