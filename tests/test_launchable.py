"""Plans a user can launch today: availability as data, launchable plans ranked first, partial
claims that mean partial, who runs a plan in a useful order, and research systems as what-ifs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import REPO
from rlmguide.cost.plans import PlanTable
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS, RULES_ROOT
from rlmguide.kb.schema import Framework
from rlmguide.rules.facts import scenario_facts
from rlmguide.rules.frameworks import compile_constraints, inherit, supports
from rlmguide.rules.ranking import TIE_FRACTION
from rlmguide.rules.recommend import NoFeasiblePlan, plan_facts, recommend, recommender_for
from rlmguide.rules.scenario import read_scenario, resolve

from rlmguide.cli import cli

CATALOG = load_catalog([*DEFAULT_ROOTS, RULES_ROOT])
FRAMEWORKS: dict[str, Framework] = CATALOG.of("framework")  # type: ignore[assignment]
EXAMPLES = REPO / "examples"
SMALL = str(EXAMPLES / "grpo-qwen2.5-7b-8xh100.yaml")
MAPPED = ("verl", "openrlhf", "nemo-rl", "slime", "skyrl", "areal", "roll")


def invoke(*args: str) -> tuple[int, str]:
    done = CliRunner().invoke(cli, list(args))
    return done.exit_code, done.output


def search(scenario: Any, top: int = 1, **options: Any) -> dict[str, Any]:
    resolved = resolve(scenario, CATALOG.records)
    return recommend(recommender_for(resolved, CATALOG, **options), top)


PPO_7B = {
    "cluster": {"accelerator": "h100-sxm-80gb", "nodes": 1, "gpus_per_node": 8},
    "models": {"policy": "qwen2.5-7b", "reward": "verifier"},
    "workload": {"algorithm": "ppo", "prompts_per_step": 1024, "samples_per_prompt": 1,
                 "prompt_tokens": 1024, "response_tokens": 4096, "max_response_tokens": 16384,
                 "minibatches_per_step": 4},
}  # fmt: skip


def parsed(data: dict[str, Any]) -> Any:
    from rlmguide.rules.scenario import parse_scenario

    return parse_scenario(data, "test")


# -- availability as data ------------------------------------------------------------------


def test_every_framework_states_what_a_user_can_run() -> None:
    statuses = {f.availability.status for f in FRAMEWORKS.values()}
    assert statuses == {"released", "partial-code", "paper-only", "closed"}
    sources = CATALOG.of("source")
    for fw in FRAMEWORKS.values():
        a = fw.availability
        assert a.source in sources, fw.id
        assert a.version is not None or a.status != "released", fw.id
    # The systems the issue names: Seer is a paper, RLHFuse's public code is a solver.
    assert FRAMEWORKS["seer"].availability.status == "paper-only"
    assert FRAMEWORKS["rlhfuse"].availability.status == "partial-code"
    assert "schedule" in (FRAMEWORKS["rlhfuse"].availability.part or "")
    assert all(FRAMEWORKS[f].released for f in MAPPED)


def test_sql_show_and_compare_show_availability() -> None:
    from rlmguide.kb.store import columns

    assert "availability_status" in {c[0] for c in columns(Framework)}
    code, out = invoke("show", "seer", "--format", "json")
    assert code == 0, out
    assert json.loads(out)["availability_status"] == "paper-only"
    code, out = invoke("compare", "verl", "rlhfuse", "--format", "json")
    assert code == 0, out
    shown = json.loads(out)["availability"]
    assert shown["verl"]["status"] == "released" and shown["verl"]["version"]
    assert shown["rlhfuse"]["status"] == "partial-code" and shown["rlhfuse"]["part"]
    code, out = invoke("compare", "verl", "seer", "--format", "markdown")
    assert "| availability | what a user can run | released" in out


# -- partial means partial -----------------------------------------------------------------


def _support(framework: str, algorithm: str) -> Any:
    components = {c.id: c.role for c in CATALOG.of("component").values()}
    every = CATALOG.of("component").values()
    extends = {c.id: c.extends for c in every if c.extends}  # type: ignore[attr-defined]
    constraints = inherit(compile_constraints(CATALOG)[0], extends)
    found = supports(FRAMEWORKS.values(), constraints, components, algorithm)
    return next((x for x in found if x.id == framework), None)


def test_a_partial_claim_runs_plans_only_with_a_costed_part() -> None:
    # Seer overlaps reward scoring with generation only: the planner's inter-stage fusion
    # assumes more, so Seer's partial claim runs no fused plan.
    seer = next(c for c in FRAMEWORKS["seer"].claims if c.feature == "inter-stage-fusion")
    assert seer.support == "partial" and seer.part is not None and not seer.part.costed
    seer_support = _support("seer", "grpo")
    assert seer_support is None or "inter-stage-fusion" not in seer_support.claimed
    # OAT's asynchronous mode is the overlap the planner costs: its part is costed.
    oat = _support("oat", "grpo")
    assert oat is not None and "asynchronous-execution" in oat.claimed
    # An inference-only engine (LLaMA-Factory's vLLM) forms no (backend, engine) pair.
    factory = _support("llama-factory", "ppo")
    assert factory is not None and all(engine != "vllm" for _, engine in factory.pairs)
    # A partial claim on a plan feature without its part is an error in the making: every
    # such claim in the knowledge base names its part.
    plan_features = {"colocated-placement", "disaggregated-placement", "synchronous-execution",
                     "one-step-off-policy", "asynchronous-execution", "partial-rollout",
                     "shared-actor-critic", "inter-stage-fusion", "intra-stage-fusion",
                     "grpo", "ppo", "dapo"}  # fmt: skip
    for fw in FRAMEWORKS.values():
        for claim in fw.claims:
            if claim.support == "partial" and claim.feature in plan_features:
                assert claim.part is not None, (fw.id, claim.feature)


def test_the_readme_example_is_not_costed_as_seers_fusion() -> None:
    plan = search(read_scenario(Path(SMALL)))["plans"][0]
    assert plan["fusion"] == "none" and "seer" not in plan["frameworks"]


# -- launchable first ----------------------------------------------------------------------


def test_the_readme_example_is_launchable_and_emits_as_ranked() -> None:
    """`--emit X` writes the plan `recommend --framework X` ranks first; verl, which writes the
    engine's concurrency, runs the unrestricted first plan as costed (OpenRLHF's engines run at
    their own default, its mapping's engine_max_seqs)."""
    result = search(read_scenario(Path(SMALL)), top=3)
    top = result["plans"][0]
    # Frameworks with an export mapping come first (NeMo-RL's colocated trainer always parks
    # its state, so this plan without offload is not its).
    by = top["launchable_by"]
    mapped = [f in MAPPED for f in by]
    assert by[0] in MAPPED and mapped == sorted(mapped, reverse=True)
    for framework in ("verl", top["launchable_by"][0]):
        own = search(read_scenario(Path(SMALL)), only=framework)["plans"][0]
        described = (
            f"{own['placement']} {own['execution']}; rollout {own['rollout']['gpus']} GPUs TP "
            f"{own['rollout']['tp']}"
        )
        code, out = invoke("recommend", SMALL, "--emit", framework)
        assert code == 0, out
        header = next(line for line in out.splitlines() if line.startswith("# Plan:"))
        assert described in header and f"{own['step_seconds']:.1f} s per step" in header
        if framework == "verl":
            assert own["step_seconds"] == top["step_seconds"]


def test_who_runs_a_plan_in_order() -> None:
    plans = search(read_scenario(Path(SMALL)), top=3)["plans"]
    for plan in plans:
        launchable, also = plan["launchable_by"], plan["also_claimed_by"]
        # those that run it only with the reference parked run its parked twin
        parked = set(plan.get("reference_parked_by", ()))
        assert set(launchable) | set(also) == set(plan["frameworks"]) | parked
        assert all(FRAMEWORKS[f].released for f in launchable)
        assert not any(FRAMEWORKS[f].released for f in also)
        mapped = [f in MAPPED for f in launchable]
        assert mapped == sorted(mapped, reverse=True), launchable  # mapped ones first

        def date(f: str) -> int:
            release = FRAMEWORKS[f].latest_release
            return release.date.toordinal() if release else 0

        for group in (True, False):
            dates = [date(f) for f, m in zip(launchable, mapped, strict=True) if m is group]
            assert dates == sorted(dates, reverse=True), launchable


def test_research_systems_plans_are_what_ifs_unless_asked_for() -> None:
    # PPO on one node: RLHFuse's stage fusion (its public code is the schedule solver only)
    # would gain, and is shown as a what-if beside the launchable ranking.
    result = search(parsed(PPO_7B), top=3)
    assert all(p["launchable_by"] for p in result["plans"])
    assert all(p["fusion"] == "none" for p in result["plans"])
    research = result["research_what_if"]
    assert research, "RLHFuse's fusion beats the launchable plan on this setup"
    top = result["plans"][0]["step_seconds"]
    for w in research:
        assert w["step_seconds"] < top
        assert w["gain_percent"] == pytest.approx(100 * (1 - w["step_seconds"] / top), abs=0.1)
        assert {s["availability"] for s in w["shown_by"]} <= {"partial-code", "paper-only",
                                                               "closed"}  # fmt: skip
    assert any(s["framework"] == "rlhfuse" for w in research for s in w["shown_by"])
    plans = search(parsed(PPO_7B), top=3, research=True)["plans"]
    # Ranked with them, the first is the simplest plan within the tie of the fastest, which
    # may be a launchable one (444.8 s within 20% of RLHFuse's 379.2 s); RLHFuse's own plan is
    # ranked beside it, runnable by no released framework.
    fastest = min(w["step_seconds"] for w in research)
    assert fastest - 0.01 <= plans[0]["step_seconds"] <= fastest * (1 + TIE_FRACTION)
    fused = [p for p in plans if p["fusion"] != "none"]
    assert fused and fused[0]["step_seconds"] == pytest.approx(fastest, abs=0.01)
    assert not fused[0]["launchable_by"] and "rlhfuse" in fused[0]["also_claimed_by"]


def test_include_research_on_the_command_line() -> None:
    code, out = invoke("recommend", SMALL, "--include-research", "--format", "json", "--top", "1")
    assert code == 0, out
    assert json.loads(out)["plans"][0]["frameworks"]
    done = subprocess.run(
        [sys.executable, "-m", "rlmguide", "recommend", SMALL, "--include-research=all"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "--include-research" in done.stderr and "Traceback" not in done.stderr
    from rlmguide import api

    with pytest.raises(api.BadInput, match="include_research"):
        api.recommend(SMALL, include_research="yes")  # type: ignore[arg-type]


# -- framework-true layouts ----------------------------------------------------------------


def _runs(framework: str, algorithm: str, **columns: Any) -> list[bool]:
    support = _support(framework, algorithm)
    assert support is not None
    resolved = resolve(read_scenario(EXAMPLES / "grpo-qwen2.5-32b-64xh100.yaml"), CATALOG.records)
    table = PlanTable.from_arrays(**columns)
    env = {**scenario_facts(resolved), **plan_facts(table)}
    return list(support.runnable(env, len(table))[0])


PARKED = dict(offload_phase=np.array([True, True]), offload_frozen=np.array([True, True]))
"""Two plans with the trainer's state and the GRPO reference parked on the host between
phases, as SkyRL and ROLL run a colocated plan (their *-parks-trainer-state* and reference
constraints)."""


def test_zero_3_runs_only_on_a_backend_that_shards_weights() -> None:
    # SkyRL's FSDP has no tensor parallelism (its constraint) and its Megatron path shards
    # the optimizer only: tp 2 with ZeRO-3 runs on neither; tp 2 with ZeRO-1 on Megatron.
    # SkyRL parks its colocated trainer and the reference beside it (PARKED).
    common = dict(placement="colocated", execution="sync", rollout_gpus=64, rollout_tp=2,
                  train_gpus=64, train_tp=2, train_recompute="full", **PARKED)  # fmt: skip
    assert _runs("skyrl", "grpo", **common, train_zero=np.array([3, 1])) == [False, True]


@pytest.mark.parametrize("framework", ["skyrl", "roll", "areal"])
def test_ulysses_context_parallelism_must_divide_the_heads(framework: str) -> None:
    # Qwen2.5-32B has 40 heads and 8 KV heads: Ulysses over 8 divides both, over 16 neither.
    # These FSDP backends split sequences with Ulysses only (their *-ulysses-head-divisibility
    # records); SkyRL and ROLL park what they park, so the plans carry it (PARKED). AReaL
    # colocates single-GPU engines only (areal-colocated-rollout-one-gpu-per-engine).
    rollout_tp = 1 if framework == "areal" else 2
    common = dict(placement="colocated", execution="sync", rollout_gpus=64, rollout_tp=rollout_tp,
                  train_gpus=64, train_tp=1, train_zero=3, train_recompute="full",
                  **PARKED)  # fmt: skip
    assert _runs(framework, "grpo", **common, train_cp=np.array([8, 16])) == [True, False]


def test_areal_fsdp_tensor_parallelism_must_divide_the_kv_heads() -> None:
    # Qwen2.5-32B (40 heads, 8 KV heads) takes a tensor group of 8 on AReaL's FSDP, not 16.
    common = dict(placement="disaggregated", execution="async", rollout_gpus=32, rollout_tp=2,
                  train_gpus=32, train_zero=3, train_recompute="full")  # fmt: skip
    assert _runs("areal", "grpo", **common, train_tp=np.array([8, 16])) == [True, False]


def test_parallelism_runs_only_where_a_framework_claims_it() -> None:
    # TRL's claims say it has no tensor parallelism for training (its TP is vLLM's, for
    # generation): a plan with it is not TRL's to launch.
    common = dict(placement="colocated", execution="sync", rollout_gpus=64, rollout_tp=2,
                  train_gpus=64, train_zero=3, train_recompute="full")  # fmt: skip
    trl = {c.feature: c.support for c in FRAMEWORKS["trl"].claims}
    assert trl["tensor-parallelism"] == "no"
    assert _runs("trl", "grpo", **common, train_tp=np.array([1, 2])) == [True, False]


@pytest.mark.parametrize(
    ("framework", "train"),
    [
        ("nemo-rl", {"train_tp": 1, "train_zero": 3}),
        ("skyrl", {"train_tp": 1, "train_zero": 3}),
        ("roll", {"train_tp": 2, "train_zero": 1}),
    ],
)
def test_colocated_trainers_that_always_offload_run_only_with_phase_offload(
    framework: str, train: dict[str, int]
) -> None:
    # Their code parks the trainer's state on the host around every rollout on shared GPUs
    # (constraints *-parks-trainer-state*); on a pool of its own the trainer may stay put. The
    # GRPO reference is parked in both, as all three run it.
    common = dict(execution="sync", rollout_gpus=64, rollout_tp=2, train_gpus=64,
                  train_recompute="full", offload_phase=np.array([False, True]),
                  offload_frozen=np.array([True, True]), **train)  # fmt: skip
    assert _runs(framework, "grpo", placement="colocated", **common) == [False, True]
    apart = dict(common, rollout_gpus=32, train_gpus=32, offload_phase=np.array([False]),
                 offload_frozen=np.array([True]))  # fmt: skip
    assert _runs(framework, "grpo", placement="disaggregated", **apart) == [True]


def test_a_colocated_plan_for_nemo_rl_is_ranked_and_exported_with_phase_offload() -> None:
    scenario = read_scenario(SMALL)
    plan = scenario.plan.model_copy(update={"placement": "colocated", "execution": "sync"})
    top = search(scenario.model_copy(update={"plan": plan}), only="nemo-rl")["plans"][0]
    assert top["train"]["offload"]["phase"]
    # A plan fixed but for its offload exports with the offload NeMo-RL's code runs.
    fixed = ["--set", "plan.placement=colocated", "--set", "plan.execution=sync",
             "--set", "plan.rollout.tp=1", "--set", "plan.train.tp=1",
             "--set", "plan.train.zero=3", "--set", "plan.train.recompute=full"]  # fmt: skip
    code, out = invoke("export", SMALL, "--framework", "nemo-rl", *fixed)
    assert code == 0, out


# -- every bundled example and published deployment: the top plan launches -----------------


ONLINE_EXAMPLES = sorted(
    p.name for p in EXAMPLES.glob("*.yaml")
    if "mixed" not in p.name and "fused" not in p.name
)  # fmt: skip
"""The bundled scenarios on one accelerator (the mixed-cluster example is searched per part by
rules.mixed; the fused example fixes Table 9's configuration, which only research systems
claim: its refusal names them)."""


@pytest.mark.parametrize("name", ONLINE_EXAMPLES)
def test_every_bundled_example_has_a_launchable_top_plan(name: str) -> None:
    plan = search(read_scenario(EXAMPLES / name))["plans"][0]
    assert plan["launchable_by"], name


def test_the_fused_example_says_who_claims_its_configuration() -> None:
    code, out = invoke(
        "recommend", str(EXAMPLES / "ppo-qwen2.5-7b-shared-critic-fused-16xh100.yaml")
    )
    assert code == 1
    assert "rlhfuse (partial-code)" in out and "--include-research" in out


@pytest.mark.parametrize("deployment_id", sorted(CATALOG.of("deployment")))
def test_every_deployment_has_a_launchable_top_plan(deployment_id: str) -> None:
    scenario = CATALOG.of("deployment")[deployment_id].scenario  # type: ignore[attr-defined]
    free = scenario.model_copy(update={"plan": type(scenario.plan)()})
    plan = search(free)["plans"][0]
    assert plan["launchable_by"], deployment_id


def test_a_mode_that_refuses_the_fastest_engines_still_finds_a_plain_one() -> None:
    """A disaggregated pool's layouts are shortlisted on a sync probe; NeMo-RL's vLLM runs
    experts wider than its tensor group only with the sync engine, so for its asynchronous
    GRPO the shortlist must keep a plain tensor-parallel engine (the published Qwen3-235B
    one-step-off run: 128 generation and 128 training GPUs)."""
    d = CATALOG.of("deployment")["nemo-rl-qwen3-235b-a22b-grpo-async-1off-256xh100"]
    plan = d.scenario.plan
    own = plan.model_copy(update={"rollout": type(plan.rollout)(gpus=128),
                                  "train": type(plan.train)(gpus=128)})  # fmt: skip
    top = search(d.scenario.model_copy(update={"plan": own}), only="nemo-rl")["plans"][0]
    assert (top["placement"], top["execution"]) == ("disaggregated", "async")
    assert top["rollout"]["gpus"] == 128 and top["rollout"]["ep"] <= top["rollout"]["tp"]


# -- setups whose best plans every runner's export refuses -----------------------------------


def _atlas_setup(
    model: str, accelerator: str, gpus: int, algorithm: str, host_gib: float | None = None
) -> Any:
    """An atlas setup's scenario; `host_gib`: its nodes' host memory, where the test needs
    more than the accelerator record's reference system (or the 2 TB assumed) holds."""
    from rlmguide.rules.atlas import Setup

    data = Setup(model, accelerator, gpus, algorithm).scenario()
    if host_gib is not None:
        data["cluster"]["host_memory_gib_per_node"] = host_gib
    return parsed(data)


def _checked(scenario: Any, **options: Any) -> dict[str, Any]:
    from rlmguide.export.writer import launch_check

    check = launch_check(CATALOG, scenario.workload.algorithm)
    return search(scenario, launch_check=check, **options)


QWEN3_235B_8XA100 = ("qwen3-235b-a22b", "a100-sxm-80gb", 8, "grpo", 8192)
"""Only streamed parameters fit, and only on nodes of 8 TiB of host memory (32 DIMMs of 256
GB): they park 4,379 GiB a node, beyond the 0.8 x 2 TB of the A100 record's DGX A100."""


def test_streamed_parameters_are_written_with_the_cpu_optimizer_they_imply() -> None:
    # Before: the search spelt streaming as optimizer 0 with params, and NeMo-RL's export,
    # which writes policy.dtensor_cfg.cpu_offload from both facts, refused the key's two
    # values (verl's, SkyRL's and ROLL's mappings alike; verl's constraint too).
    plan = _checked(_atlas_setup(*QWEN3_235B_8XA100), only="nemo-rl")["plans"][0]
    assert plan["train"]["offload"] == {
        "phase": True, "optimizer": 1.0, "params": True, "frozen": True,
    }  # fmt: skip
    assert plan["launchable_by"] == ["nemo-rl"]


def test_the_ranking_asks_each_mapped_frameworks_own_ranking() -> None:
    # Before: the best plans were AReaL's alone (FSDP with expert parallelism, which AReaL's
    # allocation refuses, and colocated, which its mapped launch has no entry point for),
    # and the top plan named no framework to launch it with; without them the default
    # search keeps no on-policy plan a released framework runs, but NeMo-RL's own does.
    result = _checked(_atlas_setup(*QWEN3_235B_8XA100))
    assert result["ranked_for"]["framework"] == "nemo-rl"
    assert result["ranked_for"]["why"].endswith("gives and its export writes")
    plan = result["plans"][0]
    assert plan["launchable_by"] == ["nemo-rl"] and plan["frameworks"] == ["nemo-rl"]
    assert "no_launchable_plan" not in result


def test_a_setup_no_released_framework_runs_says_why() -> None:
    # PPO of DeepSeek-V3 on 128 H100s (an atlas row: test_atlas). Its one plan that fit and a
    # released framework ran was ROLL's FSDP2 with expert parallelism, which ROLL cannot build
    # for DeepSeek-V3 (its expert-parallel module reads layers[0].mlp.experts, and the first
    # layers are dense: constraint roll-fsdp2-expert-parallel-on-its-example-models); what
    # fits otherwise lags the policy, which PPO does not allow. The refusal names each mapped
    # framework's own reason. (Until that constraint this setup gave a ranking with no
    # launchable plan and `no_launchable_plan`; PPO of Qwen3-235B-A22B on one node of H20s
    # was that case while an unrecorded host memory went unchecked.)
    with pytest.raises(NoFeasiblePlan) as refused:
        _checked(_atlas_setup("deepseek-v3", "h100-sxm-80gb", 128, "ppo"))
    said = str(refused.value)
    assert said.startswith("every feasible plan a released framework runs lags the policy")
    for framework in MAPPED:
        assert f"{framework}: " in said, framework
