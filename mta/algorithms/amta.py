"""Amortized MTA (paper section 4.2): amortized O(1) insert and single eviction,
O(log n) worst case and O(log n) bulk eviction, for any monoid.

Structure (paper Fig. 4): a forest of perfect binary trees over the leaves.
With absolute leaf indices, node ``(l, j)`` exists once all its leaves were
inserted, so the trees are the blocks of the binary representation of
``tail``: the *left tree* is the block that contains ``head``, at root level
``L = bit_length(head ^ tail) - 1``, ending at ``B = ((head >> L) + 1) << L``.

- ``R0`` = aggregate of the live part of the left tree ``[head, B)``;
  ``R1`` = aggregate of the other trees ``[B, tail)``; the result is R0 + R1.
- The stack holds suffix aggregates ``agg[x, B)`` for increasing ``x``, top =
  the next ``R0`` = ``agg[head + 1, B)``: one per level ``l`` where
  ``head >> l`` is even (the left tree without the head node of each level,
  paper section 4.2.1).

Leaf chunks: levels below ``CHUNK_BITS`` are not stored. Their nodes are folded
from the (at most 32) leaves when needed, a chunk's node is made in one fold
when its last leaf arrives, and the stack gets the suffixes of a whole chunk
when the head enters it. This keeps the amortized O(1) and worst-case
O(log n) bounds (a chunk is a constant) while most insertions and evictions
touch nothing but a list, which is what makes pure Python fast.

A node is only ever read when it lies wholly inside ``[head, tail)``; nodes that
straddle ``head`` may hold evicted leaves (the paper's inconsistent values) and
are never used for a result.
"""

from __future__ import annotations

from typing import Any, Sequence

from kvs import StoreError
from mta.algorithms.base import Aggregator, Policy
from mta.algorithms.tree import DROP_MASK, EMPTY, TreeAggregator


class AmortizedMTA(TreeAggregator):
    name = "amta"
    CHUNK_BITS = 5

    def _reset(self) -> None:
        super()._reset()
        identity = self.monoid.identity
        self._r0 = identity
        self._r1 = identity
        self._root_level = 0
        self._merge_mask = 0  # tail & mask == 0: the window was empty or trees merge
        self._quiet_mask = 0  # tail & mask != 0: no chunk completes and no tree merges
        # Section 5.2 "compute once": a merge of trees sets the stack to None (stale);
        # it is rebuilt once, by the next eviction that needs it.
        self._stack: list[Any] | None = []

    # -- insertion (Algorithm 3) -------------------------------------------------

    def insert(self, partial: Any) -> None:
        t = self._tail
        self._leaves.append(partial)
        self._tail = t1 = t + 1
        if t1 & self._quiet_mask:  # the common case: R1 takes the leaf (Algorithm 3, line 3)
            self._r1 = self._combine(self._r1, partial)
            return
        if not t1 & self._chunk_mask:
            self._complete_chunk(t1)
        if t1 & self._merge_mask:
            self._r1 = self._combine(self._r1, partial)
        elif self._head == t:  # the first leaf of an empty window: R0 alone
            self._r0 = partial
            self._r1 = self.monoid.identity
            self._set_root_level((t ^ t1).bit_length() - 1)
            self._stack = []
        else:  # the new leaf completes a tree that merges with the left one: all of it joins R0
            combine = self._combine
            right = combine(self._r1, partial)  # agg[B, t1), the old left tree's right sibling
            self._r0 = combine(self._r0, right)
            self._r1 = self.monoid.identity
            self._set_root_level((self._head ^ t1).bit_length() - 1)
            # The new stack is the old one's entries extended by `right`, then the suffixes
            # of `right`'s leaves (levels below CHUNK_BITS keep leaf suffixes). It is left
            # stale (None, section 5.2) but in two cases that cost nothing and that tiny
            # windows meet all the time. A stack that is empty, not stale, has the head as
            # its tree's last leaf, so R1 holds the rest of the window.
            head = self._head
            if head == t - 1:  # a window of one leaf: `right` is leaf t
                self._stack = [right]
            elif head == t - 2 and self._stack == []:  # R1 is leaf t - 1
                self._stack = [partial, right]
            else:
                self._stack = None
        if len(self._leaves) > self.buffer_size:  # only after a chunk completes
            self.flush(wait=False)

    def insert_many(self, partials: Sequence[Any]) -> None:
        """As :meth:`insert` one by one, but each run of quiet insertions (up to the
        next chunk boundary or tree merge) is one list extend and one fold into R1."""
        insert = self.insert
        i, n = 0, len(partials)
        while i < n:
            t = self._tail
            run = min(n - i, (t | self._quiet_mask) - t)  # t + 1 .. t + run are all quiet
            if run <= 1:
                insert(partials[i])
                i += 1
                continue
            chunk = partials[i:i + run]
            self._leaves.extend(chunk)
            self._tail = t + run
            self._r1 = self._fold(self._r1, chunk)
            i += run

    def checkpoint(self) -> dict[str, Any]:
        state = super().checkpoint()
        state.update(r0=self._r0, r1=self._r1, root_level=self._root_level)
        return state

    def _restore(self, state: dict[str, Any]) -> None:
        super()._restore(state)
        self._r0 = state["r0"]
        self._r1 = state["r1"]
        if self._head < self._tail:
            self._set_root_level(state["root_level"])
            self._stack = None  # rebuilt by the next eviction that needs it
        else:  # as _move_head leaves an emptied window: the next leaf starts afresh
            self._root_level = self._merge_mask = self._quiet_mask = 0
            self._stack = []

    def snapshot(self) -> Any:
        # Insertions only append to the write buffers (and nothing else changes them while
        # held): their lengths are enough, where Log MTA copies them.
        state = Aggregator.snapshot(self)
        state["_bufs"] = [(buf, len(buf)) for buf in self._bufs]  # _leaves is _bufs[0]
        return state

    def restore(self, snapshot: Any) -> None:
        bufs = snapshot["_bufs"]
        for buf, n in bufs:
            del buf[n:]
        super().restore({**snapshot, "_bufs": [buf for buf, _ in bufs]})

    def _complete_chunk(self, t1: int) -> None:
        """Store the node of the chunk that ends at ``t1`` and every ancestor it completes.

        A level's buffer always ends with its newest node (a flush keeps it), so a
        new right child's left sibling is the buffer's second-to-last.
        """
        combine = self._combine
        bufs = self._bufs
        number = self.CHUNK_BITS
        chunk = self._leaves[-(1 << number):]
        value = self._fold(chunk[0], chunk[1:])
        bufs[number].append(value)
        j = (t1 >> number) - 1
        while j & 1:
            value = combine(bufs[number][-2], value)
            j >>= 1
            number += 1
            if number == len(bufs):
                self._add_level()
            bufs[number].append(value)

    def _set_root_level(self, level: int) -> None:
        self._root_level = level
        self._merge_mask = mask = (2 << level) - 1
        self._quiet_mask = mask & self._chunk_mask  # both masks are 2^k - 1

    # -- eviction (Algorithms 6 and 7, bulk in section 4.2.4) -------------------

    def evict(self, k: int = 1) -> None:
        if k == 1 and type(k) is int:
            stack = self._stack
            if stack:
                h1 = self._head + 1
                if h1 & self._chunk_mask:
                    # Algorithm 6: the stack top is the left tree without its head leaf.
                    self._r0 = stack.pop()
                    self._head = h1
                else:
                    self._step_into_chunk(h1)
                return
            if self._tail > self._head:
                # A stale or empty stack: rebuild it once for the new head, not for the old one.
                self._move_head(self._head + 1)
                return
        self._check_evict(k)
        if k >= self._bulk_threshold() or (self.store.durable and not self._local_steps(k)):
            self._move_head(self._head + k)
            return
        for _ in range(k):
            self.evict(1)

    def _local_steps(self, k: int) -> bool:
        """Whether ``k`` single evictions would read nothing from the store (they do when the
        head enters a chunk or the stack runs out): a failed read in the middle of them
        would leave some done, so a durable store then takes the one bulk eviction."""
        h = self._head
        return (h + k) >> self.CHUNK_BITS == h >> self.CHUNK_BITS and len(self._stack or ()) >= k

    def _step_into_chunk(self, h1: int) -> None:
        """Algorithm 6 for a head that enters a new chunk; a StoreError changes nothing."""
        stack = self._stack
        r0 = self._r0
        self._r0 = top = stack.pop()
        self._head = h1
        size = len(stack)
        try:
            self._enter_chunk(h1)
        except StoreError:
            del stack[size:]
            stack.append(top)
            self._r0 = r0
            self._head = h1 - 1
            raise

    def _enter_chunk(self, h1: int) -> None:
        """Algorithm 7 once the head enters a new chunk: push the right siblings of the
        levels that now start a new pair, highest first, then the chunk's leaf suffixes."""
        stack = self._stack
        combine = self._combine
        bits = self.CHUNK_BITS
        c = (h1 >> bits) - 1  # the chunk just left
        for number in range(bits + (c ^ (c + 1)).bit_length() - 2, bits - 1, -1):
            value = self._node(number, (h1 >> number) + 1)
            stack.append(combine(value, stack[-1]) if stack else value)
        self._push_suffixes(h1)
        self._release(h1 - 1)

    def _push_suffixes(self, h: int) -> Any:
        """Push agg[i, B) for the leaves i after ``h`` in its chunk, last leaf first; return leaf ``h``."""
        stack = self._stack
        combine = self._combine
        bits = self.CHUNK_BITS
        end = min(((h >> bits) + 1) << bits, ((h >> self._root_level) + 1) << self._root_level)
        leaves = self._leaf_range(h, end)
        top = stack[-1] if stack else EMPTY
        for value in leaves[:0:-1]:  # newest first, leaf h excluded
            top = value if top is EMPTY else combine(value, top)
            stack.append(top)
        return leaves[0]

    def _rebuild(self) -> None:
        """Recompute the stack and R0 for the left tree (Algorithm 4), O(log n)."""
        h = self._head
        combine = self._combine
        stack: list[Any] = []
        self._stack = stack
        siblings = [(n, (h >> n) + 1) for n in range(self._root_level - 1, self.CHUNK_BITS - 1, -1)
                    if not (h >> n) & 1]
        self._gather([*siblings, (0, h)])
        for number, index in siblings:
            value = self._node(number, index)
            stack.append(combine(value, stack[-1]) if stack else value)
        leaf = self._push_suffixes(h)
        self._r0 = combine(leaf, stack[-1]) if stack else leaf

    def _right_result(self) -> Any:
        """R1 = the roots after the left tree, left to right (Algorithm 5), O(log n)."""
        t = self._tail
        combine = self._combine
        r1 = self.monoid.identity
        for number in range(self._root_level - 1, -1, -1):
            if (t >> number) & 1:
                r1 = combine(r1, self._node(number, (t >> number) - 1))
        return r1

    def _move_head(self, h: int) -> None:
        """Bulk eviction: jump ``head`` to ``h`` in O(log n) whatever the distance."""
        t = self._tail
        old = self._head
        self._head = h
        start = h - self._bstart[0]
        if start >= 0 and 0 < t - h <= self._chunk_mask + 1:
            # A window of at most one chunk, all in the leaf buffer: the left tree's
            # stack is all leaf suffixes (its levels from CHUNK_BITS up have the head's
            # bit set), so stack, R0 and R1 come straight from the leaves. Tiny windows
            # come here often, hence a loop of its own: through _push_suffixes a window
            # of one leaf cost 35% more instructions.
            level = (h ^ t).bit_length() - 1
            self._set_root_level(level)
            middle = start + (((h >> level) + 1) << level) - h  # B, where R1 starts
            leaves = self._leaves
            stack: list[Any] = []
            self._stack = stack
            if middle - start == 1:  # the left tree is the head leaf: the stack stays empty
                self._r0 = leaves[start]
            else:
                combine = self._combine
                top = leaves[middle - 1]
                stack.append(top)
                for i in range(middle - 2, start, -1):
                    top = combine(leaves[i], top)
                    stack.append(top)
                self._r0 = combine(leaves[start], top)
            stop = start + t - h
            self._r1 = self._fold(leaves[middle], leaves[middle + 1:stop]) if middle < stop else self.monoid.identity
        elif h == t:
            identity = self.monoid.identity
            self._r0 = self._r1 = identity
            self._stack = []
            self._root_level = self._merge_mask = self._quiet_mask = 0
        else:
            boundary = ((old >> self._root_level) + 1) << self._root_level  # where R1 starts
            level = (h ^ t).bit_length() - 1
            same_tree = level == self._root_level and h >> level == old >> level
            if h == boundary and ((h >> level) + 1) << level == t:
                # The head moved onto the last tree, which R1 holds whole: the stack can wait.
                self._set_root_level(level)
                self._r0, self._r1 = self._r1, self.monoid.identity
                self._stack = None
            else:
                self._move_into(old, level, same_tree)
        if (h ^ old) > DROP_MASK:  # _release's own test, without its call: -2.7% per step at n = 1
            self._release(old)

    def _move_into(self, old: int, level: int, same_tree: bool) -> None:
        """The part of ``_move_head`` that reads the store: a StoreError puts back the
        head at ``old`` and everything else it changed."""
        saved = (self._r0, self._r1, self._stack, self._root_level, self._merge_mask, self._quiet_mask)
        self._set_root_level(level)
        try:
            self._rebuild()
            if not same_tree:
                self._r1 = self._right_result()
        except StoreError:
            self._r0, self._r1, self._stack, self._root_level, self._merge_mask, self._quiet_mask = saved
            self._head = old
            raise

    def _bulk_threshold(self) -> int:
        """Evictions beyond about log2 n are done in bulk (section 4.2.4)."""
        return max(2, (self._tail - self._head).bit_length())

    # -- policy enforcement -------------------------------------------------------

    def enforce(self, wsp: Policy) -> int:
        # As the base's, without a call for the total: this is Window.insert's hot path.
        k = self.condemned(wsp, self._combine(self._r0, self._r1))
        if k:
            self.evict(k)
        return k

    def condemned(self, wsp: Policy, total: Any) -> int:
        h, t = self._head, self._tail
        if h == t:
            return 0
        combine = self._combine
        node = self._node
        # Check the oldest leaves one by one first, then search the tree.
        limit = min(t, h + self._bulk_threshold())
        acc = EMPTY
        pos = h
        while pos < limit:
            leaf = node(0, pos)
            candidate = leaf if acc is EMPTY else combine(acc, leaf)
            if not wsp(total, candidate):
                break
            acc = candidate
            pos += 1
        else:
            if pos < t:
                pos = self._search(wsp, total, pos, acc)
        return pos - h

    def condemned_in_order(self, wsp: Policy, total: Any) -> int:
        """As :meth:`condemned`, for elements ``(1, timestamp, partial)`` in timestamp order
        (``mta.Window``'s timed elements) and a policy that reads only the count and the
        newest timestamp of its arguments (``mta.Window``'s own policies).

        Then a prefix ``[head, end)`` is ``(end - head, timestamp of leaf end - 1, ...)``
        whatever its partial, and the last leaf's timestamp is that of any stored node
        ending there: the same walk over the same nodes as :meth:`condemned` finds the
        same prefix without combining anything (the policy gets ``None`` for the partial)."""
        h, t = self._head, self._tail
        if h == t:
            return 0
        node = self._node
        limit = min(t, h + self._bulk_threshold())
        pos = h
        while pos < limit:
            if not wsp(total, (pos + 1 - h, node(0, pos)[1], None)):
                return pos - h
            pos += 1
        if pos < t:
            pos = self._search_in_order(wsp, total, pos)
        return pos - h

    def _stamp(self, number: int, index: int) -> Any:
        """The newest timestamp of node ``(number, index)``: its own (a stored level) or its
        last leaf's (a level folded from leaves, which is not stored)."""
        if 0 < number < self.CHUNK_BITS:
            return self._node(0, ((index + 1) << number) - 1)[1]
        return self._node(number, index)[1]

    def _search_in_order(self, wsp: Policy, total: Any, pos: int) -> int:
        """:meth:`_search` for :meth:`condemned_in_order`: a prefix ending at node ``(l, j)``
        is ``((j + 1) 2^l - head, its newest timestamp, None)``."""
        h, t = self._head, self._tail
        stamp = self._stamp
        tiles = self._tiles(pos)
        remote = self.store.durable
        if remote:
            self._gather(tiles)
        for number, index in tiles:
            if wsp(total, (((index + 1) << number) - h, stamp(number, index), None)):
                continue
            top = number
            while number > 0:  # the prefix ends inside this node: descend
                if remote and not (top - number) % self.GATHER_DEPTH:
                    self._gather_below(number, index)
                number -= 1
                index <<= 1
                if wsp(total, (((index + 1) << number) - h, stamp(number, index), None)):
                    index += 1
            return index
        return t

    def _tiles(self, pos: int) -> list[tuple[int, int]]:
        """The nodes ``(level, index)`` that tile ``[pos, tail)`` left to right: the leaf
        ``pos``, the right siblings of its ancestors inside its tree, then the roots of the
        following trees."""
        t = self._tail
        top = (pos ^ t).bit_length() - 1
        tiles = [(0, pos)]
        tiles += [(n, (pos >> n) + 1) for n in range(top) if not (pos >> n) & 1]
        tiles += [(n, (t >> n) - 1) for n in range(top - 1, -1, -1) if (t >> n) & 1]
        return tiles

    def _search(self, wsp: Policy, total: Any, pos: int, acc: Any) -> int:
        """End of the longest prefix that must go, starting at ``pos`` with ``acc`` = agg[head, pos).

        Walks the nodes that tile ``[pos, tail)`` (:meth:`_tiles`) and descends into the
        first one the policy keeps (Algorithm 2).
        """
        combine = self._combine
        node = self._node
        t = self._tail
        tiles = self._tiles(pos)
        remote = self.store.durable
        if remote:
            self._gather(tiles)
        for number, index in tiles:
            value = node(number, index)
            candidate = value if acc is EMPTY else combine(acc, value)
            if wsp(total, candidate):
                acc = candidate
                continue
            top = number
            while number > 0:  # the prefix ends inside this node: descend
                if remote and not (top - number) % self.GATHER_DEPTH:
                    self._gather_below(number, index)
                number -= 1
                index <<= 1
                value = node(number, index)
                candidate = value if acc is EMPTY else combine(acc, value)
                if wsp(total, candidate):
                    acc = candidate
                    index += 1
            return index
        return t

    def query(self) -> Any:
        return self._combine(self._r0, self._r1)
