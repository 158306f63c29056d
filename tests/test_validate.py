"""The validator: the fixture KB passes, and each check fails with its own message."""

from __future__ import annotations

from pathlib import Path

import pytest
from rlmguide.kb.load import load_catalog
from rlmguide.kb.validate import validate


def problems(
    root: Path, *extra_roots: tuple[Path, str | None], severity: str = "error"
) -> list[str]:
    found = validate(load_catalog([(root, None), *extra_roots]))
    return [str(p) for p in found if p.severity == severity]


def edit(root: Path, name: str, old: str, new: str) -> None:
    path = root / name
    text = path.read_text()
    assert old in text, f"fixture {name} no longer contains {old!r}"
    path.write_text(text.replace(old, new))


def test_fixture_kb_is_valid(fixture_kb: Path) -> None:
    assert problems(fixture_kb) == []


CASES = [
    # (file, old text, new text, expected message)
    (
        "frameworks/fw-two.yaml",
        "availability: {status: paper-only, source: paper-a, checked: 2026-11-30, as_of: null, "
        "as_of_unknown: a fixture}\n",
        "",
        "frameworks/fw-two.yaml: availability: required field is missing",
    ),
    (
        "frameworks/fw-two.yaml",
        "status: paper-only",
        "status: partial-code",
        "frameworks/fw-two.yaml: availability: partial-code: say which part is public (part)",
    ),
    (
        "frameworks/fw-one.yaml",
        "status: released, source: repo-b, version: v1.2",
        "status: released, source: repo-b",
        "frameworks/fw-one.yaml: availability: released: name the release",
    ),
    (
        "frameworks/fw-two.yaml",
        "source: paper-a, checked",
        "source: paper-zz, checked",
        "frameworks/fw-two.yaml: availability.source: unknown source 'paper-zz'",
    ),
    (
        "frameworks/fw-one.yaml",
        "  - feature: grpo\n    support: yes\n",
        "  - feature: grpo\n    support: yes\n    part: {exists: all of it, costed: true}\n",
        "only a partial claim names its part",
    ),
    (
        "frameworks/fw-one.yaml",
        "licence: Apache-2.0",
        "licence: Apache-2.0\ncolour: red",
        "frameworks/fw-one.yaml: colour: unknown field",
    ),
    (
        "frameworks/fw-one.yaml",
        "    source: repo-b\n    checked: 2026-12-02\n    as_of",
        "    source: repo-c\n    checked: 2026-12-02\n    as_of",
        "frameworks/fw-one.yaml: claims[0].source: unknown source 'repo-c' "
        "(did you mean 'repo-b'?)",
    ),
    (
        "frameworks/fw-one.yaml",
        "version: v1.1-3-gabc1234",
        "version: main",
        "frameworks/fw-one.yaml: claims[2].version: a repository source changes under its "
        "address: pin the commit or release read (version is 'main'",
    ),
    (
        "frameworks/fw-one.yaml",
        "    version: v1.0\n",
        "",
        "frameworks/fw-one.yaml: claims[0].version: a repository source changes under its "
        "address: pin the commit or release read (version is none",
    ),
    (
        "frameworks/fw-one.yaml",
        "    as_of: 2026-01-10\n",
        "",
        "frameworks/fw-one.yaml: claims[2].as_of: required field is missing",
    ),
    (
        "frameworks/fw-one.yaml",
        "as_of: 2026-01-10",
        "as_of: 2026-12-24",
        "frameworks/fw-one.yaml: claims[2]: as_of 2026-12-24 is after checked 2026-12-02",
    ),
    (
        "frameworks/fw-one.yaml",
        "as_of: 2026-01-10",
        "as_of: null",
        "frameworks/fw-one.yaml: claims[2]: as_of is null: say in as_of_unknown why the "
        "evidence has no date",
    ),
    (
        "frameworks/fw-one.yaml",
        "source: repo-b}",
        "source: repo-z}",
        "frameworks/fw-one.yaml: latest_release.source: unknown source 'repo-z'",
    ),
    (
        "frameworks/fw-one.yaml",
        "feature: grpo",
        "feature: grpoo",
        "frameworks/fw-one.yaml: claims[0].feature: unknown feature 'grpoo'",
    ),
    (
        "frameworks/fw-one.yaml",
        "support: partial",
        "support: maybe",
        "frameworks/fw-one.yaml: claims[1].support: Input should be",
    ),
    (
        "frameworks/fw-one.yaml",
        "paper: paper-a",
        "paper: paper-z",
        "frameworks/fw-one.yaml: paper: unknown source 'paper-z'",
    ),
    (
        "frameworks/fw-two.yaml",
        "sources: [paper-a]",
        "sources: []",
        "frameworks/fw-two.yaml: sources: List should have at least 1 item",
    ),
    (
        "techniques/tensor-parallelism.yaml",
        "parent: parallelism",
        "parent: paralelism",
        "techniques/tensor-parallelism.yaml: parent: unknown technique 'paralelism'",
    ),
    (
        "techniques/parallelism.yaml",
        "scope: intra-model",
        "scope: intra-model\nparent: tensor-parallelism",
        "taxonomy cycle:",
    ),
    (
        "results/fw-one-step.yaml",
        "framework: fw-one",
        "framework: fw-three",
        "results/fw-one-step.yaml: framework: unknown framework 'fw-three'",
    ),
    (
        "results/fw-one-step.yaml",
        "accelerator: gpu-x",
        "accelerator: gpu-y",
        "results/fw-one-step.yaml: scenario.cluster.accelerator: unknown accelerator 'gpu-y'",
    ),
    (
        "results/fw-one-step.yaml",
        "cluster: {accelerator: gpu-x, nodes: 1, gpus_per_node: 8}",
        "cluster: {parts: [{name: a, accelerator: gpu-x}, {name: b, accelerator: gpu-z}]}",
        "results/fw-one-step.yaml: scenario.cluster.parts[1].accelerator: unknown accelerator "
        "'gpu-z'",
    ),
    (
        "results/fw-one-step.yaml",
        "policy: model-7b",
        "policy: model-8b",
        "results/fw-one-step.yaml: scenario.models.policy: unknown model 'model-8b'",
    ),
    (
        "results/fw-one-step.yaml",
        "metric: step_seconds",
        "metric: speedup",
        "results/fw-one-step.yaml: baseline: a speedup needs the baseline",
    ),
    (
        "results/fw-one-step.yaml",
        "unit: s",
        "unit: s\nunordered_with: [fw-other-step]",
        "results/fw-one-step.yaml: unordered_with[0]: unknown result 'fw-other-step'",
    ),
    (
        "models/model-7b.yaml",
        "kv_heads: 4",
        "kv_heads: 5",
        "models/model-7b.yaml: heads (28) is not a multiple of kv_heads (5)",
    ),
    (
        "accelerators/gpu-x.yaml",
        "sources: [paper-a]",
        "sources: [nowhere]",
        "accelerators/gpu-x.yaml: sources[0]: unknown source 'nowhere'",
    ),
    (
        "models/model-7b.yaml",
        "id: model-7b",
        "id: model-8b",
        "models/model-7b.yaml: id: id 'model-8b' differs from the file name 'model-7b'",
    ),
    (
        "sources/paper-a.yaml",
        "id: paper-a",
        "id: Paper_A",
        "sources/paper-a.yaml: id: String should match pattern",
    ),
    (
        "frameworks/fw-two.yaml",
        "sources: [paper-a]",
        "sources: [paper-a]\nsurvey_class: library-centric",
        "frameworks/fw-two.yaml: survey_class: the class is read from the survey: cite "
        "arxiv-2608.27046",
    ),
    (
        "techniques/tensor-parallelism.yaml",
        "sources: [paper-a]",
        "sources: [paper-a]\nlocators: {repo-b: '§3'}",
        "techniques/tensor-parallelism.yaml: locators name sources not in sources: repo-b",
    ),
    ("algorithms/grpo.yaml", "grouped: true", "grouped: [unclosed", "algorithms/grpo.yaml: line"),
    (
        "accelerators/gpu-x.yaml",
        "memory_gib: 80",
        "memory_gib: -80",
        "accelerators/gpu-x.yaml: memory_gib: Input should be greater than 0",
    ),
    (
        "accelerators/gpu-x.yaml",
        "sources: [paper-a]",
        "sources: [paper-a]\nprice: {per_gpu_hour: 2.5, currency: USD, offering: a cloud, "
        "source: price-page, checked: 2026-12-03, as_of: 2026-09-20}",
        "accelerators/gpu-x.yaml: price.source: unknown source 'price-page'",
    ),
    (
        "accelerators/gpu-x.yaml",
        "sources: [paper-a]",
        "sources: [paper-a]\nprice: {per_gpu_hour: -1, currency: USD, offering: a cloud, "
        "source: paper-a, checked: 2026-12-03, as_of: null}",
        "accelerators/gpu-x.yaml: price.per_gpu_hour: Input should be greater than 0",
    ),
    (
        "accelerators/gpu-x.yaml",
        "memory_gib: 80",
        "memory_gib: 80\nvisible_memory_mib: 81559",
        "accelerators/gpu-x.yaml: visible_memory_mib and visible_memory_source go together",
    ),
    (
        "accelerators/gpu-x.yaml",
        "memory_gib: 80",
        "memory_gib: 80\nvisible_memory_mib: 81559\nvisible_memory_source: smi-log",
        "accelerators/gpu-x.yaml: visible_memory_source: unknown source 'smi-log'",
    ),
    (
        "accelerators/gpu-x.yaml",
        "memory_gib: 80",
        "memory_gib: 80\nvisible_memory_mib: 90000\nvisible_memory_source: paper-a",
        "accelerators/gpu-x.yaml: visible_memory_mib 90000 is above memory_gib 80 GiB",
    ),
]


@pytest.mark.parametrize(("name", "old", "new", "expected"), CASES, ids=[c[3][:50] for c in CASES])
def test_each_check_reports_its_problem(
    fixture_kb: Path, name: str, old: str, new: str, expected: str
) -> None:
    edit(fixture_kb, name, old, new)
    found = problems(fixture_kb)
    assert any(expected in p for p in found), found


def test_an_unordered_pair_is_of_one_source(fixture_kb: Path) -> None:
    # Only figures of one source are ranked (rules.fidelity.orderings), so setting aside a
    # pair across sources would excuse nothing: the validator names the other source.
    step = (fixture_kb / "results/fw-one-step.yaml").read_text()
    other = step.replace("id: fw-one-step", "id: fw-other-step").replace(
        "source: paper-a", "source: repo-b"
    )
    (fixture_kb / "results/fw-other-step.yaml").write_text(other)
    assert problems(fixture_kb) == []
    edit(
        fixture_kb,
        "results/fw-one-step.yaml",
        "unit: s",
        "unit: s\nunordered_with: [fw-other-step]",
    )
    assert problems(fixture_kb) == [
        "results/fw-one-step.yaml: unordered_with[0]: 'fw-other-step' is from repo-b, not paper-a"
    ]


def test_malformed_yaml_names_file_and_line(fixture_kb: Path) -> None:
    edit(fixture_kb, "algorithms/grpo.yaml", "grouped: true", "grouped: [unclosed")
    (found,) = problems(fixture_kb)
    assert found.startswith("algorithms/grpo.yaml: line ") and "malformed YAML" in found


def test_a_record_must_be_a_mapping(fixture_kb: Path) -> None:
    (fixture_kb / "sources" / "list.yaml").write_text("- 1\n- 2\n")
    assert "sources/list.yaml: a record must be a YAML mapping" in problems(fixture_kb)


def test_unknown_kind_folder(fixture_kb: Path) -> None:
    (fixture_kb / "gadgets").mkdir()
    (fixture_kb / "gadgets" / "x.yaml").write_text("id: x\n")
    assert any(p.startswith("gadgets/x.yaml: unknown kind folder") for p in problems(fixture_kb))


def test_duplicate_ids_across_roots(fixture_kb: Path, tmp_path: Path) -> None:
    other = tmp_path / "more"
    (other / "sources").mkdir(parents=True)
    (other / "sources" / "paper-a.yaml").write_text(
        (fixture_kb / "sources/paper-a.yaml").read_text()
    )
    found = problems(fixture_kb, (other, None))
    assert any("duplicate source id" in p for p in found), found


def test_all_problems_are_collected_at_once(fixture_kb: Path) -> None:
    edit(fixture_kb, "frameworks/fw-one.yaml", "feature: grpo", "feature: nope")
    edit(fixture_kb, "techniques/tensor-parallelism.yaml", "parent: parallelism", "parent: nope")
    edit(fixture_kb, "models/model-7b.yaml", "layers: 28", "layers: zero")
    assert len(problems(fixture_kb)) == 3


def test_coverage_warnings(fixture_kb: Path) -> None:
    warnings = problems(fixture_kb, severity="warning")
    assert any(
        w.startswith("frameworks/fw-two.yaml: claims: only 1 of the comparison dimensions")
        for w in warnings
    ), warnings
    (fixture_kb / "sources" / "lonely.yaml").write_text(
        "id: lonely\ntype: blog\ntitle: Nobody cites me\nurl: https://example.org/l\n"
    )
    (fixture_kb / "techniques" / "orphan.yaml").write_text(
        "id: orphan\nname: Orphan\nparent: parallelism\nscope: training\n"
        "description: Claimed by nobody.\nsources: [paper-a]\n"
    )
    warnings = problems(fixture_kb, severity="warning")
    assert "sources/lonely.yaml: no record cites this source" in warnings
    assert "techniques/orphan.yaml: no framework claims this technique" in warnings
    assert problems(fixture_kb) == []
    # A source the cost core cites counts as cited; a cited id with no record is an error.
    found = validate(load_catalog([(fixture_kb, None)]), ["lonely", "lonley"])
    shown = [str(p) for p in found]
    assert "sources/lonely.yaml: no record cites this source" not in shown
    assert "(code): cites unknown source 'lonley' (did you mean 'lonely'?)" in shown


def test_catalog_cache_is_reused_until_a_record_changes(
    fixture_kb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLMGUIDE_CACHE_DIR", str(tmp_path / "cache"))
    first = load_catalog([(fixture_kb, None)])
    [cached] = (tmp_path / "cache" / "catalogs").glob("*.json")
    again = load_catalog([(fixture_kb, None)])
    assert again is not first and again.records == first.records
    cached.write_bytes(b"not json")  # a damaged cache file is parsed around, not trusted
    assert load_catalog([(fixture_kb, None)]).records == first.records
    edit(fixture_kb, "frameworks/fw-one.yaml", "licence: Apache-2.0", "licence: MIT")
    edited = load_catalog([(fixture_kb, None)])
    assert edited.of("framework")["fw-one"].licence == "MIT"  # type: ignore[attr-defined]


DIRECTION = """id: auto-parallel
title: Automatic selection of parallelization schemes
section: §7
position: 3
statement: Choose each call's layout from the cluster.
coverage: partial
coverage_note: the planner searches layouts per pool.
techniques: [tensor-parallelism, pipeline-parallelism]
frameworks: [fw-one]
sources: [paper-a]
locators: {paper-a: §7}
"""


def test_a_direction_links_only_known_records(fixture_kb: Path) -> None:
    (fixture_kb / "directions").mkdir()
    (fixture_kb / "directions" / "auto-parallel.yaml").write_text(DIRECTION)
    assert problems(fixture_kb) == [
        "directions/auto-parallel.yaml: techniques[1]: unknown technique "
        "'pipeline-parallelism' (did you mean 'tensor-parallelism', 'parallelism'?)"
    ]


def test_citing_the_survey_without_a_locator_is_a_warning(fixture_kb: Path) -> None:
    survey = "id: arxiv-2608.27046\ntype: paper\ntitle: The survey\nurl: https://arxiv.org/abs/2608.27046\n"
    (fixture_kb / "sources" / "arxiv-2608.27046.yaml").write_text(survey)
    edit(
        fixture_kb,
        "techniques/tensor-parallelism.yaml",
        "sources: [paper-a]",
        "sources: [paper-a, arxiv-2608.27046]",
    )
    assert problems(fixture_kb) == []
    assert (
        "techniques/tensor-parallelism.yaml: locators: cites the survey (arxiv-2608.27046) "
        "without its section or table" in " ".join(problems(fixture_kb, severity="warning"))
    )
    edit(
        fixture_kb,
        "techniques/tensor-parallelism.yaml",
        "arxiv-2608.27046]",
        "arxiv-2608.27046]\nlocators: {arxiv-2608.27046: '§3.2'}",
    )
    assert not any("cites the survey" in p for p in problems(fixture_kb, severity="warning"))


def test_an_alias_names_one_model(fixture_kb: Path) -> None:
    models = fixture_kb / "models"
    twin = (models / "model-7b.yaml").read_text().replace("id: model-7b", "id: model-7b-twin")
    twin = twin.replace("name: Model 7B (Qwen2.5-7B shape)", "name: Twin")
    (models / "model-7b-twin.yaml").write_text(twin + "aliases: [Org/Twin-Instruct]\n")
    edit(fixture_kb, "models/model-7b.yaml", "family: fixture", "family: fixture\naliases: [x]")
    assert problems(fixture_kb) == []
    # The same slug (a variant suffix and an organisation apart) on another record is an error,
    # and so is another record's own id taken as an alias.
    edit(fixture_kb, "models/model-7b.yaml", "aliases: [x]", "aliases: [twin, model_7b_twin]")
    assert problems(fixture_kb) == [
        "models/model-7b.yaml: aliases[0]: alias 'twin' (twin) also names 'model-7b-twin'",
        "models/model-7b.yaml: aliases[1]: alias 'model_7b_twin' (model-7b-twin) also names "
        "'model-7b-twin'",
    ]
