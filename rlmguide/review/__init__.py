"""Framework launches read back into plans (`rlmguide review`).

Beside export, over the same mapping records: shell.py expands a launch script as bash would,
config.py parses the arguments as the framework's parser does, understand.py runs the mapping
backwards into plan facts, review.py builds the scenario; `review` costs it and compares it
with the best plan the framework can run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlmguide.cost.architecture import ModelFigures
from rlmguide.export.startup import derived
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import record_roots
from rlmguide.review.header import FROM_HEADER
from rlmguide.review.review import (
    UNREAD_PLACEMENT,
    Hardware,
    ReviewError,
    account_for_split,
    algorithm_keys,
    algorithm_settings,
    kept_engine,
    memory_keys,
    read_file,
    scenario_of,
    sglang_share,
    startup_checks,
    startup_stops,
    understood,
    unknown_keys,
    without_launch_settings,
)
from rlmguide.review.sharding import (
    expert_replication,
    frozen_expert_layout,
    frozen_sharding,
    hybrid_sharding,
)
from rlmguide.rules import RECOMMEND_KINDS
from rlmguide.rules.ranking import NEAR_FRACTION, TIE_FRACTION, within_tie

__all__ = ["Hardware", "NotCostable", "ReviewError", "changes", "review"]


class NotCostable(Exception):
    """The plan a file describes is one the planner cannot cost (the request fails, exit 1)."""


PLACING = ("colocate", "nodes", "gpus_per_node", "resource", "pool")
"""Words of config keys that place models on GPUs."""

SETTINGS = ("placement", "execution", "max_staleness", "prefix_caching", "critic", "fusion")
"""The plan's fields outside its pools."""

SIZED = frozenset(("rollout.dp", "train.dp", "rollout.memory_fraction", "train.micro_batch_tokens"))
"""Pool fields the other fields decide (data-parallel width is the GPUs over the model-parallel
degrees; the engine's share and the micro-batch are sized for the plan, compared in the memory
table), so no change of their own."""


def _fields(plan: dict[str, Any]) -> dict[str, Any]:
    """Every field of a costed plan a scenario chooses, by dotted path (`train.offload.phase`)."""
    found = {name: plan.get(name) for name in SETTINGS}
    for pool in ("rollout", "train", "pools"):
        for name, value in (plan.get(pool) or {}).items():
            if isinstance(value, dict):
                found.update({f"{pool}.{name}.{k}": v for k, v in value.items()})
            else:
                found[f"{pool}.{name}"] = value
    return {field: value for field, value in found.items() if field not in SIZED}


def changes(
    reviewed: dict[str, Any], top: dict[str, Any], estimate_one: Any
) -> list[dict[str, Any]]:
    """Each field where the top plan differs, with the step time the reviewed plan would have
    with that one change (costed by `estimate_one(field, value)`, None when that plan alone is
    not runnable), best first."""
    base = reviewed["step_seconds"]
    was_all, now_all = _fields(reviewed), _fields(top)
    found = []
    for field in sorted(was_all.keys() | now_all.keys()):
        was, now = was_all.get(field), now_all.get(field)
        if was == now:
            continue
        seconds = estimate_one(field, now)
        gain = None if seconds is None else (seconds - base) / base * 100
        # a paired difference inside the ranking's tie is within the model's own error
        noise = seconds is not None and within_tie(seconds, base)
        label = f"{field.replace('.', ' ')} {was} -> {now}"
        shown = f"{gain:+.0f}% step time" if gain is not None else "only with the other changes"
        if noise:
            shown += f" (within the {100 * TIE_FRACTION:.0f}% tie: not advised on its own)"
        found.append(
            {
                "field": field,
                "from": was,
                "to": now,
                "step_seconds": seconds,
                "change_percent": gain,
                "within_noise": noise,
                "text": f"{label}: {shown}",
            }
        )
    return sorted(found, key=lambda c: (c["change_percent"] is None, c["change_percent"] or 0))


def tie_verdict(reviewed: dict[str, Any], top: dict[str, Any]) -> str | None:
    """Why no change is advised where the ranking would not tell the reviewed plan from its
    first (both fit, step times within its tie), naming the faster plan the tie passed over."""
    from rlmguide.rules.recommend import describe_plan

    mine, best = reviewed["step_seconds"], top["step_seconds"]
    if not (reviewed["feasible"] and top["feasible"] and within_tie(mine, best)):
        return None
    tie = f"{100 * TIE_FRACTION:.0f}% tie"
    if describe_plan(reviewed) == describe_plan(top) and abs(mine - best) < NEAR_FRACTION * best:
        # the same layout at the launch's own memory settings: one row of the ranking
        said = "this is the ranking's first plan"
    elif best < mine:
        said = f"the best plan ({best:.1f} s per step) is within the ranking's {tie} of this one"
    elif best > mine:
        said = (
            f"the best plan ({best:.1f} s per step) is slower than this one but within the "
            f"ranking's {tie}, where the simpler plan ranks first"
        )
    else:
        said = f"the best plan takes as long as this one ({best:.1f} s per step)"
    passed = top.get("tie") or {}
    if passed.get("faster_plan") and passed["faster_plan"] != describe_plan(reviewed):
        said += (
            f"; a plan {passed['faster_by_percent']:.0f}% faster ({passed['faster_plan']}) is "
            f"within the {tie} and ranks after it as less simple"
        )
    return f"no change advised: {said}"


def trained_pool(data: dict[str, Any]) -> dict[str, Any] | None:
    """The training pool's degrees with its GPU count: the launch's, or, where it gives none
    and the pools share the GPUs, the cluster's; None where it is not known (a disaggregated
    trainer of unstated size), so the checks that need the trainer's world do not run."""
    plan, cluster = data["plan"], data["cluster"]
    train = plan["train"]
    if train.get("gpus"):
        return train
    if plan.get("placement") != "colocated" or not cluster.get("nodes"):
        return None
    return {**train, "gpus": int(cluster["nodes"]) * int(cluster["gpus_per_node"])}


def _state_group(data: dict[str, Any], pool: dict[str, Any], field: str, group: int) -> None:
    """States an FSDP shard group (`field` of plan.train) on the scenario read. FSDP has
    neither tensor nor pipeline degree (the constraints *-fsdp-no-model-parallelism), which the
    group's check against gpus / (tp x pp) needs stated, with the GPUs the group divides (the
    cluster's, where the pools share them)."""
    data["plan"]["train"] |= {"gpus": pool["gpus"], "tp": 1, "pp": 1, field: group}


def review(
    path: Path,
    framework: str | None = None,
    policy: str | None = None,
    hardware: Hardware | None = None,
) -> dict[str, Any]:
    """The reading of a launch file, its plan's estimate and the framework's best plan."""
    from rlmguide.export.mapping import NotExpressible
    from rlmguide.export.search import find_plan
    from rlmguide.export.writer import Writer, for_algorithm
    from rlmguide.rules.recommend import (
        NoFeasiblePlan,
        frozen_roles,
        recommend,
        recommender_for,
    )
    from rlmguide.rules.scenario import fill_plan_defaults, parse_scenario, resolve

    hardware = hardware or Hardware()
    roots = record_roots()
    mappings = load_catalog(roots, ("mapping",)).of("mapping")
    components = load_catalog(roots, ("component",)).of("component")
    roles = {c: str(getattr(r, "role", "")) for c, r in components.items()}
    reading = read_file(path, mappings, roles, framework)
    catalog = load_catalog(roots, RECOMMEND_KINDS)
    deployments = load_catalog(roots, ("deployment",)).of("deployment")
    data, assumed = scenario_of(reading, catalog, hardware, policy, deployments)
    pool = trained_pool(data)
    sharding = pool and hybrid_sharding(reading.mapping.id, reading.config, pool)
    if sharding:
        _state_group(data, pool, "shard_group", sharding["value"])
        pool = trained_pool(data)  # the train pool as now stated, its group included
    # judged after the trainer's group is stated above: the reference's own group counts
    # only where it differs from that one
    frozen = pool and frozen_sharding(reading.mapping.id, reading.config, pool)
    if frozen:
        _state_group(data, pool, "frozen_shard_group", frozen["group"])
    try:
        read = resolve(parse_scenario(data, str(path)), catalog.records)
    except ValueError as exc:
        raise ReviewError(f"the scenario read from {path} is not valid: {exc}") from None
    train = data["plan"]["train"]
    expert_params = ModelFigures.of(read.policy).expert_params
    experts = pool and expert_replication(reading.mapping.id, reading.config, pool, expert_params)
    ref_experts = None
    if pool and any(role == "reference" for role, _ in frozen_roles(read)):
        ref_experts = frozen_expert_layout(
            reading.mapping.id,
            reading.config,
            pool,
            expert_params,
            data["plan"].get("assessment"),
        )
    if ref_experts and ref_experts["assessment"]:
        try:
            # the reference's own layout, where the plan can state it
            resolve(
                parse_scenario(
                    data | {"plan": data["plan"] | {"assessment": ref_experts["assessment"]}},
                    str(path),
                ),
                catalog.records,
            )
            data["plan"]["assessment"] = ref_experts["assessment"]
        except ValueError:
            ref_experts["costed"] = False
    # no memory verdict where the plan misstates the experts a GPU holds
    unjudged = bool(experts) or bool(ref_experts and not ref_experts["costed"])
    split = account_for_split(reading.config, read.policy.layers, int(train.get("pp") or 1))
    if split and not (train.get("first_stage_layers") or train.get("last_stage_layers")):
        # the stages Megatron builds under the switches, for the plan and the start-up checks
        train["first_stage_layers"], train["last_stage_layers"] = split
        reading.facts["launch.pp_first_layers"], reading.facts["launch.pp_last_layers"] = split

    facts: dict[str, Any] = {}

    def estimate(changed: dict[str, Any], keep: bool = False) -> dict[str, Any]:
        scenario = parse_scenario(changed, str(path))
        filled, chosen = fill_plan_defaults(resolve(scenario, catalog.records))
        one = recommender_for(
            filled,
            catalog,
            enforce_memory=False,
            filter_frameworks=False,
            # costed as export and `estimate --framework` cost this framework's launches
            costed_as=reading.mapping.framework,
            **reading.mapping.costing(),
            versions={reading.mapping.framework: reading.mapping.id},
        )
        (plan,) = recommend(one, 1)["plans"]
        if keep:
            facts.update(one.row_facts(one.ranked_rows[0]))
        return {**plan, "chosen": chosen}

    try:
        # The plan as the search would size its memory, then as the launch sizes it (its
        # engine's share, cap on sequences and micro-batch, read as plan fields).
        needs = estimate(without_launch_settings(data), keep=True)
        hbm = float(facts["cluster.memory_gib"])
        share = sglang_share(reading, needs, hbm)
        if share is not None and share <= 0:
            beside = needs["memory_breakdown_gib"]["rollout"].get("trainer_state", 0.0)
            raise NotCostable(
                f"{path}: SGLang's static memory fraction is a share of the memory free when it "
                f"starts, and on this accelerator ({hbm:.1f} GiB a GPU) the trainer's state "
                f"resident beside the engine ({beside:.1f} GiB) leaves it none: the engine "
                "cannot start; the launch needs GPUs with more memory or less state resident "
                "beside the engine (offload, more sharding)"
            )
        if share is not None:
            data["plan"]["rollout"]["memory_fraction"] = round(share, 4)
        reviewed = estimate(data, keep=True)
    except NoFeasiblePlan as exc:
        from rlmguide.export.startup import refusal

        read_plan = {k: v for k, v in reading.facts.items() if k.startswith(("plan.", "workload."))}
        if stops := startup_stops(reading, catalog, read_plan):
            # the framework refuses the launch before any split matters: name its stop
            named = "; ".join(refusal(r) for r in stops)
            raise NotCostable(f"{path} stops at start-up: {named}") from None
        plan = data["plan"]
        pools = ", ".join(
            f"{name} {plan[name]['gpus']}"
            for name in ("rollout", "train")
            if plan[name].get("gpus")
        )
        pools += "".join(f", {m} {n}" for m, n in plan["pools"].items())
        if not pools:
            # no pool's size was read: name the keys that give it, not an empty list
            sizes = (
                "plan.train.gpus",
                "plan.rollout.gpus",
                "cluster.nodes",
                "cluster.gpus_per_node",
            )
            keys = sorted({e.key for e in reading.mapping.entries if e.fact in sizes})
            pools = f"none read; the launch sizes them with {', '.join(keys)}"
        # the unmapped keys that place models are the likely reason (a sharing the plan lacks,
        # or a model on GPUs of its own, e.g. ROLL's LLM judge, that no entry reads)
        placing = [
            f"{k} ({reading.unmapped[k]}: a model on GPUs the plan does not hold)"
            if k.endswith(UNREAD_PLACEMENT)
            else k
            for k in sorted(reading.unmapped)
            if any(w in k for w in PLACING) or k.endswith(UNREAD_PLACEMENT)
        ]
        raise NotCostable(
            f"the plan read from {path} (GPUs: {pools}) cannot be costed: {exc}; placement "
            f"keys not mapped: {', '.join(placing) or 'none'}"
        ) from None
    result = {
        "file": str(path),
        **understood(reading),
        "assumed": assumed,
        # the estimate's workload numbers neither the launch nor its export header states
        "rests_on_assumptions": sorted(
            {
                a["field"]
                for a in assumed
                if a["field"].startswith(("workload.", "cluster.")) and a["why"] != FROM_HEADER
            }
        ),
        "scenario": data,
        # no memory verdict where the plan misstates the experts' states: unknown is null
        "estimate": {**reviewed, "feasible": None} if unjudged else reviewed,
        # the launch's memory facts from its own estimate (the trainer's state resident beside
        # the engines), which the engines' start-up and wake-up checks weigh its shares against
        "startup": unknown_keys(reading)
        + startup_checks(reading, catalog, {**facts, **derived(reviewed)}),
        "memory_keys": memory_keys(reading, needs, facts) + kept_engine(reading, reviewed, facts),
        # the shard group a launch sets below its trainer's ranks, costed
        "sharding": sharding,
        # the reference's own shard group where it is not the trained models', costed
        "frozen_sharding": frozen,
        # experts sharded over fewer ranks than the plan can say: no memory verdict
        "expert_sharding": experts,
        # the reference's own expert split, where it is not the actor's
        "reference_experts": ref_experts,
        "algorithm_keys": algorithm_keys(reading, facts),
        "algorithm_settings": algorithm_settings(reading, facts),
    }
    name = reading.mapping.framework
    try:
        unplanned = _unplanned(data, catalog, str(path))
        # The best plan the framework runs with a launch of this mapping: one to export.
        own = for_algorithm(reading.mapping, unplanned.scenario.workload.algorithm)
        top = find_plan(unplanned, catalog, name, Writer(catalog, {name: own})).plan
    except (NoFeasiblePlan, NotExpressible) as exc:
        # the reading and its estimate stand; the comparison says why there is none
        return {
            **result,
            "recommendation": None,
            "no_recommendation": str(exc),
            "changes": [],
            "tie": None,
        }
    if slower := _slower_than_reviewed(reviewed, top, name):
        # a best that loses to the launch is no advice: the search missed the launch's plan
        return {
            **result,
            "recommendation": None,
            "no_recommendation": slower,
            "changes": [],
            "tie": None,
        }

    def one_change(field: str, value: Any) -> float | None:
        changed = _with(data, field, value, top)
        try:
            plan = estimate(changed)
        except (ValueError, NoFeasiblePlan):  # a change that leaves no split or layout
            return None
        return plan["step_seconds"] if plan["feasible"] else None

    return {
        **result,
        "recommendation": top,
        "changes": changes(reviewed, top, one_change),
        "tie": tie_verdict(reviewed, top),
    }


def _slower_than_reviewed(reviewed: dict[str, Any], top: dict[str, Any], name: str) -> str | None:
    """Why the search's best plan is not named, where the reviewed plan fits and is faster
    (the search cannot express something the launch does: its mode, where they differ)."""
    if not reviewed["feasible"] or top["step_seconds"] <= reviewed["step_seconds"]:
        return None
    mode = reviewed["execution"]
    if top["execution"] == mode and within_tie(top["step_seconds"], reviewed["step_seconds"]):
        return None  # the ranking's simpler plan of its tie: tie_verdict says so
    why = (
        f"the search did not rank the launch's {mode} execution (its best runs {top['execution']})"
        if top["execution"] != mode
        else "the search cannot express part of the launch's plan"
    )
    return (
        f"the best plan the search found on {name} ({top['step_seconds']:.1f} s per step) is "
        f"slower than the reviewed plan ({reviewed['step_seconds']:.1f} s): {why}"
    )


def _unplanned(data: dict[str, Any], catalog: Any, origin: str) -> Any:
    from rlmguide.rules.scenario import parse_scenario, resolve

    free = {k: v for k, v in data.items() if k != "plan"}
    plan = data.get("plan") or {}
    if plan.get("execution") not in (None, "sync") and "max_staleness" not in free["workload"]:
        # The launch runs a lagging mode: the lag it accepts is the run's, as a scenario whose
        # plan fixes that mode states it (rules.scenario), so the comparison may keep it.
        lag = plan.get("max_staleness") or 1
        free = {**free, "workload": {**free["workload"], "max_staleness": lag}}
    return resolve(parse_scenario(free, origin), catalog.records)


def _with(data: dict[str, Any], field: str, value: Any, top: dict[str, Any]) -> dict[str, Any]:
    """The reviewed scenario with one plan field set as the top plan has it (a placement
    change takes the top plan's pool sizes too, which it cannot go without)."""
    import copy

    changed = copy.deepcopy(data)
    plan = changed["plan"]
    *path, name = field.split(".")
    node = plan
    for key in path:  # a nested field (train.offload.phase) of a part the launch left out
        if node.get(key) is None:
            node[key] = {}
        node = node[key]
    node[name] = value
    if field == "placement":
        plan["rollout"]["gpus"] = top["rollout"]["gpus"]
        plan["train"]["gpus"] = top["train"]["gpus"]
    elif plan["placement"] == "colocated" and name == "gpus" and path in (["train"], ["rollout"]):
        plan["rollout" if path == ["train"] else "train"]["gpus"] = value
    return changed
