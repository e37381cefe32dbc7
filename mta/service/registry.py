"""Monoids and slide policies by name, with typed parameters: what a remote client may ask for.

The gRPC server builds every window from this registry; plugin modules add
their own entries (``mta serve --plugin pkg.module`` imports the module and calls
its ``register(registry)``). Parameters are checked against their declared types
before anything is built, and every error names the component and the parameter.
Nothing from the wire is ever evaluated: a name selects a Python callable that
the server's operator installed.

    def register(registry):
        registry.add_policy("sum_at_most", lambda limit: lambda total, old: old.value <= limit,
                            limit=float)
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from mta import monoid as monoids
from mta.policy import MaxSize, TimeRange

#: The parameter types a client can send (proto ``Param``).
TYPES = (int, float, str, bool)
REQUIRED: Any = object()


class RegistryError(ValueError):
    """A name or a parameter the registry cannot serve; the message says which."""


@dataclass(frozen=True)
class ParamSpec:
    name: str
    type: type
    default: Any = REQUIRED


@dataclass(frozen=True)
class Entry:
    """One registered monoid or policy factory."""

    kind: str
    name: str
    factory: Callable[..., Any]
    params: tuple[ParamSpec, ...]
    doc: str

    def build(self, params: Mapping[str, Any]) -> Any:
        known = {p.name for p in self.params}
        unknown = sorted(set(params) - known)
        if unknown:
            raise RegistryError(f"{self.kind} {self.name!r} has no parameter {unknown[0]!r} "
                                f"(parameters: {', '.join(sorted(known)) or 'none'})")
        args = {}
        for spec in self.params:
            if spec.name in params:
                args[spec.name] = _check(self, spec, params[spec.name])
            elif spec.default is REQUIRED:
                raise RegistryError(f"{self.kind} {self.name!r}: parameter {spec.name!r} "
                                    f"({spec.type.__name__}) is required")
            else:
                args[spec.name] = spec.default
        try:
            return self.factory(**args)
        except (TypeError, ValueError) as error:
            raise RegistryError(f"{self.kind} {self.name!r}: {error}") from None


def _check(entry: Entry, spec: ParamSpec, value: Any) -> Any:
    kind = spec.type
    if kind is float and type(value) is int:
        value = float(value)
    if type(value) is not kind:
        raise RegistryError(f"{entry.kind} {entry.name!r}: parameter {spec.name!r} must be "
                            f"{kind.__name__}, got {type(value).__name__} {value!r}")
    if kind is float and not math.isfinite(value):
        raise RegistryError(f"{entry.kind} {entry.name!r}: parameter {spec.name!r} must be finite, got {value!r}")
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
        self._entries: dict[str, dict[str, Entry]] = {"monoid": {}, "policy": {}}

    def add_monoid(self, name: str, factory: Callable[..., monoids.Monoid], doc: str = "",
                   **params: type | tuple[type, Any]) -> None:
        """Register ``factory(**params) -> Monoid`` as ``name``; ``params`` map a parameter
        name to its type, or to ``(type, default)``."""
        self._add("monoid", name, factory, doc, params)

    def add_policy(self, name: str, factory: Callable[..., Callable[[Any, Any], bool]], doc: str = "",
                   **params: type | tuple[type, Any]) -> None:
        """Register ``factory(**params) -> wsp(total, old)`` as ``name`` (see :meth:`add_monoid`)."""
        self._add("policy", name, factory, doc, params)

    def _add(self, kind: str, name: str, factory: Callable[..., Any], doc: str, params: Mapping[str, Any]) -> None:
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"{kind} name must be an identifier, got {name!r}")
        if name in self._entries[kind]:
            raise ValueError(f"{kind} {name!r} is registered already")
        if not callable(factory):
            raise TypeError(f"{kind} {name!r}: factory must be callable, got {factory!r}")
        self._entries[kind][name] = Entry(kind, name, factory, _params(params), doc)

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

    def names(self, kind: str) -> list[str]:
        return sorted(self._entries[kind])

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


def builtin_registry() -> Registry:
    """The monoids of :mod:`mta.monoid` over numbers and the built-in policies."""
    registry = Registry()
    for name, cls in [("count", monoids.Count), ("sum", monoids.Sum), ("min", monoids.Min), ("max", monoids.Max),
                      ("mean", monoids.Mean), ("variance", monoids.Variance), ("stddev", monoids.StdDev),
                      ("geometric_mean", monoids.GeometricMean), ("min_count", monoids.MinCount),
                      ("max_count", monoids.MaxCount), ("first", monoids.First), ("last", monoids.Last)]:
        registry.add_monoid(name, cls, doc=(cls.__doc__ or "").strip().splitlines()[0])
    registry.add_policy("max_size", MaxSize, doc="keep the newest n updates (paper Listing 3)", n=int)
    registry.add_policy("time_range", TimeRange,
                        doc="keep the updates newer than `width` time units (paper Listing 1)", width=float)
    return registry
