"""A monoid wrapper that counts combines: complexity measured in operations, not time.

Used by the complexity tests (``tests/test_complexity.py``) and by the benchmarks,
which report combines per operation beside their timings (counts do not suffer from
the machine's noise).
"""

from __future__ import annotations

from typing import Any

from mta.monoid import Monoid


class CountingMonoid(Monoid):
    """Wraps a monoid; ``calls`` counts every ``combine`` (the algorithms call nothing else:
    ``fold`` is the base class's left fold over ``combine``, so a fold of k partials counts k),
    ``inverts`` every ``invert`` (the dissertation counts both as operations)."""

    def __init__(self, inner: Monoid) -> None:
        self.inner = inner
        self.identity = inner.identity
        self.commutative = inner.commutative
        self.invertible = inner.invertible
        self.selection = inner.selection
        self.ordered_ties = inner.ordered_ties
        self.calls = 0
        self.inverts = 0
        combine = inner.combine

        def counting_combine(a: Any, b: Any) -> Any:
            self.calls += 1
            return combine(a, b)

        self.combine = counting_combine

    def lift(self, value: Any) -> Any:
        return self.inner.lift(value)

    def lower(self, partial: Any) -> Any:
        return self.inner.lower(partial)

    def invert(self, total: Any, front: Any) -> Any:
        self.inverts += 1
        return self.inner.invert(total, front)
