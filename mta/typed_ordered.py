"""``TypedTimeOrdered``: an out-of-order window (``algorithm="fiba"``) on a
:class:`~mta.algorithms.typed_fiba.TypedFiBA` (issue 20), with the results of
:class:`~mta.ordered_window.TimeOrdered` over :class:`~mta.algorithms.fiba.FiBA`.

The object window files each timed element ``(1, timestamp, partial)`` under the key
``(timestamp, arrival)``. Here the tree has pair keys (``TypedFiBA(..., pairs=True)``:
two int64 columns, compared as pairs) and the same keys, so the typed tree has the
object tree's shape, node for node, and combines in its order. Its values are the bare
partials: every aggregate of the timed tree is ``(count, newest timestamp, partial)``, the
count the node's size, the newest timestamp that of the last entry the aggregate covers,
the partial the untimed tree's aggregate. (The timed combine returns ``x`` for an empty
right operand where the untimed one computes ``x + 0`` or ``min(x, inf)``: the same number
unless ``x`` is -0.0, which FiBA's accumulators, starting at the identity, never are; the
tests compare bit for bit.)

It holds timestamps all exactly ints in int64, or all floats (not NaN nor -0.0, which
would read back as 0.0), of any span: relative seconds, epoch seconds, mixed magnitudes.
Partials as TypedFiBA. Anything else raises :class:`~mta.algorithms.typed.Untyped` before
any change, and the window demotes to :meth:`to_object`, the object TimeOrdered in the
same state.
"""

from __future__ import annotations

import math
import struct
from typing import Any, Iterator, Sequence

from mta.algorithms.base import Aggregator
from mta.algorithms.fiba import FiBA
from mta.algorithms.typed import Untyped, plan
from mta.algorithms.typed_fiba import _object_node
from mta.algorithms.typed_record_fiba import TypedRecordFiBA, typed_tree
from mta.monoid import Monoid
from mta.ordered_window import LATE, TimeOrdered

__all__ = ["TypedTimeOrdered"]

_SIZE, _TIME, _ANY, _ALL = 0, 1, 2, 3
_I64_MAX = 2**63 - 1
_I64_MIN = -2**63
#: Keys below and above every entry (arrival numbers are >= 0).
_LOWEST, _HIGHEST = (_I64_MIN, -1), (_I64_MAX, _I64_MAX)


def _plain(t: Any) -> bool:
    """Whether the typed keys may hold a timestamp: exactly an int, or a float that is not
    NaN nor -0.0 (which would read back as 0.0)."""
    kind = type(t)
    return kind is int or (kind is float and t == t and (t or math.copysign(1.0, t) > 0))


#: Before pair keys, a key was ``(timestamp code - base) << 28 | (arrival - first)``.
_PACKED_ARRIVAL_BITS = 28
_D, _Q = struct.Struct("d"), struct.Struct("q")


def _unpacked(state: dict[str, Any]) -> dict[str, Any]:
    """The pickled state of a window from before pair keys (one packed int64 key per entry,
    float timestamps coded by their order-preserving bits) with pair keys, node for node:
    the same shape, so the same results from here on."""
    state = dict(state)
    base, first = state.pop("_base"), state.pop("_first")
    if state.get("_journaled"):
        raise ValueError("a window pickled inside a batch by an earlier version cannot be read")
    floats, mask = state["_float"], (1 << _PACKED_ARRIVAL_BITS) - 1

    def key(k: int) -> tuple[Any, int]:
        code = base + (k >> _PACKED_ARRIVAL_BITS)
        if floats:
            code = _D.unpack(_Q.pack(code ^ _I64_MAX if code < 0 else code))[0]
        return (code, first + (k & mask))

    def rekeyed(fields: tuple) -> tuple:
        keys, values, agg, size, left, right, suffix, children = fields
        return ([key(k) for k in keys], values, agg, size, left, right, suffix,
                None if children is None else [rekeyed(child) for child in children])

    def retree(tree: Any) -> Any:
        make, (cls, monoid, min_arity, (_, *head, journal, nodes), *_) = tree.__reduce__()
        return make(cls, monoid, min_arity, (floats, *head, journal, rekeyed(nodes)), True)

    tree = state["tree"]
    if isinstance(tree, TypedRecordFiBA):
        tree.trees = [retree(field) for field in tree.trees]
    else:
        state["tree"] = retree(tree)
    return state


class TypedTimeOrdered(Aggregator):
    """TimeOrdered(FiBA) for a built-in number monoid, or a Record of them (on a
    :class:`~mta.algorithms.typed_record_fiba.TypedRecordFiBA`), and a policy :func:`plan` takes."""

    name = FiBA.name

    def __init__(self, monoid: Monoid, timed_monoid: Monoid, policy: Any, *, late: str = "refuse",
                 min_arity: int = 16) -> None:
        if late not in LATE:
            raise ValueError(f"late must be one of {', '.join(map(repr, LATE))}, got {late!r}")
        self.tree = typed_tree(monoid, min_arity, pairs=True)
        #: The tree that answers for keys alone (a Record's first field's: they have one shape).
        self._shape = _shape_of(self.tree)
        super().__init__(timed_monoid)
        self.late = late
        self._policy = policy
        self._plan = None if policy is None else plan(policy)
        if policy is not None and self._plan is None:
            raise TypeError(f"typed cores cannot evaluate policy {policy!r}")
        #: The next arrival number, as TimeOrdered's.
        self._arrivals = 0
        #: The newest timestamp that has left the window (None: nothing has yet).
        self.frontier: Any = None
        #: Timestamps are floats, else ints: all one kind.
        self._float = False
        #: An undo journal is open: the kind must not change.
        self._journaled = False

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "_base" in state:  # pickled before pair keys
            state = _unpacked(state)
        super().__setstate__(state)
        self._shape = _shape_of(self.tree)  # (a pickle from before it was kept)

    # -- keys ------------------------------------------------------------------------------

    def _key(self, timestamp: Any, arrival: int) -> tuple[Any, int]:
        """The key of a new entry; Untyped if it does not fit."""
        if type(timestamp) is not int or self._float:  # (an int beyond int64: the tree refuses it)
            if not _plain(timestamp):
                raise Untyped(f"a timestamp the typed keys do not hold: {timestamp!r}")
            self._kind_of(type(timestamp) is float)
        return (timestamp, arrival)

    def _kind_of(self, floats: bool) -> None:
        """Timestamps of this kind from now on (an empty window takes any); Untyped if not."""
        if floats != self._float:
            if len(self.tree) or self._journaled:
                raise Untyped("a timestamp of the other kind (ints and floats)")
            self._float = floats

    def _bound(self, bound: Any, up: bool) -> Any:
        """The least timestamp of the window's kind >= ``bound`` (``up``) or the greatest <=
        it (a number, compared exactly); None if there is none in the keys' range."""
        if self._float:
            try:
                f = float(bound)
            except OverflowError:
                f = math.inf if bound > 0 else -math.inf
            if up and f < bound:
                f = math.nextafter(f, math.inf)
            elif not up and f > bound:
                f = math.nextafter(f, -math.inf)
            return f
        if type(bound) is not int and not math.isfinite(bound):
            return None
        t = math.ceil(bound) if up else math.floor(bound)
        return t if _I64_MIN <= t <= _I64_MAX else None

    def _below(self, bound: Any) -> tuple[Any, int]:
        """A key just below every entry with timestamp >= ``bound`` (a number)."""
        t = self._bound(bound, True)
        if t is None:
            return _LOWEST if bound < 0 else _HIGHEST
        return (t, -1)

    def _above(self, bound: Any) -> tuple[Any, int]:
        """A key just above every entry with timestamp <= ``bound`` (a number)."""
        t = self._bound(bound, False)
        if t is None:
            return _LOWEST if bound < 0 else _HIGHEST
        return (t, _I64_MAX)

    @staticmethod
    def _ts(key: tuple[Any, int]) -> Any:
        return key[0]

    # -- updates ---------------------------------------------------------------------------

    def bound(self) -> Any:
        return self.frontier if self.late == "refuse" else None

    def _insert(self, timestamp: Any, partial: Any) -> None:
        frontier = self.frontier
        if self.late == "refuse" and frontier is not None and timestamp < frontier:
            raise Untyped("a late update (the window refuses it the checked way)")
        arrival = self._arrivals
        key = self._key(timestamp, arrival)
        self.tree.insert(key, partial)
        self._arrivals = arrival + 1

    def insert(self, element: tuple) -> None:
        self._insert(element[1], element[2])

    def push(self, timestamp: Any, partial: Any) -> int:
        """``mta.Window``'s insertion: insert, then enforce the policy; how many left."""
        self._insert(timestamp, partial)
        return self.enforce(self._policy) if self._plan is not None else 0

    def accepts(self, partials: Sequence[Any], timestamps: Sequence[Any]) -> bool:
        """Whether :meth:`insert_columns` takes this batch."""
        if timestamps:
            floats = type(timestamps[0]) is float
            if not all(_plain(t) and (type(t) is float) == floats for t in timestamps):
                return False
            if not floats and not all(_I64_MIN <= t <= _I64_MAX for t in timestamps):
                return False
            try:
                self._kind_of(floats)
            except Untyped:
                return False
        return self.tree.accepts(partials)

    def insert_columns(self, timestamps: Sequence[Any], partials: Sequence[Any]) -> None:
        """Insert ``(1, timestamps[j], partials[j])`` in arrival order (:meth:`accepts` first)."""
        for t, p in zip(timestamps, partials):
            self._insert(t, p)

    def insert_arrays(self, timestamps: Any, values: Any, keys: Any = None) -> bool:
        """Insert int64 or float64 numpy columns (timestamps not NaN: the caller checked)
        in arrival order, in the tree's C loops (:meth:`TypedFiBA.insert_arrays`, a Record's
        :meth:`TypedRecordFiBA.insert_arrays`: every monoid they serve; ``keys``: ArgMin's and
        ArgMax's). False, with nothing changed, where the window's general path must decide:
        a column of the other kind, a late timestamp the window refuses, a value the monoid
        does not lift or the tree cannot hold."""
        if not len(timestamps):
            return False
        floats = timestamps.dtype.kind == "f"
        if floats != self._float and (len(self.tree) or self._journaled):
            return False
        frontier = self.frontier
        if self.late == "refuse" and frontier is not None and timestamps.min().item() < frontier:
            return False
        try:
            self.tree.insert_arrays(timestamps, values, self._arrivals, keys)
        except Untyped:
            return False
        self._float = floats
        self._arrivals += len(timestamps)
        return True

    def insert_many(self, elements: Sequence[tuple]) -> None:
        for element in elements:
            self.insert(element)

    def _evict_prefix(self, k: int, key: tuple | None = None) -> int:
        """Evict the ``k`` oldest entries (the last of them at ``key``, if known), as
        TimeOrdered does: one eviction for one entry, else a bulk eviction up to the last."""
        if not k:
            return 0
        tree = self.tree
        if key is None:
            key = self._shape.oldest()[0] if k == 1 else self._shape.key_at(k - 1)
        if k == 1:
            tree.evict(key)
        else:
            tree.evict_upto(key)
        ts = self._ts(key)
        if self.frontier is None or ts > self.frontier:
            self.frontier = ts
        return k

    def evict(self, k: int = 1) -> None:
        self._check_evict(k)
        self._evict_prefix(k)

    def _condemned(self, node: tuple) -> tuple[int, tuple | None]:
        """How many of the oldest entries the plan condemns, and the key of the last (None:
        not looked up)."""
        code = node[0]
        n = len(self.tree)
        if code == _SIZE:
            return (n - node[1] if n > node[1] else 0), None
        if code == _TIME:
            if not n:
                return 0, None
            newest = self._ts(self._shape.newest()[0])
            oldest_key = self._shape.oldest()[0]
            # int timestamps: differences reach 2**64 - 1, beyond the plan's int64 width: the
            # exact one, ceil(w) (int widths are at most 2**53: the double holds them)
            width = node[2] if self._float else math.ceil(node[2])
            if not newest - self._ts(oldest_key) >= width:
                return 0, None
            count, last = self._shape.count_range(oldest_key, self._above(newest - width))
            if self._float:  # newest - t >= width as the object window rounds it: a prefix
                tree = self._shape
                while count and not newest - self._ts(last) >= width:
                    count -= 1
                    last = tree.key_at(count - 1) if count else None
                while count < n:
                    key = tree.key_at(count)
                    if not newest - self._ts(key) >= width:
                        break
                    count, last = count + 1, key
            return count, last
        best = None
        for child in node[1]:
            found = self._condemned(child)
            if best is None or (found[0] > best[0] if code == _ANY else found[0] < best[0]):
                best = found
        return best

    def enforce(self, wsp: Any) -> int:
        """Evict the longest prefix the window's own policy condemns; return its length."""
        if wsp is not self._policy or self._plan is None:
            raise TypeError("a typed window enforces its own policy only")
        k, key = self._condemned(self._plan)
        return self._evict_prefix(k, key)

    def evict_before(self, timestamp: Any) -> int:
        """As TimeOrdered.evict_before (``timestamp`` an int or a finite float)."""
        if type(timestamp) is not int and (type(timestamp) is not float or not math.isfinite(timestamp)):
            raise Untyped(f"a bound that is not a finite number: {timestamp!r}")
        evicted = self.tree.evict_upto(self._below(timestamp)) if len(self.tree) else 0
        if self.frontier is None or timestamp > self.frontier:
            self.frontier = timestamp
        return evicted

    def retract(self, timestamp: Any) -> int:
        """Remove every update at ``timestamp``; return how many (the frontier stays)."""
        if not len(self.tree):
            return 0
        tree = self.tree
        entries = tree.entries(self._below(timestamp), self._above(timestamp))
        for key, _ in entries:
            tree.evict(key)
        return len(entries)

    def clear(self) -> None:
        self.tree.clear()
        self.frontier = None

    # -- undo ----------------------------------------------------------------------------------

    @property
    def hold(self) -> bool:  # type: ignore[override]
        return self.tree.hold

    @hold.setter
    def hold(self, value: bool) -> None:
        self.tree.hold = value

    def snapshot(self) -> Any:
        self._journaled = True
        return self.tree.snapshot(), self._arrivals, self.frontier

    def restore(self, snapshot: Any) -> None:
        tree, self._arrivals, self.frontier = snapshot
        self.tree.restore(tree)
        self._journaled = False

    def begin_hold(self) -> None:
        self.tree.begin_hold()

    def end_hold(self) -> bool:
        self._journaled = False
        return self.tree.end_hold()

    # -- results -------------------------------------------------------------------------------

    def query(self) -> Any:
        tree = self.tree
        n = len(tree)
        if not n:
            return self.monoid.identity
        return (n, self._ts(self._shape.newest()[0]), tree.query())

    def result(self) -> Any:
        """``monoid.lower`` of the window's partial."""
        return self.tree.result()

    def query_range(self, t_from: Any, t_to: Any) -> Any:
        """The timed aggregate of the updates with ``t_from <= timestamp <= t_to``."""
        tree = self.tree
        if not len(tree) or t_to < t_from:
            return self.monoid.identity
        low, high = self._below(t_from), self._above(t_to)
        if high <= low:
            return self.monoid.identity
        count, last = self._shape.count_range(low, high)
        if not count:
            return self.monoid.identity
        return (count, self._ts(last), tree.query_range(low, high))

    def _oldest(self) -> Any:
        key, partial = self.tree.oldest()
        return (1, self._ts(key), partial)

    def __len__(self) -> int:
        return len(self.tree)

    def __iter__(self) -> Iterator[Any]:
        ts = self._ts
        return iter([(1, ts(key), partial) for key, partial in self.tree])

    # -- demotion ------------------------------------------------------------------------------

    def to_object(self) -> TimeOrdered:
        """The object TimeOrdered over FiBA in this state, node for node (keys
        ``(timestamp, arrival)``, timed values and aggregates)."""
        obj = TimeOrdered(FiBA, self.monoid, late=self.late, min_arity=self.tree.min_arity)
        identity = self.monoid.identity
        ts = self._ts

        def make(keys: list, values: list, agg: Any, size: int, left: bool, right: bool, suffix: list | None,
                 children: list | None) -> Any:
            # suffix[r] folds the last r + 1 entries; a stale one (on a node a bulk eviction
            # emptied) is never read: FiBA rebuilds it first, as it does from None
            timed_suffix = (None if suffix is None or len(suffix) != len(keys)
                            else [(r + 1, ts(keys[-1]), s) for r, s in enumerate(suffix)])
            return _object_node(list(keys), [(1, ts(key), v) for key, v in zip(keys, values)],
                                (size, None, agg) if size else identity, size, left, right, timed_suffix, children)

        root = self.tree.dump(make)
        _newest_aggs(root, None)
        tree = obj.tree
        tree._root = root
        tree._left_finger = FiBA._leftmost(root)
        tree._right_finger = FiBA._rightmost(root)
        tree._journal = None
        tree.hold = self.tree.hold
        obj._arrivals = self._arrivals
        obj.frontier = self.frontier
        return obj


def _shape_of(tree: Any) -> Any:
    return tree.trees[0] if isinstance(tree, TypedRecordFiBA) else tree


def _last_ts(node: Any) -> Any:
    """The timestamp of the last entry of ``node``'s subtree."""
    while node.children is not None:
        node = node.children[-1]
    return node.keys[-1][0]


def _newest_aggs(node: Any, parent_newest: Any) -> None:
    """Fill in the newest timestamp of each timed aggregate (the last entry it covers, by
    FiBA's position-dependent rule), top down (a spine node's may be its parent's)."""
    parent = node.parent
    if parent is None or (node.left and node.right) or node.right:
        newest = node.keys[-1][0] if node.keys else None
    elif node.left:
        newest = parent_newest if parent.parent is not None else _last_ts(node)
    else:
        newest = _last_ts(node)
    if node.size:
        node.agg = (node.agg[0], newest, node.agg[2])
    for child in node.children or ():
        _newest_aggs(child, newest)
