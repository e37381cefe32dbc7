"""Sliding-window algorithms, one module each, all behind :class:`Aggregator`."""

from __future__ import annotations

from typing import Sequence

from mta.algorithms.base import Aggregator, OrderedAggregator, Policy
from mta.monoid import Monoid
from mta.algorithms.naive import Naive
from mta.algorithms.subtract_on_evict import SubtractOnEvict
from mta.algorithms.two_stacks import TwoStacks
from mta.algorithms.daba import DABA
from mta.algorithms.flatfat import FlatFAT, FlatFATRanges
from mta.algorithms.flatfit import FlatFIT
from mta.algorithms.log_mta import LogMTA
from mta.algorithms.amta import AmortizedMTA
from mta.algorithms.sorted_list import SortedList
from mta.algorithms.fiba import BTree, FiBA
from mta.algorithms.multi_query import MultiQueryAggregator
from mta.algorithms.panes import Panes
from mta.algorithms.slideside import SlideSide
from mta.algorithms.slickdeque import SlickDeque
from mta.algorithms.replicated import ReplicatedAMTA, ReplicatedSoE, ReplicatedTwoStacks
from mta.algorithms import typed
from mta.algorithms.typed_amta import TypedAMTA
from mta.algorithms import typed_mq

ALGORITHMS: dict[str, type[Aggregator]] = {
    cls.name: cls
    for cls in (AmortizedMTA, LogMTA, TwoStacks, DABA, FlatFAT, SubtractOnEvict, Naive)
}

#: The typed cores (:mod:`mta.algorithms.typed`) by the name of the object algorithm they mirror:
#: ``mta.Window`` runs one for a built-in numeric monoid when the core is compiled.
TYPED_ALGORITHMS: dict[str, type] = {cls.name: cls for cls in (TypedAMTA, typed.TypedLogMTA, typed.TypedTwoStacks,
                                                                typed.TypedDABA)}

#: The out-of-order algorithms (``insert(key, partial)`` at any key), by name.
ORDERED_ALGORITHMS: dict[str, type[OrderedAggregator]] = {cls.name: cls for cls in (FiBA, BTree, SortedList)}

#: The multi-query aggregators (``cls(monoid, ranges)``: the newest r partials for every range r), by name.
MULTI_QUERY: dict[str, type[MultiQueryAggregator]] = {
    cls.name: cls for cls in (SlideSide, SlickDeque, FlatFIT, FlatFATRanges, Panes, ReplicatedSoE,
                              ReplicatedTwoStacks, ReplicatedAMTA)
}


def multi_query_aggregator(name: str, monoid: Monoid, ranges: Sequence[int], *,
                           inverse: bool | None = None) -> MultiQueryAggregator:
    """``MULTI_QUERY[name](monoid, ranges)`` (``inverse``: SlideSide's, when not None), or its
    typed twin (:mod:`mta.algorithms.typed_mq`) when the typed cores are in use (``typed.USE``:
    compiled) and one serves the monoid. The twin's answers are the object aggregator's; its
    ``insert`` raises ``typed.Untyped``, having changed nothing, for a partial it cannot hold:
    the caller goes on with ``agg.to_object()``."""
    cls = typed_mq.twin(name, monoid, ranges, inverse=inverse) if typed.USE else None
    if cls is not None:
        return cls(monoid, ranges)
    if inverse is None:
        return MULTI_QUERY[name](monoid, ranges)
    return MULTI_QUERY[name](monoid, ranges, inverse=inverse)

__all__ = ["ALGORITHMS", "ORDERED_ALGORITHMS", "TYPED_ALGORITHMS", "MULTI_QUERY", "multi_query_aggregator", "Aggregator", "OrderedAggregator", "MultiQueryAggregator",
           "Policy", "AmortizedMTA", "LogMTA", "TwoStacks", "DABA", "FlatFAT", "SubtractOnEvict", "Naive", "FiBA",
           "BTree", "SortedList", "SlideSide", "SlickDeque", "FlatFIT", "FlatFATRanges", "Panes", "ReplicatedSoE",
           "ReplicatedTwoStacks", "ReplicatedAMTA"]
