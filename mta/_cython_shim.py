"""What ``import cython`` gives a pure-mode module when Cython is not installed.

The compiled core is written in Cython's pure-Python mode: each such module starts with

    try:
        import cython
    except ModuleNotFoundError:  # Cython is a build requirement, not a run-time one
        from mta import _cython_shim as cython

Cython's compiler needs the literal ``import cython`` to recognise the decorators; at run
time without Cython this module stands in for it (as SQLAlchemy's ``util/cython.py`` and
fontTools' ``misc/cython.py`` do). Only the names our modules use are defined: the
decorators return their argument unchanged and the type names are plain Python types.
Annotations are never evaluated at run time (the modules use ``from __future__ import
annotations``), so ``cython.double[:]`` in an annotation needs nothing here.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Callable, TypeVar

_T = TypeVar("_T")

compiled = False

# C types, as the Python types that hold their values
bint = bool
int = int  # noqa: A001
long = longlong = ulonglong = Py_ssize_t = size_t = int
float = double = float  # noqa: A001


def _same(obj: _T) -> _T:
    return obj


def _factory(*_args: Any, **_kwargs: Any) -> Callable[[_T], _T]:
    return _same


# decorators used bare: @cython.cclass, @cython.cfunc ...
cclass = cfunc = ccall = inline = final = _same
# decorators used with arguments: @cython.boundscheck(False), @cython.locals(i=cython.int) ...
boundscheck = wraparound = cdivision = initializedcheck = nonecheck = locals = returns = exceptval = binding = _factory


def fused_type(*_types: Any) -> Any:
    return object


def struct(**_members: Any) -> type:
    """A C struct type: its values are namespaces built with keyword arguments."""
    return SimpleNamespace


union = struct  # (only compiled code reads a union's fields)


def declare(_type: Any = None, value: Any = None, **_kwargs: Any) -> Any:
    return value


def cast(_type: Any, value: Any, *, typecheck: bool = False) -> Any:
    return value
