"""An export reviewed with no flag re-plans the scenario its header names
(rlmguide.export.render.scenario_line, rlmguide.review.header): the accelerator, the model
record (a model with no Hugging Face id leaves the path a user input) and the mean lengths
under the caps come from the header, so review costs the plan export costed, with the same
memory terms and none of the export's own engine settings "below the plan's". A key edited
since export is named; a command-line flag wins over the header, said so; a launch without the
header is reviewed as before (it needs --accelerator, the mean response is the length prior's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from rlmguide.kb.load import load_catalog
from rlmguide.kb.model_names import hf_id
from rlmguide.kb.paths import record_roots
from round_trip import SMALL, terms

from rlmguide import api
from rlmguide.errors import RlmguideError
from rlmguide.export.render import SCENARIO_LINE
from rlmguide.review import Hardware, ReviewError, review
from rlmguide.review.header import cluster_holding, stated_scenario

CATALOG = load_catalog(record_roots(), ("mapping", "model", "source"))
VERSIONS = sorted((m.framework, i) for i, m in CATALOG.of("mapping").items())  # type: ignore[attr-defined]
NO_HF_ID = "deepseek-r1-distill-qwen-7b"
"""A costable model record with no Hugging Face id: the export's model path has no default."""

MEMORY_NOT_YET = {
    "roll-0.3.0-9-g8eb27cc2": "review costs ROLL's training memory otherwise than export: the "
    "reference's weights parked (frozen_models 0 against 1.77 GiB), and a forward micro-batch "
    "of 8,704 tokens the export's plan does not carry (activations, ZeRO-3 gather)",
}
"""Mappings whose export review reads back as the same plan and workload but costs with other
memory terms, with why (checked strictly: one that starts to agree fails until taken off)."""


def _scenario(policy: str | None) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(SMALL.read_text())
    if policy is not None:
        data["models"]["policy"] = policy
    return data


def _export(tmp: Path, framework: str, version: str, policy: str | None = None) -> tuple[Any, Path]:
    launch = api.export(_scenario(policy), framework, version=version)
    name = "run.yaml" if launch.model_dump().get("syntax") == "yaml" else "run.sh"
    path = tmp / name
    path.write_text(launch.script)
    return launch, path


def _held(breakdown: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """The memory terms that hold any memory: export lists a pool or term at zero (AReaL's
    reference pool, a reshard of nothing) that review's estimate leaves out."""
    held = {pool: {k: v for k, v in terms.items() if v} for pool, terms in breakdown.items()}
    return {pool: terms for pool, terms in held.items() if terms}


def test_the_model_has_no_hugging_face_id() -> None:
    models = CATALOG.of("model")
    assert hf_id(NO_HF_ID, models, CATALOG.of("source")) is None
    assert models[NO_HF_ID].costable  # type: ignore[attr-defined]


@pytest.mark.parametrize("policy", [None, NO_HF_ID], ids=["example", "no-hf-id"])
@pytest.mark.parametrize(("framework", "version"), VERSIONS, ids=[v for _, v in VERSIONS])
def test_an_export_reviewed_with_no_flag_is_its_own_plan(
    framework: str, version: str, policy: str | None, tmp_path: Path
) -> None:
    try:
        launch, path = _export(tmp_path, framework, version, policy)
    except RlmguideError as exc:
        pytest.skip(f"export refuses it: {exc}")
    got = review(path)  # no framework, policy, accelerator or length given
    written = launch.model_dump(mode="json")["plan"]
    assert got["mapping"] == version
    assert terms(got["estimate"]) == terms(written)
    stated = _scenario(policy)
    assert got["scenario"]["cluster"]["accelerator"] == stated["cluster"]["accelerator"]
    assert got["scenario"]["models"]["policy"] == stated["models"]["policy"]
    workload = got["scenario"]["workload"]
    for name, value in stated["workload"].items():
        assert workload[name] == value, name
    assert "response_tokens_from" not in workload  # the header's mean, not the prior's
    below = [m for m in got["memory_keys"] if m["verdict"].startswith("below the plan's")]
    assert below == []
    memory = _held(got["estimate"]["memory_breakdown_gib"])
    costed = _held(written["memory_breakdown_gib"])
    if version in MEMORY_NOT_YET:
        assert memory != costed, f"{version} costs the export's memory now: take it off the list"
        return
    assert memory.keys() == costed.keys()
    for pool, terms_gib in costed.items():
        assert memory[pool] == pytest.approx(terms_gib), pool


@pytest.fixture(scope="module")
def verl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _, path = _export(tmp_path_factory.mktemp("verl"), "verl", "verl-0.8.0")
    return path


def _edited(path: Path, old: str, new: str, tmp: Path) -> Path:
    text = path.read_text()
    assert text.count(old) == 1, old
    out = tmp / path.name
    out.write_text(text.replace(old, new))
    return out


def _entries(got: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [a for a in got["assumed"] if a["field"] == name]


def test_a_key_edited_after_export_is_reviewed_against_the_header_and_named(
    verl: Path, tmp_path: Path
) -> None:
    got = review(_edited(verl, "actor_rollout_ref.rollout.n=8", "actor_rollout_ref.rollout.n=16",
                         tmp_path))  # fmt: skip
    workload = got["scenario"]["workload"]
    assert workload["samples_per_prompt"] == 16  # what the launch runs
    assert (workload["response_tokens"], workload["prompt_tokens"]) == (2048, 512)  # the header's
    assert got["scenario"]["cluster"]["accelerator"] == "h100-sxm-80gb"
    (named,) = _entries(got, "workload.samples_per_prompt")
    assert named["value"] == 16
    assert "16" in named["why"] and "header 8" in named["why"] and "edited" in named["why"]
    assert [a["field"] for a in got["assumed"] if "edited" in a["why"]] == [
        "workload.samples_per_prompt"
    ]


def test_an_edited_response_cap_sets_the_header_mean_aside(verl: Path, tmp_path: Path) -> None:
    got = review(
        _edited(verl, "data.max_response_length=8192", "data.max_response_length=4096", tmp_path)
    )
    workload = got["scenario"]["workload"]
    assert workload["max_response_tokens"] == 4096
    assert workload["response_tokens_from"] == "prior"
    (named,) = _entries(got, "workload.max_response_tokens")
    assert "(4096)" in named["why"] and "(8192)" in named["why"]


def test_flags_win_over_the_header_and_say_so(verl: Path) -> None:
    got = review(verl, hardware=Hardware("a100-sxm-80gb", prompt_tokens=256))
    assert got["scenario"]["cluster"]["accelerator"] == "a100-sxm-80gb"
    assert got["scenario"]["workload"]["prompt_tokens"] == 256
    for name, flag in (("cluster.accelerator", "a100-sxm-80gb"), ("workload.prompt_tokens", 256)):
        (said,) = _entries(got, name)
        assert said["value"] == flag and "command line" in said["why"]


def test_what_the_header_states_is_not_called_assumed(verl: Path) -> None:
    """The header's values are the exporter's scenario: listed under "Not in the file" with
    that why, but the estimate does not rest on an assumption of them."""
    got = review(verl)
    from_header = {a["field"] for a in got["assumed"] if "header" in a["why"]}
    assert {"cluster.accelerator", "workload.response_tokens"} <= from_header
    assert not from_header & set(got["rests_on_assumptions"])


def test_a_launch_without_the_header_is_reviewed_as_before(verl: Path, tmp_path: Path) -> None:
    text = verl.read_text()
    (line,) = [x for x in text.splitlines() if x.startswith(SCENARIO_LINE)]
    bare = _edited(verl, line + "\n", "", tmp_path)
    with pytest.raises(ReviewError, match="--accelerator"):
        review(bare)
    got = review(bare, hardware=Hardware("h100-sxm-80gb"))
    assert got["scenario"]["workload"]["response_tokens_from"] == "prior"
    (prior,) = _entries(got, "workload.response_tokens")
    assert "length prior" in prior["why"]
    assert "workload.response_tokens" in got["rests_on_assumptions"]


@pytest.mark.parametrize(
    "line",
    [
        "workload.epochs=1 workload.epochs=1",  # repeated
        "workload.shape=1",  # no field of the header's
        "workload.epochs=0",  # no count
        "workload.epochs=1234567890",  # longer than a count the line holds
        "cluster.nodes=two",
    ],
)
def test_a_header_line_export_did_not_write_is_not_read(line: str) -> None:
    assert stated_scenario(f"{SCENARIO_LINE} {line}\n") is None


def test_the_header_line_is_read_with_counts_as_numbers() -> None:
    text = f"{SCENARIO_LINE} models.policy=qwen2.5-7b workload.epochs=2"
    assert stated_scenario(text) == {"models.policy": "qwen2.5-7b", "workload.epochs": 2}


def test_the_header_cluster_is_taken_only_where_it_holds_the_pools() -> None:
    header = {"cluster.nodes": 2, "cluster.gpus_per_node": 8}
    assert cluster_holding(header, 16) == (2, 8)
    assert cluster_holding(header, 17) is None  # pools grown since export: placed as before
    assert cluster_holding({"cluster.nodes": 2}, 8) is None


@pytest.mark.parametrize(
    ("framework", "name"),
    [("roll", "run.sh"), ("verl", "run.yaml")],
    ids=["yaml-as-sh", "sh-as-yaml"],
)
def test_a_launch_saved_under_the_other_kind_of_name_is_read_by_what_it_holds(
    framework: str, name: str, tmp_path: Path
) -> None:
    # `export --out` takes any name: ROLL's YAML config saved as run.sh, verl's script as
    # run.yaml are read by their content (the script's shebang, the config's first key)
    version = max(v for f, v in VERSIONS if f == framework)
    launch = api.export(_scenario(None), framework, version=version)
    path = tmp_path / name
    path.write_text(launch.script)
    got = review(path)
    assert got["mapping"] == version
    assert terms(got["estimate"]) == terms(launch.model_dump(mode="json")["plan"])
