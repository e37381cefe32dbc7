"""Build of mta's optional compiled core (issue 20); the metadata is in pyproject.toml.

The modules named in ``mta/_extensions.py`` (``EXTENSION_MODULES``) are ``.py`` files in
Cython's pure-Python mode: with Cython (a build requirement) and a C compiler they are
compiled to extension modules that sit beside the ``.py`` and win the import; without a
compiler the install still succeeds and says in one line that the pure-Python path is in
use. Environment variables, read at build time:

- ``MTA_NO_EXTENSIONS`` (non-empty): build nothing, a pure wheel (py3-none-any);
- ``MTA_REQUIRE_EXTENSIONS`` (non-empty): a failed compile fails the build (CI, wheels).
"""

from __future__ import annotations

import os
import platform
import runpy
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, ExecError, PlatformError

HERE = os.path.dirname(os.path.abspath(__file__))
MODULES = runpy.run_path(os.path.join(HERE, "mta", "_extensions.py"))["EXTENSION_MODULES"]
NO_EXTENSIONS = bool(os.environ.get("MTA_NO_EXTENSIONS"))
REQUIRE_EXTENSIONS = bool(os.environ.get("MTA_REQUIRE_EXTENSIONS"))
# embedsignature in Argument Clinic's format: builtin methods (the typed cores' classes are
# compiled with binding=False) then have __text_signature__, so inspect.signature reads them
DIRECTIVES = {"language_level": "3", "embedsignature": True, "embedsignature.format": "clinic"}


def _tell(line: str) -> None:
    """One line to the person installing. pip shows a build backend's output only with -v
    (or when the build fails), so the line goes to the terminal when there is one, and to
    stderr otherwise (CI logs with pip -v, python -m build, setup.py)."""
    try:
        with open("/dev/tty", "w") as tty:
            tty.write("\n" + line + "\n")  # own line, even after pip's spinner
        return
    except OSError:
        pass
    print(line, file=sys.stderr, flush=True)


class optional_build_ext(build_ext):
    """build_ext that cythonizes the pure-mode sources and turns any failure (no Cython,
    no compiler, a compile error) into one line and the pure-Python path."""

    def run(self) -> None:
        self._failures: list[str] = []
        try:
            super().run()
        except Exception as error:  # e.g. DistutilsPlatformError: no compiler at all
            self._failed("all", error)
        if self._failures:
            _tell(f"mta: the compiled core was not built ({self._failures[0]}); "
                  f"the pure-Python path is in use (mta.COMPILED is False)")

    def build_extension(self, ext: Extension) -> None:
        try:
            from Cython.Build import cythonize

            ext.sources = cythonize([ext], build_dir=self.build_temp, quiet=True,
                                    compiler_directives=DIRECTIVES)[0].sources
            if self.compiler.compiler_type == "unix":
                # a*b+c stays two roundings, as in Python (compilers may fuse it into one FMA
                # where the CPU has one: aarch64, x86-64 with -march=native)
                ext.extra_compile_args = [*ext.extra_compile_args, "-ffp-contract=off"]
                if not self.debug:  # Python's CFLAGS carry -g: 1.2 MB of debug info in a 0.2 MB module
                    ext.extra_compile_args.append("-g0")
            super().build_extension(ext)
        except Exception as error:
            self._failed(ext.name, error)

    def _failed(self, name: str, error: Exception) -> None:
        if REQUIRE_EXTENSIONS:
            raise
        self._failures.append(f"{name}: {self._reason(error)}" if len(MODULES) > 1 else self._reason(error))

    def _reason(self, error: Exception) -> str:
        if isinstance(error, ImportError):
            return f"{error.name or 'Cython'} is not installed"
        if isinstance(error, (CCompilerError, ExecError, PlatformError)):
            command = getattr(getattr(self, "compiler", None), "compiler_so", None)
            return f"no working C compiler: {command[0]!r} failed" if command else "no C compiler"
        first = (str(error).strip().splitlines() or [""])[0]
        return f"{type(error).__name__}: {first[:100]}"


if NO_EXTENSIONS or platform.python_implementation() != "CPython":
    ext_modules = []
else:
    ext_modules = [Extension(name, sources=[name.replace(".", "/") + ".py"], optional=not REQUIRE_EXTENSIONS)
                   for name in MODULES]

setup(ext_modules=ext_modules, cmdclass={"build_ext": optional_build_ext})
