"""``TypedRecordFiBA``: a typed FiBA for a :class:`~mta.monoid.Record` of the monoids
:class:`~mta.algorithms.typed_fiba.TypedFiBA` serves (issue 20), for the out-of-order
window (:class:`~mta.typed_ordered.TypedTimeOrdered`).

FiBA's shape (nodes, spine flags, fingers, which suffix folds are fresh) depends on the
sequence of keys inserted and evicted alone, never on the values. So a Record tree is K
TypedFiBA trees, one per field (each of its own op and kind), given the same keys in the
same order: they keep one shape, and each field's aggregates are those the object FiBA
over the Record computes in that field, floats bit for bit. An insertion is checked
against every field's tree before any change (:class:`~mta.algorithms.typed.Untyped`
otherwise, nothing changed); :meth:`TypedRecordFiBA.dump` joins the trees node for node
into the Record tree's nodes (for the window's demotion and pickling).
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence

try:
    import cython
except ModuleNotFoundError:  # Cython is needed to build, not to run
    from mta import _cython_shim as cython

from mta.algorithms.fiba import FiBA
from mta.algorithms.typed import Untyped
from mta.algorithms.typed_fiba import TypedFiBA, _object_node, _object_fiba
from mta.algorithms.typed_record import serves
from mta.monoid import Monoid, Record

__all__ = ["TypedRecordFiBA"]

COMPILED: bool = cython.compiled


class TypedRecordFiBA:
    """TypedFiBA's interface over a Record that ``serves(monoid)``: one TypedFiBA
    per field, in lockstep (``pairs``: keys are pairs, as TypedFiBA's)."""

    name = TypedFiBA.name
    uses_store = False

    def __init__(self, monoid: Record, *, min_arity: int = 16, pairs: bool = False) -> None:
        if not serves(monoid):
            raise TypeError(f"TypedRecordFiBA serves a Record of TypedFiBA's monoids, not {monoid!r}")
        self.monoid = monoid
        #: The fields' trees, in field order; the first one answers for the shape.
        self.trees = [TypedFiBA(m, min_arity=min_arity, pairs=pairs) for m in monoid.fields.values()]
        self._width = len(self.trees)

    @property
    def min_arity(self) -> int:
        return self.trees[0].min_arity

    @property
    def hold(self) -> bool:
        return self.trees[0].hold

    @hold.setter
    def hold(self, value: bool) -> None:
        for tree in self.trees:
            tree.hold = value

    # -- updates --------------------------------------------------------------------------

    def _shaped(self, partial: Any) -> None:
        if type(partial) is not tuple or len(partial) != self._width:
            raise Untyped(f"not a partial of this Record: {partial!r}")

    def insert(self, key: Any, partial: Any) -> bool:
        """Add the Record ``partial`` at ``key``; Untyped, nothing changed, if a field's
        tree cannot hold it."""
        self._shaped(partial)
        trees = self.trees
        # the first field's tree checks the key and its partial before it changes anything
        for j in range(1, self._width):
            if not trees[j].accepts((partial[j],)):
                raise Untyped(f"field {j} cannot hold {partial[j]!r}")
        new = trees[0].insert(key, partial[0])
        for j in range(1, self._width):
            trees[j].insert(key, partial[j])
        return new

    def accepts(self, partials: Sequence[Any]) -> bool:
        """Whether :meth:`insert` takes these partials one after another (at new keys)."""
        try:
            for partial in partials:
                self._shaped(partial)
        except Untyped:
            return False
        columns = list(zip(*partials)) if len(partials) else [()] * self._width
        return all(tree.accepts(column) for tree, column in zip(self.trees, columns))

    def insert_arrays(self, timestamps: Any, values: Any, first: int, keys: Any = None) -> None:
        """Insert a numeric column of values, each lifted by every field (Count to 1; Mean,
        MinCount, MaxCount to ``(v, 1)``; Variance to ``(1, v, 0)``; the others unchanged), at
        keys ``(timestamps[j], first + j)``, in each field's C loops
        (:meth:`TypedFiBA.insert_arrays`). Every tree checks the columns before any takes
        them: Untyped, nothing changed, if one does not (ArgMin and ArgMax, which lift pairs,
        never do)."""
        for tree in self.trees:
            tree.check_arrays(timestamps, values, keys)
        for tree in self.trees:
            tree.insert_arrays(timestamps, values, first, keys)

    def evict(self, key: Any) -> bool:
        found = self.trees[0].evict(key)
        if found:
            for tree in self.trees[1:]:
                tree.evict(key)
        return found

    def evict_upto(self, key: Any) -> int:
        count = self.trees[0].evict_upto(key)
        if count:
            for tree in self.trees[1:]:
                tree.evict_upto(key)
        return count

    def clear(self) -> None:
        for tree in self.trees:
            tree.clear()

    # -- undo -----------------------------------------------------------------------------

    def snapshot(self) -> list:
        return [tree.snapshot() for tree in self.trees]

    def restore(self, snapshot: list) -> None:
        for tree, journal in zip(self.trees, snapshot):
            tree.restore(journal)

    def begin_hold(self) -> None:
        for tree in self.trees:
            tree.begin_hold()

    def end_hold(self) -> bool:
        due = False
        for tree in self.trees:
            due = tree.end_hold() or due
        return due

    # -- queries --------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.trees[0])

    def query(self) -> tuple:
        return tuple([tree.query() for tree in self.trees])

    def result(self) -> dict:
        """``monoid.lower(query())``, each field's from its tree."""
        return {name: tree.result() for name, tree in zip(self.monoid.fields, self.trees)}

    def query_range(self, low: Any, high: Any) -> tuple:
        return tuple([tree.query_range(low, high) for tree in self.trees])

    def count_range(self, low: Any, high: Any) -> tuple:
        return self.trees[0].count_range(low, high)

    def key_at(self, rank: int) -> Any:
        return self.trees[0].key_at(rank)

    def oldest(self) -> tuple | None:
        found = [tree.oldest() for tree in self.trees]
        return None if found[0] is None else (found[0][0], tuple([entry[1] for entry in found]))

    def newest(self) -> tuple | None:
        found = [tree.newest() for tree in self.trees]
        return None if found[0] is None else (found[0][0], tuple([entry[1] for entry in found]))

    def _joined(self, columns: list) -> list:
        return [(entry[0], tuple([column[i][1] for column in columns])) for i, entry in enumerate(columns[0])]

    def entries(self, low: Any, high: Any) -> list:
        """The entries ``(key, Record partial)`` with ``low <= key <= high``, in key order."""
        return self._joined([tree.entries(low, high) for tree in self.trees])

    def __iter__(self) -> Iterator[tuple]:
        return iter(self._joined([list(tree) for tree in self.trees]))

    # -- copies ---------------------------------------------------------------------------

    def dump(self, make: Callable[..., Any]) -> Any:
        """The tree through ``make`` as TypedFiBA.dump, values, aggregates and suffix folds
        the Record's tuples: each field's tree is dumped (one shape: their nodes come in
        one order), then the nodes are joined, children first."""
        dumps = [tree.dump(lambda *fields: fields) for tree in self.trees]
        identity = self.monoid.identity

        def joined(nodes: list) -> Any:
            keys, _, _, size, left, right, suffix, children = nodes[0]
            values = [tuple(column) for column in zip(*[node[1] for node in nodes])]
            agg = tuple([node[2] for node in nodes]) if size else identity
            suffixes = None if suffix is None else [tuple(column) for column in zip(*[node[6] for node in nodes])]
            kids = None if children is None else [joined([node[7][i] for node in nodes]) for i in range(len(children))]
            return make(keys, values, agg, size, left, right, suffixes, kids)

        return joined(dumps)

    def to_object(self) -> FiBA:
        """The object :class:`FiBA` over the Record in this state, node for node (as
        :meth:`TypedFiBA.to_object`), for a tree outside a held batch: its fields' undo
        journals are not joined (ValueError while held)."""
        if self.hold:
            raise ValueError("a TypedRecordFiBA is demoted outside a held batch only")
        return _object_fiba(self.monoid, self.min_arity, self.dump(_object_node))


def typed_tree(monoid: Monoid, min_arity: int, *, pairs: bool = False) -> Any:
    """The typed tree for ``monoid``: a TypedRecordFiBA for a Record, else a TypedFiBA
    (``pairs``: keys are pairs, see TypedFiBA)."""
    if type(monoid) is Record:
        return TypedRecordFiBA(monoid, min_arity=min_arity, pairs=pairs)
    return TypedFiBA(monoid, min_arity=min_arity, pairs=pairs)
