"""The columnar engine: built-in aggregations as numpy kernels over many keys at once.

Slices (partials per key and pane) become the windows of every query in a few vectorised
passes: no Python loop over rows. Imports numpy only.
"""

from mta.columnar.kinds import KINDS, Columns, Kind, Layout
from mta.columnar.windows import Windows, coarsen, grid, in_panes, sessions, sliding

__all__ = ["KINDS", "Kind", "Columns", "Layout", "Windows", "sliding", "sessions", "coarsen", "grid", "in_panes"]
