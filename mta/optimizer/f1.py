"""Counting edges in a composite slide: the dissertation's Formula 1 (F1) and the bit set it replaces.

An *edge* is a tick where a partial aggregate is closed (chapter 5). A query's edges
form one or two arithmetic progressions ``x = residue (mod modulus)``: a query without
fragments has one (shift 0), a query with Pairs fragments has two with the same
modulus and shifts ``0`` and the first fragment (Sec. 5.2.3). The edges of a group of
queries are the union of their progressions, periodic with ``period`` = the LCM of the
moduli (the composite slide, or any multiple of it).

- :func:`bitset_edges` marks every edge of one period in a bit set and counts them
  (the original WeaveShare approach, Sec. 5.2.1; time and memory grow with the period).
- :func:`f1_subsets` is the general F1 as printed (Eq. 5.7): inclusion-exclusion over
  every non-empty subset of progressions, ``period * sum((-1)**(|S|+1) / LCM(S))``, where
  a subset whose pairs fail the overlap check (Eq. 5.6: shifts differ by a non-multiple
  of the GCD of the slides) contributes nothing. Pairwise compatibility is enough: a
  system of congruences is solvable iff every pair is (generalised CRT). The extracted
  Eq. 5.15 reads ``... -+ 1`` for the last term: that is ``period / LCM_n`` with
  ``period = LCM_n`` and no shifts; with shifts it is 1 only if the whole set is
  compatible, so it is not special-cased here.
- :func:`f1` computes the same sum without enumerating the 2^n subsets (the "fast F1"
  of this package; Sec. 5.2.4 memoises GCDs, which ``math.gcd`` in C makes moot): it
  first drops duplicate progressions and progressions contained in another one (the
  preparation of Sec. 5.3: "remove all duplicate slides ... all slides that are
  multiples of other slides"), then builds the inclusion-exclusion incrementally with
  equal intersections merged: each term is an intersection progression
  ``(lcm, residue)`` with an integer coefficient, so the number of terms is bounded by
  the distinct intersections, not by 2^n. :func:`edge_terms` exposes the terms, and
  :func:`count_in` counts the edges of any interval with them (used for the partial
  counts of every window, :mod:`mta.optimizer.partials`). Without shifts the sum collapses
  further to divisor classes of the period (:func:`_no_shift_count`), vectorised.
"""

from __future__ import annotations

from itertools import combinations
from math import gcd
from typing import Iterable, Sequence

import numpy as np

#: ``(modulus, residue)``: the ticks ``x`` with ``x % modulus == residue``
Progression = tuple[int, int]
#: ``(modulus, residue, coefficient)`` of the merged inclusion-exclusion
Term = tuple[int, int, int]


def lcm(a: int, b: int) -> int:
    return a // gcd(a, b) * b


def lcm_all(values: Iterable[int]) -> int:
    out = 1
    for v in values:
        out = out // gcd(out, v) * v
    return out


def normalise(progressions: Iterable[Progression]) -> list[Progression]:
    """The progressions with residues reduced modulo their moduli, as a sorted list (moduli >= 1)."""
    out = []
    for modulus, residue in progressions:
        if modulus < 1:
            raise ValueError(f"a progression's modulus must be at least 1, got {modulus}")
        out.append((modulus, residue % modulus))
    return sorted(out)


def overlap(p: Progression, q: Progression) -> bool:
    """The overlap check (Eq. 5.6): the two progressions share edges iff their shifts differ by a multiple of
    the GCD of their moduli."""
    return (p[1] - q[1]) % gcd(p[0], q[0]) == 0


def intersect(p: Progression, q: Progression) -> Progression | None:
    """The common edges of two progressions, a progression modulo their LCM (CRT), or None if they never meet."""
    (m, a), (n, b) = p, q
    g = gcd(m, n)
    if (b - a) % g:
        return None
    mg, ng = m // g, n // g
    # x = a + m t with m t = b - a (mod n)  =>  t = (b - a)/g * (m/g)^-1 (mod n/g)
    t = (b - a) // g * pow(mg, -1, ng) % ng if ng > 1 else 0
    modulus = m * ng
    return modulus, (a + m * t) % modulus


def reduce(progressions: Iterable[Progression]) -> list[Progression]:
    """The distinct progressions none of which is contained in another (same union of edges).

    ``(s, h)`` is contained in ``(s', h')`` when ``s' | s`` and ``h = h' (mod s')``."""
    kept: list[Progression] = []
    for m, a in sorted(set(normalise(progressions))):
        # sorted by modulus: a container has a modulus <= m, so it is already kept
        if not any(m % n == 0 and (a - b) % n == 0 for n, b in kept):
            kept.append((m, a))
    return kept


def edge_terms(progressions: Iterable[Progression]) -> list[Term]:
    """The merged inclusion-exclusion of the union of the progressions: terms ``(modulus, residue, c)`` such that
    the number of edges in any set of ticks is ``sum(c * |edges of (modulus, residue) in it|)``."""
    terms: dict[Progression, int] = {}
    # largest moduli first: their intersections are sparse, so fewer terms are carried along (4x faster on
    # benchmarks/optimizer.py's 500 queries with fragments than smallest first; the result is the same)
    for p in reversed(reduce(progressions)):
        added: dict[Progression, int] = {p: 1}
        for q, c in terms.items():
            both = intersect(q, p)
            if both is not None:
                added[both] = added.get(both, 0) - c
        for q, c in added.items():
            c += terms.get(q, 0)
            if c:
                terms[q] = c
            else:
                terms.pop(q, None)
    return [(m, a, c) for (m, a), c in terms.items()]


def _period(progressions: Sequence[Progression], period: int | None) -> int:
    base = lcm_all(m for m, _ in progressions)
    if period is None:
        return base
    if period < 1 or period % base:
        raise ValueError(f"period {period} is not a multiple of the moduli's LCM {base}")
    return period


def f1(progressions: Iterable[Progression], period: int | None = None) -> int:
    """The number of distinct edges in one period (default: the LCM of the moduli), by the merged F1; without
    shifts (every residue 0, Sec. 5.2.2) by its divisor-class form when the moduli's LCM factors quickly."""
    given = normalise(progressions)
    if not given:
        return 0
    period = _period(given, period)
    progs = reduce(given)
    if len(progs) > 4 and all(a == 0 for _, a in progs):
        base = lcm_all(m for m, _ in progs)
        count = _no_shift_count([m for m, _ in progs], base)
        if count is not None:
            return count * (period // base)
    return sum(c * (period // m) for m, _, c in edge_terms(progs))


def _factor(n: int, max_steps: int = 1 << 12) -> dict[int, int] | None:
    """The prime factorisation of ``n`` by trial division, or None after ``max_steps`` candidate divisors
    (moduli LCMs are usually smooth: their primes are small)."""
    out: dict[int, int] = {}
    p, steps = 2, 0
    while p * p <= n:
        while n % p == 0:
            out[p] = out.get(p, 0) + 1
            n //= p
        p, steps = p + 1 + (p > 2), steps + 1
        if steps > max_steps:
            return None
    if n > 1:
        out[n] = out.get(n, 0) + 1
    return out


def _no_shift_count(moduli: Sequence[int], period: int, max_divisors: int = 1 << 20) -> int | None:
    """F1 without shifts summed by divisor classes: ``x`` in ``[0, period)`` is an edge iff a modulus divides
    ``d = gcd(x, period)``, and ``phi(period/d)`` ticks have that gcd, so the inclusion-exclusion of Eq. 5.1
    collapses to ``sum(phi(period/d) for d | period if some modulus divides d)``. None if ``period`` does not
    factor quickly or has too many divisors (then the terms are summed instead)."""
    factors = _factor(period)
    if factors is None:
        return None
    n_divisors = 1
    for e in factors.values():
        n_divisors *= e + 1
    if n_divisors > max_divisors or period >= 1 << 62:
        return None
    divisors = np.ones(1, dtype=np.int64)
    phis = np.ones(1, dtype=np.int64)  # phi(period / d), multiplicative over the primes
    for p, e in factors.items():
        powers = np.array([p ** k for k in range(e + 1)], dtype=np.int64)
        # phi(p^(e-k)) for the exponent k of p in d
        phi_rest = np.array([(p ** (e - k) - p ** (e - k - 1)) if k < e else 1 for k in range(e + 1)], dtype=np.int64)
        divisors = np.outer(divisors, powers).ravel()
        phis = np.outer(phis, phi_rest).ravel()
    covered = np.zeros(len(divisors), dtype=bool)
    for m in moduli:
        covered |= divisors % m == 0
    return int(phis[covered].sum())


def f1_subsets(progressions: Iterable[Progression], period: int | None = None) -> int:
    """The general F1 as printed (Eq. 5.7): every subset of the given progressions (2^n of them), signed,
    ``period / LCM`` for each subset that passes the pairwise overlap check. Exponential: a reference."""
    progs = normalise(progressions)
    if not progs:
        return 0
    period = _period(progs, period)
    total = 0
    for size in range(1, len(progs) + 1):
        sign = 1 if size % 2 else -1
        for group in combinations(progs, size):
            if all(overlap(p, q) for p, q in combinations(group, 2)):
                total += sign * (period // lcm_all(m for m, _ in group))
    return total


def bitset_edges(progressions: Iterable[Progression], period: int | None = None) -> int:
    """The number of distinct edges in one period by marking them in a bit set (Sec. 5.2.1), one
    progression after the other; memory and time grow with the period."""
    progs = normalise(progressions)
    if not progs:
        return 0
    period = _period(progs, period)
    bits = bytearray(period)
    for m, a in reduce(progs):  # the preparation both methods share (Sec. 5.3)
        bits[a::m] = b"\x01" * len(range(a, period, m))
    return bits.count(1)


def count_in(terms: Sequence[Term], start: int, stop: int) -> int:
    """The number of edges in the ticks ``start <= x < stop`` (any integers), from :func:`edge_terms`."""
    # |{x in [start, stop): x = a (mod m)}| = ceil((stop - a)/m) - ceil((start - a)/m)
    return sum(c * ((a - start) // m - (a - stop) // m) for m, a, c in terms)
