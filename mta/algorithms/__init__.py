"""Sliding-window algorithms, one module each, all behind :class:`Aggregator`."""

from __future__ import annotations

from mta.algorithms.base import Aggregator, Policy
from mta.algorithms.naive import Naive
from mta.algorithms.subtract_on_evict import SubtractOnEvict
from mta.algorithms.two_stacks import TwoStacks
from mta.algorithms.daba import DABA
from mta.algorithms.flatfat import FlatFAT
from mta.algorithms.log_mta import LogMTA
from mta.algorithms.amta import AmortizedMTA

ALGORITHMS: dict[str, type[Aggregator]] = {
    cls.name: cls
    for cls in (AmortizedMTA, LogMTA, TwoStacks, DABA, FlatFAT, SubtractOnEvict, Naive)
}

__all__ = ["ALGORITHMS", "Aggregator", "Policy", "AmortizedMTA", "LogMTA", "TwoStacks",
           "DABA", "FlatFAT", "SubtractOnEvict", "Naive"]
