"""Launches the second held-out audit found would stop at start-up or be read wrong: a
checkpoint with its own code (N1), frameworks whose install has no AMD path (N7), the older
AReaL mapping's engine context (N2), and review's mapping and node count (N9, N10)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import record_roots
from rlmguide.rules import RECOMMEND_KINDS

from rlmguide import api
from rlmguide.errors import RequestFailed
from rlmguide.export.startup import binding, compile_checks

# the audit's b11: GRPO on Moonlight-16B-A3B over 3 nodes of H800
MOONLIGHT = """
cluster: {accelerator: h800-sxm-80gb, nodes: 3, gpus_per_node: 8}
models: {policy: moonlight-16b-a3b, reward: verifier}
workload: {algorithm: grpo, prompts_per_step: 96, samples_per_prompt: 8, prompt_tokens: 1024,
           response_tokens: 2048, max_response_tokens: 6144, minibatches_per_step: 3}
"""
QWEN = MOONLIGHT.replace("moonlight-16b-a3b", "qwen3-8b")
VERL_VERSIONS = ("verl-0.8.0", "verl-0.7.0-125-gb178a3cd5")
TRUST = ("actor_rollout_ref.model.trust_remote_code", "data.trust_remote_code")


def scenario(text: str, tmp_path: Path, name: str = "s.yaml") -> api.Scenario:
    path = tmp_path / name
    path.write_text(text)
    return api.Scenario.from_yaml(path)


@pytest.mark.parametrize("version", VERL_VERSIONS)
def test_verl_turns_trust_remote_code_on_for_a_checkpoint_with_its_own_code(
    version: str, tmp_path: Path
) -> None:
    """Moonlight's tokenizer is Python code in its checkpoint; verl's flags default to false
    (_generated_ppo_trainer.yaml L380 and L466 at 7aed6b23, L300 and L362 at b178a3cd)."""
    written = api.export(scenario(MOONLIGHT, tmp_path), "verl", version=version).script
    for key in TRUST:
        assert f"{key}=True" in written
    plain = api.export(scenario(QWEN, tmp_path, "q.yaml"), "verl", version=version).script
    assert "trust_remote_code" not in plain


# the audit's b05: GRPO on Qwen2.5-72B over 6 nodes of MI300X
MI300X = """
cluster: {accelerator: mi300x-192gb, nodes: 6, gpus_per_node: 8}
models: {policy: qwen2.5-72b, reward: verifier}
workload: {algorithm: grpo, prompts_per_step: 192, samples_per_prompt: 8, prompt_tokens: 1024,
           response_tokens: 3072, max_response_tokens: 8192, minibatches_per_step: 4}
"""
CUDA_ONLY = {
    "nemo-rl": "nemo-rl-installs-cuda-only-wheels",
    "skyrl": "skyrl-uv-launch-installs-cuda-only-wheels",
}


@pytest.mark.parametrize("framework", sorted(CUDA_ONLY))
def test_a_launch_that_installs_cuda_wheels_is_refused_on_amd(
    framework: str, tmp_path: Path
) -> None:
    """NeMo-RL's `uv run` and SkyRL's `uv run --isolated` resolve CUDA 13 wheels (pyproject.toml
    at the mappings' commits): on MI300X the export is refused with the record that says so,
    and on H100 the same workload exports."""
    with pytest.raises(RequestFailed, match=CUDA_ONLY[framework]):
        api.export(scenario(MI300X, tmp_path), framework)
    nvidia = MI300X.replace("mi300x-192gb", "h200-sxm-141gb")
    assert api.export(scenario(nvidia, tmp_path, "h.yaml"), framework).script


def test_frameworks_with_a_rocm_path_still_launch_on_amd(tmp_path: Path) -> None:
    """verl (docker/rocm/Dockerfile.rocm at 7aed6b23) and ROLL (docker/Dockerfile.torch2100.vllm.AMD
    at 8eb27cc2) ship ROCm images: the vendor check leaves them launchable on MI300X."""
    result = api.recommend(scenario(MI300X, tmp_path), top=1)
    launchable = result.best.launchable_by
    assert {"verl", "roll"} <= set(launchable)
    assert not set(CUDA_ONLY) & set(launchable)


# the audit's b07: GRPO on gpt-oss-20b with 64k responses over 8 H100
LONG = """
cluster: {accelerator: h100-sxm-80gb, nodes: 1, gpus_per_node: 8}
models: {policy: gpt-oss-20b, reward: verifier}
workload: {algorithm: grpo, prompts_per_step: 32, samples_per_prompt: 8, prompt_tokens: 1024,
           response_tokens: 16384, max_response_tokens: 65536, minibatches_per_step: 2}
"""
AREAL_OLD = "areal-1.0.4-17-g4aef98d8d"


def test_the_older_areal_writes_the_engine_context_and_the_request_cap(tmp_path: Path) -> None:
    """At 4aef98d8 a request is capped at gconfig.max_tokens (32,768 by default, cli_args.py
    L175-L180) less its prompt (remote_inf_engine.py L748-L760), and SGLang's context_length is
    32,768 (gsm8k_grpo.yaml L116): both are written for 1,024 + 65,536 tokens, the context with
    SGLang's two-token margin."""
    done = api.export(scenario(LONG, tmp_path), "areal", version=AREAL_OLD)
    assert "+gconfig.max_tokens=66560" in done.script
    assert "sglang.context_length=66562" in done.script


def test_the_engine_context_check_binds_the_older_areal() -> None:
    """The start-up check reads sglang.context_length on the 4aef98d8 mapping too, so a launch
    that leaves it at 32,768 is refused and reviewed as one that stops."""
    catalog = load_catalog(record_roots(), RECOMMEND_KINDS)
    mapping = load_catalog(record_roots(), ("mapping",)).of("mapping")[AREAL_OLD]
    assert mapping.reads["launch.engine_context_tokens"] == "sglang.context_length"
    assert mapping.config_defaults["sglang.context_length"] == 32768
    bound = binding(compile_checks(catalog)[0], mapping, "megatron-lm", "sglang")
    assert "areal-sglang-context-holds-the-longest-request" in {c.id for c in bound}


REVIEW = Path(__file__).parent / "fixtures" / "review"


def test_review_reads_an_export_with_the_mapping_its_header_names(tmp_path: Path) -> None:
    """The audit's b03 export at 4aef98d8 (made before that mapping wrote the engine context):
    read with 2.0.0's mapping it was judged by 2.0.0's Ray-scheduler check and 2.0.0's
    max_tokens default (2,048); read with its own, the context check alone trips and
    gconfig.max_tokens is 4aef98d8's 32,768."""
    from rlmguide.review import Hardware, review

    path = REVIEW / "audit2-b03-dapo-areal-4aef98d.sh"
    got = review(path, "areal", "qwen2.5-32b", Hardware("h100-sxm-80gb"))
    assert got["mapping"] == AREAL_OLD
    assert got["mapping_from"] == "named by the file's header"
    assert [c["constraint"] for c in got["startup"]] == [
        "areal-sglang-context-holds-the-longest-request"
    ]
    read = {u["key"].lstrip("+"): u["value"] for u in got["understood"]}
    assert read["gconfig.max_tokens"] == 32768
    # without the header the keys choose, and the reading says so
    bare = tmp_path / "bare.sh"
    bare.write_text(path.read_text().replace("# Mapping ", "# (was) "))
    keys = review(bare, "areal", "qwen2.5-32b", Hardware("h100-sxm-80gb"))
    assert keys["mapping_from"].startswith("no header names a mapping")


def test_review_takes_the_nodes_a_launch_names_of_four_gpus(tmp_path: Path) -> None:
    """A verl launch on GB200 trays says trainer.nnodes=4 trainer.n_gpus_per_node=4: review
    read it as 2 nodes of 8 (a node was 8 GPUs unless a pool declared more)."""
    from rlmguide.review import Hardware, review

    gb200 = MOONLIGHT.replace(
        "h800-sxm-80gb, nodes: 3, gpus_per_node: 8", "gb200-186gb, nodes: 4, gpus_per_node: 4"
    ).replace("moonlight-16b-a3b", "qwen3-8b")
    text = api.export(scenario(gb200, tmp_path), "verl").script
    assert "trainer.nnodes=4" in text and "trainer.n_gpus_per_node=4" in text
    path = tmp_path / "gb200.sh"
    path.write_text(text)
    got = review(path, "verl", "qwen3-8b", Hardware("gb200-186gb"))
    assert got["scenario"]["cluster"]["nodes"] == 4
    assert got["scenario"]["cluster"]["gpus_per_node"] == 4
