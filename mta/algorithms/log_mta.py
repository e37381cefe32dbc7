"""Log MTA (paper section 4.1): one binary tree, O(log n) insertion, O(log n)
policy enforcement and bulk eviction whatever the number of evicted elements.

The root is the lowest common ancestor of the oldest and the newest leaf, at
level ``M = bit_length(head ^ (tail - 1))``. Every node on or below the root that
holds a live leaf stores the aggregate of its live leaves: insertion refreshes
the right spine (Algorithm 1), eviction the left spine (Algorithm 2, lines 21-27).
Levels above the root are dead and rewritten when the root climbs back.

The left spine changes at every eviction, so the values of its stored nodes
are kept locally (the paper's per-level Cache holds each level's head, section
4.1.5) instead of being written through to the store.
"""

from __future__ import annotations

from typing import Any

from mta.algorithms.base import Policy
from mta.algorithms.tree import EMPTY, TreeAggregator


class LogMTA(TreeAggregator):
    name = "log_mta"

    def _reset(self) -> None:
        super()._reset()
        self._root = self.monoid.identity
        self._spine: dict[int, tuple[int, Any]] = {}  # level -> (index, value) of a stored spine node

    def checkpoint(self) -> dict[str, Any]:
        state = super().checkpoint()
        state.update(root=self._root, spine=[(n, i, v) for n, (i, v) in self._spine.items()])
        return state

    def _restore(self, state: dict[str, Any]) -> None:
        super()._restore(state)
        self._root = state["root"]
        self._spine = {n: (i, v) for n, i, v in state["spine"]}

    def _node(self, number: int, index: int) -> Any:
        if index < self._bstart[number]:
            spine = self._spine.get(number)
            if spine is not None and spine[0] == index:
                return spine[1]
        return super()._node(number, index)

    def _set_node(self, number: int, index: int, value: Any) -> None:
        """Left-spine and root nodes: buffered ones in place, stored ones locally."""
        if index < self._bstart[number]:
            self._spine[number] = (index, value)
        else:
            self._bufs[number][index - self._bstart[number]] = value

    def _restart_level(self, number: int, index: int, value: Any) -> None:
        """Make ``value`` the only node of a level whose nodes are all dead (the store's
        level is reset by the next flush, see ``_move_buffers``)."""
        while len(self._levels) <= number:
            self._add_level()
        self._bufs[number][:] = [value]
        self._bstart[number] = index
        self._caches[number] = []
        self._cstart[number] = index
        self._spine.pop(number, None)

    def insert(self, partial: Any) -> None:
        """Algorithm 1: append the leaf and refresh its ancestors up to the root."""
        h, t = self._head, self._tail
        self._leaves.append(partial)
        self._tail = t + 1
        if h == t:
            self._root = partial
        else:
            combine = self._combine
            node = self._node
            old_top = (h ^ (t - 1)).bit_length()
            top = (h ^ t).bit_length()
            # When the root climbs, the left spine between the old and the new root has
            # one live child each: its value is the old root (the paper's new root level).
            for number in range(old_top + 1, top):
                self._restart_level(number, h >> number, self._root)
            # The right spine is the last node of every level's buffer (a flush keeps it).
            bufs, bstart = self._bufs, self._bstart
            value = partial
            j = t
            for number in range(1, top + 1):
                if j & 1:
                    below = bufs[number - 1]
                    left = below[-2] if len(below) > 1 else node(number - 1, j - 1)
                    value = combine(left, value)
                j >>= 1
                if number == len(bufs):
                    self._add_level()
                buf = bufs[number]
                last = bstart[number] + len(buf) - 1
                if j == last and buf:
                    buf[-1] = value
                elif j == last + 1:
                    buf.append(value)
                else:
                    self._put(number, j, value)
            self._root = value
        if len(self._leaves) > self.buffer_size:
            self.flush(wait=False)

    def _movable(self, number: int, buf: list[Any]) -> int:
        """Keep the nodes the next insertion reads: the newest of each level (it may be
        rewritten) and, for a right child, its left sibling, so that an insertion never
        reads the store (and cannot fail half done)."""
        j = self._tail >> number  # the node the next leaf updates or appends on this level
        first = j - (j & 1)
        if number:
            first = min(first, self._bstart[number] + len(buf) - 1)
        return first - self._bstart[number]

    def _put(self, number: int, index: int, value: Any) -> None:
        if number == len(self._levels):
            self._add_level()
        tail = self._bstart[number] + len(self._bufs[number])
        if index == tail:
            self._bufs[number].append(value)
        elif index < tail:
            self._set_node(number, index, value)
        else:
            self._restart_level(number, index, value)

    def evict(self, k: int = 1) -> None:
        self._check_evict(k)
        if k:
            self._move_head(self._head + k)

    def _move_head(self, h: int) -> None:
        """Drop every leaf before ``h`` and recompute the left spine (Algorithm 2, lines 21-27).

        Every store read comes before the first change, so a StoreError changes nothing."""
        old, t = self._head, self._tail
        if h == t:
            self._head = h
            self._root = self.monoid.identity
            self._release(old)
            return
        combine = self._combine
        node = self._node
        top = (h ^ (t - 1)).bit_length()
        siblings = [(n, (h >> n) + 1) for n in range(top) if not (h >> n) & 1 and ((h >> n) + 1) << n < t]
        self._gather([(0, h), *siblings])
        # Every read first (the right siblings are never the left-spine nodes set below).
        value = node(0, h)
        right = iter([node(n, i) for n, i in siblings]).__next__
        for number in range(1, top + 1):
            child = h >> (number - 1)
            if not child & 1 and (child + 1) << (number - 1) < t:
                value = combine(value, right())
            self._set_node(number, h >> number, value)
        self._head = h
        self._root = value
        self._release(old)

    def enforce(self, wsp: Policy) -> int:
        # As the base's, without a call for the total: this is Window.insert's hot path.
        k = self.condemned(wsp, self._root)
        if k:
            self._move_head(self._head + k)
        return k

    def condemned(self, wsp: Policy, total: Any) -> int:
        """Algorithm 2: a root-to-leaf search for the end of the prefix to evict."""
        h, t = self._head, self._tail
        if h == t:
            return 0
        if wsp(total, self._root):
            return t - h
        combine = self._combine
        node = self._node
        acc = EMPTY
        number = top = (h ^ (t - 1)).bit_length()
        index = h >> number
        remote = self.store.durable
        while number > 0:
            if remote and not (top - number) % self.GATHER_DEPTH:
                self._gather_below(number, index)
            number -= 1
            left = index << 1
            index = left + 1
            if left >= h >> number:  # the left child still holds live leaves
                value = node(number, left)
                candidate = value if acc is EMPTY else combine(acc, value)
                if wsp(total, candidate):
                    acc = candidate
                else:
                    index = left
            if index << number >= t:  # only reachable if the policy is not prefix-monotone
                break
        end = index if index << number < t else t
        return max(end, h) - h

    def query(self) -> Any:
        return self._root
