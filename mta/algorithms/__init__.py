"""Sliding-window algorithms, one module each, all behind :class:`Aggregator`."""

from __future__ import annotations

from mta.algorithms.base import Aggregator, OrderedAggregator, Policy
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
from mta.algorithms.slickdeque import SlickDeque

ALGORITHMS: dict[str, type[Aggregator]] = {
    cls.name: cls
    for cls in (AmortizedMTA, LogMTA, TwoStacks, DABA, FlatFAT, SubtractOnEvict, Naive)
}

#: The out-of-order algorithms (``insert(key, partial)`` at any key), by name.
ORDERED_ALGORITHMS: dict[str, type[OrderedAggregator]] = {cls.name: cls for cls in (FiBA, BTree, SortedList)}

#: The multi-query aggregators (``cls(monoid, ranges)``: the newest r partials for every range r), by name.
MULTI_QUERY: dict[str, type[MultiQueryAggregator]] = {
    cls.name: cls for cls in (SlickDeque, FlatFIT, FlatFATRanges)
}

__all__ = ["MULTI_QUERY", "MultiQueryAggregator", "ALGORITHMS", "ORDERED_ALGORITHMS", "Aggregator", "OrderedAggregator", "Policy", "AmortizedMTA",
           "LogMTA", "TwoStacks", "DABA", "FlatFAT", "SubtractOnEvict", "Naive", "FiBA", "BTree", "SortedList",
           "SlickDeque", "FlatFIT", "FlatFATRanges"]
