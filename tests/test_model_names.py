"""Which model record a launch's model path names: ids, names and aliases, by one slug."""

from __future__ import annotations

import functools

import pytest
from rlmguide.kb.load import load_catalog
from rlmguide.kb.model_names import match_model, model_slug
from rlmguide.kb.paths import DEFAULT_ROOTS


@functools.cache
def shipped_models() -> dict:
    return dict(load_catalog(DEFAULT_ROOTS, ["model"]).of("model"))


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("Qwen/Qwen2-7B-Instruct", "qwen2-7b"),
        ("$HOME/models/qwen2_7b_instruct/", "qwen2-7b"),
        ("meta-llama/Meta-Llama-3.1-8B-Instruct", "llama-3.1-8b"),
        ("moonshotai/Kimi-K2-Thinking", "kimi-k2"),
        ("Qwen/Qwen3-30B-A3B-Base-FP8", "qwen3-30b-a3b"),
    ],
)
def test_slug(name: str, slug: str) -> None:
    assert model_slug(name) == slug


@pytest.mark.parametrize(
    ("path", "model"),
    [
        ("moonshotai/Kimi-K2.6", "kimi-k2.5"),
        ("/data/ckpts/Kimi-K2.6", "kimi-k2.5"),
        ("deepseek-ai/DeepSeek-V3.1", "deepseek-v3"),
        ("deepseek-ai/DeepSeek-V3-0324", "deepseek-v3"),
        ("allenai/Llama-3.1-Tulu-3-8B-SFT", "llama-3.1-8b"),
        ("allenai/Llama-3.1-Tulu-3-70B-DPO", "llama-3.1-70b"),
        ("Qwen/Qwen2-7B-Instruct", "qwen2-7b"),
        ("~/models/Qwen2-7B-Instruct", "qwen2-7b"),
        ("Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b"),
        ("Qwen/Qwen3-4B-Thinking-2507", "qwen3-4b-thinking-2507"),
        ("Qwen/Qwen3-4B", "qwen3-4b"),
        ("org/unknown-model-9b", None),
    ],
)
def test_launch_paths_match_by_alias(path: str, model: str | None) -> None:
    assert match_model(path, shipped_models()) == model
