"""The server's registry: monoids and policies by name, with typed parameters and plugins."""

from __future__ import annotations

import pytest

from mta import Window
from mta.monoid import Max, Sum
from mta.policy import MaxSize, TimeRange
from mta.service.registry import RegistryError, builtin_registry


@pytest.fixture
def registry():
    return builtin_registry()


def test_builtins_build_the_library_objects(registry) -> None:
    assert isinstance(registry.monoid("sum"), Sum)
    assert isinstance(registry.monoid("max", {}), Max)
    assert registry.policy("max_size", {"n": 5}).max_size == 5
    policy = registry.policy("time_range", {"width": 60})  # an int is fine for a float parameter
    assert isinstance(policy, TimeRange)
    assert {"count", "sum", "min", "max", "mean", "variance", "stddev", "first", "last"} <= set(
        registry.names("monoid"))
    assert registry.names("policy") == ["max_size", "time_range"]


@pytest.mark.parametrize("kind, name, params, message", [
    ("monoid", "median", {}, "unknown monoid 'median'; registered: count"),
    ("policy", "max_size", {}, "policy 'max_size': parameter 'n' (int) is required"),
    ("policy", "max_size", {"n": "5"}, "parameter 'n' must be int, got str '5'"),
    ("policy", "max_size", {"n": 5.0}, "parameter 'n' must be int, got float 5.0"),
    ("policy", "max_size", {"n": True}, "parameter 'n' must be int, got bool True"),
    ("policy", "max_size", {"n": -1}, "policy 'max_size': MaxSize takes an int >= 0"),
    ("policy", "time_range", {"width": float("nan")}, "parameter 'width' must be finite"),
    ("policy", "time_range", {"width": 5, "minutes": 1}, "has no parameter 'minutes' (parameters: width)"),
    ("monoid", "sum", {"x": 1}, "monoid 'sum' has no parameter 'x' (parameters: none)"),
])
def test_bad_requests_name_what_was_wrong(registry, kind, name, params, message) -> None:
    with pytest.raises(RegistryError) as error:
        getattr(registry, kind)(name, params)
    assert message in str(error.value)


def test_plugins_register_monoids_and_policies_used_by_windows(registry) -> None:
    registry.load_plugin("plugins.sample_plugin")
    product = registry.monoid("product")
    w = Window(registry.monoid("max"), registry.policy("newest", {"n": 2}))
    for ts, v in enumerate([5, 2, 3, 1]):
        w.insert(ts, v)
    assert list(w) == [3, 1] and w.query() == 3
    w = Window(registry.monoid("max"), registry.policy("newest"))  # the default n = 3
    for ts, v in enumerate([5, 2, 3, 1]):
        w.insert(ts, v)
    assert list(w) == [2, 3, 1]
    p = Window(product, MaxSize(3))
    for ts, v in enumerate([2, 3, 4, 5]):
        p.insert(ts, v)
    assert p.query() == 60.0


def test_bad_plugins_and_registrations_are_refused(registry) -> None:
    with pytest.raises(RegistryError, match="cannot be imported"):
        registry.load_plugin("plugins.nope")
    with pytest.raises(RegistryError, match="no register"):
        registry.load_plugin("plugins.broken_plugin")
    with pytest.raises(ValueError, match="registered already"):
        registry.add_monoid("sum", Sum)
    with pytest.raises(ValueError, match="identifier"):
        registry.add_policy("not a name", MaxSize, n=int)
    with pytest.raises(TypeError, match="type must be one of"):
        registry.add_policy("bad_type", MaxSize, n=list)
    registry.add_monoid("not_a_monoid", lambda: 42)
    with pytest.raises(RegistryError, match="returned int, not a Monoid"):
        registry.monoid("not_a_monoid")
