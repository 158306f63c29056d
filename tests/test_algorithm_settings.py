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
from rlmguide.export.render import DEPARTURE_LINE
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
    assert f"{DEPARTURE_LINE} slime at 624b824a" in script(dapo, "t", "p")
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


def test_areal_kl_departure_holds_only_where_the_launch_applies_a_kl(tmp_path: Path) -> None:
    """audit6's rv/r5: an AReaL GRPO launch at kl_ctl 0 (its base config's default) has no KL,
    so no "this launch applies actor.kl_ctl there"; the export (kl_ctl 0.001) keeps it."""
    text = script(_export("grpo", "areal"), "test", "qwen2.5-7b")
    assert f"actor.kl_ctl={KL_COEF}" in text
    for launched, said in ((text, True), (text.replace(f"actor.kl_ctl={KL_COEF}", ""), False)):
        path = tmp_path / "launch.sh"
        path.write_text(launched)
        got = review(path, hardware=Hardware("h100-sxm-80gb"), policy="qwen2.5-7b")
        notes = [r["verdict"] for r in got["algorithm_settings"] if r["setting"] == "departure"]
        assert any("no KL loss" in note for note in notes) == said, notes


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


# The KL estimator the record fixes (GRPO's k3: DeepSeekMath eq. 4; a reward-side k1: InstructGPT
# eq. 2, RLOO, the REINFORCE++ paper), written on the side it is applied; the frameworks'
# defaults differ (slime's --kl-loss-type k1, arguments.py L933-L939 at 624b824a; verl's KL loss
# low_var_kl = k3 and reward kl = k1, _generated_ppo_trainer.yaml L91, L771 at 7aed6b23)
@pytest.mark.parametrize(
    ("framework", "version", "algorithm", "key", "value"),
    [
        ("verl", None, "grpo", "actor_rollout_ref.actor.kl_loss_type", "k3"),
        ("verl", "b178a3cd", "grpo", "actor_rollout_ref.actor.kl_loss_type", "k3"),
        ("verl", None, "rloo", "algorithm.kl_penalty", "k1"),
        ("verl", "b178a3cd", "reinforce-plus-plus", "algorithm.kl_penalty", "k1"),
        ("slime", None, "grpo", "kl-loss-type", "k3"),
        ("slime", None, "reinforce-plus-plus", "kl-loss-type", "k1"),
        ("skyrl", None, "grpo", "trainer.algorithm.kl_estimator_type", "k3"),
        ("skyrl", None, "rloo", "trainer.algorithm.kl_estimator_type", "k1"),
        ("nemo-rl", None, "grpo", "loss_fn.reference_policy_kl_type", "k3"),
        ("nemo-rl", None, "reinforce-plus-plus", "loss_fn.reference_policy_kl_type", "k1"),
        ("roll", None, "reinforce-plus-plus", "kl_penalty", "kl"),
        ("areal", None, "grpo", "actor.kl_estimator", "k3"),
        ("areal", "4aef98d8", "ppo", "actor.kl_estimator", "k1"),
        ("openrlhf", "c250c21a", "rloo", "kl_estimator", "k1"),
    ],
)
def test_the_kl_estimator_the_record_fixes_is_written(
    framework: str, version: str | None, algorithm: str, key: str, value: str
) -> None:
    got = _written(algorithm, framework, version)
    assert got[key] == value
    # the other side's key stays unsaid (verl: no kl_loss_type where the KL is a reward)
    if framework == "verl":
        other = (
            "algorithm.kl_penalty"
            if algorithm == "grpo"
            else "actor_rollout_ref.actor.kl_loss_type"
        )
        assert other not in got


def test_roll_keeps_its_k3_kl_loss_without_a_key() -> None:
    """ROLL's KL loss is k3 in code (roll/pipeline/base_worker.py L255-L256 at 8eb27cc2): a
    GRPO launch writes no estimator and is not refused; the mapping holds k3 as implied."""
    got = _written("grpo", "roll")
    assert "kl_penalty" not in got and got["use_kl_loss"] is True


def test_a_stated_estimator_no_key_writes_is_refused() -> None:
    facts = {"workload.kl_estimator": "k3", "plan.execution": "sync"}
    assert unexpressed(facts, []) == ["workload.kl_estimator = k3"]
    assert unexpressed(facts, [], {"workload.kl_estimator": "k3"}) == []
    assert unexpressed(facts, [], {"workload.kl_estimator": "k1"}) == ["workload.kl_estimator = k3"]
    assert unexpressed({**facts, "workload.kl_estimator": "unstated"}, []) == []


DAPO_LOW, DAPO_HIGH = 0.2, 0.28
"""DAPO's clip range (arXiv 2503.14476, the training details: ε_low 0.2, ε_high 0.28), now in
its record rather than in each mapping."""


@pytest.mark.parametrize(
    ("framework", "version", "low", "high"),
    [
        (
            "verl",
            None,
            "actor_rollout_ref.actor.clip_ratio_low",
            "actor_rollout_ref.actor.clip_ratio_high",
        ),
        (
            "verl",
            "b178a3cd",
            "actor_rollout_ref.actor.clip_ratio_low",
            "actor_rollout_ref.actor.clip_ratio_high",
        ),
        ("slime", None, "eps-clip", "eps-clip-high"),
        ("skyrl", None, "trainer.algorithm.eps_clip_low", "trainer.algorithm.eps_clip_high"),
        ("nemo-rl", None, "loss_fn.ratio_clip_min", "loss_fn.ratio_clip_max"),
        # both AReaL base configs set eps_clip 0.4 (examples/math/gsm8k_grpo.yaml L69 at fee938e,
        # L64 at 4aef98d8): the key exists there, so no + (Hydra refuses + on an existing key)
        ("areal", None, "actor.eps_clip", "+actor.eps_clip_higher"),
        ("areal", "4aef98d8", "actor.eps_clip", "+actor.eps_clip_higher"),
        ("openrlhf", None, "actor.eps_clip_low_high", None),
        ("openrlhf", "c250c21a", "eps_clip_low_high", None),
    ],
)
def test_dapo_writes_the_clip_range_of_its_record(
    framework: str, version: str | None, low: str, high: str | None
) -> None:
    got = {a.key: a.value for a in _export("dapo", framework, version).arguments}
    if high is None:
        assert got[low] == [DAPO_LOW, DAPO_HIGH]
    else:
        assert (got[low], got[high]) == (DAPO_LOW, DAPO_HIGH)


def test_nemo_rl_writes_gspo_and_plain_reinforce_plus_plus() -> None:
    """GSPO as NeMo-RL's recipe runs it (grpo-gspo-deepscaler-1.5b-8K.yaml L9-L10 at 7ea279ab)
    at the record's clip range; REINFORCE++ turns off the base config's minus_baseline (L43),
    which would otherwise run the -baseline variant."""
    gspo = _written("gspo", "nemo-rl")
    assert gspo["loss_fn.sequence_level_importance_ratios"] is True
    assert gspo["loss_fn.token_level_loss"] is False
    assert (gspo["loss_fn.ratio_clip_min"], gspo["loss_fn.ratio_clip_max"]) == (GSPO_LOW, GSPO_HIGH)
    plain = _written("reinforce-plus-plus", "nemo-rl")
    assert plain["grpo.adv_estimator.name"] == "reinforce_plus_plus"
    assert plain["grpo.adv_estimator.minus_baseline"] is False
    assert plain["loss_fn.use_kl_in_reward"] is True
    baseline = _written("reinforce-plus-plus-baseline", "nemo-rl")
    assert baseline["grpo.adv_estimator.minus_baseline"] is True


def _read(text: str, tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "launch.sh"
    path.write_text(text)
    return review(path, hardware=Hardware("h100-sxm-80gb"), policy="qwen2.5-7b")


def _why(got: dict[str, Any]) -> str:
    (row,) = [a for a in got["assumed"] if a["field"] == "workload.algorithm"]
    return row["why"]


@pytest.mark.parametrize(
    ("framework", "version", "algorithm"),
    [
        (f, v, a)
        for f, v in [
            ("verl", None),
            ("openrlhf", None),
            ("openrlhf", "c250c21a"),
            ("slime", None),
            ("nemo-rl", None),
            ("skyrl", None),
            ("areal", None),
        ]
        for a in ("grpo", "dapo", "gspo")
        if (f, a) != ("areal", "gspo")  # AReaL's mapping has no GSPO (actor.reward_norm)
    ],
)
def test_review_tells_dapo_and_gspo_from_grpo(
    framework: str, version: str | None, algorithm: str, tmp_path: Path
) -> None:
    """An export reads back as its algorithm wherever the framework spells the variants with
    one estimator (NeMo-RL's and slime's DAPO read as GRPO before), and its estimator too."""
    got = _read(script(_export(algorithm, framework, version), "test", "qwen2.5-7b"), tmp_path)
    assert got["scenario"]["workload"]["algorithm"] == algorithm
    rows = {r["setting"]: r for r in got["algorithm_settings"]}
    if algorithm == "grpo" and framework != "areal":
        assert rows["estimator of that KL"]["launch"] == "k3"


def test_review_names_what_singles_dapo_out_and_what_departs(tmp_path: Path) -> None:
    """NeMo-RL's DAPO is its GRPO with switches: review names the switches that tell it. A
    clip-higher left at 0.2 is a setting, not the algorithm's identity: the launch still
    reads as DAPO and the clip row says it differs from the record."""
    text = script(_export("dapo", "nemo-rl"), "test", "qwen2.5-7b")
    assert "grpo.use_dynamic_sampling=True" in _why(_read(text, tmp_path))
    got = _read(text.replace("loss_fn.ratio_clip_max=0.28", "loss_fn.ratio_clip_max=0.2"), tmp_path)
    assert got["scenario"]["workload"]["algorithm"] == "dapo"
    (row,) = [r for r in got["algorithm_settings"] if r["setting"] == "ratio clip above 1"]
    assert (row["launch"], row["record"]) == (0.2, DAPO_HIGH)
    assert row["verdict"].startswith("differs from the record")


def test_slime_without_the_token_level_loss_is_not_dapo(tmp_path: Path) -> None:
    """DAPO's objective is token-level (its paper's eq. 8); slime's loss is the sequence mean
    unless --calculate-per-token-loss (a store_true switch, arguments.py L879 at 624b824a,
    recorded as its default): the filter and clip-higher alone are GRPO with DAPO's
    settings, as tests/test_review.py reads run-deepseek-r1.sh."""
    text = script(_export("dapo", "slime"), "test", "qwen2.5-7b")
    got = _read(text.replace("    --calculate-per-token-loss \\\n", ""), tmp_path)
    assert got["scenario"]["workload"]["algorithm"] == "grpo"
    assert got["ambiguous"]["workload.algorithm"] == ["grpo"]


def test_review_reads_a_grpo_with_one_dapo_switch_as_grpo(tmp_path: Path) -> None:
    """NeMo-RL's GRPO with dynamic sampling on but the overlong shaping left off (the base
    config's grpo.reward_shaping.enabled false, L31 at 7ea279ab) is not DAPO; nor GSPO, whose
    sequence-level ratio the base config leaves off (L101-L102)."""
    text = script(_export("grpo", "nemo-rl"), "test", "qwen2.5-7b")
    text = text.replace(
        "grpo.use_leave_one_out_baseline=False",
        "grpo.use_leave_one_out_baseline=False \\\n    grpo.use_dynamic_sampling=True",
    )
    got = _read(text, tmp_path)
    assert got["scenario"]["workload"]["algorithm"] == "grpo"
    assert _why(got).startswith("its loss is not gspo's (loss_fn.sequence_level_importance_ratios")


def test_review_cannot_tell_a_launch_with_two_variants_keys(tmp_path: Path) -> None:
    """OpenRLHF's group_norm is GRPO, DAPO or GSPO: a launch with DAPO's dynamic filtering
    and GSPO's loss has one own key of each, and review says it cannot tell, not a name."""
    text = script(_export("grpo", "openrlhf"), "test", "qwen2.5-7b")
    text = text.replace(
        "--algo.kl.use_loss \\\n",
        "--algo.kl.use_loss \\\n    --algo.dynamic_filtering_enable \\\n"
        "    --actor.policy_loss_type gspo \\\n",
    )
    assert "--actor.policy_loss_type gspo" in text
    assert _why(_read(text, tmp_path)).startswith("GRPO-family, cannot tell")


@pytest.mark.parametrize(
    ("mapping", "side"),
    [
        ("verl-0.8.0", "keeps verl's KL loss"),
        ("verl-0.7.0-125-gb178a3cd5", "keeps verl's KL loss"),
        ("openrlhf-0.11.0", "a penalty in the reward"),
        ("openrlhf-0.8.9.post1-5-gc250c21a", "a penalty in the reward"),
        ("slime-0.3.1-38-g624b824", "writes slime's KL loss"),
        ("skyrl-0.4.0-516-ga9564572e", "keeps SkyRL's KL loss"),
        ("roll-0.3.0-9-g8eb27cc2", "writes ROLL's KL loss"),
        ("nemo-rl-0.1.0-1338-g7ea279abf", "keeps NeMo-RL's KL loss"),
        ("areal-2.0.0", "only a penalty in the token rewards"),
        ("areal-1.0.4-17-g4aef98d8d", "only a penalty in the token rewards"),
    ],
)
def test_an_export_says_which_kl_side_it_takes_when_the_record_states_none(
    mapping: str, side: str
) -> None:
    """GiGPO, VinePPO, PRIME, RTO, GBMPO, Kimi k1.5 and Online DPO keep a reference with no
    KL side their sources state: an export names the framework's default side in its header
    (Mapping.departures) instead of choosing silently; a stated side says nothing."""
    from rlmguide.export.mapping import departures

    record = catalogs()[1][mapping]
    (note,) = departures(record, {"workload.kl_placement": "unstated", "workload.algorithm": "x"})
    assert note.startswith("the algorithm's record states no side") and side in note
    stated = departures(record, {"workload.kl_placement": "reward", "workload.algorithm": "x"})
    assert not any("states no side" in n for n in stated)


@pytest.mark.parametrize(
    ("framework", "version", "algorithm", "side"),
    [
        # the fifth audit's n01/n04: GRPO's loss-side KL, use_kl_in_reward written false
        # (examples/configs/grpo_math_1B.yaml L104 at 7ea279ab)
        ("nemo-rl", None, "grpo", "loss"),
        # n08/n09/n11: PPO and REINFORCE++ keep the reward-side default, the loss switch
        # off (train_ppo_ray.py L484-L486 at 3c3be623, L390 at c250c21a)
        ("openrlhf", None, "ppo", "reward"),
        ("openrlhf", "c250c21a", "ppo", "reward"),
        ("openrlhf", None, "reinforce-plus-plus", "reward"),
        # read correctly before: they must stay so
        ("nemo-rl", None, "ppo", "reward"),
        ("openrlhf", None, "grpo", "loss"),
        ("openrlhf", "c250c21a", "grpo", "loss"),
    ],
)
def test_review_reads_the_kl_side_every_export_writes(
    framework: str, version: str | None, algorithm: str, side: str, tmp_path: Path
) -> None:
    row = _reviewed(_export(algorithm, framework, version), tmp_path)["KL penalty to the reference"]
    assert (row["launch"], row["record"], row["verdict"]) == (side, side, "as the record")


def test_openrlhf_without_a_reference_is_not_read_as_a_reward_penalty(tmp_path: Path) -> None:
    """A zero coefficient starts no reference (train(), L40-L44 at 3c3be623): the loss
    switch left off says nothing of a KL side then."""
    text = script(_export("ppo", "openrlhf"), "test", "qwen2.5-7b")
    assert f"--algo.kl.init_coef {KL_COEF}" in text
    path = tmp_path / "launch.sh"
    path.write_text(text.replace(f"--algo.kl.init_coef {KL_COEF}", "--algo.kl.init_coef 0"))
    got = review(path, hardware=Hardware("h100-sxm-80gb"), policy="qwen2.5-7b")
    rows = {r["setting"]: r for r in got["algorithm_settings"]}
    assert rows["KL penalty to the reference"]["launch"] is None


def test_a_clip_the_record_leaves_unstated_shows_no_record_value(tmp_path: Path) -> None:
    """NeMo-RL's PPO export writes the 0.2 clip (ppo_math_1B.yaml); PPO's record states no
    clip-higher: the row shows none, not a 0 (the fifth audit's n03)."""
    row = _reviewed(_export("ppo", "nemo-rl"), tmp_path)["ratio clip above 1"]
    assert (row["launch"], row["record"], row["verdict"]) == (0.2, None, "the record states none")
