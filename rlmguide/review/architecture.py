"""A policy's architecture read from the launch itself, for a model no record matches: the
Megatron flags a launch passes (slime's scripts/models/*.sh, Megatron-based recipes) or the
Hugging Face config.json in the local model folder the launch names.

Flags are Megatron-LM's at 1dcf0da (the commit slime's image checks out): the transformer's
dataclass fields turned into flags by megatron/training/argument_utils.py
(megatron/core/transformer/transformer_config.py L47-L300) and the parser's own
(megatron/training/arguments.py L1653-L1720, L2406, L2724-L2726, L2848). A flag left out takes
Megatron's default where Megatron gives one; a number neither gives is named as missing,
never guessed. A custom layer spec (`--spec plugin builder`) builds layers the flags do not
describe (slime's Qwen3.5 and Qwen3-Next specs mix in linear attention from the HF config),
so it is named, not costed as dense attention.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rlmguide.kb.schema.scenario import InlineModel
from rlmguide.review.budget import Budget


class ArchitectureMissing(ValueError):
    """What the launch does not give of its model's architecture (one line)."""


@dataclass(frozen=True)
class Read:
    spec: dict[str, Any]
    """The InlineModel fields."""
    origin: str
    """Where the numbers were read: `file:line` of the first flag, or the config.json."""
    defaulted: list[str]
    """Fields taken from Megatron's defaults (the flags left them out)."""


MEGATRON_NUMBERS = {
    "num-layers": "layers",
    "hidden-size": "hidden",
    "num-attention-heads": "heads",
    "kv-channels": "head_dim",
    "ffn-hidden-size": "ffn",
    "vocab-size": "vocab",
    "max-position-embeddings": "max_context_tokens",
    "mtp-num-layers": "mtp_layers",
}
ARCHITECTURE_FLAGS = (
    *MEGATRON_NUMBERS,
    "num-query-groups",
    "group-query-attention",
    "swiglu",
    "untie-embeddings-and-output-weights",
    "add-qkv-bias",
    "attention-output-gate",
    "num-experts",
    "spec",
    "multi-latent-attention",
    "experimental-attention-variant",
)
"""Flags that say something of the architecture (their presence means the launch states it)."""
LAYER_FREQ = re.compile(r"\(?\[0\]\s*\*\s*(\d+)\s*\+\s*\[1\]\s*\*\s*(\d+)\)?")
"""`--moe-layer-freq [0]*3+[1]*58`: the first 3 layers dense, the rest MoE."""


def _int(config: dict[str, Any], flag: str) -> int | None:
    value = config.get(flag)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def from_megatron(config: dict[str, Any], files: list[tuple[Path, str]]) -> Read | None:
    """The architecture Megatron flags give (`files`: the launch's files, to say where), None
    when the launch passes none."""
    if not any(flag in config for flag in ARCHITECTURE_FLAGS):
        return None
    origin = flag_origin([f for f in ARCHITECTURE_FLAGS if f in config], files)
    spec = config.get("spec")
    if spec:
        builder = ".".join(spec) if isinstance(spec, list) else str(spec)
        if not builder.startswith("megatron."):
            raise ArchitectureMissing(
                f"the Megatron flags ({origin}) build their layers with the custom spec "
                f"{builder}, which the flags do not describe (it may mix in linear attention, "
                "as slime's Qwen3.5 and Qwen3-Next specs do)"
            )
    variant = config.get("experimental-attention-variant")
    if variant not in (None, "gated_delta_net"):
        raise ArchitectureMissing(
            f"the Megatron flags ({origin}) use the attention variant {variant}, whose "
            "indexer this reader does not take from flags"
        )
    found: dict[str, Any] = {
        field: _int(config, flag)
        for flag, field in MEGATRON_NUMBERS.items()
        if _int(config, flag) is not None
    }
    defaulted: list[str] = []
    missing = [
        flag
        for flag, field in MEGATRON_NUMBERS.items()
        if field in ("layers", "hidden", "heads", "vocab") and field not in found
    ]
    if missing:
        raise ArchitectureMissing(
            f"the Megatron flags ({origin}) do not give " + ", ".join(f"--{m}" for m in missing)
        )
    heads = found["heads"]
    grouped = config.get("group-query-attention") is True
    found["kv_heads"] = _int(config, "num-query-groups") if grouped else heads
    if found["kv_heads"] is None:
        raise ArchitectureMissing(
            f"the Megatron flags ({origin}) set --group-query-attention without --num-query-groups"
        )
    if "ffn" not in found:
        found["ffn"] = 4 * found["hidden"]  # Megatron's default (transformer_config.py)
        defaulted.append("ffn")
    found["ffn_kind"] = "gated" if config.get("swiglu") is True else "plain"
    found["tied_embeddings"] = config.get("untie-embeddings-and-output-weights") is not True
    found["qkv_bias"] = config.get("add-qkv-bias") is True
    found["attention_output_gate"] = config.get("attention-output-gate") is True
    # Megatron builds q and k norms only with the flag (qk_layernorm False by default)
    found["qk_norm"] = config.get("qk-layernorm") is True
    if config.get("multi-latent-attention") is True:
        found["mla"] = _latent(config, origin)
    if (experts := _int(config, "num-experts")) is not None:
        found["moe"] = _experts(config, experts, found["ffn"], origin, defaulted)
    if variant == "gated_delta_net":
        found |= _delta_net(config, found["layers"], defaulted)
    return Read(found, origin, defaulted)


def _latent(config: dict[str, Any], origin: str) -> dict[str, Any]:
    flags = {
        "kv_lora_rank": "kv-lora-rank",
        "qk_nope_head_dim": "qk-head-dim",
        "qk_rope_head_dim": "qk-pos-emb-head-dim",
        "v_head_dim": "v-head-dim",
    }
    latent = {field: _int(config, flag) for field, flag in flags.items()}
    if None in latent.values():
        absent = [f"--{flags[k]}" for k, v in latent.items() if v is None]
        raise ArchitectureMissing(
            f"the Megatron flags ({origin}) set --multi-latent-attention without "
            + ", ".join(absent)
        )
    return latent | {"q_lora_rank": _int(config, "q-lora-rank")}


def _experts(
    config: dict[str, Any], experts: int, ffn: int, origin: str, defaulted: list[str]
) -> dict[str, Any]:
    moe: dict[str, Any] = {"experts": experts}
    top_k = _int(config, "moe-router-topk")
    if top_k is None:
        defaulted.append("moe.experts_per_token")
    moe["experts_per_token"] = top_k or 2  # Megatron's default (transformer_config.py L583)
    width = _int(config, "moe-ffn-hidden-size")
    if width is None:
        defaulted.append("moe.expert_ffn")  # Megatron takes the dense width
    moe["expert_ffn"] = width or ffn
    if (shared := _int(config, "moe-shared-expert-intermediate-size")) is not None:
        moe |= {"shared_experts": 1, "shared_expert_ffn": shared}
    frequency = config.get("moe-layer-freq", 1)
    if frequency != 1:
        match = LAYER_FREQ.fullmatch(str(frequency).strip())
        if frequency in ("", None):
            raise ArchitectureMissing(
                f"the Megatron flags ({origin}) give --moe-layer-freq empty as read (a loop or "
                "a command builds it, and review runs neither): which layers are dense is unknown"
            )
        if match is None:
            raise ArchitectureMissing(
                f"the Megatron flags ({origin}) place experts by --moe-layer-freq "
                f"{str(frequency)[:40]}, a pattern this reader takes only as [0]*N+[1]*M"
            )
        moe["dense_layers"] = int(match.group(1))
    return moe


def _delta_net(config: dict[str, Any], layers: int, defaulted: list[str]) -> dict[str, Any]:
    """Gated DeltaNet layers, with Megatron's defaults (transformer_config.py L280-L297)."""
    defaults = {
        "linear-num-value-heads": ("heads", 32),
        "linear-num-key-heads": ("key_heads", 16),
        "linear-key-head-dim": ("key_dim", 128),
        "linear-value-head-dim": ("value_dim", 128),
        "linear-conv-kernel-dim": ("conv_kernel", 4),
    }
    linear: dict[str, Any] = {"kind": "gated-deltanet"}
    for flag, (field, default) in defaults.items():
        value = _int(config, flag)
        if value is None:
            defaulted.append(f"linear.{field}")
        linear[field] = default if value is None else value
    frequency = config.get("linear-attention-freq")
    if isinstance(frequency, list):
        pattern = ["linear" if int(v) else "full" for v in frequency][:layers]
    else:
        every = int(frequency) if isinstance(frequency, int) else 4
        pattern = ["linear"] * (every - 1) + ["full"]
    return {"linear": linear, "layer_pattern": pattern}


QK_NORM_MODEL_TYPES = frozenset({"qwen3", "qwen3_moe", "qwen3_vl", "qwen3_vl_text"})
"""Hugging Face model types whose attention normalises each query and key head (q_norm,
k_norm in transformers' modeling_qwen3.py, modeling_qwen3_moe.py, modeling_qwen3_vl.py;
sources github-huggingface-transformers-modeling-qwen3*)."""

HF_LAYER_KINDS = {
    "full_attention": "full",
    "linear_attention": "linear",
    "sliding_attention": "sliding",
}


def from_hf_config(path: Path, budget: Budget) -> Read:
    """The architecture a Hugging Face config.json gives (its text_config for a multimodal
    model), as transformers' configuration classes read the keys."""
    try:
        data = json.loads(budget.read(path))
    except (OSError, ValueError) as exc:
        raise ArchitectureMissing(f"{path}: not a readable config.json ({exc})") from None
    if not isinstance(data, dict):
        raise ArchitectureMissing(f"{path}: a config.json holds an object")
    text = data.get("text_config")
    c = text if isinstance(text, dict) else data
    kind = str(c.get("model_type") or data.get("model_type") or "")
    spec: dict[str, Any] = {
        "layers": c.get("num_hidden_layers"),
        "hidden": c.get("hidden_size"),
        "heads": c.get("num_attention_heads"),
        "kv_heads": c.get("num_key_value_heads") or c.get("num_attention_heads"),
        "head_dim": c.get("head_dim"),
        "ffn": c.get("intermediate_size"),
        "vocab": c.get("vocab_size"),
        "max_context_tokens": c.get("max_position_embeddings"),
        # PretrainedConfig ties the embeddings unless the config says otherwise
        "tied_embeddings": c.get("tie_word_embeddings", data.get("tie_word_embeddings", True)),
        # Qwen2's attention projects q, k and v with a bias and has no key for it
        "qkv_bias": c.get("attention_bias", kind.startswith("qwen2")),
        "attention_output_gate": bool(c.get("attn_output_gate", False)),
        # no config key says so: the modeling code of these types normalises q and k per head
        "qk_norm": True if kind in QK_NORM_MODEL_TYPES else None,
        "mtp_layers": c.get("num_nextn_predict_layers") or c.get("mtp_num_hidden_layers") or 0,
    }
    experts = c.get("num_experts") or c.get("n_routed_experts") or c.get("num_local_experts")
    if experts:
        width = c.get("moe_intermediate_size")
        moe: dict[str, Any] = {
            "experts": experts,
            # Gemma 4 names the top-k top_k_experts
            "experts_per_token": c.get("num_experts_per_tok") or c.get("top_k_experts"),
            "expert_ffn": width or c.get("intermediate_size"),
            "dense_layers": c.get("first_k_dense_replace", 0),
            # Gemma 4 keeps each layer's MLP and adds the experts beside it
            "dense_beside": bool(c.get("enable_moe_block", False)),
        }
        if width is None:
            spec["ffn"] = None  # Mixtral: intermediate_size is the experts' width
        if c.get("n_shared_experts"):
            moe["shared_experts"] = c["n_shared_experts"]
        elif c.get("shared_expert_intermediate_size"):
            moe |= {"shared_experts": 1, "shared_expert_ffn": c["shared_expert_intermediate_size"]}
        spec["moe"] = moe
    if c.get("kv_lora_rank"):
        spec["mla"] = {
            "q_lora_rank": c.get("q_lora_rank"),
            "kv_lora_rank": c["kv_lora_rank"],
            "qk_nope_head_dim": c.get("qk_nope_head_dim"),
            "qk_rope_head_dim": c.get("qk_rope_head_dim"),
            "v_head_dim": c.get("v_head_dim"),
        }
    if isinstance(c.get("layer_types"), list):
        spec["layer_pattern"] = [HF_LAYER_KINDS.get(str(k), str(k)) for k in c["layer_types"]]
    elif isinstance(c.get("full_attention_interval"), int):
        spec["layer_pattern"] = ["linear"] * (c["full_attention_interval"] - 1) + ["full"]
    if "linear" in spec.get("layer_pattern", []):
        spec["linear"] = {
            "kind": "gated-deltanet",
            "heads": c.get("linear_num_value_heads"),
            "key_heads": c.get("linear_num_key_heads"),
            "key_dim": c.get("linear_key_head_dim"),
            "value_dim": c.get("linear_value_head_dim"),
            "conv_kernel": c.get("linear_conv_kernel_dim", 4),
        }
    if "sliding" in spec.get("layer_pattern", []):
        spec["sliding_window"] = c.get("sliding_window")
    if c.get("global_head_dim") and "full" in spec.get("layer_pattern", []):
        # Gemma 4's full (global) layers: their own head dimension, and their own KV heads
        # where K is V (transformers 5.25.0 configuration_gemma4.py L205-L218)
        shared = bool(c.get("attention_k_eq_v", False))
        global_kv = c.get("num_global_key_value_heads") if shared else None
        spec["full_attention"] = {
            "head_dim": c["global_head_dim"],
            "kv_heads": global_kv or spec["kv_heads"],
            "shared_kv": shared,
        }
    if c.get("index_topk"):
        raise ArchitectureMissing(
            f"{path}: a sparse-attention indexer (index_topk) this reader does not take"
        )
    return Read({k: v for k, v in spec.items() if v is not None}, str(path), [])


def validated(read: Read, name: str) -> dict[str, Any]:
    """The inline model (its fields as read, named), checked as a scenario checks one; the
    problem in one line."""
    spec = {**read.spec, "name": name}
    try:
        InlineModel.model_validate(spec)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'model'}: {e['msg']}" for e in error.errors()
        )
        raise ArchitectureMissing(f"the architecture read from {read.origin}: {problems}") from None
    return spec


def flag_origin(flags: Iterable[str], files: list[tuple[Path, str]]) -> str:
    """`file:line` of the first of `flags` in the files the launch read, in reading order."""
    found = re.compile("|".join(rf"--{re.escape(f)}(?![\w-])" for f in flags))
    for path, text in files:
        for number, line in enumerate(text.splitlines(), 1):
            if found.search(line):
                return f"{path}:{number}"
    return "the launch's flags"
