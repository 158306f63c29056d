"""`estimate --survey`: the survey's idealised figures of a plan (cost.survey_model,
cost.survey_iteration) beside the calibrated seconds, as a JSON block and as tables."""

from __future__ import annotations

from typing import Any

from rlmguide.cost.survey_iteration import (
    Iteration,
    Layouts,
    Models,
    configurations,
    offline_stages,
    plan_configuration,
)
from rlmguide.cost.survey_iteration import stages as survey_stages
from rlmguide.cost.survey_model import (
    Degrees,
    SurveyShape,
    global_,
    parameters,
    per_rank,
    zero_state,
)
from rlmguide.formats import print_rows

SURVEY = "arxiv-2608.27046"
UNITS = {
    "work": "FLOP (an add and a multiply are two)",
    "depth": "operations on the critical path (log2 levels of reduction trees)",
    "memory": "elements (no byte factors; trained state is 4 a parameter)",
}
CALIBRATED_STAGE = {"generation": "rollout", "assessment": "assessment", "training": "training"}


def survey_inputs(resolved: Any) -> tuple[Models, Iteration]:
    policy = SurveyShape.of(resolved.policy)
    models = Models(
        policy=policy,
        reference=policy if resolved.algorithm.needs_reference else None,
        reward=SurveyShape.of(resolved.reward) if resolved.reward else None,
        critic=SurveyShape.of(resolved.critic) if resolved.critic else None,
    )
    work = resolved.scenario.workload
    it = Iteration(
        prompts=float(work.prompts_per_step),
        samples=float(resolved.samples_per_prompt),
        prompt_tokens=float(work.prompt_tokens),
        response_tokens=float(work.response_tokens),
    )
    return models, it


def _wdm(work: float, depth: float, memory: float) -> dict[str, float]:
    return {"work_flop": work, "depth_ops": depth, "memory_elements": memory}


def survey_block(models: Models, it: Iteration, plan: dict[str, Any]) -> dict[str, Any]:
    """The `survey_model` block of one costed plan (a row of `estimate`'s JSON). An offline
    plan (no rollout) has no generation stage and no Table 9 configuration: its iteration is
    B.2.2's, the forward passes then the policy's backward."""
    ro, tr = plan["rollout"], plan["train"]
    calibrated = {s["name"]: s for s in plan["stages"]}
    offline = ro is None
    st = offline_stages(models, it) if offline else survey_stages(models, it)
    figures = {
        "generation": (st.gen_work, st.gen_depth, st.gen_depth, st.gen_memory, st.gen_memory),
        "assessment": (st.assess_work, st.assess_depth_sum, st.assess_depth_max,
                       st.assess_memory_sum, max(st.assess_memory_groups, default=0.0)),
        "training": (st.train_work, st.train_depth_sum, st.train_depth_max,
                     st.train_memory_sum, st.train_memory_max),
    }  # fmt: skip
    if offline:
        del figures["generation"]
    stage_rows = []
    for name, (work, depth, depth_max, memory, memory_max) in figures.items():
        own = calibrated.get(CALIBRATED_STAGE[name], {})
        stage_rows.append(
            {
                "name": name,
                **_wdm(work, depth, memory),
                "depth_ops_group_per_model": depth_max,
                "memory_elements_group_per_model": memory_max,
                "calibrated_work_flop": own.get("work_flop"),
                "calibrated_seconds": own.get("seconds"),
            }
        )
    if offline:
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
    else:
        same = ro["tp"] == tr["tp"] and ro["pp"] == tr["pp"]
        mine = plan_configuration(
            plan["placement"],
            plan["execution"],
            same,
            plan.get("critic", "separate"),
            plan.get("fusion", "none"),
        )
        table9 = [
            {
                "configuration": c.name,
                "work_flop": c.work,
                "depth_ops": c.depth,
                "peak_memory_elements": c.memory,
                "this_plan": c.name == mine,
            }
            for c in configurations(models, it, Layouts(float(ro["tp"]), float(tr["tp"])))
        ]
    deg = Degrees(dp=tr["dp"], pp=tr["pp"], tp=tr["tp"], cp=tr["cp"], ep=tr["ep"])
    rank = per_rank(models.policy, it.sequences, it.context, deg)
    whole = global_(models.policy, it.sequences, it.context, deg)
    shard = parameters(models.policy, "policy") / (tr["tp"] * tr["pp"])
    group = tr["dp"] * tr["cp"]
    return {
        "source": SURVEY,
        "units": UNITS,
        "configuration": mine,
        "offline": offline,
        "step_seconds": plan["step_seconds"],
        "stages": stage_rows,
        "table9": table9,
        "policy_training_layout": {
            "per_rank": _wdm(float(rank.work), float(rank.depth), float(rank.memory)),
            "global": _wdm(float(whole.work), float(whole.depth), float(whole.memory)),
            "zero_stage": tr["zero"],
            "zero_group": group,
            "zero_state_elements_per_rank": float(zero_state(shard, tr["zero"], group)),
        },
    }


def add_survey_model(result: dict[str, Any], resolved: Any) -> None:
    models, it = survey_inputs(resolved)
    for plan in result["plans"]:
        plan["survey_model"] = survey_block(models, it, plan)


def _g(x: float | None) -> str:
    return "" if x is None else f"{x:.4g}"


def print_survey(block: dict[str, Any], fmt: str) -> None:
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
        ["stage", "work FLOP", "calibrated FLOP", "depth ops (one group)",
         "depth ops (group per model)", "memory elements", "calibrated s"],
        stages,
        fmt,
        title=f"survey model of plan 1 ({SURVEY}: §2.5, Tables 3-4; {UNITS['depth']})",
    )  # fmt: skip
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
            else "iteration by Table 9 (> the plan's own"
        )
        + f"; its calibrated step: {block['step_seconds']:.1f} s)",
    )
    lay = block["policy_training_layout"]
    print_rows(
        ["policy training (Tables 7-8, §3.7.1)", "work FLOP", "depth ops", "memory elements"],
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
