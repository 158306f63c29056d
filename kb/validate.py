"""Cross-record checks: every reference resolves, every fact is cited, the taxonomy is a tree.

Each check reads like one line of a checklist and adds `Problem`s; nothing stops early, so a
contributor sees every error of a change at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from rlmguide.kb.closest import closest
from rlmguide.kb.evidence import PINNED_SOURCE_TYPES, is_pinned
from rlmguide.kb.load import Catalog, Problem
from rlmguide.kb.model_names import model_slug, own_spellings
from rlmguide.kb.schema import (
    Algorithm,
    Component,
    Constraint,
    Deployment,
    Direction,
    Framework,
    Mapping,
    Record,
    Result,
    Rule,
    Scenario,
    Technique,
)

FEATURE_KINDS = ("technique", "algorithm", "component")
SURVEY = "arxiv-2608.27046"
"""The survey the project is built from: a framework's `survey_class` is read from it."""


def suggest(name: str, known: Iterable[str]) -> str:
    close = closest(name, known)
    return f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""


class Checker:
    def __init__(self, catalog: Catalog, cited_by_code: Iterable[str] = ()) -> None:
        self.catalog = catalog
        self.cited_by_code = frozenset(cited_by_code)
        self.problems: list[Problem] = []

    def report(self, record: Record, path: str, message: str, severity: str = "error") -> None:
        self.problems.append(Problem(self.catalog.file_of(record), path, message, severity))

    def ref(self, record: Record, path: str, kind: str, value: str | None) -> None:
        """`value` must be the id of a record of `kind`."""
        if value is None or (kind, value) in self.catalog.broken:
            return
        known = self.catalog.of(kind)
        if value not in known:
            self.report(record, path, f"unknown {kind} {value!r}{suggest(value, known)}")

    def sources(self, record: Record, path: str, ids: Iterable[str]) -> None:
        for i, source in enumerate(ids):
            self.ref(record, f"{path}[{i}]", "source", source)

    def scenario(self, record: Record, path: str, scenario: Scenario) -> None:
        cluster, models = scenario.cluster, scenario.models
        if isinstance(cluster.accelerator, str):
            self.ref(record, f"{path}.cluster.accelerator", "accelerator", cluster.accelerator)
        for i, part in enumerate(cluster.parts or ()):
            if isinstance(part.accelerator, str):
                where = f"{path}.cluster.parts[{i}].accelerator"
                self.ref(record, where, "accelerator", part.accelerator)
        for role in ("policy", "critic", "reward"):
            value = getattr(models, role)
            if isinstance(value, str) and value != "verifier":
                self.ref(record, f"{path}.models.{role}", "model", value)
        self.ref(record, f"{path}.workload.algorithm", "algorithm", scenario.workload.algorithm)


def check_citations(c: Checker) -> None:
    kinds = ("technique", "algorithm", "component", "framework", "accelerator", "model")
    for kind in (*kinds, "direction", "rule"):
        for record in c.catalog.of(kind).values():
            if kind != "rule":  # check_rules resolves a rule's sources with its other fields
                c.sources(record, "sources", record.sources)  # type: ignore[attr-defined]
            if SURVEY in record.sources and SURVEY not in record.locators:  # type: ignore[attr-defined]
                c.report(
                    record,
                    "locators",
                    f"cites the survey ({SURVEY}) without its section or table; add "
                    f'locators: {{{SURVEY}: "§4.7"}} or the like',
                    "warning",
                )
    for accelerator in c.catalog.of("accelerator").values():
        if price := getattr(accelerator, "price", None):
            c.ref(accelerator, "price.source", "source", price.source)
        if visible := getattr(accelerator, "visible_memory_source", None):
            c.ref(accelerator, "visible_memory_source", "source", visible)


def check_frameworks(c: Checker) -> None:
    features = {k: c.catalog.of(k) for k in FEATURE_KINDS}
    every = [i for by_id in features.values() for i in by_id]
    for fw in c.catalog.of("framework").values():
        assert isinstance(fw, Framework)
        c.ref(fw, "paper", "source", fw.paper)
        if fw.survey_class and SURVEY not in fw.locators:
            c.report(
                fw,
                "survey_class",
                f"the class is read from the survey: cite {SURVEY} in sources with its "
                "locator (locators: {" + SURVEY + ': "§6.2"})',
            )
        if fw.latest_release:
            c.ref(fw, "latest_release.source", "source", fw.latest_release.source)
        c.ref(fw, "availability.source", "source", fw.availability.source)
        sources = c.catalog.of("source")
        for i, claim in enumerate(fw.claims):
            broken = any((k, claim.feature) in c.catalog.broken for k in FEATURE_KINDS)
            if not broken and not any(claim.feature in by_id for by_id in features.values()):
                c.report(
                    fw,
                    f"claims[{i}].feature",
                    f"unknown feature {claim.feature!r}: not a technique, algorithm or "
                    f"component{suggest(claim.feature, every)}",
                )
            c.ref(fw, f"claims[{i}].source", "source", claim.source)
            source = sources.get(claim.source)
            kind = getattr(source, "type", None)
            if kind in PINNED_SOURCE_TYPES and not is_pinned(claim.version):
                shown = f"{claim.version!r}" if claim.version else "none"
                c.report(
                    fw,
                    f"claims[{i}].version",
                    f"a {kind} source changes under its address: pin the commit or release "
                    f"read (version is {shown}; a branch such as 'main' floats)",
                )


def check_taxonomy(c: Checker) -> None:
    techniques = c.catalog.of("technique")
    for tech in techniques.values():
        assert isinstance(tech, Technique)
        c.ref(tech, "parent", "technique", tech.parent)
    reported: set[str] = set()
    for tech in techniques.values():
        seen = [tech.id]
        parent = tech.parent  # type: ignore[attr-defined]
        while parent in techniques and parent not in reported:
            if parent in seen:
                cycle = [*seen[seen.index(parent) :], parent]
                c.report(tech, "parent", "taxonomy cycle: " + " -> ".join(cycle))
                reported.update(cycle)
                break
            seen.append(parent)
            parent = techniques[parent].parent  # type: ignore[attr-defined]
    for algorithm in c.catalog.of("algorithm").values():
        assert isinstance(algorithm, Algorithm)
        c.ref(algorithm, "variant_of", "algorithm", algorithm.variant_of)


def check_results(c: Checker) -> None:
    for result in c.catalog.of("result").values():
        assert isinstance(result, Result)
        c.ref(result, "source", "source", result.source)
        c.ref(result, "framework", "framework", result.framework)
        if result.scenario:
            c.scenario(result, "scenario", result.scenario)
        if result.metric == "speedup" and not result.baseline:
            c.report(result, "baseline", "a speedup needs the baseline it is measured against")
        for i, other in enumerate(result.unordered_with):
            path = f"unordered_with[{i}]"
            c.ref(result, path, "result", other)
            paired = c.catalog.of("result").get(other)
            if isinstance(paired, Result) and paired.source != result.source:
                # Only figures of one source are ever ranked against each other.
                c.report(result, path, f"{other!r} is from {paired.source}, not {result.source}")


def check_deployments(c: Checker) -> None:
    for deployment in c.catalog.of("deployment").values():
        assert isinstance(deployment, Deployment)
        c.ref(deployment, "source", "source", deployment.source)
        c.ref(deployment, "framework", "framework", deployment.framework)
        c.ref(deployment, "step_source", "source", deployment.step_source)
        c.scenario(deployment, "scenario", deployment.scenario)


def check_constraints(c: Checker) -> None:
    """References only: the conditions are checked by the guideline engine that runs them."""
    mappings = c.catalog.of("mapping")
    for constraint in c.catalog.of("constraint").values():
        assert isinstance(constraint, Constraint)
        c.ref(constraint, "source", "source", constraint.source)
        c.ref(constraint, "framework", "framework", constraint.framework)
        c.ref(constraint, "component", "component", constraint.component)
        for i, version in enumerate(constraint.versions):
            c.ref(constraint, f"versions[{i}]", "mapping", version)
            owner = getattr(mappings.get(version), "framework", constraint.framework)
            if owner != constraint.framework:
                c.report(
                    constraint,
                    f"versions[{i}]",
                    f"mapping {version!r} is {owner}'s, not "
                    f"{constraint.framework or 'a framework'}'s: a version scope names the "
                    "constraint's own framework's mappings",
                )
    for component in c.catalog.of("component").values():
        assert isinstance(component, Component)
        c.ref(component, "extends", "component", component.extends)


def check_mappings(c: Checker) -> None:
    """References only: the facts named are checked by the exporter that reads them."""
    for mapping in c.catalog.of("mapping").values():
        assert isinstance(mapping, Mapping)
        c.ref(mapping, "source", "source", mapping.source)
        c.ref(mapping, "framework", "framework", mapping.framework)
        for i, component in enumerate(mapping.components):
            c.ref(mapping, f"components[{i}]", "component", component)
        for i, entry in enumerate(mapping.entries):
            c.ref(mapping, f"entries[{i}].component", "component", entry.component)
        for i, launch in enumerate(mapping.launches):
            c.ref(mapping, f"launches[{i}].component", "component", launch.component)


def check_model_names(c: Checker) -> None:
    """One alias names one model: an alias another record also uses (as its id, name or alias)
    would make `review` match a launch's model path to either."""
    models = c.catalog.of("model")
    owner = {s: mid for mid, record in models.items() for s in own_spellings(mid, record)}
    for mid, record in models.items():
        for i, alias in enumerate(getattr(record, "aliases", ())):
            slug = model_slug(alias)
            other = owner.setdefault(slug, mid)
            if other != mid:
                c.report(record, f"aliases[{i}]", f"alias {alias!r} ({slug}) also names {other!r}")


def check_rules(c: Checker) -> None:
    for rule in c.catalog.of("rule").values():
        assert isinstance(rule, Rule)
        c.sources(rule, "sources", rule.sources)
        for i, technique in enumerate(rule.techniques):
            c.ref(rule, f"techniques[{i}]", "technique", technique)
        for i, example in enumerate(rule.examples):
            c.scenario(rule, f"examples[{i}].scenario", example.scenario)


def check_directions(c: Checker) -> None:
    for direction in c.catalog.of("direction").values():
        assert isinstance(direction, Direction)
        for field, kind in (
            ("techniques", "technique"),
            ("frameworks", "framework"),
            ("rules", "rule"),
        ):
            for i, value in enumerate(getattr(direction, field)):
                c.ref(direction, f"{field}[{i}]", kind, value)


MIN_DIMENSIONS = 10


def check_coverage(c: Checker) -> None:
    """Warnings, not errors: thin frameworks, unclaimed techniques, uncited sources."""
    from rlmguide.kb.coverage import framework_dimensions

    for fid, dims in framework_dimensions(c.catalog).items():
        if len(dims) < MIN_DIMENSIONS:
            fw = c.catalog.of("framework")[fid]
            c.report(
                fw,
                "claims",
                f"only {len(dims)} of the comparison dimensions are known "
                f"(at least {MIN_DIMENSIONS} wanted)",
                "warning",
            )
    claimed = {cl.feature for fw in c.catalog.of("framework").values() for cl in fw.claims}  # type: ignore[attr-defined]
    techniques = c.catalog.of("technique")
    parents = {t.parent for t in techniques.values()}  # type: ignore[attr-defined]
    for tech in techniques.values():
        if tech.id not in claimed and tech.id not in parents:
            c.report(tech, "", "no framework claims this technique", "warning")
    cited = {s for r in c.catalog.all() for s in r.cited_sources()}
    cited |= {cl.source for fw in c.catalog.of("framework").values() for cl in fw.claims}  # type: ignore[attr-defined]
    cited |= c.cited_by_code
    for source in c.catalog.of("source").values():
        if source.id not in cited:
            c.report(source, "", "no record cites this source", "warning")


CHECKS: tuple[Callable[[Checker], None], ...] = (
    check_citations,
    check_frameworks,
    check_taxonomy,
    check_results,
    check_deployments,
    check_constraints,
    check_mappings,
    check_model_names,
    check_rules,
    check_directions,
    check_coverage,
)


def validate(catalog: Catalog, cited_by_code: Iterable[str] = ()) -> list[Problem]:
    """Every problem of the catalog: those found while loading, then the cross-record ones.

    `cited_by_code` are source ids that code outside the knowledge base cites (the cost core's
    efficiency defaults): they count as cited, and one that names no source record is warned
    about (a warning, not an error, so a knowledge base of other records still validates).
    """
    checker = Checker(catalog, cited_by_code)
    for check in CHECKS:
        check(checker)
    known = catalog.of("source")
    missing = [
        Problem("(code)", "", f"cites unknown source {s!r}{suggest(s, known)}", "warning")
        for s in sorted(checker.cited_by_code)
        if s not in known
    ]
    return [*catalog.problems, *checker.problems, *missing]
