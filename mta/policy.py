"""Window slide policies (paper section 4.1.3).

A policy is any callable ``wsp(total, old) -> bool``. ``total`` aggregates the
whole window right after an insertion, ``old`` a prefix of its oldest updates;
True means *at least this prefix must go*. Both are :class:`Agg` records: the
number of updates, the newest timestamp, and the monoid's partial (for a
:class:`~mta.monoid.Record`, a view with one attribute per field).

Contract: prefix-monotone (true for a prefix implies true for every shorter
one). The window then evicts the longest prefix the policy condemns, found in
O(log n) by the MTAs whatever its length.

The paper's section 3.2 policy, "the max of the newest updates whose sum stays
<= 10", is a user callable over a record monoid::

    monoid = Record(max=Max(), sum=Sum(), last=Last())

    def sum_at_most_10(total, old):
        # the newest update of `old` must go if it and everything after it exceed 10
        return total.value.sum - old.value.sum + old.value.last > 10

Built-ins read their inputs by index (``total[0]`` is the count, ``[1]`` the
newest timestamp), so the window can hand them its internal tuples directly.
"""

from __future__ import annotations

import math
import numbers
import operator
from fractions import Fraction
from typing import Any, Callable, NamedTuple

__all__ = ["Agg", "Policy", "MaxSize", "TimeRange", "AnyOf", "AllOf", "any_of", "all_of"]


class Agg(NamedTuple):
    """What a policy sees of a run of updates.

    Only what every algorithm can maintain is here: a subtract-on-evict total,
    for one, cannot know the oldest timestamp left after an eviction.
    """

    count: int
    last: Any  # timestamp of the newest update (None when count == 0)
    value: Any  # the monoid's partial (a field view for a Record)


class Policy:
    """Base of the built-in policies. ``on_tuples``: works on plain (count, last, value) tuples."""

    on_tuples = True
    #: Set by policies that only bound the number of updates: the window then
    #: evicts ``len - max_size`` directly, without aggregating counts.
    max_size: int | None = None
    #: True when enforcing once after a batch of insertions leaves the same window as
    #: enforcing after each (a condemned prefix stays condemned as updates arrive, as
    #: for counts and times): ``Window.insert_many`` then enforces once per batch.
    batchable = True

    def __call__(self, total: Any, old: Any) -> bool:
        raise NotImplementedError


class MaxSize(Policy):
    """Keep at most ``n`` updates (paper Listing 3: ``total.count - old.count >= n``)."""

    def __init__(self, n: int) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"MaxSize takes an int >= 0, got {n!r}")
        self.max_size = n

    def __call__(self, total: Any, old: Any) -> bool:
        return total[0] - old[0] >= self.max_size

    def __repr__(self) -> str:
        return f"MaxSize({self.max_size})"


class TimeRange(Policy):
    """Keep the updates newer than ``width`` before the newest one (paper Listing 1).

    An update at ``last - width`` or earlier goes: the window is ``(last - width, last]``.
    """

    def __init__(self, width: float) -> None:
        if isinstance(width, numbers.Integral) and not isinstance(width, bool):
            width = operator.index(width)  # numpy ints as ints
        elif isinstance(width, float):
            width = float(width)
        else:
            raise ValueError(f"TimeRange takes an int or float width, got {type(width).__name__} {width!r}")
        if (type(width) is float and not math.isfinite(width)) or width <= 0:
            raise ValueError(f"TimeRange takes a finite width > 0, got {width!r}")
        self.width = width

    def __call__(self, total: Any, old: Any) -> bool:
        try:
            return total[1] - old[1] >= self.width
        except OverflowError:  # an int beyond the float range and a float: compare exactly
            return Fraction(total[1]) - Fraction(old[1]) >= self.width

    def __repr__(self) -> str:
        return f"TimeRange({self.width})"


def _wrap(policy: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    if not callable(policy):
        raise TypeError(f"a policy must be callable (total, old) -> bool, got {policy!r}")
    return policy


class AnyOf(Policy):
    """A prefix goes if any policy condemns it (the union of monotone policies is monotone)."""

    def __init__(self, *policies: Callable[[Any, Any], bool]) -> None:
        if not policies:
            raise ValueError("any_of needs at least one policy")
        self.policies = tuple(_wrap(p) for p in policies)
        self.on_tuples = all(getattr(p, "on_tuples", False) for p in self.policies)
        self.batchable = all(getattr(p, "batchable", False) for p in self.policies)

    def __call__(self, total: Any, old: Any) -> bool:
        return any(p(total, old) for p in self.policies)

    def __repr__(self) -> str:
        return f"any_of{self.policies!r}"


class AllOf(AnyOf):
    """A prefix goes only if every policy condemns it."""

    def __call__(self, total: Any, old: Any) -> bool:
        return all(p(total, old) for p in self.policies)

    def __repr__(self) -> str:
        return f"all_of{self.policies!r}"


def any_of(*policies: Callable[[Any, Any], bool]) -> AnyOf:
    return AnyOf(*policies)


def all_of(*policies: Callable[[Any, Any], bool]) -> AllOf:
    return AllOf(*policies)
