"""Version scope of constraint records: a refusal read at one version of a framework binds
launches of the versions it names (export and review by their mapping, the planner by the
framework's newest mapping), and names only mappings of its own framework."""

from __future__ import annotations

import dataclasses
import shutil
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from launch_support import review_json
from rlmguide.kb.load import Catalog, load_catalog
from rlmguide.kb.paths import PLURALS, record_roots
from rlmguide.kb.schema import Constraint
from rlmguide.kb.validate import validate
from rlmguide.rules import RECOMMEND_KINDS
from rlmguide.rules.recommend import NoFeasiblePlan, recommend, recommender_for
from rlmguide.rules.scenario import parse_scenario, resolve

from rlmguide.export import NotExpressible, build, script
from rlmguide.export.startup import ABSENT, binding, compile_checks, tripped

V07, V08 = "verl-0.7.0-125-gb178a3cd5", "verl-0.8.0"

ROLLOUT_TP_1 = Constraint(
    id="verl-test-rollout-tp-1",
    framework="verl",
    title="a refusal of rollout tensor parallelism read at 0.7 only",
    statement="A test record: it refuses every rollout TP above 1.",
    condition="plan.rollout.tp == 1",
    source="github-volcengine-verl",
    file="verl/workers/rollout/test.py",
    commit="b178a3cd56f58b2d502255daba591e92833930a7",
    url="https://github.com/volcengine/verl",
    checked="2026-12-05",
    as_of="2026-01-29",
    versions=[V07],
)
"""A plan-level refusal scoped to verl 0.7 (a made-up one: no verl version refuses rollout TP)."""


@cache
def _catalog() -> Catalog:
    return load_catalog(record_roots(), RECOMMEND_KINDS)


@cache
def _mappings() -> dict[str, Any]:
    return load_catalog(record_roots(), ("mapping",)).of("mapping")


def _with(catalog: Catalog, *records: Constraint) -> Catalog:
    """The catalog with `records` added or replacing those of their ids."""
    constraints = {**catalog.of("constraint"), **{r.id: r for r in records}}
    files = {**catalog.files, **{("constraint", r.id): f"constraints/{r.id}.yaml" for r in records}}
    return dataclasses.replace(
        catalog, records={**catalog.records, "constraint": constraints}, files=files
    )


def _scenario(plan: dict[str, Any]) -> dict[str, Any]:
    return {
        "cluster": {"accelerator": "h100-sxm-80gb", "nodes": 1, "gpus_per_node": 8},
        "models": {"policy": "qwen2.5-7b", "reward": "verifier"},
        "workload": {
            "algorithm": "grpo",
            "prompts_per_step": 128,
            "samples_per_prompt": 8,
            "prompt_tokens": 1024,
            "response_tokens": 2048,
            "max_response_tokens": 4096,
            "minibatches_per_step": 4,
        },
        "plan": plan,
    }


ROLLOUT_TP_2 = {"placement": "colocated", "execution": "sync", "rollout": {"tp": 2}}


def test_scope_by_hand() -> None:
    assert ROLLOUT_TP_1.in_scope(V07)
    assert not ROLLOUT_TP_1.in_scope(V08)
    assert ROLLOUT_TP_1.in_scope(None)  # no version known: every record binds
    unscoped = ROLLOUT_TP_1.model_copy(update={"versions": []})
    assert unscoped.in_scope(V07) and unscoped.in_scope(V08)


def test_a_constraint_read_at_0_7_does_not_refuse_a_0_8_export_and_still_refuses_at_0_7() -> None:
    catalog = _with(_catalog(), ROLLOUT_TP_1)
    resolved = resolve(parse_scenario(_scenario(ROLLOUT_TP_2), "test"), catalog.records)
    done = build(resolved, catalog, _mappings(), "verl", V08)
    assert done.plan["rollout"]["tp"] == 2
    with pytest.raises((NotExpressible, NoFeasiblePlan), match="verl cannot run"):
        build(resolved, catalog, _mappings(), "verl", V07)
    # without the record 0.7 runs it: the refusal above is the scoped record's
    assert build(resolved, _catalog(), _mappings(), "verl", V07).plan["rollout"]["tp"] == 2


def test_the_planner_judges_a_framework_at_its_newest_mapping() -> None:
    catalog = _with(_catalog(), ROLLOUT_TP_1)
    resolved = resolve(parse_scenario(_scenario(ROLLOUT_TP_2), "test"), catalog.records)
    (newest,) = recommend(recommender_for(resolved, catalog, only="verl"), 1)["plans"]
    assert newest["rollout"]["tp"] == 2
    with pytest.raises(NoFeasiblePlan, match="verl refuses"):
        recommend(recommender_for(resolved, catalog, only="verl", versions={"verl": V07}), 1)


def test_a_start_up_check_binds_the_versions_it_names() -> None:
    catalog = _catalog()
    (check,) = [
        c for c in compile_checks(catalog)[0] if c.id == "verl-megatron-reference-micro-batch-set"
    ]
    scoped = dataclasses.replace(check, record=check.record.model_copy(update={"versions": [V07]}))
    facts = {**ABSENT, "workload.needs_reference": True}
    at_07 = binding([scoped], _mappings()[V07], "megatron-lm", "vllm")
    assert tripped(at_07, facts) == [scoped.record]
    assert binding([scoped], _mappings()[V08], "megatron-lm", "vllm") == []


MEGATRON = {"placement": "colocated", "execution": "sync",
            "train": {"tp": 2, "pp": 2, "cp": 1, "zero": 1, "recompute": "full"}}  # fmt: skip
"""GRPO keeps a reference; pipeline parallelism puts verl on Megatron."""


def _records_with_scope(tmp_path: Path, record: str, versions: list[str]) -> Path:
    """A copy of the records in use (rules included) with `record`'s scope set."""
    root = tmp_path / "records"
    for folder, kind in record_roots():
        shutil.copytree(folder, root / PLURALS[kind] if kind else root, dirs_exist_ok=True)
    path = root / "constraints" / f"{record}.yaml"
    kept = [line for line in path.read_text().splitlines() if not line.startswith("versions:")]
    path.write_text("\n".join([*kept, f"versions: [{', '.join(versions)}]"]) + "\n")
    return root


def _startup(path: Path) -> list[str]:
    got = review_json(path, "--accelerator", "h100-sxm-80gb", "--policy", "qwen2.5-7b")
    return [c["constraint"] for c in got["startup"]]


def test_review_reports_a_0_7_check_only_on_a_0_7_launch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Megatron launch without the reference's micro-batch trips the 0.7 worker's assert
    (verl/workers/megatron_workers.py) when read as a 0.7 launch, not as a 0.8 one."""
    record = "verl-megatron-reference-micro-batch-set"
    monkeypatch.setenv("RLMGUIDE_RECORDS_DIR", str(_records_with_scope(tmp_path, record, [V07])))
    catalog = load_catalog(record_roots(), RECOMMEND_KINDS)
    mappings = load_catalog(record_roots(), ("mapping",)).of("mapping")
    resolved = resolve(parse_scenario(_scenario(MEGATRON), "test"), catalog.records)
    for version, trips in ((V07, [record]), (V08, [])):
        done = build(resolved, catalog, mappings, "verl", version)
        assert done.backend == "megatron-lm"
        text = script(done, "test", "qwen2.5-7b")
        stripped = "".join(
            line + "\n" for line in text.splitlines() if "ref.log_prob_micro_batch" not in line
        )
        path = tmp_path / f"{version}.sh"
        path.write_text(stripped)
        assert _startup(path) == trips, version


@pytest.mark.parametrize(
    ("versions", "message"),
    [
        (
            ["verl-0.9.0"],
            "versions[0]: unknown mapping 'verl-0.9.0' (did you mean 'verl-0.8.0', "
            "'openrlhf-0.11.0'?)",
        ),
        (
            [V07, "openrlhf-0.11.0"],
            "versions[1]: mapping 'openrlhf-0.11.0' is openrlhf's, not verl's: a version "
            "scope names the constraint's own framework's mappings",
        ),
    ],
)
def test_a_scope_names_known_mappings_of_its_own_framework(
    versions: list[str], message: str
) -> None:
    catalog = load_catalog(record_roots())
    record = catalog.of("constraint")["verl-rollout-no-pipeline-parallelism"]
    bad = record.model_copy(update={"versions": versions})
    found = [str(p) for p in validate(_with(catalog, bad)) if p.severity == "error"]
    assert found == [f"constraints/verl-rollout-no-pipeline-parallelism.yaml: {message}"]


def test_a_component_refusal_has_no_version_scope() -> None:
    catalog = load_catalog(record_roots())
    (shared, *_) = [c for c in catalog.of("constraint").values() if c.framework is None]
    bad = shared.model_copy(update={"versions": [V08]})
    found = [str(p) for p in validate(_with(catalog, bad)) if p.severity == "error"]
    assert found == [
        f"constraints/{shared.id}.yaml: versions[0]: mapping '{V08}' is verl's, not a "
        "framework's: a version scope names the constraint's own framework's mappings"
    ]
