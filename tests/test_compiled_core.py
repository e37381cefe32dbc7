"""The optional compiled core (issue 20), on its probe module ``mta._speedups_probe``.

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
from mta import _extensions
from mta._speedups_probe import RunningSum

# Runs the probe and prints what it saw as JSON: the module's file, mta.COMPILED, results.
SCRIPT = r"""
import json, random, sys
if "--no-cython" in sys.argv:
    sys.modules["cython"] = None  # as if Cython were not installed: the shim must stand in
import mta, mta._speedups_probe as probe
rng = random.Random(20)
r = probe.RunningSum(64)
sums = []
for step in range(1000):
    r.insert(rng.uniform(-1e6, 1e6) if step % 3 else rng.randrange(-10**9, 10**9))
    if len(r) == 64:
        r.evict()
    sums.append(r.query())
errors = []
for call in (lambda: probe.RunningSum(0), lambda: probe.RunningSum(1).evict(),
             lambda: probe.RunningSum(1).insert("x")):
    try:
        call()
    except Exception as e:
        errors.append(type(e).__name__)
full = probe.RunningSum(1); full.insert(1.0)
try:
    full.insert(2.0)
except Exception as e:
    errors.append(type(e).__name__)
print(json.dumps({"file": probe.__file__, "compiled": mta.COMPILED, "module_compiled": probe.COMPILED,
                  "shim": getattr(getattr(probe, "cython", None), "__name__", None), "sums": sums, "errors": errors}))
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
    import mta._speedups_probe as probe
    here = Path(probe.__file__).parent
    return any((here / f"_speedups_probe{suffix}").exists() for suffix in importlib.machinery.EXTENSION_SUFFIXES)


def _compiled_file() -> Path | None:
    import mta._speedups_probe as probe
    return Path(probe.__file__) if not probe.__file__.endswith(".py") else None


def test_in_process_path_matches_mta_compiled():
    compiled = _compiled_file() is not None
    assert mta.COMPILED is compiled
    assert _extensions.compiled_modules() == dict.fromkeys(_extensions.EXTENSION_MODULES, compiled)
    if os.environ.get("MTA_REQUIRE_EXTENSIONS") and not os.environ.get("MTA_NO_EXTENSIONS"):
        assert compiled, "MTA_REQUIRE_EXTENSIONS is set but the compiled core is not in use"


def test_probe_semantics():
    r = RunningSum(2)
    r.insert(1)
    r.insert(2.5)
    with pytest.raises(OverflowError):
        r.insert(3)
    assert (r.query(), len(r)) == (3.5, 2)
    assert r.evict() == 1.0 and r.query() == 2.5
    r.insert(4)  # wraps around the ring
    assert [r.evict(), r.evict()] == [2.5, 4.0] and r.query() == 0.0
    with pytest.raises(IndexError):
        r.evict()


def test_no_extensions_forces_the_pure_path_and_both_paths_agree():
    pure = _run(True)
    assert pure["file"].endswith("_speedups_probe.py")
    assert pure["compiled"] is False and pure["module_compiled"] is False
    default = _run(False)
    assert default["compiled"] is _so_beside_source()
    assert default["sums"] == pure["sums"]  # same operations in the same order: identical floats
    assert default["errors"] == pure["errors"] == ["ValueError", "IndexError", "TypeError", "OverflowError"]


def test_pure_path_runs_without_cython_installed():
    result = _run(True, "--no-cython")
    assert result["shim"] == "mta._cython_shim" and result["compiled"] is False
    assert result["sums"] == _run(True)["sums"]


def test_compiled_module_is_not_older_than_its_source():
    """An editable install's .so shadows later edits of the .py: rebuild (pip install -e .)."""
    so = _compiled_file()
    if so is None:
        pytest.skip("pure-Python path in use")
    source = so.with_name("_speedups_probe.py")
    assert so.stat().st_mtime >= source.stat().st_mtime - 2, (
        f"{so.name} is older than {source.name}: rebuild with pip install -e . (or set MTA_NO_EXTENSIONS=1)")


def test_pure_twin_in_process_agrees():
    """Both paths in one process: what the algorithm property tests need (no subprocess)."""
    import random

    pure = _extensions.load_pure("mta._speedups_probe")
    assert pure.COMPILED is False and pure.__file__.endswith(".py")
    rng = random.Random(7)
    a, b = RunningSum(16), pure.RunningSum(16)
    for _ in range(500):
        x = rng.uniform(-1e9, 1e9)
        a.insert(x)
        b.insert(x)
        if len(a) == 16:
            assert a.evict() == b.evict()
        assert a.query() == b.query()
