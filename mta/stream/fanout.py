"""Fused queries' results: copies of the first query's results under the others' names (issue 20).

Queries asking for the same windows from the same start are computed once, by the first
of them (``Stream._configure``); every result of it is copied for each of the others. With
1,000 tumbling queries of 20 lengths, that is 49 copies of every window's result, most of
the Stream engine's work at window ends once the tuples are typed: one C loop here, each
copy a ``Result`` made without its dataclass ``__init__`` (every field set, as that sets them).

Cython pure-Python mode (compiled when built; the same code interpreted on the pure path).
"""

from __future__ import annotations

from typing import Any

try:
    import cython
except ModuleNotFoundError:  # Cython is needed to build, not to run
    from mta import _cython_shim as cython

from mta.stream.queries import Result

COMPILED: bool = cython.compiled

_new = Result.__new__


def fan_out(made: list, others: list, out: list) -> None:
    """Append to ``out``, for each runner of ``others`` in turn, a copy of every ``(sort key,
    Result)`` of ``made`` under the runner's name and order (a list or dict value copied,
    so that each result has its own)."""
    for runner in others:
        name = runner.name
        order = runner.order
        for key, result in made:
            value = result.value
            if type(value) is list or type(value) is dict:
                value = value.copy()
            copy = _new(Result)
            copy.query = name
            copy.start = result.start
            copy.end = result.end
            copy.value = value
            copy.count = result.count
            copy.final = result.final
            copy.replaces = result.replaces
            copy.key = None
            out.append(((key[0], order, key[2]), copy))
