"""The algorithm's own settings in every export: the side of its KL penalty to the reference
and its clip range, as its record states them (second launch audit, N4 and N6), and what a
framework cannot write said in the export (N8 and AReaL's reward-only KL)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO
from launch_support import catalogs
from rlmguide.rules.scenario import parse_scenario, resolve

from rlmguide.export import Exported, build, script
from rlmguide.export.mapping import unexpressed
from rlmguide.export.startup import KL_COEF
from rlmguide.review import Hardware, review

SMALL = REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml"
GSPO_LOW, GSPO_HIGH = 3e-4, 4e-4
"""GSPO's clip range on its sequence-level ratio (arXiv 2507.18071 §5.1; verl 7aed6b23
examples/gspo_trainer/README.md L19-L20), which every framework defaults to 0.2 instead."""


@cache
def _export(algorithm: str, framework: str, version: str | None = None) -> Exported:
    catalog, mappings = catalogs()
    data = yaml.safe_load(SMALL.read_text())
    data["workload"]["algorithm"] = algorithm
    scenario = parse_scenario(data, algorithm)
    return build(resolve(scenario, catalog.records), catalog, mappings, framework, version)


def _written(algorithm: str, framework: str, version: str | None = None) -> dict[str, Any]:
    return {a.key.lstrip("+"): a.value for a in _export(algorithm, framework, version).arguments}


@pytest.mark.parametrize("version", [None, "b178a3cd"])
@pytest.mark.parametrize(
    "algorithm", ["rloo", "reinforce-plus-plus", "reinforce-plus-plus-baseline"]
)
def test_verl_puts_a_reward_side_kl_in_the_reward(algorithm: str, version: str | None) -> None:
    """RLOO and REINFORCE++ keep the KL in the reward (their records; verl 7aed6b23's own
    examples: use_kl_in_reward=True, use_kl_loss=False). verl's KL loss is off by default
    (_generated_ppo_trainer.yaml L87), so a reward-side launch leaves it unsaid."""
    got = _written(algorithm, "verl", version)
    assert got["algorithm.use_kl_in_reward"] is True
    assert got["algorithm.kl_ctrl.kl_coef"] == KL_COEF
    assert "actor_rollout_ref.actor.use_kl_loss" not in got
    assert "actor_rollout_ref.actor.kl_loss_coef" not in got


@pytest.mark.parametrize("version", [None, "b178a3cd"])
def test_verl_keeps_grpo_kl_in_the_loss(version: str | None) -> None:
    got = _written("grpo", "verl", version)
    assert got["actor_rollout_ref.actor.use_kl_loss"] is True
    assert got["actor_rollout_ref.actor.kl_loss_coef"] == KL_COEF
    assert "algorithm.use_kl_in_reward" not in got


@pytest.mark.parametrize(
    ("framework", "algorithm", "reward", "loss_off"),
    [
        # slime: --kl-coef shapes the REINFORCE++ rewards (loss.py L783-L805 at 624b824a); the
        # loss switch is a store_true left out
        ("slime", "reinforce-plus-plus", {"kl-coef": KL_COEF}, ("use-kl-loss", "kl-loss-coef")),
        # SkyRL: the two switches are exclusive and use_kl_loss defaults to true (config.py
        # L830-L835 at a9564572), so the reward side writes it off
        (
            "skyrl",
            "rloo",
            {"trainer.algorithm.use_kl_in_reward": True, "trainer.algorithm.use_kl_loss": False},
            (),
        ),
        # ROLL: the token-level KL reward at init_kl_coef (base_config.py L535, L563 at 8eb27cc2)
        (
            "roll",
            "reinforce-plus-plus",
            {"add_token_level_kl": True, "init_kl_coef": KL_COEF, "use_kl_loss": False},
            ("kl_loss_coef",),
        ),
    ],
)
def test_the_kl_goes_where_the_record_puts_it(
    framework: str, algorithm: str, reward: dict[str, Any], loss_off: tuple[str, ...]
) -> None:
    got = _written(algorithm, framework)
    assert {k: got.get(k) for k in reward} == reward
    assert not set(loss_off) & set(got)


def test_slime_and_skyrl_keep_grpo_kl_in_the_loss() -> None:
    slime = _written("grpo", "slime")
    assert (slime["use-kl-loss"], slime["kl-loss-coef"]) == (True, KL_COEF)
    assert "kl-coef" not in slime
    skyrl = _written("grpo", "skyrl")
    assert skyrl["trainer.algorithm.use_kl_loss"] is True
    assert "trainer.algorithm.use_kl_in_reward" not in skyrl


def test_a_stated_kl_side_no_key_writes_is_refused() -> None:
    """A mapping with no entry for the record's side cannot write the launch: the KL is not
    left to the framework's default side."""
    facts = {"workload.kl_placement": "reward", "plan.execution": "sync"}
    assert unexpressed(facts, []) == ["workload.kl_placement = reward"]
    assert unexpressed({**facts, "workload.kl_placement": "unstated"}, []) == []


@pytest.mark.parametrize(
    ("framework", "low", "high"),
    [
        (
            "verl",
            "actor_rollout_ref.actor.clip_ratio_low",
            "actor_rollout_ref.actor.clip_ratio_high",
        ),
        ("slime", "eps-clip", "eps-clip-high"),
        ("skyrl", "trainer.algorithm.eps_clip_low", "trainer.algorithm.eps_clip_high"),
        ("openrlhf", "actor.eps_clip_low_high", None),
    ],
)
def test_gspo_writes_its_sequence_level_clip_range(
    framework: str, low: str, high: str | None
) -> None:
    got = _written("gspo", framework)
    if high is None:  # one flag of two values (train_ppo_ray.py L388 at 3c3be623)
        assert got[low] == [GSPO_LOW, GSPO_HIGH]
    else:
        assert (got[low], got[high]) == (GSPO_LOW, GSPO_HIGH)
    # GRPO keeps the framework's PPO default: no clip key at all
    assert low not in _written("grpo", framework)


def test_openrlhf_older_mapping_writes_the_gspo_pair() -> None:
    assert _written("gspo", "openrlhf", "c250c21a")["eps_clip_low_high"] == [GSPO_LOW, GSPO_HIGH]


def test_what_a_framework_cannot_write_is_said_in_the_export() -> None:
    """slime has no overlong-penalty key (624b824a): its DAPO export says the reward function
    must carry it. AReaL's only KL is a reward penalty (actor.py L211 at fee938ea): its GRPO
    export says so, and its PPO export (a reward-side KL) says nothing."""
    dapo = _export("dapo", "slime")
    assert any("overlong" in note for note in dapo.departures)
    assert "# Departs from the algorithm's record: slime at 624b824a" in script(dapo, "t", "p")
    assert _export("grpo", "slime").departures == []
    grpo = _export("grpo", "areal")
    assert any("no KL loss" in note for note in grpo.departures)
    assert _written("grpo", "areal")["actor.kl_ctl"] == KL_COEF
    assert grpo.as_json()["departures"] == grpo.departures


def _reviewed(done: Exported, tmp_path: Path) -> dict[str, dict[str, Any]]:
    path = tmp_path / "launch.sh"
    path.write_text(script(done, "test", "qwen2.5-7b"))
    got = review(path, hardware=Hardware("h100-sxm-80gb"), policy="qwen2.5-7b")
    return {row["setting"]: row for row in got["algorithm_settings"]}


def test_review_reads_the_kl_side_and_clip_range_back(tmp_path: Path) -> None:
    rloo = _reviewed(_export("rloo", "verl"), tmp_path)["KL penalty to the reference"]
    assert (rloo["launch"], rloo["record"], rloo["verdict"]) == (
        "reward",
        "reward",
        "as the record",
    )
    gspo = _reviewed(_export("gspo", "skyrl"), tmp_path)
    assert (gspo["ratio clip below 1"]["launch"], gspo["ratio clip above 1"]["launch"]) == (
        GSPO_LOW,
        GSPO_HIGH,
    )
    assert gspo["ratio clip below 1"]["verdict"] == "as the record"


def test_review_flags_a_launch_that_puts_the_kl_on_the_other_side(tmp_path: Path) -> None:
    """The launch the audit read (b02, verl): RLOO with the KL in the loss."""
    text = script(_export("rloo", "verl"), "test", "qwen2.5-7b")
    text = text.replace(
        "algorithm.use_kl_in_reward=True", "actor_rollout_ref.actor.use_kl_loss=True"
    )
    path = tmp_path / "launch.sh"
    path.write_text(text)
    got = review(path, hardware=Hardware("h100-sxm-80gb"), policy="qwen2.5-7b")
    (row,) = [r for r in got["algorithm_settings"] if r["setting"] == "KL penalty to the reference"]
    assert (row["launch"], row["record"]) == ("loss", "reward")
    assert row["verdict"].startswith("differs from the record")
