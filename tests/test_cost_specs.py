"""Published architectures and accelerators for the cost-core tests, built inline (the YAML
records are being written elsewhere), with the model figures checked by hand.

Other test_cost_* modules import the specs and plan helpers from here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
from rlmguide.cost.architecture import ModelFigures
from rlmguide.cost.plans import PlanTable
from rlmguide.cost.units import GIB, gbits_per_s, gbytes_per_s, gib_to_bytes, tbytes_per_s, tflops
from rlmguide.kb.schema import Workload
from rlmguide.kb.schema.specs import AcceleratorFigures, Architecture

# Qwen2.5-7B config.json: 28 layers, hidden 3584, 28 heads, 4 KV heads, FFN 18944,
# vocab 152064, untied embeddings, q/k/v biases.
QWEN25_7B = Architecture(
    layers=28, hidden=3584, heads=28, kv_heads=4, ffn=18944, vocab=152064,
    max_context_tokens=131072, qkv_bias=True,
)  # fmt: skip
# Llama-3.1-70B: 80 layers, hidden 8192, 64 heads, 8 KV heads, FFN 28672, vocab 128256.
LLAMA31_70B = Architecture(
    layers=80, hidden=8192, heads=64, kv_heads=8, ffn=28672, vocab=128256,
    max_context_tokens=131072,
)  # fmt: skip
# Qwen3-30B-A3B: 48 layers, hidden 2048, 32 heads of 128, 4 KV heads, 128 experts, top-8,
# expert FFN 768, vocab 151936.
QWEN3_30B_A3B = Architecture(
    layers=48, hidden=2048, heads=32, kv_heads=4, head_dim=128, ffn=6144, vocab=151936,
    max_context_tokens=40960,
    moe=dict(experts=128, experts_per_token=8, shared_experts=0, expert_ffn=768, dense_layers=0),
)  # fmt: skip
# DeepSeek-V3: MLA (KV latent 512 + RoPE key 64) and 256 routed experts, top-8, 1 shared.
DEEPSEEK_V3 = Architecture(
    layers=61, hidden=7168, heads=128, kv_heads=128, ffn=18432, vocab=129280,
    max_context_tokens=163840,
    mla=dict(q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64,
             v_head_dim=128),
    moe=dict(experts=256, experts_per_token=8, shared_experts=1, expert_ffn=2048, dense_layers=3),
)  # fmt: skip

# H100 SXM datasheet: 80 GB HBM3 at 3.35 TB/s, 989 dense bf16 TFLOP/s, 900 GB/s NVLink
# (aggregate bidirectional), HGX 8-GPU board, one 400 Gbit/s NIC per GPU.
H100 = AcceleratorFigures(
    memory_gib=80, hbm_tbytes_per_s=3.35, bf16_dense_tflops=989, scale_up_gbytes_per_s=900,
    scale_up_domain_gpus=8, scale_out_gbits_per_s=400,
)  # fmt: skip
# A100 SXM 80GB: 2.039 TB/s, 312 bf16 TFLOP/s, 600 GB/s NVLink, 200 Gbit/s HDR per GPU.
A100 = AcceleratorFigures(
    memory_gib=80, hbm_tbytes_per_s=2.039, bf16_dense_tflops=312, scale_up_gbytes_per_s=600,
    scale_up_domain_gpus=8, scale_out_gbits_per_s=200,
)  # fmt: skip

QWEN7B_PARAMS = 7_615_616_512  # checked by hand in test_schema.py


def workload(**changes: int) -> Workload:
    base = dict(
        prompts_per_step=512, samples_per_prompt=16, prompt_tokens=1024, response_tokens=4096,
        max_response_tokens=16384, minibatches_per_step=4, epochs=1,
    )  # fmt: skip
    base.update(changes)
    return Workload(**base)


def one_plan(**fields: object) -> PlanTable:
    """A one-row table; colocated sync on 8 GPUs unless told otherwise."""
    base: dict[str, object] = dict(
        placement="colocated", execution="sync", rollout_gpus=8, rollout_tp=1, train_gpus=8,
        train_tp=1, train_zero=3, train_recompute="full",
    )  # fmt: skip
    base.update(fields)
    return PlanTable.from_arrays(**base)


def valid_tp(arch: Architecture, limit: int = 8) -> list[int]:
    out = []
    for t in (1, 2, 4, 8, 16):
        kv_ok = arch.mla is not None or arch.kv_heads % t == 0 or t % arch.kv_heads == 0
        if t <= limit and arch.heads % t == 0 and kv_ok:
            out.append(t)
    return out


def valid_pp(arch: Architecture, limit: int = 8) -> list[int]:
    return [p for p in range(1, limit + 1) if arch.layers % p == 0]


def random_plans(seed: int, arch: Architecture, n: int, max_dp: int = 8) -> PlanTable:
    """n valid plans of every placement and execution mode (numpy draws from `seed`)."""
    rng = np.random.default_rng(seed)
    experts = arch.moe.experts if arch.moe else 1
    tps, pps = valid_tp(arch), valid_pp(arch, 4)
    cols: dict[str, list[object]] = {k: [] for k in (
        "placement", "execution", "staleness", "prefix_caching", "rollout_gpus", "rollout_tp",
        "rollout_pp", "rollout_ep", "train_gpus", "train_tp", "train_pp", "train_cp",
        "train_ep", "train_zero", "train_recompute",
    )}  # fmt: skip
    dps = [d for d in (1, 2, 4, 8, 16) if d <= max_dp]
    while len(cols["placement"]) < n:
        r_tp, r_pp, r_dp = (int(rng.choice(x)) for x in (tps, pps, dps))
        r_ep = int(
            rng.choice([e for e in (1, 2, 4, 8) if experts % e == 0 and (r_tp * r_dp) % e == 0])
        )
        r_ep = r_ep if arch.moe else 1
        colocated = bool(rng.integers(2))
        t_tp, t_pp, t_cp = int(rng.choice(tps)), int(rng.choice(pps)), int(rng.choice([1, 2]))
        if colocated:
            gpus = r_tp * r_pp * r_dp
            if gpus % (t_tp * t_pp * t_cp):
                continue
            t_dp = gpus // (t_tp * t_pp * t_cp)
            execution = str(rng.choice(["sync", "partial-rollout"]))
        else:
            t_dp = int(rng.choice(dps))
            execution = str(rng.choice(["sync", "one-step-off", "async", "partial-rollout"]))
        t_ep_choices = [e for e in (1, 2, 4, 8) if experts % e == 0 and (t_dp * t_cp) % e == 0]
        t_ep = int(rng.choice(t_ep_choices)) if arch.moe else 1
        values = dict(
            placement="colocated" if colocated else "disaggregated", execution=execution,
            staleness=int(rng.integers(1, 5)), prefix_caching=bool(rng.integers(2)),
            rollout_gpus=r_tp * r_pp * r_dp, rollout_tp=r_tp, rollout_pp=r_pp, rollout_ep=r_ep,
            train_gpus=t_tp * t_pp * t_cp * t_dp, train_tp=t_tp, train_pp=t_pp, train_cp=t_cp,
            train_ep=t_ep, train_zero=int(rng.integers(4)),
            train_recompute=str(rng.choice(["none", "selective", "full"])),
        )  # fmt: skip
        for k, v in values.items():
            cols[k].append(v)
    return PlanTable.from_arrays(**cols)


# --- hand-checked figures -------------------------------------------------------------------


def test_unit_conversions() -> None:
    assert gib_to_bytes(80) == 80 * 2**30 == 85_899_345_920
    assert tbytes_per_s(3.35) == 3.35e12
    assert tflops(989) == 989e12
    assert gbytes_per_s(900) == 900e9
    assert gbits_per_s(400) == 50e9  # 400 Gbit/s = 50 GB/s
    assert GIB == 1_073_741_824


def test_kv_bytes_per_token_gqa_by_hand() -> None:
    fig = ModelFigures.of(QWEN25_7B)
    one = np.array([1.0])
    # K and V, 4 KV heads of 128, 28 layers, bf16: 2 * 4 * 128 * 28 * 2 = 57,344 bytes
    assert fig.kv_bytes_per_token(one, one)[0] == 57_344 == QWEN25_7B.kv_bytes_per_token
    # tp = 2 splits the 4 KV heads 2 + 2: 28,672 bytes per GPU
    assert fig.kv_bytes_per_token(2 * one, one)[0] == 28_672
    # tp = 8 > 4 KV heads: each rank keeps one (replicated) head: 2 * 1 * 128 * 28 * 2 = 14,336
    assert fig.kv_bytes_per_token(8 * one, one)[0] == 14_336
    # pp = 4 keeps 7 layers per GPU: 57,344 / 4 = 14,336
    assert fig.kv_bytes_per_token(one, 4 * one)[0] == 14_336


def test_kv_bytes_per_token_mla_by_hand() -> None:
    fig = ModelFigures.of(DEEPSEEK_V3)
    one = np.array([1.0])
    # latent 512 + decoupled RoPE key 64, 61 layers, bf16: 576 * 61 * 2 = 70,272 bytes
    assert fig.kv_bytes_per_token(one, one)[0] == 70_272 == DEEPSEEK_V3.kv_bytes_per_token
    # every tensor-parallel rank keeps the whole latent
    assert fig.kv_bytes_per_token(8 * one, one)[0] == 70_272


def test_model_figures_split_dense_and_expert_weights() -> None:
    dense = ModelFigures.of(QWEN25_7B)
    assert dense.params_total == QWEN7B_PARAMS and dense.expert_params == 0
    # attention FLOPs per token per context token: 2 * 28 layers * 28 heads * (128 + 128)
    assert dense.attention_flops_per_context == 2 * 28 * 28 * 256 == 401_408
    moe = ModelFigures.of(QWEN3_30B_A3B)
    # routed experts: 48 layers * 128 experts * 3 * 2048 * 768 = 28,991,029,248 weights
    assert moe.expert_params == 48 * 128 * 3 * 2048 * 768 == 28_991_029_248
    assert moe.dense_params == QWEN3_30B_A3B.params_total - 28_991_029_248
    # a batch of 1 token reads top-8 of 128 experts: 1 - (1 - 8/128) = 1/16 of them
    assert moe.expert_read_fraction(np.array([1.0]))[0] == pytest.approx(8 / 128)
    assert moe.expert_read_fraction(np.array([10_000.0]))[0] == pytest.approx(1.0)


def test_cost_imports_kb_schema_only() -> None:
    """The cost core does no I/O: no click, DuckDB, YAML, MkDocs, kb loader/store or rules."""
    allowed_roots = {
        "__future__",
        "collections",
        "dataclasses",
        "functools",
        "math",
        "typing",
        "numpy",
    }
    for path in sorted((Path(__file__).parent.parent / "cost").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                ok = (
                    name.split(".")[0] in allowed_roots
                    or name == "rlmguide.cost"
                    or name.startswith(("rlmguide.cost.", "rlmguide.kb.schema"))
                )
                assert ok, f"{path.name} imports {name}"
