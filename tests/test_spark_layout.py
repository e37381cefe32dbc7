"""How the Spark adapter hangs together (issue 19, item 5).

- ``import mta`` and ``mta.cli`` load neither ``spark_integration`` nor ``pyspark``: ``mta
  pipeline`` imports the job when it runs. Checked twice: in a fresh interpreter (what
  actually gets loaded) and statically over every ``mta`` module (no module-level import of
  either, so no other module of the package can bring them in later).
- ``mta.watermarked`` (the per-key windows a watermark closes, Spark's late rule) is the
  engine and ``spark_integration`` the adapter on it: the package imports neither pyspark nor
  ``spark_integration``, not even inside a function (checked statically, and in a fresh
  interpreter), and ``spark_integration`` defines none of its classes or functions again.
- ``spark_integration``'s modules, and ``mta.watermarked``'s, import one another without a circle. Checked statically
  with ``ast``: every import statement of every module, including those inside functions (a
  lazy import that closes a circle hides it at import time; the modules still depend on each
  other both ways), resolved to the module it names; then a search for circles in that graph.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mta.cli import main

ROOT = Path(__file__).resolve().parent.parent
SPARK = ("pyspark", "py4j", "spark_integration")


def _module(path: Path) -> str:
    """The dotted name of a source file under ROOT."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources(package: str) -> dict[str, Path]:
    return {_module(path): path for path in sorted((ROOT / package).rglob("*.py"))}


def _imports(path: Path, module_level: bool) -> list[tuple[str, list[str], int]]:
    """(module, names, line) of each import statement of a file, absolute (relative imports
    resolved); ``module_level``: only those that run when the module is imported (not inside
    a function)."""
    package = _module(path) if path.name == "__init__.py" else _module(path).rpartition(".")[0]
    found = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if module_level and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(child, ast.Import):
                found.extend((alias.name, [], child.lineno) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")[:len(package.split(".")) - (child.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                found.append((base, [alias.name for alias in child.names], child.lineno))
            visit(child)

    visit(ast.parse(path.read_text(), str(path)))
    return found


# --------------------------------------------------------------------------- mta loads no Spark

def _spark_loaded_by(code: str) -> str:
    """The Spark modules loaded after running ``code`` in a fresh interpreter, as printed."""
    code += f"; import sys; print(sorted(m for m in sys.modules if m.split('.')[0] in {SPARK!r}))"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_importing_mta_and_its_cli_loads_neither_spark_integration_nor_pyspark() -> None:
    assert _spark_loaded_by("import mta, mta.cli; mta.cli.build_parser()") == "[]"


def test_no_mta_module_imports_spark_at_module_level() -> None:
    found = [f"{path.relative_to(ROOT)}:{line}: {name}" for path in _sources("mta").values()
             for name, _, line in _imports(path, module_level=True) if name.split(".")[0] in SPARK]
    assert found == []


def test_the_session_helper_survives_importing_the_session_module() -> None:
    """The README imports both: `spark_integration.session` (the module of local_session) must
    not replace `spark_integration.session` (the window helper), in either order."""
    for code in ("from spark_integration.session import local_session; from spark_integration import session",
                 "from spark_integration import session; from spark_integration.session import local_session; "
                 "import spark_integration; session = spark_integration.session"):
        printed = _spark_loaded_by(code + "; print(session('30 seconds'))")
        assert printed.startswith("SessionGap(gap='30 seconds')"), (code, printed)


# --------------------------------------------------------------------------- the engine is mta.watermarked

def test_the_watermarked_windows_load_no_spark() -> None:
    assert _spark_loaded_by("import mta.watermarked") == "[]"
    # the check sees Spark when it is loaded: the streaming processor imports pyspark
    assert "'pyspark'" in _spark_loaded_by("import spark_integration.streaming")


def test_no_watermarked_module_imports_spark_even_inside_a_function() -> None:
    modules = _sources("mta/watermarked")
    assert {"mta.watermarked", "mta.watermarked.held", "mta.watermarked.sessions"} <= set(modules)
    found = [f"{path.relative_to(ROOT)}:{line}: {name}" for path in modules.values()
             for name, _, line in _imports(path, module_level=False) if name.split(".")[0] in SPARK]
    assert found == []


def _defined(package: str) -> dict[str, str]:
    """Top-level class and function name -> the module defining it (the last one, if several)."""
    return {node.name: name for name, path in _sources(package).items()
            for node in ast.parse(path.read_text(), str(path)).body
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))}


def test_spark_integration_defines_no_window_logic_of_the_engine_again() -> None:
    engine = _defined("mta/watermarked")
    assert {"KeyWindow", "PaneWindow", "SessionWindow", "LateRule", "Windowing", "key_window"} <= set(engine)
    adapter = _defined("spark_integration")
    assert {name: (engine[name], adapter[name]) for name in set(engine) & set(adapter)} == {}


def test_mta_pipeline_reaches_the_job(capsys) -> None:
    with pytest.raises(SystemExit) as done:
        main(["pipeline", "--help"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith("usage: mta pipeline")


# --------------------------------------------------------------------------- no circle

def _graph(package: str) -> dict[str, dict[str, int]]:
    """Module -> {module it imports: line of the first such import}, within ``package`` (a folder)."""
    modules = _sources(package)
    graph: dict[str, dict[str, int]] = {name: {} for name in modules}
    for name, path in modules.items():
        for target, names, line in _imports(path, module_level=False):
            # `from p import m` names the module p.m when there is one, else p itself
            for imported in [f"{target}.{n}" if f"{target}.{n}" in modules else target for n in names] or [target]:
                if imported in modules and imported != name:
                    graph[name].setdefault(imported, line)
    return graph


def _circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The circles a depth-first search closes, one per edge back into its stack: none exactly
    when the graph has no circle."""
    circles, done, stack = [], set(), []

    def visit(node: str) -> None:
        stack.append(node)
        for nxt in graph[node]:
            if nxt in stack:
                circles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in done:
                visit(nxt)
        stack.pop()
        done.add(node)

    for node in sorted(graph):
        if node not in done:
            visit(node)
    return circles


def test_the_import_reader_sees_lazy_imports_and_the_circle_search_finds_circles() -> None:
    lazy = ("spark_integration.jobs.telemetry_pipeline", ["main"])  # mta pipeline's import, inside main()
    assert lazy in [(name, names) for name, names, _ in _imports(ROOT / "mta" / "cli.py", module_level=False)]
    assert lazy not in [(name, names) for name, names, _ in _imports(ROOT / "mta" / "cli.py", module_level=True)]
    graph = {"a": {"b": 1}, "b": {"c": 2}, "c": {}, "d": {"a": 3}}
    assert _circles(graph) == []
    graph["c"]["a"] = 4
    assert _circles(graph) == [["a", "b", "c", "a"]]
    # the real graph holds the job's import of its data, made inside a function
    assert "spark_integration.jobs.telemetry_data" in _graph("spark_integration")[
        "spark_integration.jobs.telemetry_pipeline"]
    # and a module's import of a sibling through the package's own name
    assert "mta.watermarked.rule" in _graph("mta/watermarked")["mta.watermarked.held"]


@pytest.mark.parametrize("package", ["spark_integration", "mta/watermarked"])
def test_the_modules_of_a_package_import_no_circle(package) -> None:
    graph = _graph(package)
    described = [" -> ".join(f"{a} (line {graph[a][b]})" for a, b in zip(circle, circle[1:])) + f" -> {circle[-1]}"
                 for circle in _circles(graph)]
    assert described == []
