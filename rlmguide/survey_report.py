"""`estimate --survey`: the survey's idealised figures of a plan (cost.survey_model,
cost.survey_iteration) beside the calibrated seconds, as a JSON block and as tables."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rlmguide.cost.batch import Needs
from rlmguide.cost.step_search import StepSearch
from rlmguide.cost.survey_assessment import Scorer
from rlmguide.cost.survey_iteration import (
    Iteration,
    Layouts,
    Models,
    configurations,
    offline_stages,
)
from rlmguide.cost.survey_model import (
    WDM,
    Degrees,
    SurveyShape,
    global_,
    isolated_ep_global,
    isolated_ep_rank,
    parameters,
    per_rank,
    zero_state,
)
from rlmguide.cost.survey_plan import OWN_POOLS, Part, PlanShape, plan_iteration
from rlmguide.formats import print_rows

SURVEY = "arxiv-2608.27046"
UNITS = {
    "work": "FLOP (an add and a multiply are two)",
    "depth": "operations on the critical path (log2 levels of reduction trees)",
    "memory": "elements (no byte factors; trained state is 4 a parameter)",
}
CALIBRATED_STAGE = {"generation": "rollout", "assessment": "assessment", "training": "training"}


def survey_inputs(resolved: Any) -> tuple[Models, Iteration]:
    """The survey model's view of a resolved scenario: its models as the plan runs them (the
    reference the scenario gives, the reward's scoring, old log-probs recomputed or not)."""
    policy = SurveyShape.of(resolved.policy)
    reference = SurveyShape.of(resolved.reference) if resolved.reference else policy
    scoring = resolved.scoring
    models = Models(
        policy=policy,
        reference=reference if resolved.algorithm.needs_reference else None,
        reward=SurveyShape.of(resolved.reward) if resolved.reward else None,
        critic=SurveyShape.of(resolved.critic) if resolved.critic else None,
        scorer=Scorer(
            scoring.kind,
            scoring.calls_per_response,
            scoring.rubric_tokens,
            scoring.verdict_tokens,
            scoring.steps_per_response,
            scoring.per_prefix,
            scoring.chained,
        ),
        old_log_probs=resolved.algorithm.online
        and resolved.scenario.workload.recompute_old_logprobs,
        objectives=resolved.algorithm.objectives,
    )
    work = resolved.scenario.workload
    it = Iteration(
        prompts=float(work.prompts_per_step),
        samples=float(resolved.samples_per_prompt),
        prompt_tokens=float(work.prompt_tokens),
        response_tokens=float(work.response_tokens),
        search=StepSearch.of(work, Needs.of(resolved.algorithm)),
    )
    return models, it


def _wdm(work: float, depth: float, memory: float) -> dict[str, float]:
    return {"work_flop": work, "depth_ops": depth, "memory_elements": memory}


def plan_shape(plan: dict[str, Any]) -> PlanShape:
    """What the calibrated plan fixes, in the terms Table 9's rows tell apart. The trainer
    reshards into the rollout's layout when the tensor, pipeline or expert degrees differ or
    when it shards the parameters themselves (ZeRO-3 / FSDP) and the rollout holds them
    whole per tensor group; it re-lays the frozen models into their own layout
    (plan.assessment) on the same terms (cost.layouts.TrainLayout.relaid)."""
    ro, tr = plan["rollout"], plan["train"]
    fusion = plan.get("fusion", "none")
    pools = plan.get("pools") or {}
    apart = plan["placement"] == "disaggregated"
    same = all(ro[k] == tr[k] for k in ("tp", "pp", "ep")) and tr["zero"] < 3
    # the frozen models' own layout re-lays them where the training one shards them otherwise
    own = plan.get("assessment")
    relaid = own is not None and (
        (own["tp"], own["pp"]) != (tr["tp"], tr["pp"]) or tr["zero"] >= 3 or tr["cp"] > 1
        or tr["ep"] > 1
    )  # fmt: skip
    return PlanShape(
        shared=plan.get("critic") == "shared",
        inter_fusion=fusion in ("inter-stage", "both"),
        intra_fusion=fusion in ("intra-stage", "both"),
        lagging=plan["execution"] != "sync",
        overlapped=apart and plan["execution"] in ("one-step-off", "async"),
        rollout_apart=apart,
        apart=frozenset(k for k in OWN_POOLS if pools.get(k)),
        generation_tp=float(ro["tp"]),
        assessment_tp=float(tr["tp"]),
        training_tp=float(tr["tp"]),
        resharded=not apart and not same,
        frozen_tp=float(own["tp"]) if own is not None else None,
        frozen_resharded=relaid,
    )


def _part(p: Part) -> dict[str, Any]:
    return {"model": p.name, **_wdm(p.work, p.depth, p.memory), "own_group": p.apart}


def _calibrated_models(plan: dict[str, Any]) -> dict[str, list[str]]:
    """The models each calibrated stage runs, as the plan reports them."""
    trained = ["actor"]
    if plan.get("critic") == "separate" and "critic" in plan.get("assessment_seconds_by_model", {}):
        trained.append("critic")
    found = {
        "assessment": list(plan.get("assessment_seconds_by_model") or {}),
        "training": trained,
    }
    return {"generation": ["actor"], **found} if plan["rollout"] is not None else found


def survey_block(models: Models, it: Iteration, plan: dict[str, Any]) -> dict[str, Any]:
    """The `survey_model` block of one costed plan (a row of `estimate`'s JSON). An offline
    plan (no rollout) has no generation stage and no Table 9 configuration: its iteration is
    B.2.2's, the forward passes then the policy's backward."""
    ro, tr = plan["rollout"], plan["train"]
    calibrated = {s["name"]: s for s in plan["stages"]}
    if ro is None:
        stage_rows, table9, mine, rows, models_by_stage = _offline(
            models, it, calibrated, _calibrated_models(plan)
        )
    else:
        stage_rows, table9, mine, rows, models_by_stage = _online(models, it, plan, calibrated)
    rank, whole, strategy = _training_layout(models, it, tr)
    shard = parameters(models.policy, "policy") / (tr["tp"] * tr["pp"])
    group = tr["dp"] * tr["cp"]
    return {
        "source": SURVEY,
        "units": UNITS,
        "configuration": mine,
        "configuration_rows": rows,
        "offline": ro is None,
        "step_seconds": plan["step_seconds"],
        "stages": stage_rows,
        "models": models_by_stage,
        "table9": table9,
        "policy_training_layout": {
            "strategy": strategy,
            "per_rank": _layout_wdm(rank),
            "global": _layout_wdm(whole),
            "zero_stage": tr["zero"],
            "zero_group": group,
            "zero_state_elements_per_rank": float(zero_state(shard, tr["zero"], group)),
        },
    }


def _training_layout(
    models: Models, it: Iteration, tr: dict[str, Any]
) -> tuple[WDM | None, WDM | None, str]:
    """The policy's training iteration per rank and global under the plan's layout. The
    survey counts P_d P_p P_t P_c P_e ranks, each EP rank with tokens of its own; a plan's dp
    already holds its ep ranks (Megatron's folding), so P_d = dp / ep. Isolated EP (B.3.6)
    is the survey's own strategy only on its own: its ep ranks share one data shard and the
    dp / ep shards run it side by side; beside tp, pp or cp the survey states no formula."""
    s, b, m = models.policy, it.sequences, it.context
    if tr.get("expert_layout") != "isolated":
        deg = Degrees(dp=tr["dp"] / tr["ep"], pp=tr["pp"], tp=tr["tp"], cp=tr["cp"], ep=tr["ep"])
        return per_rank(s, b, m, deg), global_(s, b, m, deg), "Tables 7-8: 5D parallelism"
    if tr["tp"] * tr["pp"] * tr["cp"] > 1:
        return None, None, "isolated EP beside tp, pp or cp: no formula in the survey"
    shards = tr["dp"] / tr["ep"]
    one = isolated_ep_global(s, b / shards, m, tr["ep"])
    whole = WDM(one.work * shards, one.depth, one.memory * shards)
    return isolated_ep_rank(s, b / shards, m, tr["ep"]), whole, "Tables 7-8: isolated EP"


def _layout_wdm(w: WDM | None) -> dict[str, float | None]:
    if w is None:
        return {"work_flop": None, "depth_ops": None, "memory_elements": None}
    return _wdm(float(w.work), float(w.depth), float(w.memory))


def _stage_row(name: str, calibrated: dict[str, Any], **figures: Any) -> dict[str, Any]:
    own = calibrated.get(CALIBRATED_STAGE[name], {})
    return {
        "name": name,
        **figures,
        "calibrated_work_flop": own.get("work_flop"),
        "calibrated_seconds": own.get("seconds"),
    }


def _online(
    models: Models, it: Iteration, plan: dict[str, Any], calibrated: dict[str, Any]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str, list[str], dict[str, Any]]:
    """The plan's own iteration, stage by stage and as a row beside Table 9's."""
    shape = plan_shape(plan)
    own = plan_iteration(models, it, shape)
    assert own.generation is not None
    gen = own.generation
    assessed, trained = own.assessment, own.training
    stage_rows = [
        _stage_row(
            "generation", calibrated, **_wdm(gen.work, gen.depth, gen.memory),
            depth_ops_group_per_model=gen.depth, memory_elements_group_per_model=gen.memory,
            parts=[_part(gen)],
        ),
        _stage_row(
            "assessment", calibrated,
            **_wdm(sum(p.work for p in assessed), own.assessment_depth,
                   sum(p.weights for p in assessed)
                   + max((p.memory - p.weights for p in assessed), default=0.0)),
            depth_ops_group_per_model=max((p.depth for p in assessed), default=0.0),
            memory_elements_group_per_model=max((p.memory for p in assessed), default=0.0),
            parts=[_part(p) for p in assessed],
        ),
        _stage_row(
            "training", calibrated,
            **_wdm(sum(p.work for p in trained), own.training_depth,
                   sum(p.memory for p in trained)),
            depth_ops_group_per_model=max(p.depth for p in trained),
            memory_elements_group_per_model=max(p.memory for p in trained),
            parts=[_part(p) for p in trained],
        ),
    ]  # fmt: skip
    lay = Layouts(shape.generation_tp, shape.assessment_tp)
    table9 = [
        {
            "configuration": c.name,
            "work_flop": c.work,
            "depth_ops": c.depth,
            "peak_memory_elements": c.memory,
            "this_plan": c.name in own.rows,
        }
        for c in configurations(models, it, lay)
    ]
    table9.append(
        {
            "configuration": f"this plan: {own.name}",
            "work_flop": own.work,
            "depth_ops": own.depth,
            "peak_memory_elements": own.memory,
            "this_plan": True,
            "memory_elements_by_group": own.groups,
        }
    )
    by_stage = {
        "generation": ["actor"],
        "assessment": [p.name for p in assessed],
        "training": [p.name for p in trained],
        "calibrated": _calibrated_models(plan),
    }
    return stage_rows, table9, own.name, list(own.rows), by_stage


def _offline(
    models: Models, it: Iteration, calibrated: dict[str, Any], calibrated_models: dict[str, Any]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str, list[str], dict[str, Any]]:
    """B.2.2's iteration: the forward passes, then the policy's backward."""
    st = offline_stages(models, it)
    stage_rows = [
        _stage_row(
            "assessment", calibrated, **_wdm(st.assess_work, st.assess_depth_sum,
                                             st.assess_memory_sum),
            depth_ops_group_per_model=st.assess_depth_max,
            memory_elements_group_per_model=max(st.assess_memory_groups, default=0.0),
        ),
        _stage_row(
            "training", calibrated, **_wdm(st.train_work, st.train_depth_sum,
                                           st.train_memory_sum),
            depth_ops_group_per_model=st.train_depth_max,
            memory_elements_group_per_model=st.train_memory_max,
        ),
    ]  # fmt: skip
    mine = "offline (Algorithm 4, B.2.2)"
    table9 = [
        {
            "configuration": mine,
            "work_flop": st.assess_work + st.train_work,
            "depth_ops": st.assess_depth_max + st.train_depth_sum,
            "peak_memory_elements": max(st.assess_memory_sum, st.train_memory_sum),
            "this_plan": True,
        }
    ]
    # Table 4 counts the policy's forward in Assessment; the calibrated plan in its training.
    forwards = ["actor", *(["reference"] if models.reference is not None else [])]
    by_stage = {"assessment": forwards, "training": ["actor"], "calibrated": calibrated_models}
    return stage_rows, table9, mine, [mine], by_stage


def add_survey_model(
    result: dict[str, Any], resolved: Any, judged_by: Callable[[dict[str, Any]], Any] | None = None
) -> None:
    """A `survey_model` block on every plan of a result; `judged_by` gives the scenario a plan
    was judged by where that varies by plan (the options of a mixed cluster)."""
    for plan in result["plans"]:
        models, it = survey_inputs(judged_by(plan) if judged_by else resolved)
        plan["survey_model"] = survey_block(models, it, plan)


def _g(x: float | None) -> str:
    return "" if x is None else f"{x:.4g}"


def print_survey(block: dict[str, Any], fmt: str, rank: int = 1) -> None:
    """The survey block of plan `rank` as tables: stages, each model's part, Table 9."""
    stages = [
        (
            s["name"],
            _g(s["work_flop"]),
            _g(s["calibrated_work_flop"]),
            _g(s["depth_ops"]),
            _g(s["depth_ops_group_per_model"]),
            _g(s["memory_elements"]),
            _g(s["calibrated_seconds"]),
        )
        for s in block["stages"]
    ]
    print_rows(
        ["stage", "work FLOP", "calibrated FLOP", "depth ops (as the plan runs it)",
         "depth ops (group per model)", "memory elements", "calibrated s"],
        stages,
        fmt,
        title=f"survey model of plan {rank} ({SURVEY}: §2.5, Tables 3-4; {UNITS['depth']})",
    )  # fmt: skip
    parts = [
        (s["name"], p["model"], _g(p["work_flop"]), _g(p["depth_ops"]), _g(p["memory_elements"]),
         "own group" if p["own_group"] else "")
        for s in block["stages"] for p in s.get("parts", [])
    ]  # fmt: skip
    if parts:
        print_rows(
            ["stage", "model", "work FLOP", "depth ops", "memory elements", "runs"],
            parts,
            fmt,
            title=f"survey model of plan {rank}, model by model",
        )
    rows = [
        (
            ("> " if c["this_plan"] else "") + c["configuration"],
            _g(c["work_flop"]),
            _g(c["depth_ops"]),
            _g(c["peak_memory_elements"]),
        )
        for c in block["table9"]
    ]
    print_rows(
        ["Table 9 configuration", "work FLOP", "iteration depth ops", "peak memory elements"],
        rows,
        fmt,
        title=(
            "iteration of offline preference optimisation (B.2.2"
            if block["offline"]
            else f"iteration by Table 9 (> the rows plan {rank} combines, and its own"
        )
        + f"; its calibrated step: {block['step_seconds']:.1f} s)",
    )
    lay = block["policy_training_layout"]
    print_rows(
        [f"policy training ({lay['strategy']}; §3.7.1)", "work FLOP", "depth ops",
         "memory elements"],
        [
            ("per rank", *(_g(lay["per_rank"][k]) for k in ("work_flop", "depth_ops",
                                                            "memory_elements"))),
            ("global", *(_g(lay["global"][k]) for k in ("work_flop", "depth_ops",
                                                        "memory_elements"))),
            (f"ZeRO-{lay['zero_stage']} state per rank over {lay['zero_group']} ranks", "", "",
             _g(lay["zero_state_elements_per_rank"])),
        ],
        fmt,
    )  # fmt: skip
