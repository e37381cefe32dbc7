"""FiBA, the finger B-tree aggregator, and the classic augmented B-tree it improves on.

Tangwongsan, Hirzel, Schneider: "Out-of-Order Sliding-Window Aggregation with
Efficient Bulk Evictions and Insertions" (``../shared/papers/fiba-out-of-order.txt``).
Entries ``(key, partial)`` live in a B-tree ordered by key, every node holding at
most ``2 * min_arity`` children (``2 * min_arity - 1`` entries) and, except the
root, at least ``min_arity`` (Section 3.1). Each node keeps an aggregate:

* ``btree`` (the classic tree, Section 3.1): every node the *up* aggregate of its
  subtree; an insert or evict anywhere repairs the path to the root, O(log n).
* ``fiba`` (Sections 3.2-3.3): fingers to the leftmost and rightmost leaf, and
  position-dependent aggregates (Figs 2-3): non-spine nodes the up aggregate, the
  root its *inner* aggregate (everything but its first and last child), a node on
  the left spine its *left* aggregate (its subtree without its first child, plus its
  parent's left aggregate), the right spine symmetrically. The left finger's
  aggregate is then the whole first subtree of the root, the right finger's the
  whole last one: ``query`` is two combines, and a change d entries from either end
  repairs O(log d) nodes (amortized, with rebalancing).

Rebalancing is bottom-up and piggybacks the repair of up aggregates; the rebalancing
routines report the topmost node they changed and whether they touched either spine,
and :meth:`FiBA._repair` finishes the job (Fig. 7, ``repairAggs``): up the remaining
up aggregates, then down the touched spines. Bulk eviction cuts the tree along the
search path of its bound, fixing underflows level by level with the next node to
the right (the "neighbor", a sibling or a cousin below a common ancestor), in
O(log n) node visits whatever the number evicted; this follows the bulk-evict
algorithm of the authors' later work (their C++ ``FiBA.hpp``). Each node also counts
the entries its aggregate covers, with the same position-dependent rule, so the
number of entries is O(1) too.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any, Callable, Iterator

from mta.algorithms.base import OrderedAggregator
from mta.monoid import Monoid


class _Node:
    """A B-tree node: ``keys[i]``/``values[i]`` are its entries; an inner node has
    ``len(keys) + 1`` children, ``children[i]`` holding the keys between ``keys[i-1]``
    and ``keys[i]``. ``left``/``right``: on the left/right spine (never the root)."""

    __slots__ = ("keys", "values", "children", "parent", "agg", "size", "left", "right", "suffix", "pages", "pos",
                 "minpos")

    def __init__(self, keys: list[Any], values: list[Any], children: list[_Node] | None,
                 parent: _Node | None, agg: Any, pages: Any = None) -> None:
        self.keys = keys
        self.values = values
        self.children = children
        self.parent = parent
        self.agg = agg
        self.size = 0
        self.left = False
        self.right = False
        #: The left finger's suffix folds: ``suffix[-1 - i]`` aggregates ``values[i:]``, so
        #: that evicting the oldest entry is a pop (None: not the left finger, or stale).
        self.suffix: list[Any] | None = None
        #: On a store (mta.algorithms.fiba_store): the pages that load this node when it is
        #: a stub (``keys``, ``values`` and ``children`` unset), and where it is stored.
        self.pages = pages

    def __getattr__(self, name: str) -> Any:
        # Only called for an unset slot: a stub of a stored node loads on first use.
        if name in _CONTENT and self.pages is not None:
            self.pages.load(self)
            return getattr(self, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __getstate__(self) -> dict[str, Any]:
        # For copy.deepcopy: the set slots only, read without __getattr__ (a stub stays a stub).
        state = {}
        for name in _Node.__slots__:
            try:
                state[name] = object.__getattribute__(self, name)
            except AttributeError:
                pass
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)


_CONTENT = frozenset({"keys", "values", "children"})
#: In the undo journal: the key was not in the tree before.
_NEW: Any = object()


class FiBA(OrderedAggregator):
    """The finger B-tree aggregator: amortized O(log d) insert and evict at distance d
    from either end, O(1) query, O(log n) bulk eviction, range queries."""

    name = "fiba"
    uses_store = True
    #: Fingers and position-dependent aggregates (False: the classic B-tree).
    FINGERS = True

    def __new__(cls, monoid: Monoid | None = None, **options: Any) -> FiBA:
        if options.get("store") is not None and cls is FiBA:
            from mta.algorithms.fiba_store import StoredFiBA  # it builds on this module
            cls = StoredFiBA
        return super().__new__(cls)

    def __init__(self, monoid: Monoid, *, min_arity: int = 16, buffer_size: int = 1, cache_size: int = 1) -> None:
        """``buffer_size`` and ``cache_size`` are the stored tree's (``FiBA(store=...)``):
        checked here, as the MTAs' are, so that a window's options are valid with or without a store."""
        super().__init__(monoid)
        if isinstance(min_arity, bool) or not isinstance(min_arity, int) or min_arity < 2:
            raise ValueError(f"min_arity must be an int >= 2, got {min_arity!r}")
        for name, value in (("buffer_size", buffer_size), ("cache_size", cache_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        self.min_arity = min_arity
        #: The most entries a node holds (max arity 2 * min_arity, minus one).
        self._max_keys = 2 * min_arity - 1
        #: The fewest entries a non-root node holds.
        self._min_keys = min_arity - 1
        self._combine = monoid.combine
        self._identity = monoid.identity
        #: While a batch may be undone: (key, value before) for each change, in order.
        self._journal: list[tuple[Any, Any]] | None = None
        self._reset()

    # -- aggregates ------------------------------------------------------------------

    def _has_up(self, node: _Node) -> bool:
        return not self.FINGERS or not (node.parent is None or node.left or node.right)

    def _recalc(self, node: _Node) -> None:
        """Recompute ``node.agg`` and ``node.size`` from its entries, its children and,
        for a spine node, its parent (Fig. 2: up, inner, left and right aggregates)."""
        combine = self._combine
        values = node.values
        children = node.children
        size = len(values)
        if children is None:
            if node is self._left_finger and values:
                suffix = [values[-1]]
                for i in range(size - 2, -1, -1):
                    suffix.append(combine(values[i], suffix[-1]))
                node.suffix = suffix
                agg = suffix[-1]
            else:
                agg = self.monoid.fold(self._identity, values)
        else:  # inner: v0 c1 v1 c2 ... c[m-1] v[m-1]
            agg = values[0] if values else self._identity
            for i in range(1, size):
                child = children[i]
                agg = combine(combine(agg, child.agg), values[i])
                size += child.size
        parent = node.parent
        if not self.FINGERS or not (parent is None or node.left or node.right):  # up
            if children is not None:
                first = children[0]
                if len(children) == 1:
                    agg, size = first.agg, first.size
                else:
                    last = children[-1]
                    agg = combine(combine(first.agg, agg), last.agg)
                    size += first.size + last.size
        elif parent is None or (node.left and node.right):
            pass  # inner (a node on both spines only exists while the root has one child)
        elif node.left:
            if children is not None:
                last = children[-1]
                agg = combine(agg, last.agg)
                size += last.size
            if parent.parent is not None:
                agg = combine(agg, parent.agg)
                size += parent.size
        else:
            if children is not None:
                first = children[0]
                agg = combine(first.agg, agg)
                size += first.size
            if parent.parent is not None:
                agg = combine(parent.agg, agg)
                size += parent.size
        node.agg = agg
        node.size = size

    def _touched(self, node: _Node) -> None:
        """``node`` changed and its aggregate was updated in place (see StoredFiBA)."""

    def _recalc_if_up(self, node: _Node) -> None:
        if not self.FINGERS or not (node.parent is None or node.left or node.right):
            self._recalc(node)

    def _repair(self, top: _Node, hit_left: bool, hit_right: bool) -> None:
        """Finish the aggregate repair after rebalancing topped out at ``top`` (Fig. 7,
        ``repairAggs``): up aggregates up to the first spine node or the root, then down
        each spine the operation touched (left and right aggregates depend on the parent)."""
        recalc = self._recalc
        if not self.FINGERS:
            while top is not None:
                recalc(top)
                top = top.parent
            return
        if self._has_up(top):
            while self._has_up(top):
                top = top.parent
                recalc(top)
        else:
            recalc(top)
        root = top.parent is None
        if top.left or (hit_left and root):
            node = top
            while node.children is not None:
                node = node.children[0]
                recalc(node)
        if top.right or (hit_right and root):
            node = top
            while node.children is not None:
                node = node.children[-1]
                recalc(node)

    # -- structure -------------------------------------------------------------------

    @staticmethod
    def _attach(parent: _Node, children: list[_Node]) -> None:
        for child in children:
            child.parent = parent

    def _search_node(self, key: Any) -> _Node:
        """The node holding ``key``, or the leaf where it belongs; with fingers the search
        starts at the nearer finger and climbs only as far as it must (O(log d))."""
        node = self._root
        if self.FINGERS and node.children is not None:
            if key < node.keys[0]:
                node = self._left_finger
                while node.parent is not None and node.keys[-1] < key:
                    node = node.parent
            elif node.keys[-1] < key:
                node = self._right_finger
                while node.parent is not None and key < node.keys[0]:
                    node = node.parent
        while node.children is not None:
            keys = node.keys
            i = bisect_left(keys, key)
            if i < len(keys) and keys[i] == key:
                return node
            node = node.children[i]
        return node

    def _height_increase(self) -> None:
        old = self._root
        self._root = old.parent = self._new([], [], [old])
        old.left = old.right = True

    def _height_decrease(self) -> None:
        """The root has one child and no entry: the child becomes the root."""
        root = self._root.children[0]
        root.parent = None
        root.left = root.right = False
        self._root = root
        self._recalc(root)

    def _split(self, left: _Node) -> None:
        """Split an overflowing node around its middle entry, which moves to the parent."""
        a = self.min_arity
        parent = left.parent
        right = self._new(left.keys[a + 1:], left.values[a + 1:], None)
        index = parent.children.index(left)
        parent.keys.insert(index, left.keys[a])
        parent.values.insert(index, left.values[a])
        parent.children.insert(index + 1, right)
        del left.keys[a:], left.values[a:]
        if left.children is not None:
            right.children = left.children[a + 1:]
            del left.children[a + 1:]
            self._attach(right, right.children)
        right.parent = parent
        right.right, left.right = left.right, False
        if self._right_finger is left:
            self._right_finger = right
        self._recalc_if_up(left)
        self._recalc_if_up(right)
        self._recalc_if_up(parent)

    def _rebalance_after_insert(self, node: _Node) -> tuple[_Node, bool, bool]:
        hit_left, hit_right = node.left, node.right
        while len(node.keys) > self._max_keys:
            if node.parent is None:
                self._height_increase()
                hit_left = hit_right = True
            self._split(node)
            node = node.parent
            hit_left |= node.left
            hit_right |= node.right
        return node, hit_left, hit_right

    def _merge(self, parent: _Node, index: int) -> _Node:
        """Merge ``parent.children[index + 1]`` into ``children[index]`` with the entry between."""
        left, right = parent.children[index], parent.children[index + 1]
        left.keys.append(parent.keys.pop(index))
        left.values.append(parent.values.pop(index))
        del parent.children[index + 1]
        left.keys += right.keys
        left.values += right.values
        if left.children is not None:
            left.children += right.children
            self._attach(left, right.children)
        left.right = right.right
        if self._right_finger is right:
            self._right_finger = left
        self._recalc_if_up(left)
        self._recalc_if_up(parent)
        return left

    def _move(self, parent: _Node, recipient: int, giver: int) -> None:
        """Rotate one entry (and child) from sibling ``giver`` through the parent into
        sibling ``recipient``; spine membership of the three nodes does not change."""
        to, fro = parent.children[recipient], parent.children[giver]
        if recipient < giver:
            to.keys.append(parent.keys[recipient])
            to.values.append(parent.values[recipient])
            parent.keys[recipient] = fro.keys.pop(0)
            parent.values[recipient] = fro.values.pop(0)
            if fro.children is not None:
                to.children.append(fro.children.pop(0))
                self._attach(to, to.children[-1:])
        else:
            to.keys.insert(0, parent.keys[giver])
            to.values.insert(0, parent.values[giver])
            parent.keys[giver] = fro.keys.pop()
            parent.values[giver] = fro.values.pop()
            if fro.children is not None:
                to.children.insert(0, fro.children.pop())
                self._attach(to, to.children[:1])
        self._recalc_if_up(to)
        self._recalc_if_up(fro)
        self._recalc_if_up(parent)

    def _rebalance_after_evict(self, node: _Node, to_repair: _Node | None = None) -> tuple[_Node, bool, bool]:
        hit_left, hit_right = node.left, node.right
        if node is to_repair:
            self._recalc_if_up(node)
        min_keys = self._min_keys
        while node.parent is not None and len(node.keys) < min_keys:
            parent = node.parent
            index = parent.children.index(node)
            other = index - 1 if index == len(parent.children) - 1 else index + 1
            sibling = parent.children[other]
            # The sibling may be on a spine (DESIGN.md, the Fig. 7 defect): its aggregate changes too.
            hit_left |= sibling.left
            hit_right |= sibling.right
            # Merge when the sibling is at its minimum (the classic rule), and on the left
            # spine whenever both fit in one node: FIFO eviction then finds a full left
            # finger (min_arity evictions on the fast path) instead of borrowing one entry
            # per eviction from siblings that in-order splits left half full.
            if len(sibling.keys) <= min_keys or (node.left and len(node.keys) + len(sibling.keys) < self._max_keys):
                node = self._merge(parent, min(index, other))
                if parent.parent is None and not parent.keys:
                    self._height_decrease()
                else:
                    node = parent
            else:
                self._move(parent, index, other)
                node = parent
            if node is to_repair:
                self._recalc_if_up(node)
            hit_left |= node.left
            hit_right |= node.right
        return node, hit_left, hit_right

    # -- updates ---------------------------------------------------------------------

    def insert(self, key: Any, partial: Any) -> bool:
        finger = self._right_finger
        keys = finger.keys
        if keys and key > keys[-1] and len(keys) < self._max_keys and self.FINGERS:
            # In order, no split: the right finger's aggregate (its parent's, then its own
            # entries) just gains the entry at its end: one combine (Fig. 3, step AB).
            if self._journal is not None:
                self._journal.append((key, _NEW))
            keys.append(key)
            finger.values.append(partial)
            finger.agg = self._combine(finger.agg, partial)
            finger.size += 1
            finger.suffix = None  # (when it is the left finger too: the root leaf)
            self._touched(finger)
            return True
        if keys and key > keys[-1] and self.FINGERS and finger.parent is not None and finger.parent.keys \
                and not finger.parent.left and len(finger.parent.keys) < self._max_keys:
            self._append_split(finger, key, partial)
            return True
        node = self._search_node(key)
        keys = node.keys
        i = bisect_left(keys, key)
        if i < len(keys) and keys[i] == key:  # Def. 2.1 with pre-aggregation: combine
            if self._journal is not None:
                self._journal.append((key, node.values[i]))
            node.values[i] = self._combine(node.values[i], partial)
            self._recalc_if_up(node)
            self._repair(node, node.left, node.right)
            return False
        if self._journal is not None:
            self._journal.append((key, _NEW))
        keys.insert(i, key)
        node.values.insert(i, partial)
        self._recalc_if_up(node)
        self._repair(*self._rebalance_after_insert(node))
        return True

    def _append_split(self, finger: _Node, key: Any, partial: Any) -> None:
        """In order, the right finger full, its parent not: split the finger, and update
        the parent's aggregate in place. The parent (the root, or on the right spine)
        aggregates its entries up to its last child, which it leaves out (Fig. 2): the old
        finger, now second to last, and the entry promoted after it join its end. Two
        combines instead of recomputing the parent from all its children."""
        if self._journal is not None:
            self._journal.append((key, _NEW))
        keys, values = finger.keys, finger.values
        keys.append(key)
        values.append(partial)
        a = self.min_arity
        parent = finger.parent
        right = self._new(keys[a + 1:], values[a + 1:], None)
        parent.keys.append(keys[a])
        parent.values.append(values[a])
        parent.children.append(right)
        del keys[a:], values[a:]
        right.parent, right.right, finger.right = parent, True, False
        finger.suffix = None
        self._right_finger = right
        self._recalc(finger)  # now an up aggregate
        parent.agg = self._combine(self._combine(parent.agg, finger.agg), parent.values[-1])
        parent.size += finger.size + 1
        self._touched(parent)
        self._recalc(right)  # right aggregate: its entries after the parent's

    def evict(self, key: Any) -> bool:
        finger = self._left_finger
        keys = finger.keys
        if keys and key == keys[0] and (len(keys) > self._min_keys or finger.parent is None) and self.FINGERS:
            # The oldest, no underflow: only the left finger's aggregate changes.
            if self._journal is not None:
                self._journal.append((key, finger.values[0]))
            del keys[0], finger.values[0]
            suffix = finger.suffix
            if suffix is None:
                self._recalc(finger)
                return True
            suffix.pop()
            agg = suffix[-1] if suffix else self._identity
            size = len(keys)
            parent = finger.parent
            if parent is not None and parent.parent is not None:
                agg = self._combine(agg, parent.agg)
                size += parent.size
            finger.agg, finger.size = agg, size
            self._touched(finger)
            return True
        node = self._search_node(key)
        keys = node.keys
        i = bisect_left(keys, key)
        if i == len(keys) or keys[i] != key:
            return False
        if self._journal is not None:
            self._journal.append((key, node.values[i]))
        if node.children is None:
            self._prepare_evict(node)
            del keys[i], node.values[i]
            self._recalc_if_up(node)
            self._repair(*self._rebalance_after_evict(node))
            return True
        # Fig. 8, evictInner: overwrite the entry with its neighbor entry from a leaf
        # (the oldest of the right subtree, or the youngest of the left one if the right
        # child is at its minimum), evict that from its leaf, and repair this node too.
        right = node.children[i + 1]
        if len(right.keys) > self._min_keys:
            leaf = right
            while leaf.children is not None:
                leaf = leaf.children[0]
            self._prepare_evict(leaf)
            keys[i], node.values[i] = leaf.keys.pop(0), leaf.values.pop(0)
        else:
            leaf = node.children[i]
            while leaf.children is not None:
                leaf = leaf.children[-1]
            self._prepare_evict(leaf)
            keys[i], node.values[i] = leaf.keys.pop(), leaf.values.pop()
        self._recalc_if_up(leaf)
        top, hit_left, hit_right = self._rebalance_after_evict(leaf, node)
        if self._below(top, node):
            while top is not node:
                top = top.parent
                hit_left |= top.left
                hit_right |= top.right
                self._recalc_if_up(top)
        self._repair(top, hit_left, hit_right)
        return True

    @staticmethod
    def _below(node: _Node, ancestor: _Node) -> bool:
        while node is not None:
            if node is ancestor:
                return True
            node = node.parent
        return False

    def evict_upto(self, key: Any) -> int:
        """Evict every entry with a key ``<= key`` by cutting the tree along the search
        path of ``key``: O(log n) nodes visited whatever the number evicted."""
        before = len(self)
        if not before or key < self.oldest()[0]:
            return 0
        if self._journal is not None:  # O(evicted): only while a batch may be undone
            for entry in self._walk(self._root):
                if not entry[0] <= key:
                    break
                self._journal.append(entry)
        path = self._boundary(key)
        self._prepare_bulk_evict(path, key)
        skip_to: _Node | None = None
        top: _Node | None = None
        min_keys = self._min_keys
        for level, (node, neighbor, ancestor) in enumerate(reversed(path)):
            if neighbor is not None and level:
                self._recalc_if_up(neighbor)  # it gave entries to the level below
            if skip_to is None or skip_to is node:
                skip_to = None
                self._cut(node, key)
                if neighbor is None:
                    # Nothing right of this level's node: everything above it is evicted
                    # but its own subtree, which becomes the tree.
                    root = node.children[0] if node.children is not None and not node.keys else node
                    if root.parent is not None:
                        siblings = root.parent.children
                        del siblings[siblings.index(root):]
                    root.parent = None
                    root.left = root.right = False
                    self._root = root
                    self._recalc(root)
                    self._mark_left_spine(root, level == 0)
                    top = root
                    break
                if node.parent is None or len(node.keys) >= min_keys:
                    top = node
                else:
                    deficit = min_keys - len(node.keys)
                    if deficit <= len(neighbor.keys) - min_keys:
                        self._move_batch(node, neighbor, ancestor, deficit)
                    elif node.parent is ancestor:
                        self._merge(ancestor, ancestor.children.index(node))
                    else:
                        self._merge_cousin(node, neighbor, ancestor)
                        skip_to = ancestor
                    top = ancestor
            if self.FINGERS:
                self._mark_left_spine(node if skip_to is None else neighbor, level == 0)
        assert top is not None
        if top.parent is None:
            hit_left = hit_right = True
            if top.children is not None and not top.keys:
                top = top.children[0]
                self._height_decrease()
        elif len(top.keys) >= min_keys:
            hit_left, hit_right = top.left, top.right
        else:
            top, hit_left, hit_right = self._rebalance_after_evict(top)
        self._repair(top, hit_left, hit_right)
        return before - len(self)

    def _boundary(self, key: Any) -> list[tuple[_Node, _Node | None, _Node | None]]:
        """The search path of ``key`` from the node where a finger search starts, each
        node with its *neighbor* (the next node right of it on its level, None at the
        right edge) and their lowest common ancestor (which holds the entry between)."""
        node = self._root
        if self.FINGERS and node.children is not None and key < node.keys[0]:
            node = self._left_finger
            while node.parent is not None and node.keys[-1] < key:
                node = node.parent
        ancestor = node.parent
        neighbor = None
        if ancestor is not None:
            index = ancestor.children.index(node)
            if index < len(ancestor.children) - 1:
                neighbor = ancestor.children[index + 1]
        path = [(node, neighbor, ancestor)]
        while node.children is not None:
            keys = node.keys
            i = bisect_left(keys, key)
            if i < len(keys) and keys[i] == key:
                break
            if i == len(keys):
                if neighbor is not None:
                    neighbor = neighbor.children[0]
            else:
                ancestor = node
                neighbor = node.children[i + 1]
            node = node.children[i]
            path.append((node, neighbor, ancestor))
        return path

    def _prepare_evict(self, leaf: _Node) -> None:
        """Called before an eviction from ``leaf`` changes anything (see StoredFiBA)."""

    def _prepare_bulk_evict(self, path: list[tuple[_Node, _Node | None, _Node | None]], key: Any) -> None:
        """Called before a bulk eviction along ``path`` changes anything (see StoredFiBA)."""

    def _cut(self, node: _Node, key: Any) -> None:
        """Remove the entries ``<= key`` of ``node`` and the children left of them."""
        n = bisect_right(node.keys, key)
        if n:
            del node.keys[:n], node.values[:n]
            if node.children is not None:
                del node.children[:n]
        self._recalc_if_up(node)

    def _move_batch(self, node: _Node, neighbor: _Node, ancestor: _Node, count: int) -> None:
        """Give an underflowing ``node`` ``count`` entries: the one between it and its
        neighbor (in their common ancestor) and ``count - 1`` of the neighbor's, whose
        next entry takes the ancestor's place."""
        a = bisect_left(ancestor.keys, neighbor.keys[0]) - 1
        node.keys.append(ancestor.keys[a])
        node.values.append(ancestor.values[a])
        node.keys += neighbor.keys[:count - 1]
        node.values += neighbor.values[:count - 1]
        ancestor.keys[a] = neighbor.keys[count - 1]
        ancestor.values[a] = neighbor.values[count - 1]
        del neighbor.keys[:count], neighbor.values[:count]
        if node.children is not None:
            moved = neighbor.children[:count]
            del neighbor.children[:count]
            node.children += moved
            self._attach(node, moved)
        self._recalc_if_up(node)
        self._recalc_if_up(neighbor)

    def _merge_cousin(self, node: _Node, neighbor: _Node, ancestor: _Node) -> None:
        """Merge ``node`` into its neighbor when they are not siblings: the neighbor takes
        node's entries and children and the entry between them in ``ancestor``; the
        chain above node up to ``ancestor`` holds nothing else (all of it was evicted)."""
        a = bisect_left(ancestor.keys, neighbor.keys[0]) - 1
        neighbor.keys[:0] = node.keys + [ancestor.keys[a]]
        neighbor.values[:0] = node.values + [ancestor.values[a]]
        if node.children is not None:
            neighbor.children[:0] = node.children
            self._attach(neighbor, neighbor.children)
        del ancestor.keys[:a + 1], ancestor.values[:a + 1], ancestor.children[:a + 1]
        self._recalc_if_up(neighbor)

    def _mark_left_spine(self, node: _Node, down: bool) -> None:
        """``node`` is now on the left spine (at every level, bottom-up); ``down``: also
        its first descendants, and the leaf at the bottom is the left finger."""
        if node.parent is not None:
            node.left = True
        if down:
            while node.children is not None:
                node = node.children[0]
                node.left = True
            self._left_finger = node

    def clear(self) -> None:
        if self._journal is not None:
            self._journal += list(self)
        self._reset()

    # -- undo: snapshot and restore of a batch -----------------------------------------

    def snapshot(self) -> Any:
        """Start an undo journal (O(1)), for :meth:`restore` until :meth:`end_hold`: a
        batch that fails is undone by reversing what it did, not by copying the tree."""
        self._journal = []
        return self._journal

    def restore(self, snapshot: Any) -> None:
        journal, self._journal = snapshot, None
        for key, value in reversed(journal):
            if value is _NEW:
                self.evict(key)
            else:  # evicted, or combined into: put the entry back as it was
                self.evict(key)
                self.insert(key, value)

    def end_hold(self) -> bool:
        self._journal = None
        return super().end_hold()

    def _reset(self) -> None:
        self._root = self._new([], [], None)
        self._left_finger = self._right_finger = self._root

    def _new(self, keys: list[Any], values: list[Any], children: list[_Node] | None) -> _Node:
        return _Node(keys, values, children, None, self._identity)

    # -- queries ---------------------------------------------------------------------

    def query(self) -> Any:
        root = self._root
        if not self.FINGERS or root.children is None:
            return root.agg
        combine = self._combine
        return combine(combine(self._left_finger.agg, root.agg), self._right_finger.agg)

    def __len__(self) -> int:
        root = self._root
        if not self.FINGERS or root.children is None:
            return root.size
        return self._left_finger.size + root.size + self._right_finger.size

    def oldest(self) -> tuple[Any, Any] | None:
        node = self._left_finger if self.FINGERS else self._leftmost(self._root)
        return (node.keys[0], node.values[0]) if node.keys else None

    def newest(self) -> tuple[Any, Any] | None:
        node = self._right_finger if self.FINGERS else self._rightmost(self._root)
        return (node.keys[-1], node.values[-1]) if node.keys else None

    @staticmethod
    def _leftmost(node: _Node) -> _Node:
        while node.children is not None:
            node = node.children[0]
        return node

    @staticmethod
    def _rightmost(node: _Node) -> _Node:
        while node.children is not None:
            node = node.children[-1]
        return node

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        return self._walk(self._root)

    def _walk(self, node: _Node) -> Iterator[tuple[Any, Any]]:
        if node.children is None:
            yield from zip(node.keys, node.values)
            return
        children = node.children
        for i, key in enumerate(node.keys):
            yield from self._walk(children[i])
            yield key, node.values[i]
        yield from self._walk(children[-1])

    def query_range(self, low: Any, high: Any) -> Any:
        """Fig. 10: recurse from the lowest common ancestor of both ends, using stored up
        aggregates for subtrees the range covers whole (two chains of recursion)."""
        if high < low or not len(self):
            return self._identity
        top = self._root
        if self.FINGERS:
            a, b = self._search_node(low), self._search_node(high)
            depth_a, depth_b = self._depth(a), self._depth(b)
            while depth_a > depth_b:
                a, depth_a = a.parent, depth_a - 1
            while depth_b > depth_a:
                b, depth_b = b.parent, depth_b - 1
            while a is not b:
                a, b = a.parent, b.parent
            top = a
        return self._range(top, low, high)

    def entries(self, low: Any, high: Any) -> list[tuple[Any, Any]]:
        found: list[tuple[Any, Any]] = []
        if not high < low:
            self._collect(self._root, low, high, found)
        return found

    def _collect(self, node: _Node, low: Any, high: Any, found: list[tuple[Any, Any]]) -> None:
        """Append ``node``'s entries in ``[low, high]``: only the children between the
        bounds' positions can hold any (``children[i]`` lies between ``keys[i-1]`` and ``keys[i]``)."""
        keys, values, children = node.keys, node.values, node.children
        start, stop = bisect_left(keys, low), bisect_right(keys, high)
        if children is None:
            found.extend(zip(keys[start:stop], values[start:stop]))
            return
        for i in range(start, stop + 1):
            self._collect(children[i], low, high, found)
            if i < stop:
                found.append((keys[i], values[i]))

    @staticmethod
    def _depth(node: _Node) -> int:
        depth = 0
        while node.parent is not None:
            node, depth = node.parent, depth + 1
        return depth

    def _range(self, node: _Node, low: Any, high: Any) -> Any:
        """The aggregate of ``node``'s entries in ``[low, high]``; None bounds are open
        (the neighboring keys in the parent showed the subtree lies inside)."""
        if low is None and high is None and self._has_up(node):
            return node.agg
        keys, values, children = node.keys, node.values, node.children
        start = 0 if low is None else bisect_left(keys, low)
        stop = len(keys) if high is None else bisect_right(keys, high)
        combine = self._combine
        acc = self._identity
        if children is None:
            return self.monoid.fold(acc, values[start:stop])
        # children[i] lies between keys[i-1] and keys[i]: wholly inside [low, high] strictly
        # between start and stop; the two end children straddle a bound (Fig. 10), unless
        # the bound is the key next to them (then they lie outside).
        for i in range(start, stop + 1):
            if i == start and low is not None and i < len(keys) and keys[i] == low:
                pass
            elif i == stop and high is not None and i > 0 and keys[i - 1] == high:
                pass
            else:
                acc = combine(acc, self._range(children[i], low if i == start else None,
                                               high if i == stop else None))
            if i < stop:
                acc = combine(acc, values[i])
        return acc

    def search(self, pred: Callable[[Any], bool]) -> tuple[Any, Any] | None:
        """The longest prefix with ``pred``: from the left finger up the left spine, whole
        subtrees at a time, then down into the first subtree that fails (O(log k) nodes
        for a prefix of k entries; the classic tree searches from the root)."""
        root = self._root
        if not self.FINGERS or root.children is None:
            return self._search_down(root, pred, self._identity, None)
        combine = self._combine
        has_up = self._has_up
        node = self._left_finger
        acc = self._identity
        last: Any = None  # the prefix's last key, or the subtree it ends with
        for key, value in zip(node.keys, node.values):
            candidate = combine(acc, value)
            if not pred(candidate):
                return self._found(last, acc)
            acc, last = candidate, key
        while node.parent is not None:
            node = node.parent
            children = node.children
            for i, key in enumerate(node.keys):
                candidate = combine(acc, node.values[i])
                if not pred(candidate):
                    return self._found(last, acc)
                acc, last = candidate, key
                child = children[i + 1]
                if not has_up(child):  # the root's last child: its subtree is the right finger's
                    candidate = combine(acc, self._right_finger.agg)
                    if pred(candidate):
                        return (self.newest()[0], candidate)
                    return self._search_down(child, pred, acc, last)
                candidate = combine(acc, child.agg)
                if not pred(candidate):
                    return self._search_down(child, pred, acc, last)
                acc, last = candidate, child
        return self._found(last, acc)

    def _found(self, last: Any, acc: Any) -> tuple[Any, Any] | None:
        if last is None:
            return None
        if isinstance(last, _Node):
            last = self._rightmost(last).keys[-1]
        return (last, acc)

    def _search_down(self, node: _Node, pred: Callable[[Any], bool], acc: Any, last: Any) -> tuple[Any, Any] | None:
        """Extend the prefix ``acc`` (ending at ``last``) into ``node``'s subtree, child by
        child; a child whose aggregate is not its subtree's (the right spine's last) is
        entered last, when everything before it passed."""
        combine = self._combine
        while True:
            children = node.children
            if children is None:
                for key, value in zip(node.keys, node.values):
                    candidate = combine(acc, value)
                    if not pred(candidate):
                        break
                    acc, last = candidate, key
                return self._found(last, acc)
            descend = children[-1]
            for i, key in enumerate(node.keys):
                child = children[i]
                candidate = combine(acc, child.agg)
                if not pred(candidate):
                    descend = child
                    break
                acc, last = candidate, child
                candidate = combine(acc, node.values[i])
                if not pred(candidate):
                    return self._found(last, acc)
                acc, last = candidate, key
            node = descend

    # -- checking --------------------------------------------------------------------

    def check(self) -> None:
        root = self._root
        assert root.parent is None, "the root has no parent"
        leaf_depths: set[int] = set()
        keys: list[Any] = []
        self._check_node(root, 0, leaf_depths, keys)
        assert len(leaf_depths) <= 1, f"leaves at depths {sorted(leaf_depths)}"
        assert all(a < b for a, b in zip(keys, keys[1:])), "keys strictly increasing in order"
        assert len(self) == len(keys), f"size {len(self)} != {len(keys)} entries"
        if self.FINGERS:
            assert self._left_finger is self._leftmost(root), "the left finger is the leftmost leaf"
            assert self._right_finger is self._rightmost(root), "the right finger is the rightmost leaf"
        expected = self.monoid.fold(self._identity, [v for _, v in self._walk(root)])
        assert self.query() == expected, f"query {self.query()!r} != {expected!r}"

    def _check_node(self, node: _Node, depth: int, leaf_depths: set[int], keys: list[Any]) -> None:
        m = len(node.keys)
        assert len(node.values) == m, "as many values as keys"
        assert m <= self._max_keys, f"{m} entries > {self._max_keys}"
        if node.parent is not None:
            assert m >= self._min_keys, f"{m} entries < {self._min_keys} in a non-root node"
        if node.children is None:
            leaf_depths.add(depth)
            keys += node.keys
        else:
            assert len(node.children) == m + 1, "an inner node has one child more than entries"
            for i, child in enumerate(node.children):
                assert child.parent is node, "children point back to their parent"
                self._check_node(child, depth + 1, leaf_depths, keys)
                if i < m:
                    keys.append(node.keys[i])
        if self.FINGERS:
            parent = node.parent
            left = parent is not None and (parent.parent is None or parent.left) and parent.children[0] is node
            right = parent is not None and (parent.parent is None or parent.right) and parent.children[-1] is node
            assert node.left == left and node.right == right, f"spine flags of the node at {node.keys!r}"
        agg, size = node.agg, node.size
        self._recalc(node)
        assert (node.agg, node.size) == (agg, size), f"stored aggregate of the node at {node.keys!r} is stale"


class BTree(FiBA):
    """The classic augmented B-tree (Section 3.1, the paper's baseline): up aggregates
    everywhere, every operation from the root, O(log n)."""

    name = "btree"
    uses_store = False
    FINGERS = False
