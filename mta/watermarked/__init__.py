"""Windows a watermark closes once, by Spark's streaming rule: the per-key windows behind
``spark_integration.window_aggregate`` off its columnar path (user monoids, decimals,
``count_distinct``, ``collect_list``, ``percentile_approx``, slide policies,
``emit="event"``, windows kept in a store, sessions), independent of Spark.

Each key's window takes events in any order (``add``) and reports, once, every row the
watermark has passed (``advance(until)``); an event is late only when every row that
would hold it is closed (:class:`~mta.watermarked.rule.LateRule`). A batch run feeds a
key everything at once, a streaming run each micro-batch; ``state()`` is what a stream
keeps between them.

- :mod:`mta.watermarked.rule`: :class:`Windowing` (which rows) and the late rule.
- :mod:`mta.watermarked.held`: :class:`KeyWindow`, events held back until the watermark
  (event-time order for any monoid; policies, reactive rows, stored windows).
- :mod:`mta.watermarked.panes`: :class:`PaneWindow`, time windows of a commutative monoid,
  events into their panes as they come.
- :mod:`mta.watermarked.sessions`: :class:`SessionWindow`, Spark's session windows.

:func:`key_window` picks one for a key.
"""

from __future__ import annotations

from typing import Any

from mta.monoid import Monoid
from mta.watermarked.held import KeyWindow
from mta.watermarked.panes import PaneWindow, takes
from mta.watermarked.rule import Windowing
from mta.watermarked.sessions import Sessions, SessionWindow


def key_window(monoid: Monoid, windowing: Windowing | Sessions, state: dict[str, Any] | None = None
               ) -> KeyWindow | PaneWindow | SessionWindow:
    """The window of one key for ``windowing``: session windows, time windows of a
    commutative monoid (their events go into panes as they come, :mod:`mta.watermarked.panes`),
    or the others (events held back until the watermark)."""
    if isinstance(windowing, Sessions):
        return SessionWindow(monoid, windowing, state)
    if takes(monoid, windowing) and not (state and "pending_times" in state):  # (a key of an older checkpoint
        return PaneWindow(monoid, windowing, state)                         # goes on holding events back)
    return KeyWindow(monoid, windowing, state)


__all__ = ["KeyWindow", "PaneWindow", "SessionWindow", "Sessions", "Windowing", "key_window"]
