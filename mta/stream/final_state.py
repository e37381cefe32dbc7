"""The final aggregation's structures in a pickle of a Stream, so that an unpickled (or
deep-copied) stream answers bit for bit.

A FiBA tree's shape, an AMTA's stacks and a multi-query aggregator's partials decide the
order in which its answers combine the slices; floats round differently in another
order (``(1e16 + 0.1) - 1e16`` is not ``(1e16 - 1e16) + 0.1``). Rebuilt from the slices
alone, a final would answer windows of the copy in the last bits differently from the
original. ``Stream.__reduce__`` therefore carries the final aggregation object itself.
Only a pickle carries it, never ``Stream.snapshot()``'s bytes: those go to stores, and a
store is not trusted with a pickle (a forged one could set a class's attributes through
BUILD, or hand a compiled core unchecked counters). Reading it back is still restricted:

- only classes defined in the modules of :data:`_MODULES` and :data:`_PACKAGES` (the
  aggregators, the finals, the built-in monoids, the optimizer's plans) and the few
  reconstructors and standard classes of :data:`_GLOBALS` load; anything else is refused
  (``pickle.UnpicklingError``), and so is a pickle that is not of a final aggregation;
- a typed multi-query aggregator (compiled, it has no pickle form) is stored as its
  object twin in the same state: after unpickling the shared group runs on that one;
- the stream's own objects are not in it but named (persistent ids): its slices, its
  monoid and the monoids of a Record's fields (and their combine functions), the
  optimizer's planner, the markers (the shared final's, First's and Last's empty), and
  values of a type with a ``kvs.codec`` codec (a user's partials), which go through it.

A final that holds something else (a user optimizer's own plan object, a partial of a
type without a codec) is not stored: :func:`dump` returns None and the copy rebuilds that
final from its slices (exact for ``lazy``; the others may differ in the last bits).
"""

from __future__ import annotations

import importlib
import io
import pickle
import types
from typing import Any

from kvs import codec
from mta.algorithms.multi_query import MultiQueryAggregator
from mta import monoid as monoid_module
from mta.monoid import Monoid, Record
from mta.stream import shared
from mta.stream.final import FinalAggregation

#: modules whose classes a stored final may be built of (their functions are not loaded: a
#: generic one, such as final.call's getattr, would let a pickle reach any attribute)
_MODULES = frozenset({"mta.stream.final", "mta.stream.shared", "mta.monoid", "mta.windows", "mta.optimizer"})
#: the packages likewise (every module in them but those of _EXCLUDED)
_PACKAGES = ("mta.algorithms.", "mta.optimizer.")
#: aggregators that reach outside the process (a stored FiBA reads and writes its store)
_EXCLUDED = frozenset({"mta.algorithms.fiba_store"})
#: the functions a pickle of these may name: the typed cores' and this module's reconstructors,
#: the standard library's arrays; and the standard classes an object AMTA's levels are made of
_GLOBALS = frozenset({("mta.algorithms.typed", "_restored"), ("mta.algorithms.typed", "_columns"),
                      ("mta.algorithms.typed_fiba", "_unpickled"), ("mta.stream.final_state", "_new"),
                      ("array", "array"), ("array", "_array_reconstructor"), ("collections", "deque"),
                      ("collections", "OrderedDict"), ("kvs.memory", "MemoryStore"), ("kvs.memory", "MemoryLevel")})
#: types a pickle holds as they are (no persistent id to look for)
_PLAIN = frozenset({float, int, bool, str, bytes, tuple, list, dict, set, type(None)})
#: the typed multi-query aggregators: stored as their object twins (same partials, same order)
_TYPED_MQ = "mta.algorithms.typed_mq"
_FUNCTIONS = frozenset({types.FunctionType, types.BuiltinFunctionType})
_SENTINELS = {"missing": shared._MISSING, "no_part": shared._NO_PART, "empty": monoid_module._EMPTY}


class _NotStored(Exception):
    """The final holds an object that a snapshot cannot name or load back."""


def _monoids(monoid: Monoid, path: tuple = ()) -> list[tuple[tuple, Monoid]]:
    """``monoid`` and, for a Record, its fields' monoids (recursively), each with its path."""
    found = [(path, monoid)]
    if isinstance(monoid, Record):
        for name, field in monoid.fields.items():
            found.extend(_monoids(field, path + (name,)))
    return found


def _loadable(module: str, name: str, found: Any) -> bool:
    """Whether the global ``module.name`` (``found``) may be in a stored final."""
    if (module, name) in _GLOBALS:
        return True
    return (isinstance(found, type) and getattr(found, "__module__", None) == module and "." not in name
            and module not in _EXCLUDED and (module in _MODULES or module.startswith(_PACKAGES)))


def _new(cls: type) -> Any:
    """An instance of ``cls`` made without its ``__new__`` and ``__init__`` (its state is set next)."""
    return object.__new__(cls)


class _Pickler(pickle.Pickler):
    def __init__(self, file: io.BytesIO, stream: Any) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.ids: dict[int, Any] = {id(stream.slices): ("slices",)}
        self.combines: list[tuple[Any, tuple]] = []
        for path, monoid in _monoids(stream.monoid):
            self.ids[id(monoid)] = ("monoid", path)
            combine = monoid.combine
            if getattr(combine, "__self__", None) is not monoid:  # a function (Sum's operator.add, a Record's)
                self.ids[id(combine)] = ("combine", path)
        for name, sentinel in _SENTINELS.items():
            self.ids[id(sentinel)] = ("sentinel", name)
        self.planner = stream._plan_for

    def reducer_override(self, obj: Any) -> Any:
        if type(obj).__module__ == _TYPED_MQ:  # compiled, it does not pickle: its object twin, in its state
            obj = obj.to_object()
        elif not isinstance(obj, MultiQueryAggregator):
            return NotImplemented
        # made without its __new__ (SlickDeque's picks the variant from arguments it would not get)
        return _new, (type(obj),), obj.__getstate__()

    def persistent_id(self, obj: Any) -> Any:
        kind = type(obj)
        if kind in _PLAIN:
            return None
        named = self.ids.get(id(obj))
        if named is not None:
            return named
        if kind is types.MethodType:
            if obj == self.planner:
                return ("planner",)
            owner = self.ids.get(id(obj.__self__))  # a method of a monoid (an AMTA's monoid.fold)
            if owner is not None and owner[0] == "monoid":
                return ("method", owner[1], obj.__func__.__name__)
        if codec.registered(kind):
            return ("codec", codec.pack(obj))
        if isinstance(obj, type) or kind in _FUNCTIONS:  # a global: what the unpickler loads
            module, name = obj.__module__, obj.__qualname__
            if not _loadable(module, name, obj):
                raise _NotStored(f"{module}.{name}")
        return None


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, stream: Any) -> None:
        super().__init__(file)
        self.stream = stream
        self.monoids = dict(_monoids(stream.monoid))

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _GLOBALS or module.startswith(_PACKAGES) or module in _MODULES:
            try:
                found = getattr(importlib.import_module(module), name, None)
            except ImportError:
                found = None
            if _loadable(module, name, found):
                return found
        raise pickle.UnpicklingError(f"a stored final aggregation may not hold {module}.{name}")

    def persistent_load(self, pid: Any) -> Any:
        kind = pid[0]
        if kind == "slices":
            return self.stream.slices
        if kind == "monoid":
            return self.monoids[tuple(pid[1])]
        if kind == "method" and not pid[2].startswith("_"):
            return getattr(self.monoids[tuple(pid[1])], pid[2])
        if kind == "combine":
            return self.monoids[tuple(pid[1])].combine
        if kind == "sentinel":
            return _SENTINELS[pid[1]]
        if kind == "planner":
            return self.stream._plan_for
        if kind == "codec":
            return codec.unpack(pid[1])
        raise pickle.UnpicklingError(f"unknown persistent id {pid!r} in a stored final aggregation")


def dump(stream: Any) -> bytes | None:
    """``stream.final`` as bytes for :func:`load`, or None if it holds what cannot be stored."""
    buffer = io.BytesIO()
    try:
        _Pickler(buffer, stream).dump(stream.final)
    except (_NotStored, pickle.PicklingError, TypeError, AttributeError):
        return None
    return buffer.getvalue()


def load(stream: Any, data: bytes) -> Any:
    """The final aggregation :func:`dump` stored, over ``stream``'s slices and monoid."""
    final = _Unpickler(io.BytesIO(data), stream).load()
    if not isinstance(final, FinalAggregation):
        raise pickle.UnpicklingError(f"a stored final aggregation is a {type(final).__name__}")
    return final
