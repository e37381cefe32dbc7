"""What the README's test command installs covers every import of the code it tests.

A fresh virtualenv once failed 10 tests because the benchmarks' quick modes import
matplotlib, which only the ``bench`` extra declared: the machine that ran CI had it
from earlier work. This test reads every ``import`` of the project's Python files and
checks that each third-party module comes from a distribution that
``scripts/test.sh`` installs: a ``[project] dependencies`` entry or one of the extras
it names, with extras that name ``mta[...]`` followed. A module imported directly must
be declared directly (not only reached through another package's dependencies).
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("mta", "kvs", "spark_integration", "benchmarks", "tests", "scripts")


def _name(requirement: str) -> str:
    """The normalised distribution name of a requirement string (PEP 503)."""
    name = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement).group(0)
    return re.sub(r"[-_.]+", "-", name).lower()


def _installed_by_test_command() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project.get("optional-dependencies", {})
    command = (ROOT / "scripts" / "test.sh").read_text()
    match = re.search(r"-e\s+'?\.\[([^\]]*)\]", command)
    assert match, "scripts/test.sh must install the project with its test extras (-e '.[...]')"
    wanted, names, seen = list(match.group(1).split(",")), set(map(_name, project["dependencies"])), set()
    while wanted:
        extra = wanted.pop().strip()
        if extra in seen:
            continue
        seen.add(extra)
        assert extra in extras, f"scripts/test.sh installs extra {extra!r}, which pyproject.toml does not define"
        for requirement in extras[extra]:
            if _name(requirement) == _name(project["name"]):  # mta[bench]: another extra of ours
                wanted += re.search(r"\[([^\]]*)\]", requirement).group(1).split(",")
            else:
                names.add(_name(requirement))
    return names


def _imported_modules() -> dict[str, set[str]]:
    """Top-level module -> the files that import it (absolute imports only)."""
    found: dict[str, set[str]] = {}
    for source in SOURCES:
        for path in (ROOT / source).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    found.setdefault(module.partition(".")[0], set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_third_party_import_is_installed_by_the_test_command():
    declared = _installed_by_test_command()
    first_party = {path.stem for source in SOURCES for path in (ROOT / source).rglob("*.py")} | set(SOURCES)
    providers = importlib.metadata.packages_distributions()
    missing = []
    for module, files in sorted(_imported_modules().items()):
        if module in sys.stdlib_module_names or module in first_party:
            continue
        distributions = {_name(d) for d in providers.get(module, [])}
        if not distributions & declared:
            missing.append(f"{module} (imported by {', '.join(sorted(files))}; "
                           f"provided by {sorted(distributions) or 'nothing installed'})")
    assert not missing, "imports that `bash scripts/test.sh` does not install:\n" + "\n".join(missing)
