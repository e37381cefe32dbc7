"""``TimeOrdered``: an out-of-order tree (FiBA, the B-tree) behind the in-order
:class:`~mta.algorithms.base.Aggregator` interface that :class:`mta.Window` drives.

The window hands it timed elements ``(count, timestamp, partial)`` in arrival order;
it files each under the key ``(timestamp, arrival number)``, so that the tree keeps
timestamp order and equal timestamps keep their arrival order as separate entries
(a policy such as ``MaxSize`` counts updates, not timestamps). Every prefix aggregate
the policy sees is then a timed tuple in timestamp order, exactly as for an in-order
window, and "the k oldest" means the k first in timestamp order.

The adapter also keeps the window's *frontier*, the newest timestamp that has left
the window (by the policy or by an eviction): an update older than it is late, and
the window refuses it unless ``late="include"`` (then it is inserted, and the policy
decides, as for any other update). Retracting an update is not an eviction and
leaves the frontier where it was.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterator, Sequence

from mta.algorithms.base import Aggregator, OrderedAggregator, Policy
from mta.monoid import Monoid

__all__ = ["TimeOrdered", "LATE"]

#: What a window does with a late update (older than its frontier).
LATE = ("refuse", "include")
#: Below and above every arrival number, to bound the keys of one timestamp.
_FIRST, _LAST = -1, math.inf


class TimeOrdered(Aggregator):
    """``tree_cls`` (an :class:`OrderedAggregator`) keyed by ``(timestamp, arrival)``."""

    def __init__(self, tree_cls: type[OrderedAggregator], monoid: Monoid, *, late: str = "refuse",
                 state: dict[str, Any] | None = None, **options: Any) -> None:
        if late not in LATE:
            raise ValueError(f"late must be one of {', '.join(map(repr, LATE))}, got {late!r}")
        super().__init__(monoid)
        self.late = late
        self.name = tree_cls.name
        self.tree = tree_cls(monoid, **options, **({"state": state} if state is not None else {}))
        order = (state or {}).get("annotations", {}).get("order", {})
        #: The next arrival number (keeps equal timestamps apart, in arrival order).
        self._arrivals: int = order.get("arrivals", 0)
        #: The newest timestamp that has left the window (None: nothing has yet).
        self.frontier: Any = order.get("frontier")
        self._annotate: Callable[[], dict[str, Any]] | None = None

    @classmethod
    def check_monoid(cls, monoid: Monoid) -> None:
        """Any monoid: the trees need neither commutativity nor inverses."""

    # -- the store, through the tree ---------------------------------------------------

    @property
    def annotate(self) -> Callable[[], dict[str, Any]] | None:
        return self._annotate

    @annotate.setter
    def annotate(self, annotate: Callable[[], dict[str, Any]] | None) -> None:
        """The window's checkpoint annotations, to which the arrival counter and the
        frontier are added (a reopened window goes on numbering and refusing where it was)."""
        self._annotate = annotate

        def annotations() -> dict[str, Any]:
            extra = annotate() if annotate is not None else {}
            return {**extra, "order": {"arrivals": self._arrivals, "frontier": self.frontier}}

        self.tree.annotate = annotations

    def flush(self, wait: bool = True) -> None:
        self.tree.flush(wait=wait)

    def checkpoint(self) -> dict[str, Any]:
        return self.tree.checkpoint()

    @property
    def commit_error(self) -> Exception | None:
        return getattr(self.tree, "commit_error", None)

    # -- updates ------------------------------------------------------------------------

    def bound(self) -> Any:
        """The oldest timestamp an insertion may have (None: any), by the ``late`` option."""
        return self.frontier if self.late == "refuse" else None

    def insert(self, element: tuple) -> None:
        arrival = self._arrivals
        self._arrivals = arrival + 1
        self.tree.insert((element[1], arrival), element)

    def insert_many(self, elements: Sequence[tuple]) -> None:
        insert = self.tree.insert
        arrival = self._arrivals
        for arrival, element in enumerate(elements, arrival):
            insert((element[1], arrival), element)
        self._arrivals += len(elements)

    def _left(self, key: Any) -> None:
        """Move the frontier past an evicted key."""
        if self.frontier is None or key[0] > self.frontier:
            self.frontier = key[0]

    def evict(self, k: int = 1) -> None:
        """Evict the ``k`` oldest updates in timestamp order (one bulk eviction)."""
        self._check_evict(k)
        if k:
            self._evict_prefix(self.tree.search(lambda old: old[0] <= k))

    def _evict_prefix(self, found: tuple[Any, Any] | None) -> int:
        if found is None:
            return 0
        key, old = found
        if old[0] == 1:
            self.tree.evict(key)  # the oldest: FiBA's fast path (no cut along a boundary)
        else:
            self.tree.evict_upto(key)
        self._left(key)
        return old[0]

    def enforce(self, wsp: Policy) -> int:
        total = self.tree.query()
        return self._evict_prefix(self.tree.search(lambda old: wsp(total, old)))

    def condemned(self, wsp: Policy, total: Any) -> int:
        found = self.tree.search(lambda old: wsp(total, old))
        return found[1][0] if found is not None else 0

    def evict_before(self, timestamp: Any) -> int:
        """Evict every update older than ``timestamp``, which becomes the frontier (if
        newer: a horizon such as a watermark, whether or not anything left); return how many."""
        evicted = self.tree.evict_upto((timestamp, _FIRST))
        if self.frontier is None or timestamp > self.frontier:
            self.frontier = timestamp
        return evicted

    def retract(self, timestamp: Any) -> int:
        """Remove every update at ``timestamp`` (a retraction); return how many."""
        tree = self.tree
        entries = tree.entries((timestamp, _FIRST), (timestamp, _LAST))
        if len(entries) == 1:
            tree.evict(entries[0][0])  # one eviction is all or nothing
        elif entries:  # several: undone together if one fails (a read from the store)
            tree.begin_hold()
            snapshot = tree.snapshot()
            try:
                for key, _ in entries:
                    tree.evict(key)
            except BaseException:
                tree.restore(snapshot)
                raise
            finally:
                tree.end_hold()  # evictions do not fill the write buffer: no flush comes due
        return len(entries)

    def clear(self) -> None:
        self.tree.clear()
        self.frontier = None

    # -- undo -----------------------------------------------------------------------------

    @property
    def hold(self) -> bool:  # type: ignore[override]
        return self.tree.hold

    @hold.setter
    def hold(self, value: bool) -> None:
        self.tree.hold = value

    def snapshot(self) -> Any:
        return self.tree.snapshot(), self._arrivals, self.frontier

    def restore(self, snapshot: Any) -> None:
        tree, self._arrivals, self.frontier = snapshot
        self.tree.restore(tree)

    def begin_hold(self) -> None:
        self.tree.begin_hold()

    def end_hold(self) -> bool:
        return self.tree.end_hold()

    # -- results ---------------------------------------------------------------------------

    def query(self) -> Any:
        return self.tree.query()

    def query_range(self, t_from: Any, t_to: Any) -> Any:
        """The aggregate of the updates with ``t_from <= timestamp <= t_to``."""
        return self.tree.query_range((t_from, _FIRST), (t_to, _LAST))

    def _oldest(self) -> Any:
        return self.tree.oldest()[1]

    def __len__(self) -> int:
        return len(self.tree)

    def __iter__(self) -> Iterator[Any]:
        return (element for _, element in self.tree)
