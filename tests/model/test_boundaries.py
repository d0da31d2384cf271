"""Package boundaries: only ``reference.model`` is shared.

The reference engine (``reference.runtime``, ``reference.stores``, ``reference.joins``) and the
Spark backend are two independent implementations of the rules the profiles name; the harness
that compares them and the tools that run them reach the engines only through the shared model.
Every ``.py`` file is parsed (never imported) and every import is checked: ``import x``,
``from x import y``, relative forms, imports inside functions, and ``importlib.import_module`` /
``__import__`` with a literal name.

| package | may import from ``reference`` |
| --- | --- |
| ``spark_backend``, ``differential_tests`` | ``reference.model`` |
| ``tools`` | ``reference.model``, ``reference.api`` (the user-facing Python API) |
| ``benchmarks`` | the above and ``reference.runtime.engine`` (they measure the reference engine) |

``reference.model`` itself imports none of ``reference.runtime``, ``.stores``, ``.joins``,
``.api`` or ``spark_backend``; the one exception is the engine table,
``reference/model/engines.py``, which may import an engine inside a function (when it is run).
"""
from __future__ import annotations

import ast
import os
from typing import Iterable, List, NamedTuple, Optional, Tuple

import pytest

from kssim_testing import ROOT

#: per checked folder: the ``reference`` modules (with their submodules) it may import
ALLOWED = {
    "spark_backend": ("reference.model",),
    "differential_tests": ("reference.model",),
    "tools": ("reference.model", "reference.api"),
    "benchmarks": ("reference.model", "reference.api", "reference.runtime.engine"),
}

#: what ``reference.model`` never imports (outside the functions of the engine table)
MODEL_FORBIDDEN = ("reference.runtime", "reference.stores", "reference.joins", "reference.suppress", "reference.api",
                   "spark_backend")
MODEL = os.path.join("reference", "model")
ENGINE_TABLE = os.path.join("reference", "model", "engines.py")


class Import(NamedTuple):
    line: int
    #: the imported module; for ``from P import a`` the candidates are P and P.a
    module: str
    names: Tuple[str, ...]
    in_function: bool


#: the namespace the packages are installed under (``kssim.reference``): imports are compared
#: without it, as the folders are named
NAMESPACE = "kssim."


def _unprefixed(module: str) -> str:
    return module[len(NAMESPACE):] if module.startswith(NAMESPACE) else module


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def package_of(relpath: str) -> str:
    """The dotted package a file (path relative to the root) belongs to: relative imports start here."""
    parts = relpath.replace(os.sep, "/").split("/")[:-1]
    return ".".join(parts)


def imports(source: str, package: str = "", filename: str = "<string>") -> List[Import]:
    """Every import of ``source`` (a module of ``package``), with its line and whether it sits in a
    function body (run when called, not when the module is imported)."""
    found: List[Import] = []

    def resolve(module: Optional[str], level: int) -> str:
        if not level:
            return module or ""
        base = package.split(".") if package else []
        if level > 1:
            base = base[:len(base) - (level - 1)]
        return ".".join(base + ([module] if module else []))

    def visit(node, in_function: bool):
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    found.append(Import(child.lineno, _unprefixed(alias.name), (), in_function))
            elif isinstance(child, ast.ImportFrom):
                found.append(Import(child.lineno, _unprefixed(resolve(child.module, child.level)),
                                    tuple(a.name for a in child.names), in_function))
            elif isinstance(child, ast.Call) and _is_dynamic_import(child.func) and child.args \
                    and isinstance(child.args[0], ast.Constant) and isinstance(child.args[0].value, str):
                found.append(Import(child.lineno, _unprefixed(child.args[0].value), (), in_function))
            visit(child, nested)

    visit(ast.parse(source, filename=filename), False)
    return found


def _is_dynamic_import(func) -> bool:
    if isinstance(func, ast.Name):
        return func.id in ("__import__", "import_module")
    return isinstance(func, ast.Attribute) and func.attr == "import_module"


def _names(imp: Import) -> List[str]:
    """What an import reaches: ``from P import a, b`` reaches P.a and P.b when they are modules,
    else P; a plain import reaches its module."""
    if imp.names and "*" not in imp.names:
        return [f"{imp.module}.{name}" if imp.module else name for name in imp.names]
    return [imp.module]


def boundary_violations(source: str, package: str, allowed: Iterable[str]) -> List[Tuple[int, str]]:
    """(line, module) for each import of a ``reference`` module outside ``allowed``, anywhere in
    the file. ``from reference.runtime import engine`` is allowed exactly when
    ``reference.runtime.engine`` or ``reference.runtime`` is."""
    allowed = tuple(allowed)
    out = []
    for imp in imports(source, package):
        if not _within(imp.module, "reference"):
            continue
        if any(_within(imp.module, a) for a in allowed):
            continue
        if any(_within(a, imp.module) for a in allowed):
            # a package above an allowed module (``from reference import model``): what it names counts
            bad = [n for n in _names(imp) if not any(_within(n, a) for a in allowed)]
        else:
            bad = [imp.module]
        if bad:
            out.append((imp.line, ", ".join(bad)))
    return out


def model_violations(source: str, package: str, engine_table: bool) -> List[Tuple[int, str]]:
    """(line, module) for each import of the reference engine, the API or the Spark backend by a
    ``reference.model`` module (the engine table may import them inside functions)."""
    out = []
    for imp in imports(source, package):
        if engine_table and imp.in_function:
            continue
        if any(_within(imp.module, f) for f in MODEL_FORBIDDEN):
            bad = [imp.module]
        else:
            bad = [n for n in _names(imp) if any(_within(n, f) for f in MODEL_FORBIDDEN)]
        if bad:
            out.append((imp.line, ", ".join(bad)))
    return out


def python_files(folder: str) -> List[str]:
    """Every .py file under ``ROOT/folder`` (relative paths, sorted)."""
    out = []
    for here, dirs, files in os.walk(os.path.join(ROOT, folder)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        out.extend(os.path.relpath(os.path.join(here, f), ROOT) for f in sorted(files) if f.endswith(".py"))
    return out


def _read(relpath: str) -> str:
    with open(os.path.join(ROOT, relpath), encoding="utf-8") as handle:
        return handle.read()


def _report(found: List[Tuple[str, int, str]], rule: str) -> str:
    return f"{len(found)} import(s) cross the boundary ({rule}):\n" + "\n".join(
        f"  {path}:{line}: imports {module}" for path, line, module in found)


# --- the checker itself ----------------------------------------------------------------------------

SAMPLE = '''\
import os
import kssim.reference.model.scenario
from kssim.reference.model.compare import compare_outputs
from kssim.reference import model
import kssim.reference.runtime.engine as engine          # 5
from kssim.reference.runtime.engine import run_scenario  # 6
from kssim.reference import runtime, model               # 7
import kssim.reference                                   # 8

class Holder:
    from kssim.reference.stores import kv_store          # 11

def later():
    from kssim.reference.joins.table_table import join   # 14
    import importlib
    importlib.import_module("reference.runtime.engine")  # 16
    return __import__("reference.api")             # 17

from .. import api                                 # 19 (relative: reference.api from reference/model)
from . import compare                              # 20 (reference.model.compare)
'''


def test_the_checker_finds_every_form_of_import():
    found = boundary_violations(SAMPLE, "reference.model", ALLOWED["differential_tests"])
    assert [line for line, _ in found] == [5, 6, 7, 8, 11, 14, 16, 17, 19]
    assert dict(found)[7] == "reference.runtime"  # `from reference import runtime, model`: only runtime
    assert dict(found)[8] == "reference"
    assert dict(found)[19] == "reference.api"


def test_the_checker_line_numbers_point_at_the_import():
    lines = SAMPLE.splitlines()
    for line, module in boundary_violations(SAMPLE, "reference.model", ALLOWED["spark_backend"]):
        text = lines[line - 1]
        assert "import" in text and module.split(".")[-1] in text.replace("import_module", ""), (line, text)


def test_the_checker_allows_what_each_package_may_import():
    tools = '''
from kssim.reference.api import StreamsBuilder
import kssim.reference.api.driver
from kssim.reference.model.engines import run_scenarios
from kssim.reference.runtime.engine import run_scenario
'''
    assert [line for line, _ in boundary_violations(tools, "tools", ALLOWED["tools"])] == [5]
    assert boundary_violations(tools, "benchmarks", ALLOWED["benchmarks"]) == []
    assert boundary_violations("from reference.runtime import engine\n", "benchmarks", ALLOWED["benchmarks"]) == []
    assert boundary_violations("from reference.runtime import explain\n", "benchmarks", ALLOWED["benchmarks"]) \
        == [(1, "reference.runtime.explain")]
    # other packages and look-alike names are not the reference engine
    assert boundary_violations("import references\nfrom referencex import y\nimport spark_backend\n",
                               "tools", ALLOWED["tools"]) == []


def test_the_model_checker_allows_function_imports_only_in_the_engine_table():
    source = '''
from kssim.reference.model.keys import key_text
import kssim.spark_backend.session                 # 3

def run(engine):
    from kssim.reference.runtime.engine import run_scenario
    from kssim.spark_backend.runtime.runner import run_scenarios
    return run_scenario, run_scenarios
'''
    assert [line for line, _ in model_violations(source, "reference.model", engine_table=True)] == [3]
    assert [line for line, _ in model_violations(source, "reference.model", engine_table=False)] == [3, 6, 7]
    assert model_violations("from ..joins import table_table\n", "reference.model", False) == [(1, "reference.joins")]
    assert model_violations("from .. import stores\n", "reference.model", False) == [(1, "reference.stores")]


# --- the project -----------------------------------------------------------------------------------

@pytest.mark.parametrize("folder", sorted(ALLOWED))
def test_packages_import_only_the_shared_model_from_reference(folder):
    files = python_files(folder)
    assert files, f"no Python files under {folder}/"
    found = [(path, line, module) for path in files
             for line, module in boundary_violations(_read(path), package_of(path), ALLOWED[folder])]
    assert not found, _report(found, f"{folder}/ may import from reference only {', '.join(ALLOWED[folder])}")


def test_the_model_does_not_import_the_engines_or_the_api():
    files = python_files(MODEL)
    assert os.path.join(MODEL, "scenario.py") in files
    found = [(path, line, module) for path in files
             for line, module in model_violations(_read(path), package_of(path), path == ENGINE_TABLE)]
    assert not found, _report(found, "reference/model imports none of " + ", ".join(MODEL_FORBIDDEN)
                              + " (engines.py: only inside functions)")
