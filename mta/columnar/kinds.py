"""Built-in aggregations as column kernels: partial columns and vectorised numpy folds over them.

A ``Kind`` describes one aggregation by its *partial* columns (``Columns``: field name ->
array, one row per event or slice) and folds them without a Python loop over rows:

- ``lift`` turns events into one partial row each;
- ``merge`` combines two partials elementwise;
- ``reduce`` folds segments of consecutive rows (``np.ufunc.reduceat``);
- ``slide`` folds the windows of a :class:`Layout` (van Herk/Gil-Werman, see ``_halves``);
- ``take`` gathers rows (-1 = an identity row), ``identity`` makes empty rows,
  ``lower`` gives the final (values, null mask).

Semantics are Spark's: nulls are skipped, NaN is a value above every number (and equal to
itself), integer sums never wrap (object arrays of Python ints when int64 could overflow).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
import numpy as np

__all__ = ["Columns", "Kind", "KINDS", "Layout"]

Columns = dict[str, np.ndarray]

_I64 = np.iinfo(np.int64)
#: Rank of a row that is not taken (first/last/min_by/max_by): above every real rank.
_NOT_TAKEN = _I64.max


@dataclass(frozen=True)
class Layout:
    """Where rows sit in a dense run of cells cut into blocks of ``size``, and which windows to fold.

    ``pos`` is each row's cell (cells without a row hold the identity), ``cells`` is a multiple
    of ``size``, and each window covers cells ``[first, first + size)`` within the run of its
    cluster (the windows module lays clusters out so that no window crosses into another).
    """

    pos: np.ndarray
    cells: int
    size: int
    first: np.ndarray

    @cached_property
    def reads(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(cell of each window's head in the reversed accumulate, cell of its tail, whether it starts a block)."""
        column = self.first % self.size
        return self.first + (self.size - 1 - 2 * column), self.first + (self.size - 1), column == 0


def _halves(values: np.ndarray, fill: object, op: np.ufunc, layout: Layout) -> tuple[np.ndarray, np.ndarray]:
    """Van Herk/Gil-Werman: each window as (fold of its cells in its first block, fold in the next block).

    A window ``[i, i + size)`` that does not start a block spans the suffix of the block of ``i``
    and the prefix of the next block up to ``i + size - 1``: both come from one accumulate per
    direction over the blocks, so every window costs O(1) whatever ``size`` is. A window that
    starts a block is that block's suffix alone (its tail is ``fill``, the identity), so the
    halves are disjoint and non-idempotent folds (sums) are exact.
    """
    head_at, tail_at, aligned = layout.reads
    dense = np.full(layout.cells, fill, dtype=values.dtype)
    dense[layout.pos] = values
    blocks = dense.reshape(-1, layout.size)
    with np.errstate(over="ignore", invalid="ignore"):  # inf - inf is NaN, as in Spark
        # row b of the reversed accumulate holds at column j the suffix of block b from cell size-1-j
        head = op.accumulate(blocks[:, ::-1], axis=1).ravel()[head_at]
        tail = op.accumulate(blocks, axis=1).ravel()[tail_at]
    tail[aligned] = fill
    return head, tail


def _slide(values: np.ndarray, fill: object, op: np.ufunc, layout: Layout) -> np.ndarray:
    """The fold by ``op`` of every window of ``layout`` (``fill`` is ``op``'s identity)."""
    head, tail = _halves(values, fill, op, layout)
    with np.errstate(over="ignore", invalid="ignore"):
        return op(head, tail)


def _reduceat(op: np.ufunc, values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """``op.reduceat`` that accepts no segments (an empty result)."""
    if len(starts) == 0:
        return values[:0].copy()
    with np.errstate(over="ignore", invalid="ignore"):
        return op.reduceat(values, starts)


def segment_ids(starts: np.ndarray, rows: int) -> np.ndarray:
    """The segment of each of ``rows`` rows, segments starting at ``starts``."""
    marks = np.zeros(rows, dtype=np.int64)
    marks[starts[1:]] = 1
    return np.cumsum(marks)


def _fits_int64(arrays: list[np.ndarray], terms: int) -> bool:
    """Whether summing up to ``terms`` values of each array stays inside int64 (False for object)."""
    bound = 0
    for a in arrays:
        if a.dtype != np.int64:
            return False
        if len(a):
            bound += max(int(a.max()), -int(a.min())) * terms
    return bound < 2**63


def _summable(a: np.ndarray) -> np.ndarray:
    """``a`` in the dtype its sums start from: int64 (narrower ints, bools), object (uint64: may
    exceed int64), float64 (floats), object arrays as they are."""
    if a.dtype.kind == "u" and a.dtype.itemsize == 8:
        return a.astype(object)
    if a.dtype.kind in "iub":
        return a.astype(np.int64, copy=False)
    if a.dtype.kind == "f":
        return a.astype(np.float64, copy=False)
    return a


def _widen(arrays: list[np.ndarray], terms: int) -> list[np.ndarray]:
    """The arrays as they must be summed: int64 when a bound proves it exact, else object
    arrays of Python ints (floats and object arrays unchanged)."""
    arrays = [_summable(a) for a in arrays]
    if all(a.dtype != np.int64 for a in arrays) or _fits_int64(arrays, terms):
        return arrays
    return [a.astype(object) for a in arrays]


def _spark_less(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x < y in Spark's order: NaN above every number."""
    if x.dtype.kind == "f" or y.dtype.kind == "f":
        return (x < y) | (np.isnan(y) & ~np.isnan(x))
    return np.asarray(x < y, dtype=bool)


def _spark_equal(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x == y in Spark's order: NaN equals NaN (and -0.0 equals 0.0)."""
    if x.dtype.kind == "f" or y.dtype.kind == "f":
        return (x == y) | (np.isnan(x) & np.isnan(y))
    return np.asarray(x == y, dtype=bool)


def _no_nulls(nulls: np.ndarray | None, n: int) -> np.ndarray:
    return np.zeros(n, dtype=bool) if nulls is None else np.asarray(nulls, dtype=bool)


class Kind:
    """One aggregation: its partial fields and their kernels (subclasses implement them).

    Kinds are immutable values (frozen dataclasses): one instance per name in ``KINDS``.
    """

    name: str
    fields: tuple[str, ...]

    def lift(
        self,
        values: np.ndarray,
        nulls: np.ndarray | None,
        times: np.ndarray,
        seq: np.ndarray,
        order: np.ndarray | None = None,
        order_nulls: np.ndarray | None = None,
    ) -> Columns:
        """One partial row per event."""
        raise NotImplementedError

    def merge(self, a: Columns, b: Columns) -> Columns:
        """Elementwise ``a ⊕ b`` (same slice, ``a`` arrived first)."""
        raise NotImplementedError

    def reduce(self, cols: Columns, starts: np.ndarray) -> Columns:
        """Fold the segments ``[starts[i], starts[i+1])`` of rows in (time, seq) order within each."""
        raise NotImplementedError

    def slide(self, cols: Columns, layout: Layout) -> Columns:
        """Fold every window of ``layout`` (rows in time order within each window)."""
        raise NotImplementedError

    def identity(self, n: int, like: Columns) -> Columns:
        """``n`` identity rows with the dtypes of ``like``."""
        raise NotImplementedError

    def lower(self, cols: Columns) -> tuple[np.ndarray, np.ndarray]:
        """(values, null mask) of the final result of each row."""
        raise NotImplementedError

    def restored(self, cols: Columns) -> Columns:
        """Partials read back from a snapshot in the current fields (older layouts upgraded)."""
        return cols

    def take(self, cols: Columns, rows: np.ndarray) -> Columns:
        """Rows ``rows`` of ``cols``; -1 gives an identity row."""
        missing = rows < 0
        if not missing.any():
            return {f: cols[f][rows] for f in self.fields}
        if len(cols[self.fields[0]]) == 0:
            return self.identity(len(rows), cols)
        out = {f: cols[f][np.where(missing, 0, rows)] for f in self.fields}
        empty = self.identity(int(missing.sum()), cols)
        for f in self.fields:
            out[f][missing] = empty[f]
        return out

    def __repr__(self) -> str:
        return f"KINDS[{self.name!r}]"


class _Fieldwise(Kind):
    """A kind whose fields fold independently, each by a ufunc with an identity (depending on dtype)."""

    def _ops(self, like: Columns) -> dict[str, tuple[np.ufunc, object]]:
        raise NotImplementedError

    def _widen(self, cols: list[Columns], terms: int) -> list[Columns]:
        """Hook for sums: the columns as they must be folded when up to ``terms`` rows add up."""
        return cols

    def merge(self, a: Columns, b: Columns) -> Columns:
        a, b = self._widen([a, b], 1)
        with np.errstate(over="ignore", invalid="ignore"):
            return {f: op(a[f], b[f]) for f, (op, _) in self._ops(a).items()}

    def reduce(self, cols: Columns, starts: np.ndarray) -> Columns:
        terms = int(np.diff(starts, append=len(cols[self.fields[0]])).max()) if len(starts) else 0
        (cols,) = self._widen([cols], terms)
        return {f: _reduceat(op, cols[f], starts) for f, (op, _) in self._ops(cols).items()}

    def slide(self, cols: Columns, layout: Layout) -> Columns:
        (cols,) = self._widen([cols], layout.size)
        return {f: _slide(cols[f], fill, op, layout) for f, (op, fill) in self._ops(cols).items()}

    def identity(self, n: int, like: Columns) -> Columns:
        return {f: np.full(n, fill, dtype=like[f].dtype) for f, (_, fill) in self._ops(like).items()}


@dataclass(frozen=True, repr=False)
class _Count(_Fieldwise):
    name, fields = "count", ("n",)

    def lift(self, values, nulls, times, seq, order=None, order_nulls=None):
        return {"n": (~_no_nulls(nulls, len(values))).astype(np.int64)}

    def _ops(self, like):
        return {"n": (np.add, 0)}

    def lower(self, cols):
        return cols["n"], np.zeros(len(cols["n"]), dtype=bool)


@dataclass(frozen=True, repr=False)
class _Sum(_Fieldwise):
    """Sum ``s`` of the non-null values and their count ``n``: int64 while a bound proves it exact."""

    name: str
    fields = ("s", "n")

    def lift(self, values, nulls, times, seq, order=None, order_nulls=None):
        present = ~_no_nulls(nulls, len(values))
        s = _summable(np.asarray(values)).copy()
        s[~present] = 0
        return {"s": s, "n": present.astype(np.int64)}

    def _widen(self, cols, terms):
        sums = _widen([c["s"] for c in cols], terms)
        return [{**c, "s": s} for c, s in zip(cols, sums)]

    def _ops(self, like):
        return {"s": (np.add, 0), "n": (np.add, 0)}

    def lower(self, cols):
        s, n = cols["s"], cols["n"]
        if self.name == "sum":
            return s, n == 0
        mean = np.zeros(len(n), dtype=np.float64)
        some = n > 0
        if s.dtype == object:  # Python int / int rounds once, exactly
            mean[some] = (s[some] / n[some]).astype(np.float64)
        else:
            mean[some] = s[some] / n[some]
        return mean, ~some


@dataclass(frozen=True, repr=False)
class _Extreme(_Fieldwise):
    """min/max ``m`` of the non-null values (any integer, float or boolean dtype) and their count ``n``.

    Floats: min ignores NaN unless every value is NaN (np.fmin, identity NaN); max is NaN as
    soon as one value is (np.maximum, identity -inf): Spark orders NaN above every number.
    """

    name: str
    fields = ("m", "n")

    def _ops(self, like):
        dtype = like["m"].dtype
        least = self.name == "min"
        if dtype.kind == "f":
            m = (np.fmin, np.nan) if least else (np.maximum, -np.inf)
        elif dtype.kind in "iu":
            m = (np.minimum, np.iinfo(dtype).max) if least else (np.maximum, np.iinfo(dtype).min)
        elif dtype.kind == "b":
            m = (np.minimum, True) if least else (np.maximum, False)
        else:
            raise TypeError(f"{self.name}: integer, float or boolean values, got {dtype}")
        return {"m": m, "n": (np.add, 0)}

    def lift(self, values, nulls, times, seq, order=None, order_nulls=None):
        present = ~_no_nulls(nulls, len(values))
        values = np.asarray(values)
        if values.dtype.kind not in "fiub":
            values = values.astype(np.int64)  # Python ints in an object array
        (_, fill) = self._ops({"m": values})["m"]
        return {"m": np.where(present, values, fill).astype(values.dtype), "n": present.astype(np.int64)}

    def lower(self, cols):
        return cols["m"], cols["n"] == 0


@dataclass(frozen=True, repr=False)
class _Times(_Fieldwise):
    """Smallest ``lo`` and largest ``hi`` event time and the event count ``n`` (every event, nulls too)."""

    name, fields = "times", ("lo", "hi", "n")

    def lift(self, values, nulls, times, seq, order=None, order_nulls=None):
        times = np.asarray(times, dtype=np.int64)
        return {"lo": times.copy(), "hi": times.copy(), "n": np.ones(len(times), dtype=np.int64)}

    def _ops(self, like):
        return {"lo": (np.minimum, _I64.max), "hi": (np.maximum, _I64.min), "n": (np.add, 0)}

    def lower(self, cols):
        """The first event time (null for no event)."""
        return cols["lo"], cols["n"] == 0


def _chan(na, ra, ma, m2a, nb, rb, mb, m2b):
    """Chan's parallel merge of (count, ref, mean, m2) moments, each mean relative to its ref;
    the merge keeps a's ref (b's when a is empty) and an empty side leaves the other exact.

    The means' difference is ``(rb - ra) + (mb - ma)``: refs are input values, so their
    difference is exact (integers below 2**53, floats within a factor 2 of each other), and
    the means are small numbers whatever the magnitude of the values (Chan's ``delta**2``
    would square an absolute mean's rounding, ulp(2**40) = 2.4e-4, into m2)."""
    n = na + nb
    with np.errstate(all="ignore"):
        nf = np.where(n > 0, n, 1).astype(np.float64)
        delta = (rb - ra) + (mb - ma)
        mean = ma + delta * (nb / nf)
        m2 = m2a + m2b + delta * delta * (na.astype(np.float64) * nb / nf)
    ref = np.where(na == 0, rb, ra)
    mean = np.where(na == 0, mb, np.where(nb == 0, ma, mean))
    m2 = np.where(na == 0, m2b, np.where(nb == 0, m2a, m2))
    return n, ref, mean, m2


_MOMENTS = ("n", "ref", "mean", "m2")


def _chan_scan(*moments: np.ndarray) -> tuple[np.ndarray, ...]:
    """Inclusive prefix merges along axis 1 of (blocks, size) moments (Hillis-Steele doubling:
    log2(size) steps; each merge keeps the older side on the left)."""
    step = 1
    while step < moments[0].shape[1]:
        merged = _chan(*(m[:, :-step] for m in moments), *(m[:, step:] for m in moments))
        moments = tuple(m.copy() for m in moments)
        for m, part in zip(moments, merged):
            m[:, step:] = part
        step *= 2
    return moments


def _chan_halves(cols: Columns, layout: Layout) -> tuple[tuple, tuple]:
    """:func:`_halves` for moments: (head, tail) of every window, each an (n, ref, mean, m2) tuple."""
    head_at, tail_at, aligned = layout.reads
    dense = []
    for field in _MOMENTS:
        cells = np.zeros(layout.cells, dtype=np.int64 if field == "n" else np.float64)
        cells[layout.pos] = cols[field]
        dense.append(cells.reshape(-1, layout.size))
    suffix = _chan_scan(*(d[:, ::-1] for d in dense))
    prefix = _chan_scan(*dense)
    head = tuple(a.ravel()[head_at] for a in suffix)
    tail = tuple(a.ravel()[tail_at] for a in prefix)
    tail[0][aligned] = 0  # a window that starts a block is its suffix alone
    return head, tail


@dataclass(frozen=True, repr=False)
class _Moments(Kind):
    """Variance and standard deviation from (n, ref, mean, m2): ``mean`` is relative to ``ref``,
    an input value (the first one lifted into the partial), so that means stay small numbers
    however large the values (longs near 2**40 with a spread of 1: an absolute float mean
    carries 2.4e-4 of rounding, which Chan's merge squares into m2). Partials merge by Chan's
    parallel formula; segments fold in two passes (their mean, then the moments about it,
    corrected), relative to the ref of their first non-empty row.

    Windows slide by van Herk/Gil-Werman with Chan's merge as the operation: each block's
    prefix and suffix moments by a doubling scan (log2(size) vectorised merges), then one merge
    per window, so every result is a tree of Chan merges, as stable as Spark's own fold (a
    shifted-sums slide lost 2.7e-7 relative on {-2.25, 1.5} next to -169739.6 in its block).
    Non-finite values (inf, NaN) make every window holding them NaN, as Spark.
    """

    name: str
    fields = _MOMENTS

    def lift(self, values, nulls, times, seq, order=None, order_nulls=None):
        present = ~_no_nulls(nulls, len(values))
        x = np.where(present, np.asarray(values).astype(np.float64), 0.0)
        m2 = np.where(np.isfinite(x), 0.0, np.nan)  # Spark: an inf makes m2 NaN at once
        return {"n": present.astype(np.int64), "ref": x, "mean": np.zeros(len(x)), "m2": m2}

    def merge(self, a, b):
        return dict(zip(_MOMENTS, _chan(*(a[f] for f in _MOMENTS), *(b[f] for f in _MOMENTS))))

    def reduce(self, cols, starts):
        n, ref, mean, m2 = (cols[f] for f in _MOMENTS)
        total = _reduceat(np.add, n, starts)
        seg = segment_ids(starts, len(n))
        rows = np.arange(len(n))
        first = _reduceat(np.minimum, np.where(n > 0, rows, len(n)), starts)  # len(n): none
        base = np.where(first < len(n), ref[np.minimum(first, len(n) - 1)] if len(n) else 0.0, 0.0)
        safe = np.maximum(total, 1)
        with np.errstate(all="ignore"):
            x = np.where(n > 0, (ref - base[seg]) + mean, 0.0)  # each row's mean relative to base
            centre = _reduceat(np.add, n * x, starts) / safe
            d = np.where(n > 0, x - centre[seg], 0.0)
            # corrected two-pass: the centre's own rounding cancels out exactly
            s1 = _reduceat(np.add, n * d, starts)
            m2 = _reduceat(np.add, m2 + n * d * d, starts) - s1 * s1 / safe
            mean = np.where(total > 0, centre + s1 / safe, 0.0)
        return {"n": total, "ref": base, "mean": mean, "m2": np.maximum(m2, 0.0)}

    def slide(self, cols, layout):
        head, tail = _chan_halves(cols, layout)
        return dict(zip(_MOMENTS, _chan(*head, *tail)))

    def identity(self, n, like):
        return {"n": np.zeros(n, dtype=np.int64), "ref": np.zeros(n), "mean": np.zeros(n), "m2": np.zeros(n)}

    def restored(self, cols):
        """Partials of a snapshot taken before ``ref`` existed: absolute means, i.e. ref 0."""
        if "ref" in cols:
            return cols
        return {"n": cols["n"], "ref": np.zeros(len(cols["n"])), "mean": cols["mean"], "m2": cols["m2"]}

    def lower(self, cols):
        n, m2 = cols["n"], cols["m2"]
        ddof = 1 if self.name.endswith("_samp") else 0
        null = n <= ddof
        with np.errstate(all="ignore"):
            out = np.where(null, 0.0, m2 / np.where(null, 1, n - ddof))
        if self.name.startswith("stddev"):
            out = np.sqrt(out)
        return out, null


@dataclass(frozen=True, repr=False)
class _Pick(Kind):
    """Kinds that keep one row: the taken row with the smallest rank (first, last, min_by, max_by).

    ``_preference(cols)`` lists the taken rows best first; a row's rank is its place there,
    folded by np.minimum (not taken: ``_NOT_TAKEN``), and the winning rank gathers the row.
    """

    name: str
    extra = ()  # fields between v/vnull and t/seq

    @property
    def fields(self) -> tuple[str, ...]:
        return ("v", "vnull", *self.extra, "t", "seq", "n")

    def _preference(self, cols: Columns) -> np.ndarray:
        raise NotImplementedError

    def _better(self, a: Columns, b: Columns, both: np.ndarray) -> np.ndarray:
        """Where (among rows ``both``, taken on both sides) b's row beats a's."""
        raise NotImplementedError

    def _gather(self, cols: Columns, rank: np.ndarray, perm: np.ndarray, n: np.ndarray) -> Columns:
        taken = rank < _NOT_TAKEN
        rows = np.where(taken, perm[np.minimum(rank, len(perm) - 1)] if len(perm) else -1, -1)
        out = self.take(cols, rows)
        out["n"] = n
        return out

    def _ranks(self, cols: Columns) -> tuple[np.ndarray, np.ndarray]:
        perm = self._preference(cols)
        rank = np.full(len(cols["n"]), _NOT_TAKEN, dtype=np.int64)
        rank[perm] = np.arange(len(perm))
        return rank, perm

    def reduce(self, cols, starts):
        rank, perm = self._ranks(cols)
        return self._gather(cols, _reduceat(np.minimum, rank, starts), perm, _reduceat(np.add, cols["n"], starts))

    def slide(self, cols, layout):
        rank, perm = self._ranks(cols)
        best = _slide(rank, _NOT_TAKEN, np.minimum, layout)
        return self._gather(cols, best, perm, _slide(cols["n"], 0, np.add, layout))

    def merge(self, a, b):
        both = (a["n"] > 0) & (b["n"] > 0)
        win = (b["n"] > 0) & (a["n"] == 0)
        win[both] = self._better(a, b, both)
        out = {f: np.where(win, b[f], a[f]) for f in self.fields if f != "n"}
        out["n"] = a["n"] + b["n"]
        return out

    def identity(self, n, like):
        out = {f: np.zeros(n, dtype=like[f].dtype) for f in self.fields}
        if like["v"].dtype == object:
            out["v"] = np.full(n, None, dtype=object)
        out["vnull"] = np.ones(n, dtype=bool)
        return out

    def lower(self, cols):
        return cols["v"], cols["vnull"] | (cols["n"] == 0)


def _older(a: Columns, b: Columns, rows: np.ndarray) -> np.ndarray:
    """Where b's (t, seq) is smaller than a's, among ``rows``."""
    at, bt, aq, bq = a["t"][rows], b["t"][rows], a["seq"][rows], b["seq"][rows]
    return (bt < at) | ((bt == at) & (bq < aq))


@dataclass(frozen=True, repr=False)
class _FirstLast(_Pick):
    """first/last (ignore_nulls: null values are not taken). Rows of a segment or window are in
    (time, seq) order (the contract of reduce; sliding windows read slices in pane order), so
    the first taken row is the one with the smallest index."""

    def lift(self, values, nulls, times, seq, order=None, order_nulls=None):
        nulls = _no_nulls(nulls, len(values))
        taken = ~nulls if self.name.endswith("_ignore_nulls") else np.ones(len(values), dtype=bool)
        return {
            "v": np.asarray(values),
            "vnull": nulls.copy(),
            "t": np.asarray(times, dtype=np.int64),
            "seq": np.asarray(seq, dtype=np.int64),
            "n": taken.astype(np.int64),
        }

    def _preference(self, cols):
        taken = np.flatnonzero(cols["n"] > 0)
        return taken if self.name.startswith("first") else taken[::-1]

    def _better(self, a, b, both):
        older = _older(a, b, both)
        return older if self.name.startswith("first") else ~older  # last: ties go to b, the later arrival


@dataclass(frozen=True, repr=False)
class _PickBy(_Pick):
    """min_by/max_by: the value at the smallest (largest) order; ties go to the oldest (t, seq);
    rows whose order is null are not taken. Orders compare as Spark: NaN above every number."""

    extra = ("o",)

    def lift(self, values, nulls, times, seq, order=None, order_nulls=None):
        if order is None:
            raise ValueError(f"{self.name} needs an order column")
        order = np.asarray(order)
        taken = ~_no_nulls(order_nulls, len(order))
        return {
            "v": np.asarray(values),
            "vnull": _no_nulls(nulls, len(values)).copy(),
            "o": order,
            "t": np.asarray(times, dtype=np.int64),
            "seq": np.asarray(seq, dtype=np.int64),
            "n": taken.astype(np.int64),
        }

    def _preference(self, cols):
        # rows of a segment or window are in (time, seq) order, so a stable sort by order alone
        # breaks ties by age; numpy sorts NaN last and -0.0 with 0.0, as Spark orders them
        taken = np.flatnonzero(cols["n"] > 0)
        if self.name == "min_by":
            return taken[np.argsort(cols["o"][taken], kind="stable")]
        newest_first = taken[::-1]  # descending order, ties oldest first: sort reversed rows, reverse back
        return newest_first[np.argsort(cols["o"][newest_first], kind="stable")][::-1]

    def reduce(self, cols, starts):
        """Numeric orders without a sort: each segment's best order, then its oldest row holding it."""
        o = cols["o"]
        if o.dtype.kind not in "iuf":
            return super().reduce(cols, starts)  # strings and other objects: ranks by a sort
        least = self.name == "min_by"
        if o.dtype.kind == "f":  # NaN is the greatest order: fmin skips it, maximum keeps it
            op, fill = (np.fmin, np.nan) if least else (np.maximum, -np.inf)
        else:
            op, fill = (np.minimum, np.iinfo(o.dtype).max) if least else (np.maximum, np.iinfo(o.dtype).min)
        taken = cols["n"] > 0
        best = _reduceat(op, np.where(taken, o, fill), starts)
        hit = taken & _spark_equal(o, best[segment_ids(starts, len(o))])
        first = _reduceat(np.minimum, np.where(hit, np.arange(len(o)), _NOT_TAKEN), starts)
        out = self.take(cols, np.where(first < _NOT_TAKEN, first, -1))
        out["n"] = _reduceat(np.add, cols["n"], starts)
        return out

    def _better(self, a, b, both):
        ao, bo = a["o"][both], b["o"][both]
        strictly = _spark_less(bo, ao) if self.name == "min_by" else _spark_less(ao, bo)
        return strictly | (_spark_equal(ao, bo) & _older(a, b, both))


def _kinds() -> dict[str, Kind]:
    made: list[Kind] = [_Count(), _Sum("sum"), _Sum("mean"), _Extreme("min"), _Extreme("max"), _Times()]
    made += [_Moments(n) for n in ("var_samp", "var_pop", "stddev_samp", "stddev_pop")]
    made += [_FirstLast(n) for n in ("first", "last", "first_ignore_nulls", "last_ignore_nulls")]
    made += [_PickBy(n) for n in ("min_by", "max_by")]
    return {k.name: k for k in made}


#: Every built-in kind by name.
KINDS: dict[str, Kind] = _kinds()
