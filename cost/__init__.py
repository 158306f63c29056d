"""The work-depth-memory cost core of rlmguide: pure functions over arrays, no I/O.

`evaluate(accelerator, policy, workload, PlanTable...)` costs one RL step for every plan of a
table: per stage (rollout, assessment, training, weight sync, colocated switch) its time with
Brent bounds max(W/p, D) <= T <= W/p + D, work, depth, traffic and bound; the step time by
placement and execution mode; memory per GPU and feasibility. It imports `kb.schema` only.
"""

from rlmguide.cost.assessment import Scoring
from rlmguide.cost.batch import Batch, Needs
from rlmguide.cost.compose import Span, par, seq
from rlmguide.cost.efficiency import DEFAULTS as EFFICIENCY_DEFAULTS
from rlmguide.cost.efficiency import EfficiencyFactors, resolve_efficiency
from rlmguide.cost.evaluate import CostTable, evaluate
from rlmguide.cost.overheads import DEFAULT_OVERHEADS, Overheads
from rlmguide.cost.plans import (
    EXECUTIONS,
    PLACEMENTS,
    RECOMPUTE,
    PlanError,
    PlanTable,
    check_plans,
    plan_problems,
    valid_rows,
)
from rlmguide.cost.stage import BOUNDS, STAGES, StageCost

__all__ = [
    "BOUNDS",
    "DEFAULT_OVERHEADS",
    "EFFICIENCY_DEFAULTS",
    "EXECUTIONS",
    "PLACEMENTS",
    "RECOMPUTE",
    "STAGES",
    "Batch",
    "CostTable",
    "EfficiencyFactors",
    "Needs",
    "Overheads",
    "PlanError",
    "PlanTable",
    "Scoring",
    "Span",
    "StageCost",
    "check_plans",
    "evaluate",
    "par",
    "plan_problems",
    "resolve_efficiency",
    "seq",
    "valid_rows",
]
