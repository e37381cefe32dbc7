"""mta: sliding-window aggregation with the Monoid Tree Aggregator.

    from mta import Window, Sum, TimeRange
    w = Window(Sum(), TimeRange(60))
    w.insert(0, 5); w.insert(30, 7); w.insert(61, 1)
    w.query()   # 8: the update at t=0 left the 60 s window
"""

# First: MTA_NO_EXTENSIONS must be in force before any compiled module can be imported.
from mta import _extensions

if _extensions.NO_EXTENSIONS:
    _extensions.install_pure_finder()

from mta.monoid import (ArgMax, ArgMin, Collect, Count, First, GeometricMean, Last, Max, MaxCount,
                        Mean, Min, MinCount, Monoid, MonoidError, Record, StdDev, Sum, Variance)
from mta.policy import Agg, MaxSize, TimeRange, all_of, any_of
from mta.quantiles import ApproxQuantile, Median, Quantile
from mta.stream import KeyedStream, Result, Stream
from mta.window import Window

__version__ = "0.1.0"

# True when the compiled core (Cython, built at install time when a C compiler was there)
# is the one in use; False on the pure-Python path (no compiler, or MTA_NO_EXTENSIONS set).
COMPILED: bool = _extensions.compiled()

__all__ = [
    "COMPILED",
    "Window", "Stream", "KeyedStream", "Result", "Agg", "MaxSize", "TimeRange", "any_of", "all_of",
    "Monoid", "MonoidError", "Count", "Sum", "Min", "Max", "Mean", "Variance", "StdDev", "GeometricMean",
    "ArgMin", "ArgMax", "MinCount", "MaxCount", "First", "Last", "Collect", "Record",
    "Median", "Quantile", "ApproxQuantile",
]
