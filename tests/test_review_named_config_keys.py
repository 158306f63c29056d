"""The keys of the config an AReaL launch names (`--config examples/math/gsm8k_grpo.yaml`) are
the user's own words, as much as the overrides after it: review lists the ones it does not map.
It listed only the overrides, so a key that changes memory in the YAML (AReaL's actor.lora_rank)
went unmentioned."""

from __future__ import annotations

from pathlib import Path

from launch_support import review_json

LAUNCH = (
    Path(__file__).parent / "fixtures" / "review" / "wild" / "areal-4aef98d" / "run_gsm8k_grpo.sh"
)


def test_the_named_configs_unmapped_keys_are_listed() -> None:
    got = review_json(LAUNCH, "--accelerator", "h100-sxm-80gb")
    unmapped = {u["key"] for u in got["unmapped"]}
    assert {"experiment_name", "actor.reward_norm.std_level"} <= unmapped
    # the keys review reads stay out of the list
    assert not {"actor.path", "gconfig.n_samples", "actor.backend"} & unmapped
