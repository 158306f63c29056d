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


HF_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
"""A Hugging Face repository id: `organisation/name`."""


def hf_id(model_id: str, models: Mapping[str, Any], sources: Mapping[str, Any]) -> str | None:
    """The Hugging Face id a launch may load the record's model by: a repository named as the
    record is (variant suffixes aside), among its aliases and the repositories its cited
    configuration copies (a model-config source's title, `Qwen/Qwen3-30B-A3B config.json`, or
    a huggingface.co address); else an alias (a name launches use, such as a fine-tune the
    framework's examples train). Never a third party's copy under another name (a quantised
    re-upload). None when the record names none."""
    record = models[model_id]
    aliases = [a for a in getattr(record, "aliases", ()) if HF_ID.fullmatch(a)]
    copies = []
    for source_id in getattr(record, "sources", ()):
        source = sources.get(source_id)
        if source is None:
            continue
        title, url = str(getattr(source, "title", "")), str(getattr(source, "url", "") or "")
        if getattr(source, "type", None) == "model-config" and HF_ID.fullmatch(title.split()[0]):
            copies.append(title.split()[0])
        if address := re.match(r"https://huggingface\.co/([\w.-]+/[\w.-]+)", url):
            copies.append(address.group(1))
    own = own_spellings(model_id, record)
    named = [c for c in (*aliases, *copies) if model_slug(c) in own]
    # the plain name before a variant (-Instruct), then the order the record gives
    named.sort(key=lambda c: model_slug(c) != c.rsplit("/", 1)[-1].lower())
    back = [c for c in (*named, *aliases) if match_model(c, models) == model_id]
    return back[0] if back else None
