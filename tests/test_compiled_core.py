"""The optional compiled core (issue 20): which path is in use, and that both agree.

The same checks run in this process (compiled when the install had a C compiler) and in
a subprocess with ``MTA_NO_EXTENSIONS=1`` (always the pure path), and the two must give
identical results. ``MTA_REQUIRE_EXTENSIONS=1`` at test time makes a missing compiled
module a failure instead of a pass on the pure path (CI's compiled job sets it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import mta
from conftest import assert_continues_on_pure_path
from mta import _extensions
from mta.algorithms import typed

# Runs a typed core and prints what it saw as JSON: the module's file, mta.COMPILED, results.
SCRIPT = r"""
import json, random, sys
if "--no-cython" in sys.argv:
    sys.modules["cython"] = None  # as if Cython were not installed: the shim must stand in
import mta
from mta import GeometricMean, Sum
from mta.algorithms import typed
rng = random.Random(20)
r = typed.TypedTwoStacks(Sum())
sums = []
for step in range(1000):
    r.insert(rng.uniform(-1e6, 1e6) if step % 3 else 2.0 ** rng.randrange(-60, 60))
    if len(r) == 64:
        r.evict(rng.randrange(1, 64))
    sums.append(r.query())
errors = []
for call in (lambda: typed.TypedTwoStacks(GeometricMean()), lambda: typed.TypedTwoStacks(Sum()).evict(),
             lambda: r.insert("x"), lambda: r.evict("1")):
    try:
        call()
    except Exception as e:
        errors.append(type(e).__name__)
print(json.dumps({"file": typed.__file__, "compiled": mta.COMPILED, "module_compiled": typed.COMPILED,
                  "shim": getattr(getattr(typed, "cython", None), "__name__", None), "sums": sums, "errors": errors}))
"""


def _run(no_extensions: bool, *args: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "MTA_NO_EXTENSIONS"}
    if no_extensions:
        env["MTA_NO_EXTENSIONS"] = "1"
    out = subprocess.run([sys.executable, "-c", SCRIPT, *args], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def _so_beside_source() -> bool:
    """Whether a compiled module sits beside the source (what a run without the variable loads)."""
    import importlib.machinery
    here = Path(typed.__file__).parent
    return any((here / f"typed{suffix}").exists() for suffix in importlib.machinery.EXTENSION_SUFFIXES)


def _compiled_files() -> dict[str, Path]:
    """Each module of the compiled core that is loaded from an extension module, by name."""
    import importlib
    files = {name: Path(importlib.import_module(name).__file__) for name in _extensions.EXTENSION_MODULES}
    return {name: file for name, file in files.items() if file.suffix != ".py"}


def test_in_process_path_matches_mta_compiled():
    compiled = bool(_compiled_files())
    assert mta.COMPILED is compiled
    assert _extensions.compiled_modules() == {name: compiled for name in _extensions.EXTENSION_MODULES}
    if os.environ.get("MTA_REQUIRE_EXTENSIONS") and not os.environ.get("MTA_NO_EXTENSIONS"):
        assert compiled, "MTA_REQUIRE_EXTENSIONS is set but the compiled core is not in use"


def test_no_extensions_forces_the_pure_path_and_both_paths_agree():
    pure = _run(True)
    assert pure["file"].endswith("typed.py")
    assert pure["compiled"] is False and pure["module_compiled"] is False
    default = _run(False)
    assert default["compiled"] is default["module_compiled"] is _so_beside_source()
    assert default["sums"] == pure["sums"]  # same operations in the same order: identical floats
    assert default["errors"] == pure["errors"] == ["TypeError", "ValueError", "Untyped", "TypeError"]


def test_pure_path_runs_without_cython_installed():
    result = _run(True, "--no-cython")
    assert result["shim"] == "mta._cython_shim" and result["compiled"] is False
    assert result["sums"] == _run(True)["sums"]


def test_compiled_modules_are_not_older_than_their_sources():
    """An editable install's .so shadows later edits of the .py: rebuild (pip install -e .)."""
    compiled = _compiled_files()
    if not compiled:
        pytest.skip("pure-Python path in use")
    for name, so in compiled.items():
        source = so.with_name(name.rpartition(".")[2] + ".py")
        assert so.stat().st_mtime >= source.stat().st_mtime - 2, (
            f"{so.name} is older than {source.name}: rebuild with pip install -e . (or set MTA_NO_EXTENSIONS=1)")


def test_a_window_pickled_on_one_path_loads_on_the_other(tmp_path):
    """Typed windows (AMTA, Log MTA, TwoStacks, DABA; count and time policies) pickled here load
    under MTA_NO_EXTENSIONS=1 and go on with the same results (the typed AMTA pickles its values as
    plain tuples; a timed window's core pickles itself, found from outside: its raw snapshot did not
    load on the pure path)."""
    from mta import Mean, MaxSize, TimeRange, Window
    windows = [Window(Mean(), policy, algorithm=name) for name in ("amta", "log_mta", "two_stacks", "daba")
               for policy in (MaxSize(5), TimeRange(5))]
    for window in windows:
        for t in range(100):
            window.insert(t, t * 0.5)
    assert_continues_on_pure_path(windows, tmp_path)
