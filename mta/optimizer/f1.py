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
  counts of every window, :mod:`mta.optimizer.partials`).
- For many progressions over a long period :func:`f1` splits them instead
  (:func:`_split_count`): the unshifted ones (residue 0, all overlapping, the bulk of
  the merged terms) are counted by divisor classes of the period, vectorised; the
  shifted ones (fragments) by the cliques of their overlap graph, which random shifts
  keep few, and each clique's intersection with the unshifted union by the same divisor
  classes, from its per-prime signature (100x+ faster than the bit set with fragments,
  benchmarks/results/optimizer.md).
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


def reduce(progressions: Iterable[Progression], max_python: int = 1 << 14) -> list[Progression]:
    """The distinct progressions none of which is contained in another (same union of edges), sorted.

    ``(s, h)`` is contained in ``(s', h')`` when ``s' | s`` and ``h = h' (mod s')``. Checked against the kept
    progressions one by one; once that has cost ``max_python`` comparisons (many kept progressions: shifts), the
    rest is checked with numpy (:func:`_uncontained`)."""
    unique = sorted(set(normalise(progressions)))
    kept: list[Progression] = []
    work = 0
    for i, (m, a) in enumerate(unique):
        # sorted by modulus: a container has a smaller modulus, so it is already kept
        if not any(m % n == 0 and (a - b) % n == 0 for n, b in kept):
            kept.append((m, a))
        work += len(kept)
        if work > max_python and unique[-1][0] * len(unique) < 1 << 53:
            return kept + _uncontained(unique, i + 1)
    return kept


def _uncontained(unique: list[Progression], start: int) -> list[Progression]:
    """The progressions of ``unique[start:]`` that no other progression of ``unique`` (distinct, sorted, moduli
    times count below 2**53) contains. Containment is transitive, so "no other" equals "no kept one"."""
    mods = np.array([m for m, _ in unique], dtype=np.int64)
    res = np.array([a for _, a in unique], dtype=np.int64)
    moduli, starts, counts = np.unique(mods, return_index=True, return_counts=True)
    low = np.searchsorted(moduli, unique[start][0]) if start < len(unique) else len(moduli)
    # moduli[j] | moduli[i], j < i, by float division: exact below 2**53 (a non-multiple is >= 1/n away)
    quotients = moduli[low:, None] / moduli[None, :].astype(np.float64)
    rows, smaller = np.nonzero((quotients == np.rint(quotients)) & (quotients > 1))
    rows += low
    # one pair per progression of modulus moduli[row] (from start on) and smaller modulus dividing it
    per = counts[rows]
    first = np.cumsum(per) - per
    prog = np.repeat(starts[rows], per) + np.arange(per.sum()) - np.repeat(first, per)
    smaller = np.repeat(smaller, per)
    # (m, a) is contained in (n, a % n) if that progression exists: look its key up among the sorted keys
    keys = np.repeat(np.arange(len(moduli)), counts) * moduli[-1] + res
    wanted = smaller * moduli[-1] + res[prog] % moduli[smaller]
    found = np.searchsorted(keys, wanted)
    hit = keys[np.minimum(found, len(keys) - 1)] == wanted
    contained = np.zeros(len(unique), dtype=bool)
    contained[prog[hit]] = True
    return [p for p, c in zip(unique[start:], contained[start:].tolist()) if not c]


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


#: :func:`f1` uses :func:`_split_count` from this long a period (a shorter one bounds the merged terms: distinct
#: progressions modulo its divisors) and beyond this many unshifted progressions (they all overlap, so their
#: merged terms multiply) or from this many progressions: its numpy calls cost a few hundred microseconds, as
#: much as the merged terms at about 30 progressions of benchmarks/optimizer.py's workloads
SPLIT_PERIOD, SPLIT_UNSHIFTED, SPLIT_FROM = 1 << 16, 4, 32


def f1(progressions: Iterable[Progression], period: int | None = None) -> int:
    """The number of distinct edges in one period (default: the LCM of the moduli), by the merged F1, or for
    many progressions over a long period (``SPLIT_*``) by :func:`_split_count` when the moduli's LCM factors
    quickly (shifted progressions by their overlap cliques, unshifted ones by divisor classes)."""
    given = normalise(progressions)
    if not given:
        return 0
    period = _period(given, period)
    progs = reduce(given)
    base = lcm_all(m for m, _ in progs)  # the union repeats every base ticks
    unshifted = sum(1 for _, a in progs if a == 0)
    split = base >= SPLIT_PERIOD and (unshifted > SPLIT_UNSHIFTED or len(progs) >= SPLIT_FROM)
    count = _split_count(progs, base) if split else None
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
                 max_cliques: int = 1 << 15) -> int | None:
    """The edges of the reduced progressions in one ``period`` (a multiple of their moduli), splitting them into
    the unshifted set Z (residue 0) and the shifted set S: ``|U_S u U_Z| = |U_Z| + sum(c * (|T| - |T n U_Z|))``
    over the inclusion-exclusion terms ``(T, c)`` of ``U_S``.

    - The terms of ``U_S`` are the cliques of S's overlap graph (Eq. 5.7 keeps only the subsets that pass
      Eq. 5.6 pairwise, and pairwise overlap makes the whole system solvable, generalised CRT), enumerated
      level by level with numpy (:func:`_clique_signatures`): random shifts rarely overlap, so the cliques are
      few. Past ``max_cliques`` the merged terms of :func:`edge_terms` are used instead.
    - ``x`` is in ``U_Z`` iff some modulus of Z divides ``d = gcd(x, period)``, and the number of ``x`` in a
      progression ``T`` with a given ``d`` is multiplicative over the primes of ``period``, a function of
      ``T``'s signature (:func:`_signatures`); so are ``|T| = period / modulus`` and a clique's signature
      (the maximum of its members'), and the terms are summed per signature (:func:`_gcd_class_sizes`).

    None if ``period`` does not factor quickly, has too many divisors or is too large for exact float64 sums
    (then the caller sums :func:`edge_terms` instead)."""
    factors = _factor(period)
    if factors is None or not 1 < period < 1 << 53:
        return None
    shape = tuple(e + 1 for e in factors.values())
    if int(np.prod(shape)) > max_divisors:
        return None
    zero = [m for m, a in progs if a == 0]
    shifted = [(m, a) for m, a in progs if a]
    all_ticks = np.zeros((1, len(shape)), dtype=np.int64)  # the signature of (1, 0): |(1, 0) n U_Z| = |U_Z|
    if zero:
        divisors = np.ones(1, dtype=np.int64)  # in C order of exponent tuples (delta_p for p in factors)
        for p, e in factors.items():
            divisors = np.outer(divisors, np.array([p ** k for k in range(e + 1)], dtype=np.int64)).ravel()
        covered = np.zeros(len(divisors), dtype=bool)
        for m in zero:
            covered |= divisors % m == 0
        covered_f = covered.reshape(shape).astype(np.float64)
        if not shifted:
            return int(_gcd_class_sizes(all_ticks, factors, covered_f)[0])
    codes, coefs = _clique_signatures(shifted, factors, max_cliques)
    if codes is None:
        terms = edge_terms(shifted)
        codes = _signatures([m for m, _, _ in terms], [a for _, a, _ in terms], factors)
        coefs = np.array([c for _, _, c in terms], dtype=np.int64)
    # (1, 0) with coefficient 0 carries |U_Z|
    codes = np.vstack([all_ticks, codes])
    coefs = np.concatenate([np.zeros(1, dtype=np.int64), coefs])
    radix = np.cumprod([1] + [(e + 1) ** 2 for e in factors.values()][:-1])
    keys, first, inverse = np.unique(codes @ radix, return_index=True, return_inverse=True)
    summed = np.zeros(len(keys), dtype=np.int64)
    np.add.at(summed, inverse.ravel(), coefs)
    codes = codes[first]
    mu = np.stack([codes[:, j] // (e + 1) for j, e in enumerate(factors.values())], axis=1)
    sizes = period // np.prod(np.array(list(factors), dtype=np.int64) ** mu, axis=1)  # |T| = period / modulus
    meets = _gcd_class_sizes(codes, factors, covered_f) if zero else np.zeros(len(keys), dtype=np.int64)
    # keys are sorted and signature 0 (the all-ticks progression) is the smallest: meets[0] = |U_Z|
    return int(meets[0]) + sum(c * (t - k) for c, t, k in zip(summed.tolist(), sizes.tolist(), meets.tolist()))


def _signatures(moduli: Sequence[int], residues: Sequence[int], factors: dict[int, int]) -> np.ndarray:
    """Per progression ``(modulus, residue)`` (modulus dividing ``prod(p**e)``) and prime ``p``: the code
    ``mu * (e + 1) + v`` of ``mu = v_p(modulus)`` and ``v = min(v_p(residue), mu)``, which fix the number of the
    progression's ticks with each ``gcd(x, period)`` (:func:`_gcd_class_sizes`). Compatible progressions agree
    modulo ``p**min(mu)``, so the code of an intersection is the maximum of the codes (the larger ``mu`` wins)."""
    mods = np.array(moduli, dtype=np.int64)
    res = np.array(residues, dtype=np.int64)
    out = np.empty((len(mods), len(factors)), dtype=np.int64)
    for j, (p, e) in enumerate(factors.items()):
        mu = np.zeros(len(mods), dtype=np.int64)
        v = np.zeros(len(mods), dtype=np.int64)
        for k in range(1, e + 1):
            pk = p ** k
            mu += mods % pk == 0
            v += (res % pk == 0) & (k <= mu)
        out[:, j] = mu * (e + 1) + v
    return out


def _clique_signatures(progs: Sequence[Progression], factors: dict[int, int],
                       max_cliques: int) -> tuple[np.ndarray, np.ndarray] | tuple[None, None]:
    """The unmerged inclusion-exclusion of ``progs``: for every clique ``K`` of the overlap graph (Eq. 5.6) the
    signature codes of the intersection (:func:`_signatures`) and the coefficient ``(-1)**(|K|+1)``; (None,
    None) past ``max_cliques`` cliques. Level ``L + 1`` extends every ``L``-clique by each later progression
    that overlaps all its members."""
    mods = np.array([m for m, _ in progs], dtype=np.int64)
    res = np.array([a for _, a in progs], dtype=np.int64)
    base = _signatures(mods, res, factors)
    small = np.int32 if mods.max(initial=1) < 1 << 31 else np.int64  # int32 division is faster
    res = res.astype(small)
    gcds = np.ones((len(mods), len(mods)), dtype=small)  # prod(p**min(mu)): faster than np.gcd
    for j, (p, e) in enumerate(factors.items()):
        powers = (p ** (base[:, j] // (e + 1))).astype(small)
        gcds *= np.minimum.outer(powers, powers)
    overlaps = np.triu((res[:, None] - res[None, :]) % gcds == 0, 1)
    codes, candidates = base, overlaps  # candidates[c]: the later progressions overlapping every member of c
    levels, coefs, total = [base], [np.ones(len(base), dtype=np.int64)], len(base)
    sign = 1
    while True:
        clique, later = np.nonzero(candidates)
        total += len(clique)
        if not len(clique):
            break
        if total > max_cliques:
            return None, None
        sign = -sign
        codes = np.maximum(codes[clique], base[later])
        candidates = candidates[clique] & overlaps[later]
        levels.append(codes)
        coefs.append(np.full(len(codes), sign, dtype=np.int64))
    return np.vstack(levels), np.concatenate(coefs)


def _gcd_class_sizes(codes: np.ndarray, factors: dict[int, int], covered: np.ndarray) -> np.ndarray:
    """For each progression signature (rows of :func:`_signatures` codes) the number of its ticks ``x`` in
    ``[0, period)``, ``period = prod(p**e)``, whose ``d = gcd(x, period)`` is covered (``covered[delta]`` over
    the exponent tuples ``delta`` of ``d``, as 0.0/1.0).

    By CRT the components ``y = x mod p**e`` are independent, each uniform over the ``p**(e - mu)`` residues
    ``y = b (mod p**mu)``, so the count is ``sum(covered[delta] * prod_p N_p(delta_p))`` with ``N_p(delta)`` the
    number of those ``y`` with ``min(v_p(y), e) = delta``: if ``v < mu`` every one has ``v_p(y) = v``
    (``N = p**(e-mu)`` at ``delta = v``); else ``y = p**mu z`` and ``N(delta) = phi(p**(e-delta))`` for
    ``delta >= mu``. Contracted prime by prime in float64 (einsum, no threads), exact below 2**53."""
    acc = covered.reshape(1, -1)
    for j, (p, e) in enumerate(factors.items()):
        mu, v = codes[:, j] // (e + 1), codes[:, j] % (e + 1)
        delta = np.arange(e + 1)
        phi = np.array([p ** (e - d) - p ** (e - d - 1) if d < e else 1 for d in range(e + 1)], dtype=np.float64)
        weights = np.where((v < mu)[:, None], (delta == v[:, None]) * (float(p) ** (e - mu))[:, None],
                           (delta >= mu[:, None]) * phi)
        # acc: (1 or signatures, e+1, rest) -> (signatures, rest), contracting this prime's exponent
        acc = acc.reshape(acc.shape[0], e + 1, -1)
        acc = np.einsum("td,tdr->tr", weights, acc) if j else np.einsum("td,dr->tr", weights, acc[0])
    return np.rint(acc[:, 0]).astype(np.int64)


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
