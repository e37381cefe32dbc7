"""Lazy slicing's final step for Sum and Mean in a C loop (issue 20): a left fold of ``+``.

:meth:`mta.stream.final.FinalAggregation.fold` combines a window's slices in order. For
``Sum`` that is ``reduce(operator.add, ...)`` over the slices' aggregates, for ``Mean`` the
same over the first and over the second field of its ``(sum, count)`` pairs: a Python
call per slice. :func:`add_range` is that fold over a run of the slice store's list, with
the accumulator in a C double while it and the terms are exactly ``float``, in a C int64
while they are exactly ``int`` below 2**62 in magnitude (so that no sum of two
overflows), and a Python object otherwise (``acc + x``, then back to C when the result
allows). Each ``+`` is the one Python's makes (IEEE doubles, exact ints), in the same order,
so the result is ``reduce``'s, floats bit for bit.

Cython pure-Python mode: compiled, a C loop; interpreted, the same code (``mta.stream.final``
uses it only with the typed cores in use).
"""

from __future__ import annotations

try:
    import cython
except ModuleNotFoundError:  # Cython is needed to build, not to run
    from mta import _cython_shim as cython

COMPILED: bool = cython.compiled

_INT = cython.declare(cython.int, 0)
_FLOAT = cython.declare(cython.int, 1)
_OBJECT = cython.declare(cython.int, 2)
#: ints held in C: below this in magnitude (a sum of two fits an int64)
_SMALL = cython.declare(cython.longlong, 2 ** 62)


@cython.cfunc
def _term(aggs: list, k: cython.Py_ssize_t, field: cython.Py_ssize_t) -> object:
    return aggs[k] if field < 0 else aggs[k][field]


@cython.cfunc
@cython.exceptval(check=False)
def _small(x: object) -> cython.longlong:
    """``x`` (exactly an int) as an int64 if below 2**62 in magnitude, else 2**62."""
    v: cython.longlong
    if cython.compiled:
        try:
            v = x
        except OverflowError:
            return _SMALL
    elif not -_SMALL < x < _SMALL:
        return _SMALL
    else:
        v = x
    return v if -_SMALL < v < _SMALL else _SMALL


def add_range(aggs: list, i: cython.Py_ssize_t, j: cython.Py_ssize_t, field: cython.Py_ssize_t) -> object:
    """``reduce(operator.add, terms[i + 1:j], terms[i])`` where term ``k`` is ``aggs[k]``
    (``field`` < 0) or ``aggs[k][field]``; ``i < j``."""
    acc: object = _term(aggs, i, field)
    d: cython.double = 0.0
    n: cython.longlong = 0
    v: cython.longlong
    mode: cython.int = _OBJECT
    k: cython.Py_ssize_t
    for k in range(i + 1, j + 1):
        if mode == _OBJECT:  # the accumulator (the first term, or an object sum) into C when it allows
            if type(acc) is float:
                mode, d = _FLOAT, acc
            elif type(acc) is int:
                n = _small(acc)
                if n != _SMALL:
                    mode = _INT
        if k == j:
            break
        x: object = _term(aggs, k, field)
        if mode == _FLOAT and type(x) is float:
            d += cython.cast(cython.double, x)
            continue
        if mode == _INT and type(x) is int:
            v = _small(x)
            if v != _SMALL:
                n += v
                if -_SMALL < n < _SMALL:
                    continue
                acc, mode = n, _OBJECT
                continue
        if mode == _FLOAT:
            acc = d
        elif mode == _INT:
            acc = n
        acc = acc + x
        mode = _OBJECT
    if mode == _FLOAT:
        return d
    if mode == _INT:
        return n
    return acc
