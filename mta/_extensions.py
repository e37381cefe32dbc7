"""The optional compiled core: which modules it has, the run-time switch, ``mta.COMPILED``.

Each module in ``EXTENSION_MODULES`` is one ``.py`` file in Cython's pure-Python mode. When
the build had a C compiler, a ``.so`` of the same name sits beside it and Python's import
system prefers it (extension suffixes come before ``.py`` in the path finder's loaders).

``MTA_NO_EXTENSIONS`` (any non-empty value, as aiohttp, yarl and multidict read theirs)
forces the pure path: at build time setup.py builds nothing; at run time
:func:`install_pure_finder` (called first thing by ``mta/__init__.py``) puts a finder on
``sys.meta_path`` that loads ``mta.*`` modules from their ``.py`` sources only, so the
``.so`` beside them is never loaded.

setup.py reads ``EXTENSION_MODULES`` from this file with ``runpy``: keep this module free
of imports outside the standard library.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

# The modules that setup.py compiles (dotted names; sources at mta/<...>.py).
EXTENSION_MODULES: tuple[str, ...] = ("mta.algorithms.typed", "mta.algorithms.typed_amta", "mta.algorithms.typed_fiba",
                                      "mta.algorithms.typed_mq", "mta.algorithms.typed_record", "mta.algorithms.typed_record_fiba",
                                      "mta.stream.typed_ingest",
                                      "mta.stream.fanout")

NO_EXTENSIONS: bool = bool(os.environ.get("MTA_NO_EXTENSIONS"))


class PureFinder(importlib.abc.MetaPathFinder):
    """Finds ``mta`` submodules as ``.py`` sources only (never ``.so``/``.pyd``)."""

    _loaders = [(importlib.machinery.SourceFileLoader, importlib.machinery.SOURCE_SUFFIXES)]

    def find_spec(self, fullname, path, target=None):
        if not fullname.startswith("mta.") or not path:
            return None
        for entry in path:
            spec = importlib.machinery.FileFinder(entry, *self._loaders).find_spec(fullname, target)
            if spec is not None:
                return spec
        return None  # not ours after all: let the normal finders decide


def install_pure_finder() -> None:
    if not any(isinstance(f, PureFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, PureFinder())


def load_pure(name: str):
    """A fresh pure-Python twin of module ``name``, loaded from its ``.py`` beside whatever is
    in ``sys.modules`` (for tests that compare both paths in one process, as SQLAlchemy's
    ``load_uncompiled_module`` does). Not registered in ``sys.modules``: its classes are not
    the compiled ones (``isinstance`` across the twins is False), and its own ``mta.*``
    imports get the modules in use (compiled ones included)."""
    module = importlib.import_module(name)
    origin = module.__spec__.origin
    directory = os.path.dirname(origin)
    source = os.path.join(directory, name.rpartition(".")[2] + ".py")
    spec = importlib.util.spec_from_file_location(name, source)
    twin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(twin)
    return twin


def compiled_modules() -> dict[str, bool]:
    """Each module of the compiled core -> whether its compiled form is the one loaded."""
    return {name: bool(importlib.import_module(name).COMPILED) for name in EXTENSION_MODULES}


def compiled() -> bool:
    """True when every module of the compiled core runs compiled."""
    return all(compiled_modules().values())
