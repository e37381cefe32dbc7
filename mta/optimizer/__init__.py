"""The sharing optimizer of periodic window queries (issue 18; dissertation chapters 5-7).

:func:`optimize` groups queries so that a group shares one partial aggregation
(Panes, Pairs or Cutty, :mod:`mta.optimizer.partials`) and one multi-query final
aggregator (``mta.algorithms.MULTI_QUERY``), choosing the grouping (WeaveShare or
TriWeave, :mod:`mta.optimizer.weave`) and each group's techniques by the estimated
operations per tick (:mod:`mta.optimizer.cost`), with edges counted by F1
(:mod:`mta.optimizer.f1`). The result is a :class:`Plan` (``str(plan)`` for a person,
``plan.to_dict()`` as JSON).
"""

from mta.optimizer.cost import FINALS, METHODS
from mta.optimizer.partials import PARTIALS, PeriodicQuery
from mta.optimizer.plan import Group, Plan
from mta.optimizer.weave import optimize

__all__ = ["optimize", "PeriodicQuery", "Group", "Plan", "PARTIALS", "FINALS", "METHODS"]
