"""Window ends: the query groups' closes and their results in order, fused queries' copies (issue 20).

Queries asking for the same windows from the same start are computed once, by the first
of them (``Stream._configure``); every result of it is copied for each of the others. With
1,000 tumbling queries of 20 lengths, that is 49 copies of every window's result, most of
the Stream engine's work at window ends once the tuples are typed: C loops here, each
copy a ``Result`` made without its dataclass ``__init__`` (every field set, as that sets them;
compiled, written straight into the instance's slots: :func:`_slot_offsets`).

:func:`close_windows` asks each group's first query for its windows (those of a tumbling or
sliding one that end now by :func:`_close_sliding`, compiled)
and returns the results as ``Stream.advance`` does, sorted by (end, query order, start).
When every group reported at most one window and all of them end at the same time (the
usual advance: the watermark passed one edge), that order is the queries' order, and the
results are made in it (no sort); otherwise the copies are made group by group and sorted.

Cython pure-Python mode (compiled when built; the same code interpreted on the pure path).
"""

from __future__ import annotations

from bisect import bisect_left
from operator import itemgetter
from types import MemberDescriptorType
from typing import Any

try:
    import cython
except ModuleNotFoundError:  # Cython is needed to build, not to run
    from mta import _cython_shim as cython

from mta.stream.queries import Result, SlidingRunner
from mta.windows import Sliding

COMPILED: bool = cython.compiled

_new = Result.__new__
_key = itemgetter(0)
_INF = float("inf")
_START = Sliding.start
_END = Sliding.end
_FIELDS = ("query", "start", "end", "value", "count", "final", "replaces", "key")


@cython.cfunc
def _slot_offsets() -> cython.bint:
    """Compiled: put where each of ``_FIELDS`` sits in a ``Result`` (its slot's member
    descriptor says, as ``Result.query = ...`` finds it) into ``_OFFSETS``, and say whether
    every field is such a slot (a dataclass with ``slots=True``), so that :func:`_result` may
    store the fields there itself. False on the pure path."""
    if not cython.compiled:
        return False
    if Result.__itemsize__ or Result.__new__ is not object.__new__:
        return False
    least: cython.Py_ssize_t = cython.sizeof(PyObject)
    most: cython.Py_ssize_t = Result.__basicsize__ - cython.sizeof(cython.p_void)
    for n, field in enumerate(_FIELDS):
        descr = Result.__dict__.get(field)
        if type(descr) is not MemberDescriptorType:
            return False
        member = cython.cast(cython.pointer(PyMemberDescrObject), descr).d_member
        if member.type != T_OBJECT_EX or member.flags & READONLY or not least <= member.offset <= most:
            return False
        _OFFSETS[n] = member.offset
    return True


_IN_PLACE: cython.bint = _slot_offsets()


@cython.cfunc
def _copy(result: object, name: object) -> object:
    """``result`` under query ``name`` (its value's lists and dicts copied, so that each has its own)."""
    return _make(name, result.start, result.end, result.value, result.count, result.final, result.replaces)


def _own(value: object) -> object:
    """A copy of the lists and dicts a result's value is made of (a Record's dict of its
    fields' results, a Collect's list), not of the user's values in them."""
    if type(value) is list:
        return value.copy()
    if type(value) is dict:
        return {k: _own(v) for k, v in value.items()}
    return value


@cython.cfunc
@cython.inline
def _make(name: object, start: object, end: object, value: object, count: object, final: object,
          replaces: object) -> object:
    """:func:`_result` with ``value``'s own lists and dicts (:func:`_own`)."""
    if type(value) is list or type(value) is dict:
        value = _own(value)
    return _result(name, start, end, value, count, final, replaces)


@cython.cfunc
@cython.inline
def _result(name: object, start: object, end: object, value: object, count: object, final: object,
            replaces: object) -> object:
    """``Result(name, start, end, value, count, final, replaces)``."""
    if _IN_PLACE:  # every slot NULL (unset) after the allocation, as ``_new(Result)`` makes it
        copy = _alloc(cython.cast(cython.pointer(PyTypeObject), Result), 0)
        base: cython.p_char = cython.cast(cython.p_char, cython.cast(cython.pointer(PyObject), copy))
        _put(base, 0, name)
        _put(base, 1, start)
        _put(base, 2, end)
        _put(base, 3, value)
        _put(base, 4, count)
        _put(base, 5, final)
        _put(base, 6, replaces)
        _put(base, 7, None)
        return copy
    copy = _new(Result)
    copy.query = name
    copy.start = start
    copy.end = end
    copy.value = value
    copy.count = count
    copy.final = final
    copy.replaces = replaces
    copy.key = None
    return copy


@cython.cfunc
@cython.inline
def _put(base: cython.p_char, n: cython.int, value: object) -> cython.void:
    """Field n of the Result at ``base``, unset so far, becomes ``value`` (compiled only)."""
    Py_INCREF(value)
    cython.cast(cython.pointer(cython.pointer(PyObject)), base + _OFFSETS[n])[0] = cython.cast(cython.pointer(PyObject),
                                                                                             value)


def fan_out(made: list, others: list, out: list) -> None:
    """Append to ``out``, for each runner of ``others`` in turn, a copy of every ``(sort key,
    Result)`` of ``made`` under the runner's name and order."""
    for runner in others:
        name = runner.name
        order = runner.order
        for key, result in made:
            out.append(((key[0], order, key[2]), _copy(result, name)))


def close_windows(groups: list, ranked: list, ranks: list, prev: Any, watermark: Any, late: Any) -> list:
    """Each group's first runner reports the windows ``watermark`` closed (``prev``: the
    watermark before; ``late``: the stream's ``late_slices``); the results, fused queries' copies included: the updates, then the
    closed windows, each sorted by (end, query order, start). ``ranked``: every runner's
    ``(name, group index, first of its group)``, by query order; ``ranks``: per group, its
    runners' places in ``ranked``."""
    updates: list = []
    closes: list = []
    ubounds: list = [0]
    cbounds: list = [0]
    for group in groups:
        leader = group[0]
        if type(leader) is SlidingRunner:
            if late:
                leader.reopen(prev, updates)
            if late or not leader.next_end > watermark:  # a window ended, or late tuples may fill one
                _close_sliding(leader, prev, watermark, closes)
        else:
            leader.close(prev, watermark, updates, closes)
        ubounds.append(len(updates))
        cbounds.append(len(closes))
    out = _ordered(updates, ubounds, groups, ranked, ranks) if updates else []
    if closes:
        out += _ordered(closes, cbounds, groups, ranked, ranks)
    return out


@cython.cfunc
def _close_sliding(runner: object, prev: object, wm: object, closes: list) -> cython.void:
    """The windows of a tumbling or sliding query (``runner``) that end by ``wm`` from ``prev``
    on and hold tuples, as ``(sort key, Result)`` into ``closes``; ``runner.next_end`` becomes
    the end of the first window not reported. ``start``/``end`` of an integer ``Sliding`` by
    arithmetic."""
    stream = runner.stream
    slices = stream.slices
    starts: list = slices.starts
    if not starts or prev == _INF:
        return
    spec = runner.spec
    final, monoid, name, order = stream.final, stream.monoid, runner.name, runner.order
    ints: cython.bint = spec._exact is None and type(spec).start is _START and type(spec).end is _END
    offset, slide, size = spec.offset, spec.slide, spec.size
    n: cython.Py_ssize_t = len(starts)
    i: cython.Py_ssize_t
    j: cython.Py_ssize_t
    first = starts[0]
    k = runner._first(first if first > prev else prev)  # max(prev, first)
    while True:
        if ints:
            s = offset + k * slide
            e = s + size
        else:
            s = spec.start(k)
            e = spec.end(k)
        if e > wm:
            runner.next_end = e  # every window before it was reported or empty
            return
        i = bisect_left(starts, s)
        j = bisect_left(starts, e)
        if i == j:
            if i == n:
                return
            after = spec.first_ending_after(starts[i])
            k = after if after > k + 1 else k + 1
            continue
        count = slices.count(i, j)
        if count:
            value = final.aggregate(name, i, j, False, e)
            closes.append(((e, order, s), _result(name, s, e, monoid.lower(value), count, True, ())))
        k += 1


@cython.cfunc
def _ordered(made: list, bounds: list, groups: list, ranked: list, ranks: list) -> list:
    """The results of ``made`` (``(sort key, Result)``, group g's from ``bounds[g]`` to
    ``bounds[g + 1]``) and their copies for the groups' other runners, in order."""
    n: cython.Py_ssize_t = len(groups)
    g: cython.Py_ssize_t
    b: cython.Py_ssize_t
    single: cython.bint = True
    hits: list = [None] * n
    ending: Any = None
    for g in range(n):
        b = bounds[g]
        size: cython.Py_ssize_t = bounds[g + 1] - b
        if size > 1:
            single = False
            break
        if size == 1:
            key, result = made[b]
            if ending is None:
                ending = key[0]
            elif not key[0] == ending:
                single = False
                break
            hits[g] = result
    out: list = []
    if single:  # one window a group, one end: the queries' order is the results' order
        fields: list = [None] * n  # each result's fields but its name, read once
        places: list = []
        for g in range(n):
            result = hits[g]
            if result is not None:
                fields[g] = (result.start, result.end, result.value, result.count, result.final, result.replaces)
                places += ranks[g]
        places.sort()
        for place in places:
            name, g, first = ranked[place]
            result = hits[g]
            if first:
                out.append(result)
            else:
                start, end, value, count, final, replaces = fields[g]
                out.append(_make(name, start, end, value, count, final, replaces))
        return out
    keyed: list = []
    for g in range(n):
        part = made[bounds[g]:bounds[g + 1]]
        keyed += part
        if part and len(groups[g]) > 1:
            fan_out(part, groups[g][1:], keyed)
    keyed.sort(key=_key)  # stable: as the runners reported them, for equal keys
    for key, result in keyed:
        out.append(result)
    return out
