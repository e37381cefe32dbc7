"""SlideSide: many sliding-window queries over one stream from a prefix scan and a suffix scan.

Theodorakis, Pietzuch, Pirk, "SlideSide: a fast incremental stream processing
algorithm for multiple queries" (EDBT 2020). TwoStacks keeps a prefix scan of
its back stack and a suffix scan of its front stack; SlideSide shares them
between every query over the same stream, so that each range ``r`` is answered
with at most one combine (or one inverse) per step.

Two variants, chosen by the monoid (``SlideSide(monoid, ranges)`` returns one of them):

- :class:`InvertibleSlideSide` (paper section 3.1, Algs. 1-3): a circular buffer
  of ``capacity`` elements, the prefix scan of the current lap and the suffix
  scan of the previous lap, computed when the buffer wraps. Fixed here (DESIGN.md,
  "Known defects"): Alg. 2 loops ``i = 0..windowSize`` and reads one element too
  many, and reads ``partials`` where it means ``elements``; Algs. 2 and 3 put the
  newer operand first, which only commutative monoids forgive. Here every combine
  takes the older operand first, and the inverse case removes the OLDEST part:
  ``monoid.invert(back[end], back[start])`` (``combine(front, x) == total``).
- :class:`OverlaidSlideSide` (paper section 3.2, not printed; designed here):
  any associative monoid. Each query would run its own TwoStacks (flip when its
  back part reaches the query's size); the stacks are overlaid. Ranges are grouped
  by ``floor(log2 r)``: the group of level ``l`` flips every ``2**l`` elements,
  which is at most its smallest range ("the suffix scan is triggered when the
  query with the smallest window starts to evict"), so every range of the group
  is a suffix of its front part joined to its whole back part: one combine.
  Powers of two align the flips: when level ``l`` flips every lower level flips
  too, and all of them share ONE suffix scan (one list, the lower levels reading
  its bottom part: the overlaid stacks). Cost per element: one combine per level
  (the back aggregates, HammerSlide's "only the top of the back stack") plus the
  scans, under ``R_l / 2**l < 2`` per level amortized (a scan of ``R_l - 1`` combines
  at most every ``2**l`` elements, ``R_l`` the largest range of level ``l``), plus
  one combine per query answered. The number of levels is at most the number of
  distinct ranges and at most ``log2(capacity) + 1``. Any other range ``r`` is
  answered with one combine when a level's parts cover it, by a fold otherwise:
  one combine for EVERY ``r`` would need a level per power of two (``log2 n``
  combines per element) -- the ranges given at construction choose the levels.
"""

from __future__ import annotations

from itertools import accumulate
from typing import Any, ClassVar, Sequence

from mta.algorithms.multi_query import MultiQueryAggregator, check_ranges
from mta.monoid import Monoid


class SlideSide(MultiQueryAggregator):
    """SlideSide; constructing it returns the invertible variant when ``monoid.invertible``
    (or ``inverse=True``), the overlaid-stacks variant otherwise (or ``inverse=False``)."""

    name = "slideside"
    any_range = True
    #: whether :meth:`_suffix_scan` may put the newer operand first for a commutative monoid
    #: (``accumulate`` with ``combine`` itself, no wrapper call): the same answer for the sums
    #: and moments of the invertible variant, not for the overlaid variant's selections and
    #: extremes, whose ties keep the OLDER operand (Min of 0.0 and -0.0, MinCount's value, a
    #: Record of them): there the scan takes the older operand first always
    _newer_first: ClassVar[bool] = True

    def __new__(cls, monoid: Monoid, ranges: Sequence[int], *, inverse: bool | None = None) -> SlideSide:
        if cls is SlideSide:
            use = getattr(monoid, "invertible", False) if inverse is None else inverse
            cls = InvertibleSlideSide if use else OverlaidSlideSide
        return super().__new__(cls)

    def __init__(self, monoid: Monoid, ranges: Sequence[int], *, inverse: bool | None = None) -> None:
        # ``inverse`` was used by __new__ to choose the class
        super().__init__(monoid, ranges)
        self._combine = monoid.combine
        self._identity = monoid.identity
        self.clear()

    @staticmethod
    def combines_per_insert(ranges: Sequence[int], *, invertible: bool) -> float:
        """Combines per insert, amortized over a lap of the full window (answers not included:
        one combine or invert per answer), for the optimizer's cost model.

        Invertible: per lap of ``n`` inserts, ``n - 1`` prefix combines (a lap's first element
        needs none) and a suffix scan of ``n - 1``. Overlaid: level ``l`` combines every insert
        but the one it flips on (``1 - 1/p_l``), and an insert whose highest flipping level is
        ``j`` scans ``R_j - 1`` combines, which happens for a fraction ``1/p_j - 1/p_(j+1)`` of
        the inserts (``1/p_j`` for the top level)."""
        ranges = check_ranges(ranges)
        if invertible:
            n = max(ranges)
            return 2 * (n - 1) / n
        tops: dict[int, int] = {}
        for r in ranges:
            level = r.bit_length() - 1
            tops[level] = max(tops.get(level, 0), r)
        periods = [1 << level for level in sorted(tops)]
        total = 0.0
        for j, p in enumerate(periods):
            above = 1 / periods[j + 1] if j + 1 < len(periods) else 0.0
            total += (1 - 1 / p) + (tops[p.bit_length() - 1] - 1) * (1 / p - above)
        return total

    def _held(self, r: Any) -> int:
        """``r`` checked, and cut to the number of elements held (0: none)."""
        if r.__class__ is not int or not 0 < r <= self.capacity:
            raise self._unknown_range(r)
        return r if r <= self._count else self._count

    def _newest(self, k: int) -> list[Any]:
        """The newest ``k <= len(self)`` elements of the circular buffer ``_elements``, oldest first."""
        pos = self._pos
        elements = self._elements
        if k <= pos:
            return elements[pos - k:pos]
        return elements[len(elements) - (k - pos):] + elements[:pos]

    def _suffix_scan(self, k: int) -> list[Any]:
        """``[identity, newest, newest two, ..., newest k]``, each combined oldest first:
        ``k - 1`` combines (the older operand first, unlike Alg. 2 line 4, but for a
        commutative monoid when :attr:`_newer_first`)."""
        newest = self._newest(k)
        newest.reverse()
        combine = self._combine
        if self._newer_first and self.monoid.commutative:
            return [self._identity, *accumulate(newest, combine)]
        # a loop, not accumulate with a swapping lambda: one Python call per combine, not two
        scan = [self._identity]
        if newest:
            append = scan.append
            acc = newest[0]
            append(acc)
            for value in newest[1:]:
                acc = combine(value, acc)
                append(acc)
        return scan

    def __len__(self) -> int:
        return self._count


class InvertibleSlideSide(SlideSide):
    """Algs. 1-3: ``_elements`` is the circular buffer, ``_back[i]`` aggregates
    ``_elements[0:i]`` of the current lap (prefix scan), ``_front[k]`` the last ``k``
    elements of the previous lap (suffix scan, computed when the buffer wraps)."""

    @classmethod
    def check_monoid(cls, monoid: Monoid) -> None:
        if not getattr(monoid, "invertible", False):
            raise TypeError(f"{cls.name} (invertible variant) needs an invertible monoid; "
                            f"{monoid!r} is not invertible")

    def clear(self) -> None:
        identity = self._identity
        # the buffer and the prefix scan grow to capacity (+ 1) in the first lap: memory
        # for what is held, not for the range; the suffix scan is read after the first wrap only
        self._elements: list[Any] = []
        self._back: list[Any] = [identity]
        self._front: list[Any] = [identity]
        self._pos = 0    # curPos: the slot of the next insert
        self._count = 0  # elements held, <= capacity

    def insert(self, partial: Any) -> None:
        pos = self._pos
        if pos == 0 and self._count:
            # Alg. 2 lines 2-4 (i < windowSize): the buffer wraps, a full lap is held
            self._front = self._suffix_scan(self.capacity)
        back = self._back
        # Alg. 2 line 6, older operand first; the lap's first element needs no combine
        total = self._combine(back[pos], partial) if pos else partial
        if pos < len(self._elements):
            self._elements[pos] = partial
            back[pos + 1] = total
        else:  # the first lap
            self._elements.append(partial)
            back.append(total)
        pos += 1
        self._pos = 0 if pos == self.capacity else pos
        if self._count < self.capacity:
            self._count += 1

    def query(self, r: int) -> Any:
        r = self._held(r)
        if not r:
            return self._identity
        end = self._pos or self.capacity  # Alg. 3 lines 4-6
        start = end - r
        if start > 0:  # case b (Alg. 3 line 16): remove the oldest part of the prefix
            return self.monoid.invert(self._back[end], self._back[start])
        if start == 0:  # case a (line 12): the prefix scan
            return self._back[end]
        # case c (line 14): the window wraps: previous lap's suffix first, then this lap's prefix
        return self._combine(self._front[-start], self._back[end])

    def answers(self) -> list[Any]:
        count = self._count
        if count < self.capacity:
            query = self.query
            return [query(r) for r in self.ranges]
        end = self._pos or count
        back = self._back
        front = self._front
        combine = self._combine
        invert = self.monoid.invert
        total = back[end]
        out = []
        append = out.append
        for r in self.ranges:  # Alg. 3's cases b, c and a
            start = end - r
            if start > 0:
                append(invert(total, back[start]))
            elif start:
                append(combine(front[-start], total))
            else:
                append(total)
        return out


class OverlaidSlideSide(SlideSide):
    """Overlaid TwoStacks, one level per power of two (see the module docstring).

    Level ``i`` has the period ``_periods[i]`` (a power of two, at most its smallest
    range); ``_bs[i]`` elements (1.. period) were inserted since its boundary and
    ``_backs[i]`` is their aggregate; ``_scans[i][k]`` aggregates the ``k`` elements
    just before the boundary (``_scans[i][0]`` is the identity). A range ``r`` of the
    level is ``scans[r - b] (+) back``: ``r >= period >= b``, so one combine.
    """

    _newer_first = False

    def clear(self) -> None:
        by_level: dict[int, list[int]] = {}
        for r in sorted(set(self.ranges)):
            by_level.setdefault(r.bit_length() - 1, []).append(r)
        levels = sorted(by_level)
        identity = self._identity
        self._periods = [1 << level for level in levels]
        self._tops = [by_level[level][-1] for level in levels]  # R_l: the scan length a level needs
        self._bs = [0] * len(levels)
        self._backs = [identity] * len(levels)
        self._scans: list[list[Any]] = [[identity] for _ in levels]
        #: for each range (in order), its level
        self._level_of = [levels.index(r.bit_length() - 1) for r in self.ranges]
        self._elements: list[Any] = []  # circular buffer, grown to capacity in the first lap
        self._pos = 0
        self._count = 0

    def insert(self, partial: Any) -> None:
        bs = self._bs
        periods = self._periods
        if bs[0] == periods[0]:
            self._flip(partial)
        else:  # no level flips (the lowest period divides every other)
            backs = self._backs
            combine = self._combine
            for i, b in enumerate(bs):
                backs[i] = combine(backs[i], partial) if b else partial
                bs[i] = b + 1
        n = self.capacity
        pos = self._pos
        if pos < len(self._elements):
            self._elements[pos] = partial
        else:
            self._elements.append(partial)
        pos += 1
        self._pos = 0 if pos == n else pos
        if self._count < n:
            self._count += 1

    def _flip(self, partial: Any) -> None:
        """Levels ``0..j`` (their back parts are full) start a new back part with ``partial``:
        one suffix scan over the newest ``R_j`` elements, shared by all of them; the levels
        above ``j`` take ``partial`` into their back part. Periods are powers of two counted
        from the same first element, so the flipping levels are always a prefix."""
        bs = self._bs
        periods = self._periods
        backs = self._backs
        scans = self._scans
        j = 0
        while j + 1 < len(bs) and bs[j + 1] == periods[j + 1]:
            j += 1
        scan = self._suffix_scan(min(self._tops[j], self._count))
        for i in range(j + 1):
            scans[i] = scan
            backs[i] = partial
            bs[i] = 1
        combine = self._combine
        for i in range(j + 1, len(bs)):
            backs[i] = combine(backs[i], partial) if bs[i] else partial
            bs[i] += 1

    def query(self, r: int) -> Any:
        r = self._held(r)
        if not r:
            return self._identity
        bs = self._bs
        scans = self._scans
        for i in range(len(bs) - 1, -1, -1):  # levels whose parts cover r: one combine
            k = r - bs[i]
            if 0 <= k < len(scans[i]):
                return self._combine(scans[i][k], self._backs[i]) if k else self._backs[i]
        # a range not given at construction that falls between the levels: fold it
        newest = self._newest(r)
        return self.monoid.fold(newest[0], newest[1:])

    def answers(self) -> list[Any]:
        if self._count < self.capacity:
            query = self.query
            return [query(r) for r in self.ranges]
        combine = self._combine
        bs = self._bs
        backs = self._backs
        scans = self._scans
        out = []
        append = out.append
        for r, i in zip(self.ranges, self._level_of):
            # scans[i][0] is the identity: r == b costs one combine too, and needs no branch
            append(combine(scans[i][r - bs[i]], backs[i]))
        return out
