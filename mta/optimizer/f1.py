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
    """The number of distinct edges in one period (default: the LCM of the moduli), by the merged F1; beyond
    four progressions by :func:`_split_count` when the moduli's LCM factors quickly (shifted progressions by
    their compatible cliques, unshifted ones by divisor classes)."""
    given = normalise(progressions)
    if not given:
        return 0
    period = _period(given, period)
    progs = reduce(given)
    base = lcm_all(m for m, _ in progs)  # the union repeats every base ticks
    count = _split_count(progs, base) if len(progs) > 4 else None
    if count is None:
        count = sum(c * (base // m) for m, _, c in edge_terms(progs))
    return count * (period // base)


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


def _split_count(progs: Sequence[Progression], period: int, max_divisors: int = 1 << 20,
                 max_cliques: int = 1 << 16) -> int | None:
    """The edges of the reduced progressions in one ``period`` (a multiple of their moduli), splitting them into
    the unshifted set Z (residue 0) and the shifted set S: ``|U_Z| + |U_S| - |U_S & U_Z|``.

    - ``U_S`` by inclusion-exclusion over the cliques of S's overlap graph (Eq. 5.7 keeps only the subsets that
      pass Eq. 5.6 pairwise, which are the cliques): random shifts rarely overlap, so the cliques are few and
      no merging is needed (past ``max_cliques`` the merged terms of :func:`edge_terms` are used instead).
    - ``U_Z`` by divisor classes: ``x`` is in ``U_Z`` iff some modulus of Z divides ``gcd(x, period)``, so
      ``|T & U_Z|`` for every term ``T`` of ``U_S`` (and ``T = (1, 0)`` for ``|U_Z|``) is a sum over the
      divisors ``d`` of ``period`` covered by Z of the number of ``x`` in ``T`` with ``gcd(x, period) = d``,
      which is multiplicative over the primes of ``period`` (:func:`_gcd_class_sizes`).

    None if Z is non-empty and ``period`` does not factor quickly, has too many divisors or is too large for
    exact float64 sums (then the caller sums :func:`edge_terms` instead)."""
    zero = [m for m, a in progs if a == 0]
    shifted = [(m, a) for m, a in progs if a]
    terms = _clique_terms(shifted, max_cliques) if shifted else []
    if terms is None:
        terms = edge_terms(shifted)
    total = sum(c * (period // m) for m, _, c in terms)  # |U_S|
    if not zero:
        return total
    factors = _factor(period)
    if factors is None or period >= 1 << 53:
        return None
    shape = tuple(e + 1 for e in factors.values())
    if int(np.prod(shape)) > max_divisors:
        return None
    divisors = np.ones(1, dtype=np.int64)  # in C order of exponent tuples (delta_p for p in factors)
    for p, e in factors.items():
        divisors = np.outer(divisors, np.array([p ** k for k in range(e + 1)], dtype=np.int64)).ravel()
    covered = np.zeros(len(divisors), dtype=bool)
    for m in zero:
        covered |= divisors % m == 0
    moduli = np.array([1] + [m for m, _, _ in terms], dtype=np.int64)  # (1, 0) first: all ticks, for |U_Z|
    residues = np.array([0] + [a for _, a, _ in terms], dtype=np.int64)
    meets = _gcd_class_sizes(moduli, residues, factors, covered.reshape(shape).astype(np.float64))
    return total + meets[0] - sum(c * k for (_, _, c), k in zip(terms, meets[1:]))


def _clique_terms(progs: Sequence[Progression], max_cliques: int) -> list[Term] | None:
    """The unmerged inclusion-exclusion of ``progs``: one term ``(lcm, crt residue, (-1)**(|K|+1))`` per clique
    ``K`` of the overlap graph (Eq. 5.6; pairwise overlap makes the whole system solvable, generalised CRT),
    or None past ``max_cliques`` cliques."""
    n = len(progs)
    mods = np.array([m for m, _ in progs], dtype=np.int64)
    res = np.array([a for _, a in progs], dtype=np.int64)
    meets = np.triu((res[:, None] - res[None, :]) % np.gcd(mods[:, None], mods[None, :]) == 0, 1)
    # row i as an int bit set of the later progressions overlapping i
    packed = np.packbits(meets, axis=1, bitorder="little")
    later = [int.from_bytes(row.tobytes(), "little") for row in packed]
    terms: list[Term] = []
    append = terms.append
    # depth first: (intersection so far, coefficient, later progressions overlapping every member)
    stack = [(progs[i], 1, later[i]) for i in range(n)]
    pop, push = stack.pop, stack.append
    while stack:
        p, c, candidates = pop()
        append((p[0], p[1], c))
        rest = candidates
        while rest:
            low = rest & -rest
            rest ^= low
            j = low.bit_length() - 1
            push((intersect(p, progs[j]), -c, candidates & later[j]))
        if len(terms) + len(stack) > max_cliques:
            return None
    return terms


def _gcd_class_sizes(moduli: np.ndarray, residues: np.ndarray, factors: dict[int, int],
                     covered: np.ndarray, chunk: int = 1 << 22) -> list[int]:
    """For each progression ``(moduli[t], residues[t])`` (moduli dividing ``period = prod(p**e)``), the number
    of its ``x`` in ``[0, period)`` whose ``d = gcd(x, period)`` is covered (``covered[delta]`` over the
    exponent tuples ``delta`` of ``d``, as 0.0/1.0).

    By CRT the components ``y = x mod p**e`` are independent, each uniform over the ``p**(e - mu)`` residues
    ``y = b (mod p**mu)`` (``mu = v_p(modulus)``), so the count is ``sum(covered[delta] * prod_p N_p(delta_p))``
    with ``N_p(delta)`` the number of those ``y`` with ``min(v_p(y), e) = delta``: if ``v = v_p(b) < mu`` every
    one has ``v_p(y) = v`` (``N = p**(e-mu)`` at ``delta = v``); else ``y = p**mu z`` and ``N(delta) =
    phi(p**(e-delta))`` for ``delta >= mu``. Contracted prime by prime in float64, exact below 2**53."""
    out = np.empty(len(moduli))
    n_div = covered.size
    step = max(1, chunk // n_div)
    for lo in range(0, len(moduli), step):
        mod, res = moduli[lo:lo + step], residues[lo:lo + step]
        acc = covered.reshape(1, -1)
        for p, e in factors.items():
            mu = np.zeros(len(mod), dtype=np.int64)
            v = np.zeros(len(mod), dtype=np.int64)
            for k in range(1, e + 1):
                pk = p ** k
                mu += mod % pk == 0
                v += (res % pk == 0) & (k <= mu)
            delta = np.arange(e + 1)
            phi = np.array([p ** (e - d) - p ** (e - d - 1) if d < e else 1 for d in range(e + 1)], dtype=np.float64)
            point = (v < mu)[:, None]
            weights = np.where(point, (delta == v[:, None]) * (float(p) ** (e - mu))[:, None],
                               (delta >= mu[:, None]) * phi)
            # acc: (terms or 1, e+1, rest) -> (terms, rest), contracting this prime's exponent
            acc = acc.reshape(acc.shape[0], e + 1, -1)
            acc = np.einsum("td,tdr->tr", weights, acc) if acc.shape[0] > 1 else weights @ acc[0]
        out[lo:lo + step] = acc[:, 0]
    return [int(k) for k in np.rint(out)]


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
