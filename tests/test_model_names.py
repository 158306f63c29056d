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


@functools.cache
def shipped_sources() -> dict:
    return dict(load_catalog(DEFAULT_ROOTS, ["source"]).of("source"))


@pytest.mark.parametrize(
    ("model", "hf"),
    [
        # from the title of the cited config (Qwen/Qwen3-30B-A3B config.json, a vendored copy)
        ("qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B"),
        # the plain name before the -Instruct alias
        ("qwen2.5-7b", "Qwen/Qwen2.5-7B"),
        # its cited configs are a quantised re-upload and a fine-tune: the alias a launch uses
        ("llama-3-70b", "meta-llama/Meta-Llama-3-70B-Instruct"),
        ("llama-3-8b", "OpenRLHF/Llama-3-8b-sft-mixture"),
    ],
)
def test_the_hugging_face_id_export_defaults_to(model: str, hf: str) -> None:
    from rlmguide.kb.model_names import hf_id

    assert hf_id(model, shipped_models(), shipped_sources()) == hf


def test_every_hugging_face_id_names_its_record_back() -> None:
    from rlmguide.kb.model_names import hf_id

    models, sources = shipped_models(), shipped_sources()
    found = {m: hf_id(m, models, sources) for m in models}
    assert sum(v is not None for v in found.values()) >= len(models) // 2
    for model, hf in found.items():
        assert hf is None or match_model(hf, models) == model
