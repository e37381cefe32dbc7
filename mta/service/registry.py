"""Monoids, slide policies and punctuation predicates by name, with typed parameters: what a
remote client may ask for.

The gRPC server builds every window and stream query from this registry; plugin modules add
their own entries (``mta serve --plugin pkg.module`` imports the module and calls
its ``register(registry)``). Parameters are checked against their declared types
before anything is built, and every error names the component and the parameter.
Nothing from the wire is ever evaluated: a name selects a Python callable that
the server's operator installed. :meth:`Registry.entries` lists what a server offers
(the ``Describe`` RPC sends it to clients).

    def register(registry):
        registry.add_policy("sum_at_most", lambda limit: lambda total, old: old.value <= limit,
                            doc="keep the newest updates whose sum is at most `limit`", limit=float)
        registry.add_predicate("is_marker", lambda: lambda value: value == -1.0,
                               doc="an update valued -1 starts a window")
"""

from __future__ import annotations

import importlib
import json
import math
import operator
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from mta import monoid as monoids
from mta.policy import MaxSize, TimeRange

#: The parameter types a client can send (proto ``Param``).
TYPES = (int, float, str, bool)
REQUIRED: Any = object()
#: The algorithms that keep their levels in the server's store (the first is the default).
ALGORITHMS = {
    "amta": "Amortized MTA (paper section 4.2): O(1) amortized insert and evict, O(log n) bulk evict",
    "log_mta": "Log MTA (paper section 4.1): O(log n) insert and evict, O(log n) bulk evict",
    "fiba": "Finger B-tree aggregator (FiBA): updates in any timestamp order, O(log d) insert at distance d "
            "from the newest, range queries and retractions, O(log n) bulk evict",
}


def map_key(key: str) -> str:
    """How an error names the entry ``key`` of a map field: ``["key"]`` (a JSON string),
    which stays unambiguous whatever characters the key holds."""
    return f"[{json.dumps(key, ensure_ascii=False)}]"


class RegistryError(ValueError):
    """A name or a parameter the registry cannot serve; the message says which, and
    ``field`` is its path inside the request's ``Component``: ``name``, ``params``
    (the parameters together) or ``params["p"]``."""

    def __init__(self, message: str, field: str = "name") -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class ParamSpec:
    name: str
    type: type
    default: Any = REQUIRED

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@dataclass(frozen=True)
class Entry:
    """One registered monoid or policy factory. ``timestamps`` (policies): whether what
    the policy keeps depends on the updates' timestamps, not only on their count and
    values; a window with such a policy keeps every update's timestamp."""

    kind: str
    name: str
    factory: Callable[..., Any]
    params: tuple[ParamSpec, ...]
    doc: str
    timestamps: bool = False

    def build(self, params: Mapping[str, Any]) -> Any:
        known = {p.name for p in self.params}
        unknown = sorted(set(params) - known)
        if unknown:
            raise RegistryError(f"{self.kind} {self.name!r} has no parameter {unknown[0]!r} "
                                f"(parameters: {', '.join(sorted(known)) or 'none'})", f"params{map_key(unknown[0])}")
        args = {}
        for spec in self.params:
            if spec.name in params:
                args[spec.name] = _check(self, spec, params[spec.name])
            elif spec.required:
                raise RegistryError(f"{self.kind} {self.name!r}: parameter {spec.name!r} "
                                    f"({spec.type.__name__}) is required", f"params{map_key(spec.name)}")
            else:
                args[spec.name] = spec.default
        try:
            return self.factory(**args)
        except (TypeError, ValueError) as error:
            # the factory does not say which parameter it refused: the one the request gave, if
            # it gave one, else the parameters together
            given = [spec.name for spec in self.params if spec.name in params]
            field = f"params{map_key(given[0])}" if len(given) == 1 else "params"
            raise RegistryError(f"{self.kind} {self.name!r}: {error}", field) from None


def _check(entry: Entry, spec: ParamSpec, value: Any) -> Any:
    kind = spec.type
    if kind is float and type(value) is int:
        value = float(value)
    field = f"params{map_key(spec.name)}"
    if type(value) is not kind:
        raise RegistryError(f"{entry.kind} {entry.name!r}: parameter {spec.name!r} must be "
                            f"{kind.__name__}, got {type(value).__name__} {value!r}", field)
    if kind is float and not math.isfinite(value):
        raise RegistryError(f"{entry.kind} {entry.name!r}: parameter {spec.name!r} must be finite, got {value!r}",
                            field)
    return value


def _params(declared: Mapping[str, Any]) -> tuple[ParamSpec, ...]:
    out = []
    for name, declaration in declared.items():
        kind, default = declaration if isinstance(declaration, tuple) else (declaration, REQUIRED)
        if kind not in TYPES:
            raise TypeError(f"parameter {name!r}: type must be one of int, float, str, bool, got {kind!r}")
        if default is not REQUIRED:
            default = _check(Entry("parameter", name, lambda: None, (), ""), ParamSpec(name, kind), default)
        out.append(ParamSpec(name, kind, default))
    return tuple(out)


class Registry:
    """Named monoid and policy factories."""

    def __init__(self) -> None:
        self._entries: dict[str, dict[str, Entry]] = {"monoid": {}, "policy": {}, "predicate": {}}

    def add_monoid(self, name: str, factory: Callable[..., monoids.Monoid], doc: str = "",
                   **params: type | tuple[type, Any]) -> None:
        """Register ``factory(**params) -> Monoid`` as ``name``; ``params`` map a parameter
        name to its type, or to ``(type, default)``. ``doc``: one line for clients (``Describe``),
        by default the first line of the factory's docstring."""
        self._add("monoid", name, factory, doc, params)

    def add_policy(self, name: str, factory: Callable[..., Callable[[Any, Any], bool]], doc: str = "",
                   timestamps: bool = True, **params: type | tuple[type, Any]) -> None:
        """Register ``factory(**params) -> wsp(total, old)`` as ``name`` (see :meth:`add_monoid`).
        ``timestamps=False`` tells clients that the policy looks only at counts and values
        (a callable may read ``total.last``, so the default is True)."""
        self._add("policy", name, factory, doc, params, timestamps)

    def add_predicate(self, name: str, factory: Callable[..., Callable[[Any], bool]], doc: str = "",
                      **params: type | tuple[type, Any]) -> None:
        """Register ``factory(**params) -> predicate(value) -> bool`` as ``name``: the predicate
        of punctuation windows (an update whose value satisfies it starts a window). It gets
        the update's value as sent: a number, a dict of dimensions, or a payload's object."""
        self._add("predicate", name, factory, doc, params)

    def _add(self, kind: str, name: str, factory: Callable[..., Any], doc: str, params: Mapping[str, Any],
             timestamps: bool = False) -> None:
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"{kind} name must be an identifier, got {name!r}")
        if name in self._entries[kind]:
            raise ValueError(f"{kind} {name!r} is registered already")
        if not callable(factory):
            raise TypeError(f"{kind} {name!r}: factory must be callable, got {factory!r}")
        doc = doc or (factory.__doc__ or "").strip().partition("\n")[0]  # a lambda has none
        self._entries[kind][name] = Entry(kind, name, factory, _params(params), doc, timestamps)

    def entry(self, kind: str, name: str) -> Entry:
        try:
            return self._entries[kind][name]
        except KeyError:
            raise RegistryError(f"unknown {kind} {name!r}; registered: {', '.join(sorted(self._entries[kind]))}") \
                from None

    def monoid(self, name: str, params: Mapping[str, Any] | None = None) -> monoids.Monoid:
        built = self.entry("monoid", name).build(params or {})
        if not isinstance(built, monoids.Monoid):
            raise RegistryError(f"monoid {name!r}: its factory returned {type(built).__name__}, not a Monoid")
        return built

    def policy(self, name: str, params: Mapping[str, Any] | None = None) -> Callable[[Any, Any], bool]:
        built = self.entry("policy", name).build(params or {})
        if not callable(built):
            raise RegistryError(f"policy {name!r}: its factory returned {type(built).__name__}, not a callable")
        return built

    def predicate(self, name: str, params: Mapping[str, Any] | None = None) -> Callable[[Any], bool]:
        built = self.entry("predicate", name).build(params or {})
        if not callable(built):
            raise RegistryError(f"predicate {name!r}: its factory returned {type(built).__name__}, not a callable")
        return built

    def names(self, kind: str) -> list[str]:
        return sorted(self._entries[kind])

    def entries(self, kind: str) -> list[Entry]:
        """Every ``kind`` ("monoid", "policy" or "predicate") entry, by name."""
        return [self._entries[kind][name] for name in self.names(kind)]

    def load_plugin(self, module: str) -> None:
        """Import ``module`` and call its ``register(registry)``."""
        try:
            loaded = importlib.import_module(module)
        except ImportError as error:
            raise RegistryError(f"plugin {module!r} cannot be imported: {error}") from None
        register = getattr(loaded, "register", None)
        if not callable(register):
            raise RegistryError(f"plugin {module!r} has no register(registry) function")
        register(self)


def _comparison(compare: Callable[[Any, Any], bool]) -> Callable[..., Callable[[Any], bool]]:
    """A predicate factory: ``compare(value, threshold)``, on the value or on one of its dimensions."""
    def factory(threshold: float, dimension: str = "") -> Callable[[Any], bool]:
        if dimension:
            return lambda value: compare(value[dimension], threshold)
        return lambda value: compare(value, threshold)
    return factory


def builtin_registry() -> Registry:
    """The monoids of :mod:`mta.monoid` over numbers, the built-in policies and predicates."""
    registry = Registry()
    ddof = {"ddof": (int, 0)}  # 0: population, 1: sample
    for name, cls, params, doc in [
            ("count", monoids.Count, {}, "number of updates (their values are ignored)"),
            ("sum", monoids.Sum, {}, "sum of the values"),
            ("min", monoids.Min, {}, "smallest value (NaN refused)"),
            ("max", monoids.Max, {}, "largest value (NaN refused)"),
            ("mean", monoids.Mean, {}, "arithmetic mean"),
            ("variance", monoids.Variance, ddof, "variance: population (ddof 0) or sample (ddof 1)"),
            ("stddev", monoids.StdDev, ddof, "standard deviation: population (ddof 0) or sample (ddof 1)"),
            ("geometric_mean", monoids.GeometricMean, {}, "geometric mean of positive values"),
            ("min_count", monoids.MinCount, {}, "smallest value and how often it occurs (payload: [value, count])"),
            ("max_count", monoids.MaxCount, {}, "largest value and how often it occurs (payload: [value, count])"),
            ("first", monoids.First, {}, "oldest value in the window"),
            ("last", monoids.Last, {}, "newest value in the window")]:
        registry.add_monoid(name, cls, doc=doc, **params)
    registry.add_policy("max_size", MaxSize, doc="keep the newest `n` updates (paper Listing 3)", timestamps=False,
                        n=int)
    registry.add_policy("time_range", TimeRange,
                        doc="keep the updates newer than `width` time units (paper Listing 1)", width=float)
    for name, compare, says in [("above", operator.gt, "greater than"), ("at_least", operator.ge, "at least"),
                                ("below", operator.lt, "less than"), ("equals", operator.eq, "equal to")]:
        registry.add_predicate(name, _comparison(compare), threshold=float, dimension=(str, ""),
                               doc=f"the value (or its `dimension`, for a stream with dimensions) is {says} "
                                   "`threshold`")
    return registry
