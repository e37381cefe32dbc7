"""A brute-force oracle of the Stream engine's results (issue 17), written from the spec.

Test helper, not a test module. It keeps every accepted tuple and, at every ``advance``,
recomputes each query's closed windows from scratch (no slices, no incremental state), then
compares them with what it reported before to derive the results:

- a closed window never reported before is new; it is ``final=True`` unless it supersedes a
  reported window (``replaces``) or a late tuple made it in the past: it was closed at the
  previous watermark already, and the arrival that completed it (replaying the arrivals in
  order, the first after which it is closed at the previous watermark) was late (a session or
  punctuation window created in the past, a count window completed by a late tuple, an empty
  time window filled). A window completed by an on-time tuple (a punctuation at the previous
  watermark) is new, late tuples in it or not: final=True;
- a reported window whose tuples changed is reported again with ``final=False``;
- a reported session / punctuation window whose bounds no longer exist (a late tuple extended,
  merged or split it) is *stale*: the new window holding its oldest tuple lists its bounds in
  ``replaces`` when that window is reported.

"Changed" compares the identities of the tuples a window holds (their arrival numbers), not
the values: a late tuple that shifts a count window reports it again even if its sum is the
same, as the spec says. The periodic reports (``Count(size, every=)``, ``Policy``) are one per
time E: one is reported again when its start, count or partial changed.

Window specs are the oracle's own small classes (``Sliding``, ``Tumbling``, ``Session``,
``Count``, ``CountEvery``, ``Punctuation``, ``PolicyEvery``) so that the oracle never reads
the engine; ``spec.engine()`` builds the matching ``mta.windows`` object from its documented
constructor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple, Sequence

from conftest import fold
from mta import Window
from mta.monoid import Monoid

__all__ = [
    "Tup", "Win", "Expected", "Sliding", "Tumbling", "Session", "Count", "CountEvery", "Punctuation",
    "PolicyEvery", "StreamOracle", "KeyedOracle", "result_tuple", "sort_key",
]

_INF = math.inf
_NEG_INF = -math.inf


class Tup(NamedTuple):
    """An accepted tuple: event time, arrival number (unique), raw value."""

    ts: Any
    seq: int
    value: Any


class Win(NamedTuple):
    """One window computed from scratch: its identity, bounds, tuples (arrival numbers, in
    (ts, arrival) order), lowered value, count and partial (the monoid's, before lower)."""

    ident: Any
    start: Any
    end: Any
    ids: tuple[int, ...]
    value: Any
    count: int
    partial: Any


class Expected(NamedTuple):
    """What the engine must report (the fields of ``mta.Result``; ``replaces`` sorted)."""

    query: str
    start: Any
    end: Any
    value: Any
    count: int
    final: bool
    replaces: tuple = ()
    key: Any = None


def result_tuple(result: Any) -> Expected:
    """An engine ``Result`` as an :class:`Expected` (``replaces`` sorted: the spec gives no order)."""
    return Expected(result.query, result.start, result.end, result.value, result.count, result.final,
                    tuple(sorted(tuple(r) for r in result.replaces)), result.key)


def sort_key(order: dict[str, int]) -> Callable[[Expected], tuple]:
    """The spec's order inside one advance: updates first, then new windows, each by
    (end, query add order, start)."""
    return lambda r: (r.final, r.end, order[r.query], r.start)


def _win(monoid: Monoid, ident: Any, start: Any, end: Any, members: Sequence[Tup]) -> Win:
    partial = fold(monoid, [monoid.lift(t.value) for t in members])  # in (ts, arrival) order
    return Win(ident, start, end, tuple(t.seq for t in members), monoid.lower(partial), len(members), partial)


# --------------------------------------------------------------------------- window specs
# closed(monoid, tuples, watermark, since): every non-empty window closed at `watermark`, computed
# from `tuples` (the query's visible tuples, sorted by (ts, arrival)); `since` is the watermark
# at which the query was added (-inf before the first advance).


@dataclass(frozen=True)
class Sliding:
    """Windows [k*slide + offset, k*slide + offset + size), closed when watermark >= end."""

    size: Any
    slide: Any
    offset: Any = 0
    context_aware = False
    periodic = False

    def engine(self) -> Any:
        from mta.windows import Sliding as EngineSliding
        return EngineSliding(self.size, self.slide, self.offset)

    def closed(self, monoid: Monoid, tuples: Sequence[Tup], watermark: Any, since: Any) -> list[Win]:
        ks: set[int] = set()
        for t in tuples:  # a superset of the k whose window holds t; membership is checked below
            low = math.floor((t.ts - self.offset - self.size) / self.slide)
            ks.update(range(low, math.floor((t.ts - self.offset) / self.slide) + 2))
        out = []
        for k in sorted(ks):
            start = k * self.slide + self.offset
            end = start + self.size
            if end > watermark or start < since:
                continue
            members = [t for t in tuples if start <= t.ts < end]
            if members:
                out.append(_win(monoid, (start, end), start, end, members))
        return out


class Tumbling(Sliding):
    """Sliding(size, size, offset), built as the engine's ``Tumbling``."""

    def __init__(self, size: Any, offset: Any = 0) -> None:
        super().__init__(size, size, offset)

    def engine(self) -> Any:
        from mta.windows import Tumbling as EngineTumbling
        return EngineTumbling(self.size, self.offset)


@dataclass(frozen=True)
class Session:
    """Consecutive tuples less than ``gap`` apart; window [first, last + gap)."""

    gap: Any
    context_aware = True
    periodic = False

    def engine(self) -> Any:
        from mta.windows import Session as EngineSession
        return EngineSession(self.gap)

    def closed(self, monoid: Monoid, tuples: Sequence[Tup], watermark: Any, since: Any) -> list[Win]:
        groups: list[list[Tup]] = []
        for t in tuples:
            if groups and t.ts - groups[-1][-1].ts < self.gap:
                groups[-1].append(t)
            else:
                groups.append([t])
        out = []
        for g in groups:
            start, end = g[0].ts, g[-1].ts + self.gap
            if end <= watermark:
                out.append(_win(monoid, (start, end), start, end, g))
        return out


@dataclass(frozen=True)
class Count:
    """Count measure: windows ending at positions k*slide covering [max(0, e - size), e)."""

    size: int
    slide: int | None = None
    context_aware = False
    periodic = False

    def engine(self) -> Any:
        from mta.windows import Count as EngineCount
        return EngineCount(self.size, self.slide)

    def closed(self, monoid: Monoid, tuples: Sequence[Tup], watermark: Any, since: Any) -> list[Win]:
        slide = self.size if self.slide is None else self.slide
        n = sum(1 for t in tuples if t.ts < watermark)
        out = []
        for e in range(slide, n + 1, slide):
            s = max(0, e - self.size)
            out.append(_win(monoid, (s, e), s, e, tuples[s:e]))
        return out


def _ends(tuples: Sequence[Tup], every: Any, watermark: Any) -> list[Any]:
    """The report times E = k*every <= watermark with a tuple in [E - every, E) (the spec's
    clarification: a period without tuples leaves the window as it was, and is not reported)."""
    ends = {(math.floor(t.ts / every) + 1) * every for t in tuples}  # the first multiple above each ts
    return sorted(end for end in ends if end <= watermark)


@dataclass(frozen=True)
class CountEvery:
    """Multi-measure: at each E = k*every the watermark reached after a period with tuples, the
    last ``size`` tuples with ts < E."""

    size: int
    every: Any
    context_aware = False
    periodic = True  # one report per E: "changed" is its start, count or partial

    def engine(self) -> Any:
        from mta.windows import Count as EngineCount
        return EngineCount(self.size, every=self.every)

    def closed(self, monoid: Monoid, tuples: Sequence[Tup], watermark: Any, since: Any) -> list[Win]:
        out = []
        for end in _ends(tuples, self.every, watermark):
            members = [t for t in tuples if t.ts < end][-self.size:]
            if members:
                out.append(_win(monoid, end, members[0].ts, end, members))
        return out


@dataclass(frozen=True)
class Punctuation:
    """A tuple whose value satisfies ``predicate`` starts a window at its ts: [p_i, p_i+1)."""

    predicate: Callable[[Any], bool]
    context_aware = True
    periodic = False

    def engine(self) -> Any:
        from mta.windows import Punctuation as EnginePunctuation
        return EnginePunctuation(self.predicate)

    def closed(self, monoid: Monoid, tuples: Sequence[Tup], watermark: Any, since: Any) -> list[Win]:
        edges = sorted({t.ts for t in tuples if self.predicate(t.value)})
        out = []
        for start, end in zip(edges, edges[1:]):
            if end <= watermark:
                members = [t for t in tuples if start <= t.ts < end]
                out.append(_win(monoid, (start, end), start, end, members))
        return out


@dataclass(frozen=True)
class PolicyEvery:
    """At each E = k*every the watermark reached after a period with tuples: a fresh
    ``mta.Window(monoid, wsp)`` fed with the tuples with ts < E, in (ts, arrival) order."""

    wsp: Callable[[Any, Any], bool]
    every: Any
    context_aware = False
    periodic = True

    def engine(self) -> Any:
        from mta.windows import Policy as EnginePolicy
        return EnginePolicy(self.wsp, every=self.every)

    def closed(self, monoid: Monoid, tuples: Sequence[Tup], watermark: Any, since: Any) -> list[Win]:
        out = []
        for end in _ends(tuples, self.every, watermark):
            fed = [t for t in tuples if t.ts < end]
            window = Window(monoid, self.wsp)
            for t in fed:
                window.insert(t.ts, t.value)
            n = len(window)
            if n:
                held = fed[-n:]  # a policy evicts a prefix: the window holds the n newest
                out.append(Win(end, held[0].ts, end, tuple(t.seq for t in held), window.query(), n, window.partial()))
        return out


# --------------------------------------------------------------------------- the oracle


def _shown(w: Win) -> tuple:
    """What a periodic report stands for besides its end: one whose tuples changed for others
    with the same start, count and partial is not reported again (the partial, not the lowered
    value: a median of other tuples is another report even when its value is the same)."""
    return (w.start, w.count, w.partial)



@dataclass
class _Query:
    spec: Any
    since: Any
    order: int
    reported: dict[Any, Win] = field(default_factory=dict)


class StreamOracle:
    """The spec of ``mta.Stream`` computed the slow way: same calls, results as :class:`Expected`."""

    def __init__(self, monoid: Monoid, allowed_lateness: Any = 0) -> None:
        self.monoid = monoid
        self.allowed_lateness = allowed_lateness
        self.tuples: list[Tup] = []
        self.watermark: Any = _NEG_INF
        self.dropped = 0
        self.late: list[tuple[Any, Any]] = []  # what on_late must have been called with
        self.queries: dict[str, _Query] = {}
        self._adds = 0
        self._late: set[int] = set()  # arrival numbers of the tuples accepted late

    def add(self, name: str, spec: Any) -> None:
        if name in self.queries:
            raise ValueError(name)
        self._adds += 1
        self.queries[name] = _Query(spec, self.watermark, self._adds)

    def remove(self, name: str) -> None:
        del self.queries[name]

    def insert(self, ts: Any, value: Any) -> bool:
        if ts < self.watermark - self.allowed_lateness:
            self.dropped += 1
            self.late.append((ts, value))
            return False
        if ts < self.watermark:
            self._late.add(len(self.tuples))
        self.tuples.append(Tup(ts, len(self.tuples), value))
        return True

    def order(self) -> dict[str, int]:
        """Query name -> add order (for :func:`sort_key`)."""
        return {name: q.order for name, q in self.queries.items()}

    def advance(self, watermark: Any) -> list[Expected]:
        previous = self.watermark
        self.watermark = max(previous, watermark)
        ordered = sorted(self.tuples, key=lambda t: (t.ts, t.seq))
        out: list[Expected] = []
        for name, q in self.queries.items():
            visible = [t for t in ordered if t.ts >= q.since]
            out.extend(self._diff(name, q, visible, previous))
        return sorted(out, key=sort_key(self.order()))

    def _diff(self, name: str, q: _Query, visible: list[Tup], previous: Any) -> list[Expected]:
        spec, monoid = q.spec, self.monoid
        closed_before = {w.ident for w in spec.closed(monoid, visible, previous, q.since)}
        stale: list[Win] = []
        if spec.context_aware:  # bounds of every window that exists now, closed or not
            alive = {w.ident for w in spec.closed(monoid, visible, _INF, q.since)}
            stale = [w for ident, w in q.reported.items() if ident not in alive]
        out = []
        for w in spec.closed(monoid, visible, self.watermark, q.since):
            old = q.reported.get(w.ident)
            if old is not None and (_shown(old) == _shown(w) if spec.periodic else old.ids == w.ids):
                continue
            replaced = [s for s in stale if s.ids[0] in w.ids]
            bounds = {(s.start, s.end) for s in replaced}
            if old is not None and (old.start, old.end) != (w.start, w.end):
                bounds.add((old.start, old.end))  # a multi-measure report whose oldest tuple changed
            final = old is None and not bounds and not (
                w.ident in closed_before and self._completed_late(spec, w.ident, visible, previous, q.since))
            out.append(Expected(name, w.start, w.end, w.value, w.count, final, tuple(sorted(bounds))))
            for s in replaced:
                del q.reported[s.ident]
            q.reported[w.ident] = w
        return out


    def _completed_late(self, spec: Any, ident: Any, visible: list[Tup], previous: Any, since: Any) -> bool:
        """Whether the arrival that made window ``ident`` closed at the watermark ``previous``
        (replaying the arrivals in order) was a late tuple."""
        for t in sorted(visible, key=lambda t: t.seq):
            arrived = [u for u in visible if u.seq <= t.seq]
            if any(w.ident == ident for w in spec.closed(self.monoid, arrived, previous, since)):
                return t.seq in self._late
        raise AssertionError("unreachable: the window is closed on every tuple")


class KeyedOracle:
    """One :class:`StreamOracle` per key, every key with the same queries and watermark."""

    def __init__(self, monoid: Monoid, allowed_lateness: Any = 0) -> None:
        self.monoid = monoid
        self.allowed_lateness = allowed_lateness
        self.keys: dict[Any, StreamOracle] = {}
        self._log: list[tuple[str, tuple]] = []  # add/remove/advance, replayed on a new key's oracle
        self.watermark: Any = _NEG_INF
        self.names: set[str] = set()

    def _key(self, key: Any) -> StreamOracle:
        if key not in self.keys:
            oracle = StreamOracle(self.monoid, self.allowed_lateness)
            for op, args in self._log:
                getattr(oracle, op)(*args)
            self.keys[key] = oracle
        return self.keys[key]

    def _all(self, op: str, *args: Any) -> list[Expected]:
        self._log.append((op, args))
        out = []
        for key, oracle in self.keys.items():
            out.extend(r._replace(key=key) for r in (getattr(oracle, op)(*args) or ()))
        return out

    def add(self, name: str, spec: Any) -> None:
        if name in self.names:
            raise ValueError(name)
        self.names.add(name)
        self._all("add", name, spec)

    def remove(self, name: str) -> None:
        self.names.remove(name)  # KeyError if absent
        self._all("remove", name)

    def insert(self, key: Any, ts: Any, value: Any) -> bool:
        return self._key(key).insert(ts, value)

    def advance(self, watermark: Any) -> list[Expected]:
        self.watermark = max(self.watermark, watermark)
        return self._all("advance", watermark)

    @property
    def dropped(self) -> int:
        return sum(o.dropped for o in self.keys.values())
