"""SlickDeque: one running aggregate per range (invertible), or a deque of candidates (selection).

Shein, Chrysanthis, Labrinidis; the incremental-window-aggregation dissertation,
chapter 4. ``SlickDeque(monoid, ranges)`` builds the variant the monoid allows:

- :class:`SlickDequeNonInv` (Algorithm 3) for a *selection* monoid (combine returns
  one of its operands: Max, Min, ArgMax, First, Last): a deque of the partials that
  can still be an answer, oldest first. Each insert pops the newest nodes the new
  partial dominates (``back ⊕ new`` selects ``new``, line 16) and the expired oldest; the
  answer for a range is the oldest node inside it. Under 2 combines per slide
  amortized whatever the number of ranges; answers any range ``1..capacity``.
- :class:`SlickDequeInv` (Algorithm 2) for an *invertible* monoid: the newest
  ``capacity`` partials in a circular array and one running aggregate per distinct
  range, updated on every insert by one invert (the partial leaving the range) and
  one combine (the new one): exactly 2 operations per distinct range per slide.

A monoid that is both goes to the selection variant: it needs under 2 combines per
slide in total instead of 2 operations per distinct range, and answers any range.
Measured on Last given an inverse (``benchmarks.multi_query_dissertation``, table
"both"): Alg. 3 is 6x (n = 64) to 25x (n = 1024) faster with every range 1..n
asked, and 1.1x with a single range. A monoid that is neither is refused.

Fixes to the printed pseudocode (DESIGN.md, "Known defects"):

- Alg. 2 line 8 loops to ``wSize`` inclusive: slots ``0 .. capacity - 1`` only;
- Alg. 2 line 24 updates the loop variable, not the map, and writes ``ans ⊕ new ⊖
  old``, which removes the oldest part only for commutative groups: here the map
  entry becomes ``invert(ans, old) ⊕ new`` (``invert(total, front)`` strips the
  oldest part: ``combine(front, x) == total``), so non-commutative groups work;
- Alg. 3 line 16 (the equality pop) is valid for selection monoids only
  ("non-invertible" does not imply it: Bloom filters, concatenation), hence the
  refusal of every other monoid; and even there equality is the wrong test: a node
  must go when the combine *selected* the new operand, not when its result equals
  it (``nan != nan`` kept an empty node before a NaN, so Last answered empty;
  ``0.0 == -0.0`` popped First's 0.0 and Min's / Max's / ArgMin's older signed zero,
  so the newer answered). Here a node is popped iff ``r = back ⊕ new`` is ``new``
  itself, or is neither operand (a combine returning copies) and ``r == new``, or is
  ``back`` and cannot be told from ``new`` (:func:`_alike`: either answers the same);
- Alg. 3's answer loops are off by one (``startPos = currPos - range`` is the slot
  just before the range, and Answer Loop 1 stops on it: Example 6 step 4 would answer
  6, not 5, for Q1). Nodes here carry the sequence number of their partial (no
  wrap-around), and a range ``r`` is answered by the oldest node numbered at least
  ``t - r + 1`` (``t`` the newest's number).
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any, Sequence

from mta.algorithms.multi_query import MultiQueryAggregator
from mta.monoid import Monoid


class SlickDeque(MultiQueryAggregator):
    """``SlickDeque(monoid, ranges)`` is a :class:`SlickDequeNonInv` for a selection
    monoid, else a :class:`SlickDequeInv` for an invertible one; TypeError otherwise."""

    name = "slickdeque"
    #: True only for the selection variant (an instance's attribute says which it is)
    any_range = False

    def __new__(cls, monoid: Monoid, ranges: Sequence[int]) -> SlickDeque:
        if cls is SlickDeque:
            cls.check_monoid(monoid)
            cls = SlickDequeNonInv if monoid.selection else SlickDequeInv
        return super().__new__(cls)

    @classmethod
    def check_monoid(cls, monoid: Monoid) -> None:
        if not (monoid.invertible or monoid.selection):
            raise TypeError(f"slickdeque needs an invertible or a selection monoid; "
                            f"{type(monoid).__name__} is neither")

    def _distinct(self) -> None:
        """``_rs``: the distinct ranges; ``_order``: for each range its index in ``_rs``,
        or None when the ranges are ``_rs`` itself (answers need no reordering)."""
        rs = self._rs
        slot = {r: k for k, r in enumerate(rs)}
        self._slot = slot
        self._order = None if len(rs) == len(self.ranges) and tuple(rs) == self.ranges else \
            [slot[r] for r in self.ranges]


class SlickDequeInv(SlickDeque):
    """Alg. 2: a running aggregate per distinct range over a circular array of partials."""

    @classmethod
    def check_monoid(cls, monoid: Monoid) -> None:
        if not monoid.invertible:
            raise TypeError(f"slickdeque (Alg. 2) needs an invertible monoid; {type(monoid).__name__} is not")

    def __init__(self, monoid: Monoid, ranges: Sequence[int]) -> None:
        super().__init__(monoid, ranges)
        self._rs = list(dict.fromkeys(self.ranges))
        self._distinct()
        self.clear()

    def clear(self) -> None:
        identity = self.monoid.identity
        # Alg. 2 lines 6-13: every range's answer starts at the identity; the partials
        # grow to ``capacity`` as they come (memory for what is held, not for the range)
        self._partials: list[Any] = []
        self._answers: list[Any] = [identity] * len(self._rs)
        self._cur = 0  # currPos: the slot of the next partial (the oldest one's)
        self._size = 0

    def insert(self, partial: Any) -> None:
        if self._size < self.capacity:
            self._fill(partial)
            return
        partials, cur, rs = self._partials, self._cur, self._rs
        combine, invert = self.monoid.combine, self.monoid.invert
        # lines 19-25: the partial leaving range r sits r slots back (a negative index
        # wraps around; r == capacity reads the slot about to be overwritten); the
        # identity while fewer than r were inserted, so each range costs 2 operations
        if len(rs) == 1:  # the single-query environment: no list built
            answers = self._answers
            answers[0] = combine(invert(answers[0], partials[cur - rs[0]]), partial)
        else:
            self._answers = [combine(invert(answer, partials[cur - r]), partial)
                             for answer, r in zip(self._answers, rs)]
        partials[cur] = partial  # lines 30-34
        cur += 1
        self._cur = 0 if cur == self.capacity else cur

    def _fill(self, partial: Any) -> None:
        """:meth:`insert` while fewer than ``capacity`` are held (``_cur == _size``): the
        partial leaving range r is the identity while fewer than r were inserted."""
        partials, cur = self._partials, self._cur
        combine, invert, identity = self.monoid.combine, self.monoid.invert, self.monoid.identity
        self._answers = [combine(invert(answer, partials[cur - r] if r <= cur else identity), partial)
                         for answer, r in zip(self._answers, self._rs)]
        partials.append(partial)
        cur += 1
        self._cur = 0 if cur == self.capacity else cur
        self._size = cur or self.capacity

    def query(self, r: int) -> Any:
        k = self._slot.get(r) if r.__class__ is int else None
        if k is None:
            raise self._unknown_range(r)
        return self._answers[k]

    def answers(self) -> list[Any]:
        answers = self._answers
        return answers[:] if self._order is None else [answers[k] for k in self._order]

    def __len__(self) -> int:
        return self._size


def _alike(a: Any, b: Any) -> bool:
    """Equal partials that no one can tell apart: of one type and one repr (not 0.0 and -0.0,
    nor ArgMin pairs whose keys differ so)."""
    kind = type(a)
    return kind is type(b) and (kind is int or repr(a) == repr(b))


class SlickDequeNonInv(SlickDeque):
    """Alg. 3: a deque of (sequence number, partial) nodes, each dominating the newer ones."""

    any_range = True

    @classmethod
    def check_monoid(cls, monoid: Monoid) -> None:
        if not monoid.selection:
            raise TypeError(f"slickdeque (Alg. 3) needs a selection monoid; {type(monoid).__name__} is not")

    def __init__(self, monoid: Monoid, ranges: Sequence[int]) -> None:
        super().__init__(monoid, ranges)
        self._combine = monoid.combine
        self._rs = sorted(set(self.ranges))
        self._distinct()
        self.clear()

    def clear(self) -> None:
        # The deque is two lists, its live part [_head:]: popping the front moves _head
        # (the dead prefix is cut once it outgrows the live part).
        self._pos: list[int] = []
        self._val: list[Any] = []
        self._head = 0
        self._t = 0  # sequence number of the newest partial (the first is 1)

    def insert(self, partial: Any) -> None:
        pos, val, head = self._pos, self._val, self._head
        t = self._t = self._t + 1
        end = len(pos)
        # lines 13-15: the oldest node expires when it falls out of the largest range
        if head < end and pos[head] == t - self.capacity:
            head += 1
        # Alg. 3 lines 16-18 (dissertation ch. 4): a node the new partial dominates never
        # answers again (selection monoids only).
        # Invariant: a node's partial is the fold of the partials from its own through the
        # newest (a selection returns one of its operands), so the oldest node in a range
        # answers it. With ``new`` that fold becomes ``back ⊕ new`` for the newest node:
        # if it selects ``new``, the ranges reaching back's node answer ``new``: pop it and
        # try the next; if it selects ``back``, back's fold and so every older node's (the
        # fold before back's node ⊕ back's) is unchanged: stop, even when ``back == new``
        # (0.0 and -0.0, an ArgMin tie's keys) -- unless back is new's twin (:func:`_alike`),
        # when either answers the same and popping keeps the deque short on ties (a Max of
        # repeated ints). The printed test, ``back ⊕ new == new``, is wrong for NaN (never
        # equal) and signed zeros: ``r is new`` decides, ``r == new`` for a combine that
        # returns neither operand (equal copies).
        combine = self._combine
        while end > head:
            back = val[-1]
            r = combine(back, partial)
            if r is not partial and (not r == partial or r is back and not _alike(back, partial)):
                break
            pos.pop()
            val.pop()
            end -= 1
        pos.append(t)  # line 19
        val.append(partial)
        if head > 32 and head + head > end:
            del pos[:head]
            del val[:head]
            head = 0
        self._head = head

    def query(self, r: int) -> Any:
        if r.__class__ is not int or not 0 < r <= self.capacity:
            raise self._unknown_range(r)
        if not self._t:
            return self.monoid.identity
        # the oldest node inside the newest r: numbered t - r + 1 or later
        return self._val[bisect_left(self._pos, self._t - r + 1, self._head)]

    def answers(self) -> list[Any]:
        """Lines 21-41 with sorted ranges: walking from the oldest node, node j answers every
        remaining range that reaches back to it (r >= t - pos_j + 1): a slice of the ranges."""
        rs = self._rs
        hi = len(rs)
        if not self._t:
            out = [self.monoid.identity] * hi
        elif hi == 1:  # the single-query environment (the head answers the largest range)
            r, j = rs[0], self._head
            if r < self.capacity:
                j = bisect_left(self._pos, self._t - r + 1, j)
            out = [self._val[j]]
        else:
            pos, val, t = self._pos, self._val, self._t
            out = [None] * hi
            j = self._head
            while hi:
                lo = bisect_left(rs, t - pos[j] + 1, 0, hi)
                if lo < hi:
                    out[lo:hi] = [val[j]] * (hi - lo)
                    hi = lo
                j += 1
        return out if self._order is None else [out[k] for k in self._order]

    def __len__(self) -> int:
        return min(self._t, self.capacity)
