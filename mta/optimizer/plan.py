"""The optimizer's answer: groups of queries sharing partials, each with its techniques and estimated cost."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Group:
    """Queries that share one partial aggregation and one final aggregator.

    ``ranges[name]`` are the distinct numbers of partials a window of that query spans
    over the composite slide (Cutty: the open partial counted); ``cost`` is the group's
    estimated operations per tick (its share of the plan's cost, :mod:`mta.optimizer.cost`)."""

    queries: tuple[str, ...]
    partial: str
    final: str
    composite: int
    edges: int
    ranges: dict[str, tuple[int, ...]] = field(hash=False)
    cost: float
    omega: float

    @property
    def edge_rate(self) -> float:
        """Partials closed per tick."""
        return self.edges / self.composite

    def to_dict(self) -> dict[str, Any]:
        return {"queries": list(self.queries), "partial": self.partial, "final": self.final,
                "composite": self.composite, "edges": self.edges, "edge_rate": self.edge_rate,
                "omega": self.omega, "ranges": {k: list(v) for k, v in self.ranges.items()}, "cost": self.cost}


@dataclass(frozen=True)
class Plan:
    """Groups of queries and the estimated operations (combines + inverts) per tick of running them.

    ``method``: "triweave" (one shared slicer, ``slicer_rate`` slices per tick, its ``rate``
    combines per tick counted once in ``cost``) or "weaveshare" (each group slices the
    stream itself); ``search``: "exhaustive" (every grouping) or "greedy" (pair merging)."""

    groups: tuple[Group, ...]
    method: str
    rate: float
    cost: float
    search: str
    slicer_rate: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The plan as plain JSON-able data."""
        return {"method": self.method, "search": self.search, "rate": self.rate, "cost": self.cost,
                "slicer_rate": self.slicer_rate, "groups": [g.to_dict() for g in self.groups]}

    def __str__(self) -> str:
        n = sum(len(g.queries) for g in self.groups)
        lines = [f"{self.method} plan ({self.search} search): {n} queries in {len(self.groups)} group"
                 f"{'s' if len(self.groups) != 1 else ''}, {_num(self.rate)} tuples/tick, "
                 f"estimated {_num(self.cost)} operations/tick"]
        if self.slicer_rate is not None:
            lines.append(f"  shared slicer: {_num(self.rate)} ops/tick (one combine per tuple), "
                         f"{_num(self.slicer_rate)} slices/tick")
        for i, g in enumerate(self.groups, 1):
            final = "panes (fold)" if g.final == "panes" else g.final
            lines.append(f"  group {i}: {', '.join(g.queries)}: {g.partial} partials -> {final}; composite slide "
                         f"{g.composite} tick{'s' if g.composite != 1 else ''}, {g.edges} edge"
                         f"{'s' if g.edges != 1 else ''}; {_num(g.cost)} ops/tick (Omega {_num(g.omega)} per edge)")
            lines.append("      partials per window: " + "; ".join(
                f"{name} {'/'.join(map(str, ks))}" for name, ks in g.ranges.items()))
        return "\n".join(lines)


def _num(x: float) -> str:
    return f"{x:.4g}"
