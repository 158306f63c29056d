"""The work-depth-memory cost core of rlmguide: pure functions over arrays, no I/O.

`evaluate(accelerator, policy, workload, PlanTable...)` costs one RL step for every plan of a
table: per stage (rollout, assessment, training, weight sync, colocated switch) its time with
Brent bounds max(W/p, D) <= T <= W/p + D, work, depth, traffic and bound; the step time by
placement and execution mode; memory per GPU and feasibility. It imports `kb.schema` only.
"""

from cost.assessment import Scoring
from cost.batch import Batch, Needs
from cost.compose import Span, par, seq
from cost.efficiency import DEFAULTS as EFFICIENCY_DEFAULTS
from cost.efficiency import EfficiencyFactors, resolve_efficiency
from cost.evaluate import CostTable, evaluate
from cost.overheads import DEFAULT_OVERHEADS, Overheads
from cost.plans import (
    EXECUTIONS,
    PLACEMENTS,
    RECOMPUTE,
    PlanError,
    PlanTable,
    check_plans,
    plan_problems,
    valid_rows,
)
from cost.stage import BOUNDS, STAGES, StageCost

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
