"""Every framework `recommend` lists in a plan's `launchable_by` exports that plan: the listing
and `export` judge a plan with one predicate (export.writer.Writer.refusal), so a framework
whose launch refuses a plan (a start-up check it would trip, a key it has no value for) is
under `launch_refused_by`, never first among the plan's runners."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from conftest import REPO
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS, RULES_ROOT
from rlmguide.rules.atlas import grid, pinned
from rlmguide.rules.recommend import judges_of
from rlmguide.rules.scenario import parse_scenario, resolve

from rlmguide import api
from rlmguide.cli import cli
from rlmguide.export import NotExpressible, build

CATALOG = load_catalog([*DEFAULT_ROOTS, RULES_ROOT])
MAPPED = frozenset(m.framework for m in CATALOG.of("mapping").values())  # type: ignore[attr-defined]
JUDGES = judges_of(CATALOG)
EXAMPLES = REPO / "examples"
SMALL = EXAMPLES / "grpo-qwen2.5-7b-8xh100.yaml"
TOP = 2
"""Plans per scenario whose listed frameworks are exported (each export is a search)."""


def export_refusal(
    data: dict[str, Any], plan: dict[str, Any], framework: str, name: str
) -> str | None:
    """Why `framework`'s export does not write the scenario `data` with its plan pinned to
    `plan` (a scenario's plan block, rules.atlas.pinned); None where it writes it, with the
    plan's pipeline layout. Exported as `rlmguide export` does (export.build) on a catalog
    loaded and judges compiled once: the API's export loads the records and compiles the
    rules and constraints again on each call, most of a fixed plan's export."""
    one = resolve(parse_scenario({**data, "plan": plan}, name), CATALOG.records)
    mappings = CATALOG.of("mapping")
    try:
        written = build(one, CATALOG, mappings, framework, judges=JUDGES).plan  # type: ignore[arg-type]
    except NotExpressible as exc:
        return f"{name} {framework}: {exc}"
    layout = (written["train"]["pp"], written["train"]["virtual_stages"])
    assert layout == (plan["train"]["pp"], plan["train"]["virtual_stages"]), (name, framework)
    return None


def exported_each(scenario: api.Scenario, name: str) -> list[str]:
    """For the first TOP plans, each listed framework with a mapping exporting that plan:
    the failures."""
    data = scenario.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
    failures = []
    for plan in api.recommend(scenario, top=TOP).model_dump()["plans"][:TOP]:
        for framework in [f for f in plan["launchable_by"] if f in MAPPED]:
            why = export_refusal(data, pinned(plan), framework, f"{name} plan {plan['rank']}")
            failures += [why] if why else []
    return failures


EXAMPLE_NAMES = sorted(
    p.name for p in EXAMPLES.glob("*.yaml") if "mixed" not in p.name and "fused" not in p.name
)


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_each_framework_listed_for_an_example_exports_its_plan(name: str) -> None:
    scenario = api.Scenario.from_dict(yaml.safe_load((EXAMPLES / name).read_text()), origin=name)
    assert exported_each(scenario, name) == []


DEPLOYMENTS = sorted(CATALOG.of("deployment"))


@pytest.mark.parametrize("deployment_id", DEPLOYMENTS[::4])
def test_each_framework_listed_for_a_deployment_exports_its_plan(deployment_id: str) -> None:
    scenario = CATALOG.of("deployment")[deployment_id].scenario  # type: ignore[attr-defined]
    free = scenario.model_copy(update={"plan": type(scenario.plan)()})
    data = free.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
    assert exported_each(api.Scenario.from_dict(data, origin=deployment_id), deployment_id) == []


def test_every_atlas_row_exports_with_its_first_mapped_framework(
    atlas_rows: list[dict[str, Any]],
) -> None:
    # Every row, not a sample: the row's plan, pinned in its setup's scenario, is written by
    # the first framework of its `launchable_by` that has an export mapping (those without
    # one are listed unchecked).
    setups = {(s.model, s.accelerator, s.gpus, s.algorithm): s for s in grid(CATALOG.records)}
    failures, exported = [], 0
    for row in atlas_rows:
        first = next((f for f in row["launchable_by"] or () if f in MAPPED), None)
        if first is None:
            continue
        setup = setups[row["model_id"], row["accelerator_id"], row["gpus"], row["algorithm_id"]]
        name = f"{setup.model}-{setup.gpus}x{setup.accelerator}-{setup.algorithm}"
        why = export_refusal(setup.scenario(), json.loads(row["plan"]), first, name)
        failures += [why] if why else []
        exported += 1
    assert failures == []
    assert exported >= 400  # 411 of the 539 rows that fit when written; the rest name none


# -- the case that showed the defect -------------------------------------------------------

V15 = ["--set", "plan.train.pp=2", "--set", "plan.train.virtual_stages=15"]
"""Qwen2.5-7B's 28 layers over 2 stages of 15 chunks: 30 chunks, one a layer, the embedding and
the output one each (a schedule the cost model allows, Llama 3's); Megatron's start-up check
(constraint megatron-virtual-stages-split-the-layers) wants a rank's 14 layers split evenly into
its 15 chunks, and no mapping writes the split that puts the embedding and output in chunks of
their own."""


def test_an_interleaving_the_launches_refuse_lists_none_of_them() -> None:
    done = CliRunner().invoke(
        cli, ["recommend", str(SMALL), *V15, "--top", "3", "--format", "json"]
    )
    assert done.exit_code == 0, done.output
    plans = json.loads(done.output)["plans"]
    assert plans
    for plan in plans:
        assert (plan["train"]["pp"], plan["train"]["virtual_stages"]) == (2, 15)
        # verl and slime run Megatron's interleaving and claim the plan; their launches stop
        # at Megatron's start-up check, so neither is listed as launching it
        assert not MAPPED & set(plan["launchable_by"]), plan["launchable_by"]
        for framework in {"verl", "slime"} & set(plan["frameworks"]):
            why = plan["launch_refused_by"][framework]
            assert "megatron-virtual-stages-split-the-layers" in why
    assert {"verl", "slime"} <= set(plans[0]["launch_refused_by"])
    # and export agrees: no ranked plan is one verl's launch writes
    emitted = CliRunner().invoke(cli, ["recommend", str(SMALL), *V15, "--emit", "verl"])
    assert emitted.exit_code == 1
    assert "megatron-virtual-stages-split-the-layers" in emitted.output


def test_an_interleaving_that_splits_the_layers_is_listed_and_exports() -> None:
    # 28 layers over 2 stages of 7 chunks: 2 layers a chunk, which the check accepts; verl is
    # listed and its export writes the plan (the listing can keep a framework, not only drop).
    args = ["--set", "plan.train.pp=2", "--set", "plan.train.virtual_stages=7"]
    done = CliRunner().invoke(cli, ["recommend", str(SMALL), *args, "--format", "json"])
    assert done.exit_code == 0, done.output
    plan = json.loads(done.output)["plans"][0]
    assert "verl" in plan["launchable_by"] and "verl" not in plan["launch_refused_by"]
    emitted = CliRunner().invoke(cli, ["recommend", str(SMALL), *args, "--emit", "verl"])
    assert emitted.exit_code == 0, emitted.output
