"""What a key's window reports and when an event is too late for it: the parts the
per-key windows of :mod:`mta.watermarked` share (:class:`~mta.watermarked.held.KeyWindow`,
:class:`~mta.watermarked.panes.PaneWindow`).

Times are integer microseconds since the epoch (Spark's ``unix_micros``).

- :class:`Windowing`: time windows (``size``, ``slide``, ``offset``: Spark's ``window(ts,
  size, slide, startTime)``), policy windows (a slide policy, reported once per ``slide``)
  or reactive rows (``emit="event"``); :mod:`mta.watermarked.held` says what each reports.
- :class:`LateRule`: Spark's streaming late rule over those rows. ``advance(until)``
  reports the rows that end at or before ``until`` and closes them; an event added later
  still goes into every row of it that is open and is late only when all are closed.
- :func:`fold_panes`: events folded by pane (``gcd(size, slide)``), of which every time
  window is a run.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Windowing:
    """How a key's window slides and when it reports; times in microseconds."""

    size: int | None = None
    slide: int | None = None
    policy: Callable[[Any, Any], bool] | None = None
    emit: str = "window"
    #: Time windows start at ``offset + k * slide`` (Spark's startTime).
    offset: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.offset, int) or isinstance(self.offset, bool):
            raise ValueError(f"offset must be an integer number of microseconds, got {self.offset!r}")
        for name in ("size", "slide"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value <= 0):
                raise ValueError(f"{name} must be a positive number of microseconds, got {value!r}")
        if self.emit not in ("window", "event"):
            raise ValueError(f"emit must be 'window' (a row per window end) or 'event' (a row per event), "
                             f"got {self.emit!r}")
        if self.policy is not None and not callable(self.policy):
            raise TypeError(f"policy must be callable (total, old) -> bool, got {self.policy!r}")
        if self.emit == "window":
            if self.policy is None and self.size is None:
                raise ValueError("a window needs a size (and a slide; tumbling when omitted) or a policy")
            if self.policy is not None and self.slide is None:
                raise ValueError("a policy window reports once per slide: give slide (or emit='event')")
            if self.policy is not None and self.size is not None:
                raise ValueError("give either size (time windows) or a policy, not both")

    @property
    def step(self) -> int | None:
        return self.slide or self.size


def check_times(times: list[int]) -> None:
    """TypeError unless every event time is an int (microseconds): what a key's window takes."""
    if not set(map(type, times)) <= {int}:
        bad = next(t for t in times if type(t) is not int)
        raise TypeError(f"event times must be int microseconds, got {bad!r}")


def align_up(x: int, step: int, offset: int = 0) -> int:
    """The smallest ``offset + k * step`` >= x."""
    return -((offset - x) // step) * step + offset


def align_down(x: int, step: int, offset: int = 0) -> int:
    """The largest ``offset + k * step`` <= x."""
    return x - (x - offset) % step


def fold_panes(times: list[int], values: list[Any], pane: int, offset: int, fold: Callable[[Any, list], Any],
               identity: Any) -> tuple[list[int], list[Any]]:
    """Sorted events folded by pane (``pane`` long, starting at ``offset + k * pane``): (pane
    starts, pane partials), each pane's events folded in their order. A window is a run of
    whole panes, so it aggregates its panes' partials as it would its events."""
    starts, partials = [], []
    i, n = 0, len(times)
    while i < n:
        start = times[i] - (times[i] - offset) % pane
        j = bisect.bisect_left(times, start + pane, i)
        starts.append(start)
        partials.append(values[i] if j == i + 1 else fold(identity, values[i:j]))
        i = j
    return starts, partials


class LateRule:
    """Spark's late rule over the rows a key's window reports (see
    :mod:`spark_integration.streaming`): the rows ending at or before ``done`` are closed,
    an event whose rows are all closed is late (counted in ``late`` and dropped)."""

    windowing: Windowing
    #: The rows ending at or before this time are reported (or were empty): closed to new events.
    done: float
    late: int

    def _drop_late(self, times: list[int], values: list[Any]) -> tuple[list[int], list[int], list[Any]]:
        """The indices of the late events among ``times``, and the other events."""
        open_from = self._open_from()
        late = [i for i, t in enumerate(times) if t < open_from and self._in_a_row(t)] \
            if min(times) < open_from else []
        if late:
            dropped = set(late)
            times = [t for i, t in enumerate(times) if i not in dropped]
            values = [v for i, v in enumerate(values) if i not in dropped]
            self.late += len(late)
        return late, times, values

    def _open_from(self) -> float:
        """The oldest time an added event may have: before it, every row that would hold
        it ended at or before ``done`` (the event is late)."""
        done, windowing = self.done, self.windowing
        if windowing.emit == "event" or not math.isfinite(done):
            return done  # a reactive row ends right after its event
        if windowing.policy is not None:
            return align_down(done, windowing.slide)  # rows end at multiples of slide
        return align_down(done - windowing.size, windowing.step, windowing.offset) + windowing.step  # first open

    def _in_a_row(self, time: int) -> bool:
        """Whether some row holds an event at ``time`` (not so between windows when slide > size)."""
        windowing = self.windowing
        if windowing.emit == "event" or windowing.policy is not None:
            return True
        return time - align_down(time, windowing.step, windowing.offset) < windowing.size

    def _first_open(self, time: int) -> int:
        """The start (time windows) or end (policy windows) of the first open row holding ``time``."""
        windowing = self.windowing
        if windowing.policy is not None:
            return align_up(time + 1, windowing.slide)
        first, open_from = align_up(time - windowing.size + 1, windowing.step, windowing.offset), self._open_from()
        return first if first >= open_from else int(open_from)
