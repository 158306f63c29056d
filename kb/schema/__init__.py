"""Pydantic models of every record kind and of the scenario file.

Everything here is pure data description: no I/O. The cost core and the guideline engine
import these models; nothing here imports them back.
"""

from kb.schema.records import (
    KINDS,
    Accelerator,
    Algorithm,
    Claim,
    Component,
    Constraint,
    Deployment,
    Framework,
    Model,
    Record,
    Result,
    Rule,
    RuleExample,
    Source,
    Technique,
)
from kb.schema.scenario import (
    Cluster,
    Efficiency,
    InlineAccelerator,
    InlineModel,
    ModelPools,
    Models,
    Offload,
    Plan,
    RolloutPlan,
    Scenario,
    TrainPlan,
    Workload,
)
from kb.schema.specs import AcceleratorFigures, Architecture, MixtureOfExperts, MultiHeadLatent

__all__ = [
    "KINDS",
    "Accelerator",
    "AcceleratorFigures",
    "Algorithm",
    "Architecture",
    "Claim",
    "Cluster",
    "Component",
    "Constraint",
    "Deployment",
    "Efficiency",
    "Framework",
    "InlineAccelerator",
    "InlineModel",
    "MixtureOfExperts",
    "Model",
    "ModelPools",
    "Models",
    "MultiHeadLatent",
    "Offload",
    "Plan",
    "Record",
    "Result",
    "RolloutPlan",
    "Rule",
    "RuleExample",
    "Scenario",
    "Source",
    "Technique",
    "TrainPlan",
    "Workload",
]
