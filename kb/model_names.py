"""How a launch names a model (a Hugging Face id or a local folder) and which model record that
name means: every spelling is reduced to one slug, and a record answers to the slugs of its id,
its name and its aliases."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

VARIANT = re.compile(r"[-_.](instruct|base|chat|it|hf|fp8|bf16|awq|gptq|thinking|sft)$")
"""Suffixes that name a checkpoint of the same architecture (post-training stage, precision)."""


def model_slug(name: str) -> str:
    """The last path component, lowercased, `_` read as `-`, without an organisation prefix
    (`meta-`) or variant suffixes: `Qwen/Qwen2-7B-Instruct` and `~/models/qwen2_7b` are
    `qwen2-7b`."""
    slug = name.rstrip("/").rsplit("/", 1)[-1].lower().replace("_", "-").replace(" ", "-")
    slug = slug.removeprefix("meta-")
    while VARIANT.search(slug):
        slug = VARIANT.sub("", slug)
    return slug


def own_spellings(model_id: str, record: Any) -> set[str]:
    """The slugs of a model record's id and name."""
    return {model_slug(model_id), model_slug(str(getattr(record, "name", model_id)))}


def spellings(model_id: str, record: Any) -> set[str]:
    """Every slug a model record answers to: its id, its name and its aliases."""
    aliases = getattr(record, "aliases", ())
    return own_spellings(model_id, record) | {model_slug(a) for a in aliases}


def match_model(path: str, models: Mapping[str, Any]) -> str | None:
    """The model record a Hugging Face id or local path names: its slug equal to a spelling of
    the record, or starting with one at a `-` boundary (DeepSeek-V3-0324 is deepseek-v3); the
    longest spelling wins."""
    slug = model_slug(path)
    best: tuple[int, str] | None = None
    for model_id, record in models.items():
        for name in spellings(model_id, record):
            fits = slug == name or slug.startswith(name + "-")
            if fits and (best is None or len(name) > best[0]):
                best = (len(name), model_id)
    return best[1] if best else None
