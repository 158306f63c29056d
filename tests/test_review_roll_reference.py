"""ROLL builds the reference where use_kl_loss is on or init_kl_coef > 0
(roll/configs/base_config.py L654-L656 at 8eb27cc2). Review read it from init_kl_coef alone,
so a launch with the KL loss on and init_kl_coef 0 (its qwen3.5-27B rlvr_megatron_80GB.yaml)
read as loading no reference: its reference keys went unread, and review said the model was
left out of the estimate."""

from __future__ import annotations

from pathlib import Path

from launch_support import review_json

WILD = Path(__file__).parent / "fixtures" / "review" / "wild" / "roll-8eb27cc"


def test_a_kl_loss_with_no_kl_coefficient_loads_the_reference(tmp_path: Path) -> None:
    recipe = tmp_path / "rlvr.yaml"
    text = (WILD / "qwen2.5-7b-rlvr_rollout_mock_dump.yaml").read_text()
    recipe.write_text(text + "\nuse_kl_loss: true\ninit_kl_coef: 0.0\n")
    got = review_json(recipe, "--accelerator", "h100-sxm-80gb")
    read = {(u["key"], u["field"]): u["field_value"] for u in got["understood"]}
    assert read[("use_kl_loss", "workload.needs_reference")] is True
    assert not any("reference.device_mapping" in m["setting"] for m in got["memory_keys"])
