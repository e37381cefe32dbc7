"""The server's registry: monoids, policies and predicates by name, with typed parameters and plugins."""

from __future__ import annotations

from pathlib import Path

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


def test_builtin_predicates_compare_the_value_or_one_dimension(registry) -> None:
    assert registry.names("predicate") == ["above", "at_least", "below", "equals"]
    cases = {"above": [False, False, True], "at_least": [False, True, True], "below": [True, False, False],
             "equals": [False, True, False]}
    for name, wanted in cases.items():
        predicate = registry.predicate(name, {"threshold": 2})
        assert [predicate(v) for v in (1.0, 2.0, 3.0)] == wanted, name
        on_peak = registry.predicate(name, {"threshold": 2.0, "dimension": "peak"})
        assert [on_peak({"avg": 0.0, "peak": v}) for v in (1.0, 2.0, 3.0)] == wanted, name
    registry.add_predicate("is_marker", lambda: lambda value: value == -1.0, doc="an update valued -1")
    assert registry.predicate("is_marker")(-1.0) and not registry.predicate("is_marker")(1.0)
    registry.add_predicate("nope", lambda: 3)
    with pytest.raises(RegistryError, match="predicate 'nope': its factory returned int"):
        registry.predicate("nope")


@pytest.mark.parametrize("kind, name, params, message", [
    ("predicate", "eval", {}, "unknown predicate 'eval'; registered: above"),
    ("predicate", "above", {}, "predicate 'above': parameter 'threshold' (float) is required"),
    ("predicate", "above", {"threshold": 1.0, "dimension": 3}, "parameter 'dimension' must be str, got int 3"),
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


def test_registry_errors_say_which_field_of_the_component(registry) -> None:
    cases = [("monoid", "median", {}, "name"), ("policy", "max_size", {}, 'params["n"]'),
             ("policy", "max_size", {"n": "5"}, 'params["n"]'), ("policy", "max_size", {"n": -1}, 'params["n"]'),
             ("policy", "time_range", {"width": 5, 'min"utes': 1}, 'params["min\\"utes"]'),
             ("policy", "time_range", {"width": -1.0}, 'params["width"]'),
             ("monoid", "variance", {"ddof": 2}, 'params["ddof"]'), ("policy", "between", {"lo": 2.0, "hi": 1.0}, "params")]

    def between(lo: float, hi: float):
        if lo > hi:  # which of the two is wrong the factory cannot say: the error names them together
            raise ValueError(f"lo {lo} > hi {hi}")
        return lambda total, old: lo <= old.value <= hi

    registry.add_policy("between", between, lo=float, hi=float)
    for kind, name, params, field in cases:
        with pytest.raises(RegistryError) as error:
            getattr(registry, kind)(name, params)
        assert error.value.field == field, (name, params)


# -- the README's tables of built-ins are what Describe answers ----------------------------

ROOT = Path(__file__).resolve().parent.parent


def readme_table(first: str) -> list[dict[str, str]]:
    """The README table whose header starts with the cell ``first`` (indented or not):
    one dict per row, by header cell."""
    lines = [line.strip() for line in (ROOT / "README.md").read_text().splitlines()]

    def cells(line: str) -> list[str]:
        return [cell.strip() for cell in line.strip("|").split("|")]

    for at, line in enumerate(lines):
        if line.startswith("|") and cells(line)[0] == first:
            rows = []
            for row in lines[at + 2:]:
                if not row.startswith("|"):
                    break
                rows.append(dict(zip(cells(line), cells(row))))
            return rows
    raise AssertionError(f"README.md has no table whose header starts with {first!r}")


def _params(info) -> str:
    """ComponentInfo params as the README writes them: `name: type[ = default]`, comma-separated."""
    out = []
    for p in info.params:
        default = "" if p.required else f" = {getattr(p.default_value, p.default_value.WhichOneof('kind'))!r}"
        out.append(f"`{p.name}: {p.type}{default}`")
    return ", ".join(out)


def _describe(registry):
    import asyncio

    import kvs
    from mta.service.servicer import AggregationServicer
    from mta.v1 import aggregation_pb2 as pb

    return asyncio.run(AggregationServicer(kvs.connect("memory://"), registry).Describe(pb.DescribeRequest(), None))


def test_the_readme_lists_the_builtins_as_describe_does(registry) -> None:
    described = _describe(registry)
    monoids = {row["monoid"]: (row["parameters"], row["description"]) for row in readme_table("monoid")}
    assert monoids == {f"`{m.name}`": (_params(m), m.description) for m in described.monoids}
    policies = {row["policy"]: (row["parameters"], row["uses timestamps"], row["description"])
                for row in readme_table("policy")}
    assert policies == {f"`{p.name}`": (_params(p), "yes" if p.uses_timestamps else "no", p.description)
                        for p in described.policies}
    algorithms = {row["algorithm"]: row["description"] for row in readme_table("algorithm")}
    assert algorithms == {f"`{a.name}`" + (" (default)" if a.is_default else ""): a.description
                          for a in described.algorithms}
    assert [a.name for a in described.algorithms if a.is_default] == ["amta"]


def test_describe_lists_plugin_entries_with_their_parameters(registry) -> None:
    registry.load_plugin("plugins.sample_plugin")
    described = _describe(registry)
    product = next(m for m in described.monoids if m.name == "product")
    assert product.description == "Product of the values (associative, commutative)." and not product.params
    newest = next(p for p in described.policies if p.name == "newest")
    assert [(p.name, p.type, p.required, p.default_value.int_value) for p in newest.params] == [("n", "int", False, 3)]
    assert newest.uses_timestamps  # a callable may read total.last: a plugin says False itself
    time_range = next(p for p in described.policies if p.name == "time_range")
    assert [(p.name, p.type, p.required, p.HasField("default_value")) for p in time_range.params] == \
        [("width", "float", True, False)]
