"""Objectives scored and valued apart (Safe-RLHF's reward and cost, survey §2.4.1): each has a
scoring model and a value model of its own. Each objective adds the same scoring pass, critic
pass, critic update and resident models, so every part is linear in their count; the survey's
model lists the passes and trained models the plan runs."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from rlmguide.cost import Needs, evaluate
from rlmguide.cost.survey_iteration import Iteration, Models, stages
from rlmguide.cost.survey_model import SurveyShape
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS
from test_cost_specs import H100, QWEN25_7B, one_plan, workload

PPO = Needs(needs_critic=True)
# a 1.5B-sized scorer keeps it apart from the critic, which has the policy's shape
SCORER = QWEN25_7B.model_copy(update=dict(hidden=1536, heads=12, kv_heads=2, ffn=8960))


def _cost(objectives: int, **plan: object):  # type: ignore[no-untyped-def]
    needs = dataclasses.replace(PPO, objectives=objectives)
    return evaluate(
        H100, QWEN25_7B, workload(prompts_per_step=64), one_plan(**plan), needs=needs,
        reward=SCORER,
    )  # fmt: skip


@pytest.mark.parametrize("part", ["critic", "reward"])
def test_each_objective_adds_one_scoring_and_one_critic_pass(part: str) -> None:
    one, two, three = (_cost(k).assessment_parts[part][0] for k in (1, 2, 3))
    assert two == pytest.approx(2 * one, rel=1e-12)
    assert three == pytest.approx(3 * one, rel=1e-12)
    # the passes the objectives share do not repeat
    assert _cost(2).assessment_parts["reference"][0] == _cost(1).assessment_parts["reference"][0]
    assert _cost(2).assessment_parts["actor"][0] == _cost(1).assessment_parts["actor"][0]


def test_each_objective_adds_one_critic_update() -> None:
    without = evaluate(
        H100, QWEN25_7B, workload(prompts_per_step=64), one_plan(), needs=Needs(), reward=SCORER
    ).stages["training"]
    one, two = (_cost(k).stages["training"] for k in (1, 2))
    critic = one.seconds[0] - without.seconds[0]
    assert critic > 0
    assert two.seconds[0] - one.seconds[0] == pytest.approx(critic, rel=1e-9)
    assert two.work_flop[0] - one.work_flop[0] == pytest.approx(
        one.work_flop[0] - without.work_flop[0], rel=1e-12
    )


def test_each_objective_keeps_one_more_scorer_and_critic_resident() -> None:
    terms = [_cost(k).memory_terms_gib["training"] for k in (1, 2, 3)]
    for term in ("frozen_models", "weights", "optimizer"):
        a, b, c = (t[term][0] for t in terms)
        assert c - b == pytest.approx(b - a, rel=1e-9), term
    # the second scorer is the scorer's bf16 weights over the 8 ZeRO-3 shards
    grown = terms[1]["frozen_models"][0] - terms[0]["frozen_models"][0]
    h, head = SCORER.hidden, SCORER.hidden // SCORER.heads
    attention = h * (SCORER.heads + 2 * SCORER.kv_heads) * head + SCORER.heads * head * h
    # layers, and one vocabulary matrix: a scorer ends in a scalar head, not the logits
    scorer_params = SCORER.layers * (attention + 3 * h * SCORER.ffn) + h * SCORER.vocab
    assert grown == pytest.approx(2 * scorer_params / 8 / 2**30, rel=0.01)


def test_the_step_grows_with_the_objectives() -> None:
    steps = [_cost(k).step_seconds[0] for k in (1, 2)]
    assert steps[1] > steps[0]


def test_a_shared_critic_runs_one_backbone_pass_for_every_objectives_head() -> None:
    one, two = (_cost(k, critic_shared=True) for k in (1, 2))
    head = one.assessment_parts["critic"][0]
    assert two.assessment_parts["critic"][0] == pytest.approx(2 * head, rel=1e-9)
    # the head rides on the actor's recomputed log-probs: far below a separate critic's pass
    assert two.assessment_parts["critic"][0] < 0.01 * _cost(2).assessment_parts["critic"][0]


def test_safe_rlhf_has_two_objectives_and_ppo_one() -> None:
    algorithms = load_catalog(DEFAULT_ROOTS, ("algorithm",)).of("algorithm")
    assert Needs.of(algorithms["safe-rlhf"]).objectives == 2
    assert Needs.of(algorithms["ppo"]).objectives == 1


def test_the_survey_model_lists_a_scorer_and_a_critic_per_objective() -> None:
    shape = SurveyShape.of(QWEN25_7B)
    scorer = SurveyShape.of(SCORER)
    it = Iteration(prompts=64.0, samples=1.0, prompt_tokens=1024.0, response_tokens=4096.0)
    one = Models(policy=shape, reference=shape, reward=scorer, critic=shape)
    two = dataclasses.replace(one, objectives=2)
    assert [p.name for p in two.passes(it)].count("critic") == 2
    assert [r for _, r in two.trained()].count("critic") == 2
    # a shared backbone: one critic pass whatever the objectives
    assert [p.name for p in two.passes(it, shared=True)].count("critic") == 1
    a, b = stages(one, it), stages(two, it)
    reward_and_critic = b.assess_work - a.assess_work
    only = Models(policy=shape, reference=shape)
    assert a.assess_work - stages(only, it).assess_work == pytest.approx(reward_and_critic)
    assert np.isclose(
        b.train_work - a.train_work,
        a.train_work - stages(dataclasses.replace(one, critic=None), it).train_work,
    )
