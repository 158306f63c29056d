"""The page that maps the survey's notation (Table 1) and its stages (Appendix A) to rlmguide:
which scenario or model-record field carries each symbol, which argument of the survey's own
model (cost.survey_model, cost.survey_iteration) receives it, and which function of the
calibrated cost core computes each stage.

The rows are data (NOTATION, STAGES); tests check that every field, attribute and function they
name exists, so the page cannot drift from the code.
"""

from __future__ import annotations

from typing import NamedTuple

from rlmguide.sitegen.mdtext import document, html, html_code, table
from rlmguide.sitegen.pages import Index, Pages, sources_section

NOTATION_PAGE = "survey/notation.md"
SURVEY = "arxiv-2608.27046"


class Symbol(NamedTuple):
    symbol: str
    meaning: str
    fields: tuple[str, ...]
    """Scenario fields (`workload.`, `cluster.`, `plan.`) or model-record fields (`model.`)
    that carry it; empty where rlmguide derives it."""
    survey_input: str
    """`Class.attribute` of the survey model that receives it."""
    note: str = ""


NOTATION: tuple[Symbol, ...] = (
    Symbol("B", "prompts per batch (one iteration)", ("workload.prompts_per_step",),
           "Iteration.prompts"),
    Symbol("K", "responses (candidates) per prompt", ("workload.samples_per_prompt",),
           "Iteration.samples",
           "Unset, the algorithm record's default (GRPO's group, 1 for PPO)."),
    Symbol("S", "mean prompt length in tokens", ("workload.prompt_tokens",),
           "Iteration.prompt_tokens"),
    Symbol("T", "mean response length in tokens",
           ("workload.response_tokens", "workload.max_response_tokens"),
           "Iteration.response_tokens",
           "The survey uses means only; the calibrated model also reads the longest response, "
           "which sets the rollout's tail."),
    Symbol("m", "sequence length S + T", (), "Iteration.context"),
    Symbol("N", "devices", ("cluster.nodes", "cluster.gpus_per_node"), "",
           "N = nodes x GPUs per node; the survey model itself never reads N, only degrees."),
    Symbol("L", "layers", ("model.layers",), "SurveyShape.layers"),
    Symbol("d", "hidden width", ("model.hidden",), "SurveyShape.hidden"),
    Symbol("d_ff", "FFN width", ("model.ffn",), "SurveyShape.ffn",
           "The survey's FFN has two projections; the calibrated model counts the gated FFN's "
           "three (model.ffn_kind)."),
    Symbol("h", "attention heads", ("model.heads",), "SurveyShape.heads",
           "The survey assumes multi-head attention; grouped-query (model.kv_heads) and latent "
           "attention (model.mla) enter only the calibrated model."),
    Symbol("V", "vocabulary", ("model.vocab",), "SurveyShape.vocab"),
    Symbol("E", "routed experts", ("model.moe.experts",), "SurveyShape.experts"),
    Symbol("E_a", "experts active per token", ("model.moe.experts_per_token",),
           "SurveyShape.active_experts"),
    Symbol("d_e", "expert FFN width", ("model.moe.expert_ffn",), "SurveyShape.expert_ffn"),
    Symbol("P_d", "data-parallel degree", ("plan.train.gpus",), "Degrees.dp",
           "Derived: a pool's GPUs over its tp x pp x cp (training) or tp x pp (rollout)."),
    Symbol("P_t", "tensor-parallel degree", ("plan.train.tp", "plan.rollout.tp"), "Degrees.tp"),
    Symbol("P_p", "pipeline-parallel degree", ("plan.train.pp", "plan.rollout.pp"), "Degrees.pp"),
    Symbol("P_c", "context-parallel degree", ("plan.train.cp",), "Degrees.cp"),
    Symbol("P_e", "expert-parallel degree", ("plan.train.ep", "plan.rollout.ep"), "Degrees.ep"),
    Symbol("P_z", "ZeRO sharding group", ("plan.train.zero",), "",
           "The stage is the plan's; the group is the data-parallel group (zero_state's `group`)."),
)  # fmt: skip


class Stage(NamedTuple):
    survey: str
    does: str
    json_stage: str
    """The stage's name in the `stages` of recommend/estimate JSON."""
    function: str
    """The calibrated cost core's function for it (module.function)."""


STAGES: tuple[Stage, ...] = (
    Stage("Generation", "The policy prefills each prompt and decodes K responses token by token "
          "(KV cache grows with S + t); the one stage whose depth grows with T.",
          "rollout", "rlmguide.cost.rollout.rollout_stage"),
    Stage("Assessment", "Scores every response and prepares training targets: reference "
          "log-probs for the KL term, rewards (verifier, reward model, LLM judge), the critic's "
          "values for PPO's advantages, and old log-probs where they are recomputed.",
          "assessment", "rlmguide.cost.assessment.assessment_stage"),
    Stage("Training", "Forward and backward passes of the policy (and the critic) over the "
          "batch's minibatches and epochs, with the optimizer step.",
          "training", "rlmguide.cost.training.training_stage"),
    Stage("(between iterations)", "The updated weights reach the generation engines; the "
          "survey folds this into its placements (Table 9), rlmguide costs it as a stage.",
          "weight_sync", "rlmguide.cost.weight_sync.weight_sync_stage"),
)  # fmt: skip


def _code(names: tuple[str, ...] | str) -> str:
    items = (names,) if isinstance(names, str) else names
    return ", ".join(html_code(n) for n in items if n) or "derived"


def notation_page(ix: Index) -> str:
    symbols = [
        [html_code(s.symbol), html(s.meaning), _code(s.fields), _code(s.survey_input),
         html(s.note) if s.note else "nothing beyond the meaning"]
        for s in NOTATION
    ]  # fmt: skip
    stages = [
        [html(s.survey), html(s.does), html_code(s.json_stage), html_code(s.function)]
        for s in STAGES
    ]
    return document(
        "# The survey's notation and stages in rlmguide",
        "Where each symbol of the survey's Table 1 lives in a scenario file or a model record, "
        "and which argument of the survey's own model "
        "([formula by formula](formulas.md)) receives it. Fields named `model.` are fields of "
        "the model record the scenario names (`models.policy`, `models.reward`, "
        "`models.critic`).",
        "## Table 1: symbols",
        table(["Symbol", "Meaning", "Scenario or record field", "Survey model", "Note"], symbols),
        "## Appendix A: the stages of one iteration",
        "The survey describes one iteration as Generation, Assessment and Training; the "
        "calibrated cost core costs each as a stage of its own, under these names in the JSON "
        "of `recommend` and `estimate`.",
        table(["Survey stage", "What it does", "JSON stage", "Calibrated cost"], stages),
        sources_section(ix, NOTATION_PAGE, [SURVEY], {SURVEY: "Table 1, Appendix A"}),
    )


def notation_pages(ix: Index) -> Pages:
    return {NOTATION_PAGE: notation_page(ix)}
