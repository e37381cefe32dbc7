"""FiBA with its interior nodes in a ``kvs`` level store: the spines local, the rest paged.

FiBA's work stays near its fingers (paper section 3): an in-order insert touches the
right spine, an eviction the left one, an out-of-order change at distance d the
O(log d) nodes between a spine and the change. So only the root and both spines are
kept local (they go in every checkpoint, as the MTAs' write buffers do), with the
nodes changed since the last flush and a bounded cache of nodes read back; every
other node lives in the store and is a *stub* in memory (its position, aggregate,
entry count and the smallest position stored below it) until something reads it.

Storage is copy-on-write, on level 0 of the store: a flush appends every changed
node that is not local, children before parents, each record naming its children by
position with their aggregates (so a parent's aggregate is repaired without reading
them). A changed node's ancestors up to a spine are changed too (their aggregates
are), so a flush rewrites whole paths and no stored record is ever modified. A node
whose record was replaced, or that was evicted, is garbage below ``minpos``: each
node carries the smallest position in its stored subtree, so after a flush the
level's head moves to the smallest position any local node still reaches, and the
backend deletes the blocks below in the background. Bulk eviction (which never visits
the subtrees it cuts off) thereby costs no reads to reclaim them.

Nothing reaches the store between flushes, and an operation that must read a node
reads every node it may need before it changes anything (``_prepare_*``): a read
that fails (the store is down) leaves the tree as it was.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any, Iterator

from kvs import LevelStore, StoreError
from mta.algorithms.fiba import FiBA, _Node
from mta.monoid import Monoid

#: Updates between automatic flushes (the MTAs' write buffer, paper section 5.1).
BUFFER_SIZE = 512
#: Nodes read back from the store kept in memory at most (beyond the spines and the
#: nodes changed since the last flush).
CACHE_SIZE = 256
#: Store blocks kept after a read (a block store's ``keep_blocks``): node reads alternate
#: between a few blocks (leaves in order, their parents rewritten since); measured at
#: 2^18, blocks of 512: 131 fetches per 50,000 FIFO rounds keeping none, 16 keeping 4.
KEEP_BLOCKS = 4

_CHILDREN = _Node.children  # the slot itself: reading through it never loads a stub


def _children(node: _Node) -> list[_Node] | None | bool:
    """``node.children`` if ``node`` is loaded, else False (without loading it)."""
    try:
        return _CHILDREN.__get__(node)
    except AttributeError:
        return False


def _loaded(node: _Node) -> bool:
    return _children(node) is not False


class StoredFiBA(FiBA):
    """``FiBA(monoid, store=...)``: the finger B-tree with its interior in ``store``."""

    _SPINE, _STUB = 0, 1  # how a checkpoint marks a child: a local record, or a stored one

    def __init__(self, monoid: Monoid, *, store: LevelStore, state: dict[str, Any] | None = None,
                 min_arity: int = 16, buffer_size: int = BUFFER_SIZE, cache_size: int = CACHE_SIZE) -> None:
        self.store = store
        self.buffer_size = buffer_size
        self.cache_size = cache_size
        #: Extra entries for every checkpoint (``mta.Window`` adds its own).
        self.annotate = None
        self._flush_due = False
        self._dirty: dict[int, _Node] = {}     # changed since the last flush, by id()
        self._resident: dict[int, _Node] = {}  # clean, loaded and not local, oldest first
        self._updates = 0                      # since the last flush
        super().__init__(monoid, min_arity=min_arity, buffer_size=buffer_size, cache_size=cache_size)
        if state is None:
            store.clear()
        self._level = self._open_level()
        if state is not None:
            self._restore(state)

    # -- the node store ----------------------------------------------------------------

    def _open_level(self) -> Any:
        level = self.store.level(0)
        if hasattr(level, "keep_blocks"):
            level.keep_blocks = KEEP_BLOCKS
        return level

    def _new(self, keys: list[Any], values: list[Any], children: list[_Node] | None) -> _Node:
        return _Node(keys, values, children, None, self._identity, self)

    def _recalc(self, node: _Node) -> None:
        FiBA._recalc(self, node)
        self._dirty[id(node)] = node

    def _touched(self, node: _Node) -> None:
        self._dirty[id(node)] = node

    def load(self, node: _Node) -> None:
        """Fill in a stub from its stored record (``_Node.__getattr__`` calls this)."""
        keys, values, children = self._level.read(node.pos, node.pos + 1)[0]
        node.keys = list(keys)
        node.values = list(values)
        node.children = None if children is None else [self._stub(node, *child) for child in children]
        self._resident[id(node)] = node

    def _stub(self, parent: _Node | None, pos: int, agg: Any, size: int, minpos: int) -> _Node:
        stub = _Node.__new__(_Node)
        stub.parent, stub.agg, stub.size, stub.pos, stub.minpos = parent, agg, size, pos, minpos
        stub.left = stub.right = False
        stub.suffix = None
        stub.pages = self
        return stub

    def _local(self, node: _Node) -> bool:
        """Whether ``node`` is kept in the checkpoint rather than stored: the root and the spines."""
        return node.parent is None or node.left or node.right

    def _live(self, node: _Node) -> bool:
        """Whether ``node`` is still in the tree (evicted and merged nodes keep their parent)."""
        while node.parent is not None:
            parent = node.parent
            siblings = _children(parent)
            if not siblings or node not in siblings:  # (nodes compare by identity)
                return False  # a live loaded node has a loaded parent that lists it
            node = parent
        return node is self._root

    def _prepare_evict(self, leaf: _Node) -> None:
        # An eviction from a leaf at its minimum merges or borrows with a sibling, and may
        # do so again a level up: read those siblings first.
        node = leaf
        while node.parent is not None and len(node.keys) <= self._min_keys:
            parent = node.parent
            children = parent.children
            index = children.index(node)
            children[index - 1 if index == len(children) - 1 else index + 1].keys
            node = parent

    def _prepare_bulk_evict(self, path: list[tuple[_Node, _Node | None, _Node | None]], key: Any) -> None:
        for _, neighbor, _ in path:
            if neighbor is not None:
                neighbor.keys
        node = path[-1][0]
        if node.children is not None:  # the bound is in an inner node: the new left spine runs below it
            self._leftmost(node.children[bisect_right(node.keys, key)])
        start = path[0][0]
        if start.parent is not None:
            self._prepare_evict(start.parent)

    # -- operations: after each, the write buffer and the cache ---------------------------

    def insert(self, key: Any, partial: Any) -> bool:
        new = FiBA.insert(self, key, partial)
        self._updated()
        return new

    # Evictions do not count towards the write buffer, as in the MTAs: a caller's unit of
    # work (``mta.Window.insert_checked``, evictions, then its note and a flush) commits
    # only when inserted updates fill a buffer outside a hold, or at its own flush.

    def evict(self, key: Any) -> bool:
        found = FiBA.evict(self, key)
        self._trim()
        return found

    def evict_upto(self, key: Any) -> int:
        count = FiBA.evict_upto(self, key)
        self._trim()
        return count

    def query_range(self, low: Any, high: Any) -> Any:
        result = FiBA.query_range(self, low, high)
        self._trim()
        return result

    def entries(self, low: Any, high: Any) -> list[tuple[Any, Any]]:
        result = FiBA.entries(self, low, high)
        self._trim()
        return result

    def search(self, pred: Any) -> tuple[Any, Any] | None:
        result = FiBA.search(self, pred)
        self._trim()
        return result

    def _updated(self) -> None:
        self._updates += 1
        if self._updates >= self.buffer_size:
            self.flush(wait=False)
        self._trim()

    def _trim(self) -> None:
        """Unload the oldest clean cached nodes beyond ``cache_size`` (between operations
        only: an operation may hold any node it reached)."""
        resident = self._resident
        if len(resident) <= self.cache_size:
            return
        dirty = self._dirty
        for key, node in list(resident.items()):
            if len(resident) <= self.cache_size // 2:
                break
            if key not in resident or key in dirty:
                continue  # written first
            if not self._live(node):  # (a node can leave the tree while on a spine)
                del resident[key]
                continue
            if self._local(node):
                continue  # checkpointed, not stored: stays loaded
            self._unload(node)

    def _unload(self, node: _Node) -> None:
        """Make a clean node (and so its clean loaded descendants) a stub again."""
        children = node.children
        if children is not None:
            for child in children:
                if _loaded(child):
                    self._unload(child)
        del node.keys, node.values, node.children
        self._resident.pop(id(node), None)

    # -- durability ----------------------------------------------------------------------

    def flush(self, wait: bool = True) -> None:
        """Append the changed stored nodes to the store, move its head past garbage and,
        for a durable store, commit with a checkpoint (as the MTAs' ``flush``)."""
        if self.hold and not wait:
            self._flush_due = True
            return
        self._write()
        if self.store.durable:
            self.store.commit(self.checkpoint(), wait=wait)

    def _write(self) -> None:
        written = [node for node in self._dirty.values() if not self._local(node) and self._live(node)]
        written.sort(key=self._depth, reverse=True)  # children before parents
        level = self._level
        pos = level.tail
        records = []
        for node in written:
            children = node.children
            minpos = pos
            if children is None:
                kids = None
            else:
                kids = tuple((c.pos, c.agg, c.size, c.minpos) for c in children)
                minpos = min(minpos, *(c.minpos for c in children))
            records.append((tuple(node.keys), tuple(node.values), kids))
            node.pos, node.minpos = pos, minpos
            pos += 1
        if records:
            level.extend(records)
        self._dirty.clear()
        self._updates = 0
        for node in written:
            self._resident[id(node)] = node
        level.drop_until(self._lowest())
        self._trim()  # the written nodes joined the cache

    def _lowest(self) -> int:
        """The smallest position a local node reaches: every record below it is garbage."""
        lowest = self._level.tail
        stack = [self._root]
        while stack:
            node = stack.pop()
            if node.children is None:
                continue
            for child in node.children:
                if self._local(child):
                    stack.append(child)
                elif child.minpos < lowest:
                    lowest = child.minpos
        return lowest

    def checkpoint(self) -> dict[str, Any]:
        """The local part (root and spines, each stored child by position and aggregate)."""
        return {"algorithm": self.name, "min_arity": self.min_arity, "root": self._record(self._root),
                "annotations": self.annotate() if self.annotate is not None else {}}

    def _record(self, node: _Node) -> tuple:
        children = node.children
        if children is not None:
            children = tuple((self._SPINE, self._record(c)) if self._local(c) else
                             (self._STUB, c.pos, c.agg, c.size, c.minpos) for c in children)
        # the aggregate as it is, not recomputed on reopening: its grouping depends on the
        # history (appends fold left, the left finger's suffixes fold right), which floats see
        return (tuple(node.keys), tuple(node.values), children, node.agg, node.size)

    def _restore(self, state: dict[str, Any]) -> None:
        if state.get("algorithm") != self.name:
            raise StoreError(f"checkpoint is of algorithm {state.get('algorithm')!r}, not {self.name!r}")
        if state.get("min_arity") != self.min_arity:
            raise StoreError(f"the stored tree has min_arity {state.get('min_arity')}, not {self.min_arity}")
        self._root = self._rebuild(state["root"], None, False, False)
        self._left_finger = self._leftmost(self._root)
        self._right_finger = self._rightmost(self._root)
        if len(state["root"]) == 3:  # a checkpoint without the local aggregates (before 2026-11-26)
            self._repair(self._root, True, True)  # the root, then down both spines
        self._dirty.clear()

    def _rebuild(self, record: tuple, parent: _Node | None, left: bool, right: bool) -> _Node:
        keys, values, children = record[:3]
        node = self._new(list(keys), list(values), None)
        if len(record) > 3:
            node.agg, node.size = record[3], record[4]  # the left finger's suffixes: rebuilt when used
        node.parent, node.left, node.right = parent, left, right
        if children is not None:
            top = parent is None
            last = len(children) - 1
            node.children = [
                self._rebuild(child[1], node, i == 0 and (top or left), i == last and (top or right))
                if child[0] == self._SPINE else self._stub(node, *child[1:])
                for i, child in enumerate(children)]
        return node

    def begin_hold(self) -> None:
        self.hold = True

    def end_hold(self) -> bool:
        """Leave :attr:`hold`; return whether a flush came due meanwhile (the caller
        sends it once the batch is whole)."""
        self.hold = False
        due, self._flush_due = self._flush_due, False
        return due

    def snapshot(self) -> Any:
        """The state to :meth:`restore` while :attr:`hold`: records of the nodes that are
        not in the store as they are (the root, the spines, and the nodes changed since the
        last flush), every other child by its stored position. O(spines + changes): the
        cache is not copied (a restored tree starts with it cold) and nothing is read.
        (Not FiBA's undo journal: undoing may need reads, which may fail.)"""
        return self._save(self._root), self._updates, self._flush_due

    def _save(self, node: _Node) -> tuple:
        children = node.children
        if children is not None:
            children = tuple(self._save(c) if _loaded(c) and (self._local(c) or id(c) in self._dirty) else
                             (c.pos, c.agg, c.size, c.minpos) for c in children)
        return (list(node.keys), list(node.values), children, node.agg, node.size,
                getattr(node, "pos", None), getattr(node, "minpos", None), id(node) in self._dirty)

    def restore(self, snapshot: Any) -> None:
        record, self._updates, self._flush_due = snapshot
        self._dirty = {}
        self._resident = {}
        self._root = self._revive(record, None, False, False)
        self._left_finger = self._leftmost(self._root)
        self._right_finger = self._rightmost(self._root)

    def _revive(self, record: tuple, parent: _Node | None, left: bool, right: bool) -> _Node:
        """A node of :meth:`_save`'s record, aggregates as they were (no recomputation)."""
        keys, values, children, agg, size, pos, minpos, dirty = record
        node = self._new(keys, values, None)
        node.parent, node.left, node.right, node.agg, node.size = parent, left, right, agg, size
        if pos is not None:
            node.pos, node.minpos = pos, minpos
        if dirty:
            self._dirty[id(node)] = node
        if children is not None:
            top = parent is None
            last = len(children) - 1
            node.children = [
                self._revive(child, node, i == 0 and (top or left), i == last and (top or right))
                if len(child) == 8 else self._stub(node, *child)  # a record of _save, or (pos, agg, size, minpos)
                for i, child in enumerate(children)]
        return node

    @property
    def commit_error(self) -> Exception | None:
        """Why the store's last commit failed (None once one succeeds)."""
        return getattr(self.store, "error", None)

    def clear(self) -> None:
        self.store.clear()
        self._level = self._open_level()
        self._dirty.clear()
        self._resident.clear()
        self._reset()

    # -- reading everything without keeping it --------------------------------------------

    def _walk(self, node: _Node) -> Iterator[tuple[Any, Any]]:
        if not _loaded(node):
            yield from self._walk_stored(node.pos)
            return
        yield from FiBA._walk(self, node)

    def _walk_stored(self, pos: int) -> Iterator[tuple[Any, Any]]:
        keys, values, children = self._level.read(pos, pos + 1)[0]
        if children is None:
            yield from zip(keys, values)
            return
        for i, key in enumerate(keys):
            yield from self._walk_stored(children[i][0])
            yield key, values[i]
        yield from self._walk_stored(children[-1][0])

    def check(self) -> None:
        FiBA.check(self)
        assert not any(_loaded(n) is False for n in (self._root, self._left_finger, self._right_finger)), \
            "the root and the fingers are loaded"
        self._trim()
