"""The package's architecture, enforced: layers import only downwards, no import circles,
no over-long module without a written reason.

The layers are declared once, in ``[tool.importlinter]`` of ``pyproject.toml``, and
drawn in ``docs/architecture.md``. import-linter checks them over the import graph
that grimp builds from the source (imports inside functions included).
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

import glmbandits

PACKAGE = Path(glmbandits.__file__).resolve().parent
ROOT = PACKAGE.parent.parent
PYPROJECT = ROOT / "pyproject.toml"
#: A module longer than this says why at its top (a line starting with ``Why this module is long:``).
MAX_LINES = 450


def _lint(package_parent: Path, config: Path) -> subprocess.CompletedProcess:
    """Run ``lint-imports`` in a fresh interpreter that imports ``glmbandits`` from ``package_parent``."""
    code = ("import sys; from importlinter.cli import lint_imports_command; "
            "sys.exit(lint_imports_command())")
    return subprocess.run(
        [sys.executable, "-c", code, "--config", str(config), "--no-cache", "--no-logo"],
        cwd=package_parent, capture_output=True, text=True, timeout=300,
        env={"PYTHONPATH": str(package_parent), "PATH": "/usr/bin:/bin", "HOME": str(package_parent)},
    )


def test_the_layer_contract_is_kept() -> None:
    result = _lint(PACKAGE.parent, PYPROJECT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "glmbandits layers KEPT" in result.stdout


@pytest.mark.slow
def test_a_wrong_way_import_breaks_the_contract(tmp_path: Path) -> None:
    """A copy of the package where families (lowest layer) imports the CLI (top) is refused."""
    copy = tmp_path / "src"
    shutil.copytree(PACKAGE, copy / "glmbandits",
                    ignore=shutil.ignore_patterns("__pycache__"))
    families = copy / "glmbandits" / "families.py"
    families.write_text(families.read_text() + "\n\ndef _wrong_way():\n"
                        "    from .cli.main import main  # noqa: F401\n")
    result = _lint(copy, PYPROJECT)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "glmbandits layers BROKEN" in result.stdout
    assert "glmbandits.families -> glmbandits.cli.main" in result.stdout


def _import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def _layer_of(module: str, layers: list[list[str]]) -> int | None:
    """The layer index (0 = top) of a ``glmbandits`` module; None outside the contract."""
    parts = module.split(".")
    if parts[0] != "glmbandits":
        return None
    if len(parts) == 1:
        return -1  # the package's face stands above every layer
    for index, layer in enumerate(layers):
        if parts[1] in layer:
            return index
    return None


def _literal_dynamic_imports(path: Path) -> list[str]:
    """The literal module names a file passes to ``importlib.import_module``."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))
                and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
                and node.args and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)):
            names.append(node.args[0].value)
    return names


def test_no_import_by_name_runs_up_the_layers() -> None:
    """import-linter reads import statements only: an ``import_module("glmbandits.x")`` is an
    arrow too, and must point downwards (persistence once resolved ``glmbandits.policies.base``
    and ``glmbandits`` that way, a circle the contract did not see)."""
    contract = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]
    layers = [[name.strip() for name in row.split(":")]
              for row in contract["contracts"][0]["layers"]]
    upwards = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).with_suffix("")
        importer = ".".join(part for part in relative.parts if part != "__init__")
        own = _layer_of(importer, layers)
        if own is None or own < 0:
            continue
        for name in _literal_dynamic_imports(path):
            target = _layer_of(name, layers)
            if target is not None and target < own:
                upwards.append(f"{importer} -> {name}")
    assert upwards == []


def test_no_import_circles() -> None:
    graph = grimp.build_graph("glmbandits", cache_dir=None)
    assert _import_cycles(graph) == []


def test_the_cycle_finder_finds_a_circle() -> None:
    graph = grimp.ImportGraph()
    for module in ("p", "p.a", "p.b", "p.c"):
        graph.add_module(module)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.a")
    graph.add_import(importer="p.c", imported="p.a")
    assert _import_cycles(graph) == [["p.a", "p.b"]]


def test_long_modules_say_why() -> None:
    unexplained = []
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        if len(lines) > MAX_LINES and not any(
                line.startswith("Why this module is long:") for line in lines[:60]):
            unexplained.append(f"{path.relative_to(PACKAGE)} ({len(lines)} lines)")
    assert unexplained == []


def test_python_dash_m_starts_the_cli() -> None:
    result = subprocess.run([sys.executable, "-m", "glmbandits", "--help"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "usage: glmbandits" in result.stdout
    for command in ("run", "results", "plot", "reproduce", "replay", "bench"):
        assert command in result.stdout


#: Everything ``glmbandits`` exported before the layout change (issue 11); it must stay importable.
PUBLIC_NAMES_BEFORE_THE_LAYOUT = (
    "families theory fit_glm GLMFit GLMFamily LogisticFamily ProbitFamily LinearFamily "
    "PoissonFamily Policy UCBGLM SupCBGLM LinUCB RandomPolicy GLMUCB GLMTSL LaplaceTS GLOC "
    "ECOLog OFUGLB RSGLinCB EpsilonGreedy SyntheticGLMEnv simulate SimulationResult "
    "simulate_batch BatchSimulationResult ConvergenceWarning GLMBanditsWarning"
).split()


def test_the_public_api_survives_the_layout() -> None:
    assert set(PUBLIC_NAMES_BEFORE_THE_LAYOUT) <= set(glmbandits.__all__)
    for name in PUBLIC_NAMES_BEFORE_THE_LAYOUT:
        assert getattr(glmbandits, name) is not None
    from glmbandits import estimation

    for name in ("fit_glm", "GLMFit", "solve_estimating_equation", "check_rewards",
                 "sherman_morrison_update", "inverse_gram"):
        assert callable(getattr(estimation, name)), name
    assert estimation.fit_glm is glmbandits.fit_glm
    assert isinstance(glmbandits.__version__, str) and glmbandits.__version__


def test_no_two_test_modules_share_a_file_name() -> None:
    """The test folders are not packages and ``--doctest-modules`` imports every ``.py``
    under them by its bare name: two files of one name (``make_fixtures.py`` in two
    folders) stop the whole suite at collection ("import file mismatch"). conftest.py
    files are pytest's own and exempt."""
    seen: dict[str, Path] = {}
    clashes = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if path.name == "conftest.py" or "__pycache__" in path.parts:
            continue
        if path.name in seen:
            clashes.append(f"{seen[path.name].relative_to(ROOT)} and {path.relative_to(ROOT)}")
        seen.setdefault(path.name, path)
    assert clashes == []
