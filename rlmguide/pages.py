"""The site's page generator: records and the database in, {page path: Markdown} out.

`generate` is a pure function (no file writes, no MkDocs): the MkDocs hook in `site/hooks.py`
turns its output into virtual pages, and the tests check it without building anything.
`navigation` lays the pages out for MkDocs, `edit_paths` maps each record page to its YAML file
for the "edit this page" button. Values nobody recorded read "unknown", never "no".
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import duckdb
import yaml

from kb.load import Catalog
from kb.paths import PLURALS
from kb.query import QueryError, canned_queries, run
from kb.schema import (
    Accelerator,
    Algorithm,
    Claim,
    Component,
    Framework,
    Model,
    Record,
    Result,
    Rule,
    Source,
    Technique,
)
from rlmguide.mdtext import (
    UNKNOWN,
    attr,
    bullets,
    code,
    document,
    esc,
    external,
    fenced,
    fields,
    link,
    number,
    rel,
    show,
    table,
    url,
)
from rules.engine import compile_rules
from rules.facts import PLAN_FACTS, SCENARIO_FACTS

Pages = dict[str, str]

HOME = "index.md"
SQL_HOWTO = "sql/index.md"
HAND_WRITTEN = (HOME, SQL_HOWTO)
"""Pages written by hand in `site/docs/`; the generator never produces these paths."""

MATRIX = "frameworks/matrix.md"
TAXONOMY = "techniques/index.md"
FACTS_PAGE = "rules/facts.md"
SQL_REFERENCE = "sql/reference.md"
SQL_QUERIES = "sql/queries.md"

SUPPORT_ORDER = {"yes": 0, "partial": 1, "planned": 2, "no": 3}
"""Sort rank of a support level in the matrix: best first."""
FEATURE_KINDS = ("algorithm", "technique", "component")
QUERY_ROW_LIMIT = 100
"""Canned query outputs longer than this are cut on the page (the CLI shows all of them)."""


def page_of(kind: str, record_id: str) -> str:
    return f"{PLURALS[kind]}/{record_id}.md"


def index_of(kind: str) -> str:
    return f"{PLURALS[kind]}/index.md"


def title_of(record: Record) -> str:
    """The human name of a record: its name, title or (for results) its id."""
    for name in ("name", "title"):
        if value := getattr(record, name, None):
            return str(value)
    return record.id


def by_title(records: Iterable[Record]) -> list[Any]:
    return sorted(records, key=lambda r: (title_of(r).lower(), r.id))


def support_badge(support: str) -> str:
    """A support level as inline HTML, coloured by the site's stylesheet."""
    return f'<span class="support support-{support}">{support}</span>'


@dataclass(frozen=True)
class Index:
    """Lookups the pages share, computed once from the catalog."""

    catalog: Catalog
    frameworks: list[Framework]
    claims: dict[str, dict[str, Claim]]
    """feature id -> framework id -> claim"""
    cited_by: dict[str, list[tuple[str, str]]]
    """source id -> (page, label) of every record and claim citing it"""
    children: dict[str | None, list[Technique]]
    fact_users: dict[str, list[Rule]]

    def of(self, kind: str) -> list[Any]:
        return by_title(self.catalog.of(kind).values())

    def get(self, kind: str, record_id: str | None) -> Any:
        return self.catalog.of(kind).get(record_id) if record_id else None

    def feature_kind(self, feature: str) -> str | None:
        return next((k for k in FEATURE_KINDS if feature in self.catalog.of(k)), None)

    def feature_link(self, src: str, feature: str) -> str:
        kind = self.feature_kind(feature)
        if kind is None:
            return esc(feature)
        return link(src, page_of(kind, feature), esc(title_of(self.catalog.of(kind)[feature])))

    def source_link(self, src: str, source_id: str | None) -> str:
        """The source's own page and, beside it, its address."""
        source = self.get("source", source_id)
        if source is None:
            return show(source_id)
        return link(src, page_of("source", source.id), esc(source.id)) + " " + external(
            source.url, "↗"
        )

    def sources_list(self, src: str, ids: Iterable[str]) -> str:
        items = []
        for source_id in dict.fromkeys(ids):
            source = self.get("source", source_id)
            if source is None:
                items.append(esc(source_id))
                continue
            year = f" ({source.year})" if source.year else ""
            name = link(src, page_of("source", source.id), esc(source.title))
            items.append(f"{name}{year}: {external(source.url, esc(source.url))}")
        return bullets(items)


def build_index(catalog: Catalog) -> Index:
    frameworks = by_title(catalog.of("framework").values())
    claims: dict[str, dict[str, Claim]] = defaultdict(dict)
    cited_by: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for fw in frameworks:
        for claim in fw.claims:
            claims[claim.feature][fw.id] = claim
            cited_by[claim.source].append(
                (page_of("framework", fw.id), f"{fw.name} claim on {claim.feature}")
            )
    for record in catalog.all():
        for source in dict.fromkeys(record.cited_sources()):
            label = f"{record.kind} {title_of(record)}"
            cited_by[source].append((page_of(record.kind, record.id), label))
    children: dict[str | None, list[Technique]] = defaultdict(list)
    for tech in catalog.of("technique").values():
        assert isinstance(tech, Technique)
        children[tech.parent].append(tech)
    for kids in children.values():
        kids.sort(key=lambda t: (t.name.lower(), t.id))
    fact_users: dict[str, list[Rule]] = defaultdict(list)
    for compiled in compile_rules(catalog)[0]:
        for name in sorted(compiled.applies.names | compiled.condition.names):
            fact_users[name].append(compiled.record)
    return Index(catalog, frameworks, dict(claims), dict(cited_by), dict(children), fact_users)


# --- shared blocks ---------------------------------------------------------------------------


def support_table(ix: Index, src: str, feature: str) -> str:
    """Every framework's claim on one feature; a framework with no claim reads "unknown"."""
    rows = []
    for fw in ix.frameworks:
        claim = ix.claims.get(feature, {}).get(fw.id)
        name = link(src, page_of("framework", fw.id), esc(fw.name))
        if claim is None:
            rows.append([name, support_badge(UNKNOWN), "no claim recorded", UNKNOWN, UNKNOWN])
            continue
        rows.append(
            [
                name,
                support_badge(claim.support),
                show(claim.note),
                ix.source_link(src, claim.source),
                show(claim.verified),
            ]
        )
    return table(["Framework", "Support", "Note", "Source", "Verified"], rows)


def sources_section(ix: Index, src: str, ids: Iterable[str]) -> str:
    listed = ix.sources_list(src, ids)
    return f"## Sources\n\n{listed}" if listed else ""


def scenario_yaml(scenario: Any) -> str:
    """A scenario as the YAML its author wrote (fields left out stay out)."""
    data = scenario.model_dump(mode="json", exclude_unset=True)
    return fenced("yaml", yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


# --- taxonomy --------------------------------------------------------------------------------


def ancestors(ix: Index, tech: Technique) -> list[Technique]:
    chain: list[Technique] = []
    parent = ix.get("technique", tech.parent)
    while parent is not None and parent not in chain:
        chain.insert(0, parent)
        parent = ix.get("technique", parent.parent)
    return chain


def descendants(ix: Index, tech: Technique) -> list[tuple[int, Technique]]:
    """(depth below `tech`, technique) in tree order."""
    found: list[tuple[int, Technique]] = []
    for child in ix.children.get(tech.id, []):
        found.append((1, child))
        found.extend((depth + 1, t) for depth, t in descendants(ix, child))
    return found


def mermaid_tree(ix: Index, root: Technique) -> str:
    """A left-to-right Mermaid flowchart of one subtree (node ids are positional, labels quoted)."""
    nodes = [root, *(t for _, t in descendants(ix, root))]
    ids = {t.id: f"n{i}" for i, t in enumerate(nodes)}
    lines = ["graph LR"]
    for tech in nodes:
        label = tech.name.replace('"', "#quot;")
        lines.append(f'    {ids[tech.id]}["{label}"]')
    for tech in nodes[1:]:
        lines.append(f"    {ids[tech.parent]} --> {ids[tech.id]}")  # type: ignore[index]
    return fenced("mermaid", "\n".join(lines))


def tree_list(ix: Index, src: str, root: Technique) -> str:
    lines = [f"- {link(src, page_of('technique', root.id), esc(root.name))}"]
    for depth, tech in descendants(ix, root):
        item = link(src, page_of("technique", tech.id), esc(tech.name))
        lines.append("    " * depth + f"- {item} ({esc(tech.scope)})")
    return "\n".join(lines) + "\n"


def taxonomy_index(ix: Index) -> str:
    roots = ix.children.get(None, [])
    blocks = [
        "# Taxonomy",
        "The techniques that lay out an RL post-training run, as a tree: how one model is split "
        "across GPUs (intra-model parallelism), how the models of a step share the cluster "
        "(inter-model placement and fusion), how rollout and training overlap in time "
        "(execution modes), and the rollout, training, memory and weight-sync optimisations "
        "built on top. Each technique's page gives what it splits, its effect on work, depth, "
        "memory and communication, and the frameworks that claim it. "
        f"{len(ix.catalog.of('technique'))} techniques under {len(roots)} roots.",
    ]
    for root in roots:
        blocks += [f"## {esc(root.name)}", esc(root.description), mermaid_tree(ix, root)]
        blocks.append(tree_list(ix, TAXONOMY, root))
    return document(*blocks)


def technique_page(ix: Index, tech: Technique) -> str:
    src = page_of("technique", tech.id)
    trail = [link(src, TAXONOMY, "Taxonomy")]
    trail += [link(src, page_of("technique", t.id), esc(t.name)) for t in ancestors(ix, tech)]
    effects = [
        ("Work", tech.work_effect),
        ("Depth", tech.depth_effect),
        ("Memory", tech.memory_effect),
        ("Communication", tech.communication_effect),
    ]
    kids = ix.children.get(tech.id, [])
    blocks = [
        f"# {esc(tech.name)}",
        "Path: " + " › ".join(trail),
        fields(
            [
                ("Id", code(tech.id)),
                ("Scope", esc(tech.scope)),
                ("Also known as", show(tech.aliases)),
            ]
        ),
        esc(tech.description),
        "## What it splits or overlaps",
        show(tech.splits),
        "## Effects",
        table(["On", "Effect"], [(name, show(value)) for name, value in effects]),
        "## Trade-offs",
        show(tech.tradeoffs),
    ]
    if kids:
        items = [link(src, page_of("technique", k.id), esc(k.name)) for k in kids]
        blocks += ["## Refinements", bullets(items)]
    blocks += ["## Framework support", support_table(ix, src, tech.id)]
    blocks.append(sources_section(ix, src, tech.sources))
    return document(*blocks)


def taxonomy_pages(ix: Index) -> Pages:
    pages = {TAXONOMY: taxonomy_index(ix)}
    for tech in ix.of("technique"):
        pages[page_of("technique", tech.id)] = technique_page(ix, tech)
    return pages


# --- frameworks and the matrix ---------------------------------------------------------------


def claims_table(ix: Index, src: str, claims: list[Claim]) -> str:
    rows = [
        [
            ix.feature_link(src, c.feature),
            support_badge(c.support),
            show(c.note),
            ix.source_link(src, c.source),
            show(c.verified),
            show(c.version),
        ]
        for c in sorted(claims, key=lambda c: c.feature)
    ]
    return table(["Feature", "Support", "Note", "Source", "Verified", "Version"], rows)


def framework_page(ix: Index, fw: Framework) -> str:
    src = page_of("framework", fw.id)
    paper = ix.source_link(src, fw.paper) if fw.paper else UNKNOWN
    repo = external(fw.repository, esc(fw.repository)) if fw.repository else UNKNOWN
    blocks = [
        f"# {esc(fw.name)}",
        fields(
            [
                ("Id", code(fw.id)),
                ("Type", esc(fw.type)),
                ("Organisation", show(fw.organisation)),
                ("Repository", repo),
                ("Paper", paper),
                ("Licence", show(fw.licence)),
                ("First release", show(fw.first_release)),
                ("Claims", number(len(fw.claims))),
            ]
        ),
        esc(fw.description),
        "## Claims",
        "Every claim names the source it was checked against and the date of the check; "
        f"the {link(src, MATRIX, 'comparison matrix')} puts them beside the other frameworks'.",
    ]
    for kind in FEATURE_KINDS:
        mine = [c for c in fw.claims if ix.feature_kind(c.feature) == kind]
        if mine:
            blocks += [f"### {PLURALS[kind].capitalize()}", claims_table(ix, src, mine)]
    claimed = {c.feature for c in fw.claims}
    missing = [f for k in FEATURE_KINDS for f in sorted(ix.catalog.of(k)) if f not in claimed]
    if missing:
        names = ", ".join(ix.feature_link(src, f) for f in missing)
        blocks += ["### Unknown", f"No claim is recorded for these features: {names}."]
    results = [r for r in ix.of("result") if r.framework == fw.id]
    if results:
        items = [link(src, page_of("result", r.id), esc(r.id)) for r in results]
        blocks += ["## Published measurements", bullets(items)]
    blocks.append(sources_section(ix, src, fw.cited_sources()))
    return document(*blocks)


def matrix_features(ix: Index) -> list[tuple[str, str, Record]]:
    """(kind, category, record) of every feature that at least one framework claims."""
    found = []
    for kind in FEATURE_KINDS:
        for record in ix.of(kind):
            if record.id in ix.claims:
                category = getattr(record, "scope", None) or getattr(record, "role", None) or kind
                found.append((kind, str(category), record))
    return found


def matrix_cell(ix: Index, feature: str, fw: Framework) -> str:
    """One raw HTML cell: the support level linking to the claim's source, or unknown."""
    claim = ix.claims.get(feature, {}).get(fw.id)
    if claim is None:
        # data-sort "unknown" keeps these cells last in either sort direction (tables.js).
        return f'<td class="support-unknown" data-sort="{UNKNOWN}">{UNKNOWN}</td>'
    source = ix.get("source", claim.source)
    tip = attr(f"{claim.note or claim.support} (source {claim.source}, checked {claim.verified})")
    label = f'<span class="support support-{claim.support}">{claim.support}</span>'
    body = f'<a href="{attr(url(source.url))}" title="{tip}">{label}</a>' if source else label
    order = SUPPORT_ORDER[claim.support]
    return f'<td class="support-{claim.support}" data-sort="{order}">{body}</td>'


def matrix_table(ix: Index) -> str:
    """The frameworks x features table as HTML whose link cells are Markdown (md_in_html)."""
    heads = "".join(
        f'<th markdown="span">{link(MATRIX, page_of("framework", fw.id), esc(fw.name))}</th>'
        for fw in ix.frameworks
    )
    rows = []
    for kind, category, record in matrix_features(ix):
        name = link(MATRIX, page_of(kind, record.id), esc(title_of(record)))
        cells = "".join(matrix_cell(ix, record.id, fw) for fw in ix.frameworks)
        rows.append(
            f'<tr markdown="1"><td markdown="span">{name}</td>'
            f"<td>{attr(kind)} · {attr(category)}</td>{cells}</tr>"
        )
    return "\n".join(
        [
            # No class: Material styles only class-less tables, and the id is enough for the JS.
            '<table id="framework-matrix" markdown="1">',
            f'<thead markdown="1"><tr markdown="1"><th>Feature</th><th>Kind</th>{heads}</tr></thead>',
            '<tbody markdown="1">',
            *rows,
            "</tbody>",
            "</table>",
        ]
    )


def matrix_page(ix: Index) -> str:
    features = matrix_features(ix)
    unclaimed = [
        ix.feature_link(MATRIX, r)
        for k in FEATURE_KINDS
        for r in sorted(ix.catalog.of(k))
        if r not in ix.claims
    ]
    blocks = [
        "# Comparison matrix",
        f"{len(ix.frameworks)} frameworks against the {len(features)} features at least one "
        "of them claims. Each cell links to the source the claim was checked against (hover for "
        "the note and the date); a framework with no recorded claim reads **unknown**, which "
        "means nobody has checked, not that the feature is missing. Type in the box to keep only "
        "matching rows; click a column heading to sort by it.",
        '<div class="table-tools"><input type="search" class="table-filter" '
        'data-table="framework-matrix" placeholder="Filter features, e.g. async or vllm" '
        'aria-label="Filter the comparison matrix"> <span class="table-count" '
        'data-table="framework-matrix"></span></div>',
        matrix_table(ix),
    ]
    if unclaimed:
        blocks.append("No framework claims these features yet: " + ", ".join(unclaimed) + ".")
    return document(*blocks)


def frameworks_index(ix: Index) -> str:
    src = index_of("framework")
    rows = [
        [
            link(src, page_of("framework", fw.id), esc(fw.name)),
            esc(fw.type),
            show(fw.organisation),
            show(fw.licence),
            show(fw.first_release),
            number(len(fw.claims)),
        ]
        for fw in ix.frameworks
    ]
    return document(
        "# Frameworks",
        "RL-for-LLM systems and what each supports, claim by claim. The "
        f"{link(src, MATRIX, 'comparison matrix')} shows them side by side; the "
        f"{link(src, index_of('component'), 'components')} are the training backends, rollout "
        "engines and orchestrators they build on.",
        table(["Framework", "Type", "Organisation", "Licence", "First release", "Claims"], rows),
    )


def framework_pages(ix: Index) -> Pages:
    pages = {index_of("framework"): frameworks_index(ix), MATRIX: matrix_page(ix)}
    for fw in ix.frameworks:
        pages[page_of("framework", fw.id)] = framework_page(ix, fw)
    return pages


def component_page(ix: Index, comp: Component) -> str:
    src = page_of("component", comp.id)
    home = external(comp.url, esc(comp.url)) if comp.url else UNKNOWN
    return document(
        f"# {esc(comp.name)}",
        fields([("Id", code(comp.id)), ("Role", esc(comp.role)), ("Home", home)]),
        esc(comp.description),
        "## Framework support",
        support_table(ix, src, comp.id),
        sources_section(ix, src, comp.sources),
    )


def component_pages(ix: Index) -> Pages:
    src = index_of("component")
    rows = [
        [link(src, page_of("component", c.id), esc(c.name)), esc(c.role), claimed_by(ix, c.id)]
        for c in sorted(ix.of("component"), key=lambda c: (c.role, c.name.lower()))
    ]
    pages = {
        src: document(
            "# Components",
            "The building blocks frameworks combine: training backends, rollout (inference) "
            "engines, orchestration layers and communication libraries.",
            table(["Component", "Role", "Frameworks claiming it"], rows),
        )
    }
    for comp in ix.of("component"):
        pages[page_of("component", comp.id)] = component_page(ix, comp)
    return pages


def claimed_by(ix: Index, feature: str) -> str:
    """How many frameworks claim a feature fully, as text for index tables."""
    claims = ix.claims.get(feature, {})
    full = sum(c.support == "yes" for c in claims.values())
    return f"{full} yes of {len(claims)} claims"


# --- algorithms ------------------------------------------------------------------------------


def step_models(alg: Algorithm) -> tuple[list[str], list[str]]:
    """(trained, forward-only) models of one step: what the algorithm costs beyond generation."""
    trained = ["actor", *(["critic"] if alg.needs_critic else [])]
    forward = [*(["reference"] if alg.needs_reference else [])]
    if alg.reward == "model":
        forward.append("reward model")
    elif alg.reward == "either":
        forward.append("reward model (or a verifier)")
    return trained, forward


def algorithm_page(ix: Index, alg: Algorithm) -> str:
    src = page_of("algorithm", alg.id)
    trained, forward = step_models(alg)
    parent = ix.get("algorithm", alg.variant_of)
    variants = [a for a in ix.of("algorithm") if a.variant_of == alg.id]
    blocks = [
        f"# {esc(alg.name)}",
        fields(
            [
                ("Id", code(alg.id)),
                (
                    "Variant of",
                    link(src, page_of("algorithm", parent.id), esc(parent.name))
                    if parent
                    else "none (a base algorithm)",
                ),
                ("Trained models", esc(", ".join(trained))),
                ("Forward-only models", esc(", ".join(forward)) if forward else "none"),
                ("Reward", esc(alg.reward)),
                ("Samples a group per prompt", show(alg.grouped)),
                ("Typical samples per prompt", show(alg.typical_samples_per_prompt)),
                ("Extra generations per prompt", show(alg.extra_generations_per_prompt)),
            ]
        ),
        esc(alg.description),
        "## Advantage",
        esc(alg.advantage),
        "## KL handling",
        esc(alg.kl),
        "## Off-policy tolerance",
        show(alg.off_policy),
    ]
    if variants:
        items = [link(src, page_of("algorithm", a.id), esc(a.name)) for a in variants]
        blocks += ["## Variants", bullets(items)]
    blocks += ["## Framework support", support_table(ix, src, alg.id)]
    blocks.append(sources_section(ix, src, alg.sources))
    return document(*blocks)


def algorithms_index(ix: Index) -> str:
    src = index_of("algorithm")
    rows = []
    for alg in ix.of("algorithm"):
        trained, forward = step_models(alg)
        rows.append(
            [
                link(src, page_of("algorithm", alg.id), esc(alg.name)),
                esc(", ".join(trained)),
                esc(", ".join(forward)) if forward else "none",
                esc(alg.reward),
                show(alg.grouped),
                show(alg.typical_samples_per_prompt),
                show(alg.extra_generations_per_prompt),
                claimed_by(ix, alg.id),
            ]
        )
    return document(
        "# Algorithms",
        "What a step of each algorithm runs besides generation. Every trained model costs a "
        "forward and backward pass and holds weights, gradients and optimizer state; every "
        "forward-only model costs one forward pass over every response; a grouped algorithm "
        "multiplies rollout work by its group size, and extra generations add rollouts on top.",
        table(
            [
                "Algorithm",
                "Trained",
                "Forward only",
                "Reward",
                "Grouped",
                "Samples per prompt",
                "Extra generations",
                "Frameworks",
            ],
            rows,
        ),
    )


def algorithm_pages(ix: Index) -> Pages:
    pages = {index_of("algorithm"): algorithms_index(ix)}
    for alg in ix.of("algorithm"):
        pages[page_of("algorithm", alg.id)] = algorithm_page(ix, alg)
    return pages


# --- guidelines ------------------------------------------------------------------------------

EFFECTS = {
    "require": "a plan where the rule applies and the condition fails is rejected",
    "prefer": "among near-equal plans, one where the rule applies and the condition holds "
    "ranks first",
    "advise": "where the rule applies and the condition holds, its statement is shown as a note",
}


def rule_page(ix: Index, rule: Rule) -> str:
    src = page_of("rule", rule.id)
    used = sorted(n for n, users in ix.fact_users.items() if rule in users)
    blocks = [
        f"# {esc(rule.title)}",
        f"!!! {'warning' if rule.effect == 'require' else 'tip'} \"{rule.effect}\"\n\n"
        f"    {esc(rule.statement)}",
        fields(
            [
                ("Id", code(rule.id)),
                ("Topic", esc(rule.topic)),
                ("Effect", f"{esc(rule.effect)}: {EFFECTS[rule.effect]}"),
                ("Lifecycle", esc(rule.lifecycle)),
                ("Applies when", code(rule.applies)),
                ("Condition", code(rule.condition)),
                ("Facts read", ", ".join(code(n) for n in used) if used else "none"),
            ]
        ),
        "## Why",
        esc(rule.rationale),
        f"The facts are described on the {link(src, FACTS_PAGE, 'facts page')}.",
        sources_section(ix, src, rule.sources),
        "## Examples",
        "Each example is a test: the rule must fire on the first kind and stay silent on the "
        "second.",
    ]
    for example in rule.examples:
        verdict = "fires" if example.fires else "stays silent"
        blocks += [f"### {esc(example.description)}", f"The rule {verdict}.", scenario_yaml(
            example.scenario
        )]
    return document(*blocks)


def rules_index(ix: Index) -> str:
    src = index_of("rule")
    topics: dict[str, list[Rule]] = defaultdict(list)
    for rule in ix.of("rule"):
        topics[rule.topic].append(rule)
    blocks = [
        "# Guidelines",
        "The rules the recommender applies to candidate plans. Each is a record with a "
        "condition over named facts of the scenario and the plan "
        f"(see the {link(src, FACTS_PAGE, 'facts')}), an effect, a rationale and sources.",
        table(["Effect", "Meaning"], [(e, esc(m)) for e, m in EFFECTS.items()]),
    ]
    for topic in sorted(topics):
        rows = [
            [link(src, page_of("rule", r.id), esc(r.title)), esc(r.effect), esc(r.lifecycle)]
            for r in topics[topic]
        ]
        blocks += [f"## {esc(topic.capitalize())}", table(["Rule", "Effect", "Lifecycle"], rows)]
    return document(*blocks)


def facts_page(ix: Index) -> str:
    def rows(facts: Iterable[Any]) -> list[list[str]]:
        return [
            [
                code(f.name),
                f.type,
                ", ".join(code(v) for v in f.values) if f.values else "any",
                esc(f.description),
                ", ".join(
                    link(FACTS_PAGE, page_of("rule", r.id), esc(r.id))
                    for r in ix.fact_users.get(f.name, [])
                )
                or "none yet",
            ]
            for f in facts
        ]

    headers = ["Fact", "Type", "Values", "Meaning", "Used by"]
    return document(
        "# Facts",
        "The names a rule's `applies` and `condition` expressions may use. Scenario facts have "
        "one value per scenario; plan facts have one per candidate plan, and those about time "
        "and memory are known only once the cost core has estimated the plan.",
        "## Scenario facts",
        table(headers, rows(SCENARIO_FACTS)),
        "## Plan facts",
        table(headers, rows(PLAN_FACTS)),
    )


def rule_pages(ix: Index) -> Pages:
    pages = {index_of("rule"): rules_index(ix), FACTS_PAGE: facts_page(ix)}
    for rule in ix.of("rule"):
        pages[page_of("rule", rule.id)] = rule_page(ix, rule)
    return pages


# --- hardware and models ---------------------------------------------------------------------


def accelerator_page(ix: Index, acc: Accelerator) -> str:
    src = page_of("accelerator", acc.id)
    return document(
        f"# {esc(acc.name)}",
        fields(
            [
                ("Id", code(acc.id)),
                ("Vendor", esc(acc.vendor)),
                ("Released", show(acc.released)),
                ("Memory (GiB)", show(acc.memory_gib)),
                ("HBM bandwidth (TB/s)", show(acc.hbm_tbytes_per_s)),
                ("Dense bf16 (TFLOP/s)", show(acc.bf16_dense_tflops)),
                ("Dense fp8 (TFLOP/s)", show(acc.fp8_dense_tflops)),
                ("Scale-up bandwidth (GB/s)", show(acc.scale_up_gbytes_per_s)),
                ("Scale-up domain (GPUs)", show(acc.scale_up_domain_gpus)),
                ("Scale-out per GPU (Gbit/s)", show(acc.scale_out_gbits_per_s)),
                ("TDP (W)", show(acc.tdp_watts)),
                ("Ridge point (FLOP/byte, derived)", number(acc.ridge_flop_per_byte)),
            ]
        ),
        "The ridge point is dense bf16 FLOP/s over HBM bandwidth: a kernel doing fewer FLOPs per "
        "byte it reads (token-by-token decoding, for one) is bound by memory bandwidth, not "
        "compute.",
        f"## Notes\n\n{show(acc.notes)}",
        sources_section(ix, src, acc.sources),
    )


def accelerators_index(ix: Index) -> str:
    src = index_of("accelerator")
    rows = [
        [
            link(src, page_of("accelerator", a.id), esc(a.name)),
            esc(a.vendor),
            show(a.memory_gib),
            show(a.hbm_tbytes_per_s),
            show(a.bf16_dense_tflops),
            show(a.fp8_dense_tflops),
            number(a.ridge_flop_per_byte),
            show(a.scale_up_gbytes_per_s),
            show(a.scale_up_domain_gpus),
            show(a.scale_out_gbits_per_s),
        ]
        for a in ix.of("accelerator")
    ]
    headers = [
        "Accelerator",
        "Vendor",
        "Memory GiB",
        "HBM TB/s",
        "bf16 TFLOP/s",
        "fp8 TFLOP/s",
        "Ridge FLOP/B",
        "Scale-up GB/s",
        "Scale-up GPUs",
        "Scale-out Gbit/s",
    ]
    return document(
        "# Hardware",
        "Dense datasheet figures (sparsity-doubled figures are never used) and the derived ridge "
        "point, dense bf16 FLOP/s over HBM bandwidth.",
        table(headers, rows),
    )


def model_figures(model: Model) -> list[tuple[str, str]]:
    """Figures derived from the architecture: parameters, weight bytes and KV-cache bytes."""
    kv = model.kv_bytes_per_token
    return [
        ("Parameters, total (derived)", f"{number(model.params_total / 1e9)} B"),
        ("Parameters, active per token (derived)", f"{number(model.params_active / 1e9)} B"),
        ("Embedding parameters (derived)", f"{number(model.embedding_params / 1e9)} B"),
        ("bf16 weights (derived)", f"{number(model.params_total * 2 / 2**30)} GiB"),
        ("KV cache per token, bf16 (derived)", f"{number(kv)} bytes ({number(kv / 1024)} KiB)"),
        (
            "KV cache of one full-context sequence (derived)",
            f"{number(kv * model.max_context_tokens / 2**30)} GiB",
        ),
    ]


def model_page(ix: Index, model: Model) -> str:
    src = page_of("model", model.id)
    arch = [
        ("Id", code(model.id)),
        ("Family", esc(model.family)),
        ("Organisation", show(model.organisation)),
        ("Released", show(model.released)),
        ("Attention", esc(model.attention)),
        ("Layers", show(model.layers)),
        ("Hidden size", show(model.hidden)),
        ("Attention heads", show(model.heads)),
        ("KV heads", show(model.kv_heads)),
        ("Head dimension", show(model.attention_head_dim)),
        ("FFN width", f"{show(model.ffn)} ({esc(model.ffn_kind)})"),
        ("Vocabulary", show(model.vocab)),
        ("Context (tokens)", show(model.max_context_tokens)),
        ("Tied embeddings", show(model.tied_embeddings)),
        ("QKV bias", show(model.qkv_bias)),
    ]
    blocks = [f"# {esc(model.name)}", fields(arch), "## Derived figures", fields(
        model_figures(model)
    )]
    if model.moe:
        moe = model.moe
        blocks += [
            "## Mixture of experts",
            fields(
                [
                    ("Routed experts", show(moe.experts)),
                    ("Experts per token", show(moe.experts_per_token)),
                    ("Shared experts", show(moe.shared_experts)),
                    ("Expert FFN width", show(moe.expert_ffn)),
                    ("Leading dense layers", show(moe.dense_layers)),
                ]
            ),
        ]
    if model.mla:
        mla = model.mla
        blocks += [
            "## Multi-head latent attention",
            fields(
                [
                    ("Query LoRA rank", show(mla.q_lora_rank)),
                    ("KV LoRA rank", show(mla.kv_lora_rank)),
                    ("QK no-RoPE head dim", show(mla.qk_nope_head_dim)),
                    ("QK RoPE head dim", show(mla.qk_rope_head_dim)),
                    ("V head dim", show(mla.v_head_dim)),
                ]
            ),
        ]
    blocks.append(sources_section(ix, src, model.sources))
    return document(*blocks)


def models_index(ix: Index) -> str:
    src = index_of("model")
    rows = [
        [
            link(src, page_of("model", m.id), esc(m.name)),
            esc(m.attention),
            number(m.params_total / 1e9),
            number(m.params_active / 1e9),
            show(m.layers),
            show(m.hidden),
            f"{m.heads}/{m.kv_heads}",
            show(m.moe.experts if m.moe else None) if m.moe else "dense",
            number(m.kv_bytes_per_token / 1024),
            show(m.max_context_tokens),
        ]
        for m in sorted(ix.of("model"), key=lambda m: (m.params_total, m.id))
    ]
    headers = [
        "Model",
        "Attention",
        "Params B",
        "Active B",
        "Layers",
        "Hidden",
        "Heads/KV",
        "Experts",
        "KV KiB/token",
        "Context",
    ]
    return document(
        "# Models",
        "Architecture numbers copied from each model's configuration, smallest first. Parameter "
        "counts and the bf16 KV-cache bytes per token are derived from them, never typed in.",
        table(headers, rows),
    )


def catalog_pages(ix: Index) -> Pages:
    pages = {index_of("accelerator"): accelerators_index(ix), index_of("model"): models_index(ix)}
    for acc in ix.of("accelerator"):
        pages[page_of("accelerator", acc.id)] = accelerator_page(ix, acc)
    for model in ix.of("model"):
        pages[page_of("model", model.id)] = model_page(ix, model)
    return pages


# --- results and sources ---------------------------------------------------------------------


def result_page(ix: Index, result: Result) -> str:
    src = page_of("result", result.id)
    fw = ix.get("framework", result.framework)
    blocks = [
        f"# {esc(result.id)}",
        esc(result.description),
        fields(
            [
                ("Source", ix.source_link(src, result.source)),
                ("Where in the source", esc(result.locator)),
                (
                    "Framework",
                    link(src, page_of("framework", fw.id), esc(fw.name)) if fw else UNKNOWN,
                ),
                ("Metric", code(result.metric)),
                ("Value", f"{number(result.value)} {esc(result.unit)}"),
                ("Baseline", show(result.baseline)),
            ]
        ),
        f"## Notes\n\n{show(result.notes)}",
    ]
    if result.scenario:
        blocks += [
            "## Setting",
            "The scenario the cost core predicts this measurement from:",
            scenario_yaml(result.scenario),
        ]
    return document(*blocks)


def results_index(ix: Index) -> str:
    src = index_of("result")
    rows = [
        [
            link(src, page_of("result", r.id), esc(r.id)),
            ix.source_link(src, r.source),
            show(r.framework),
            code(r.metric),
            number(r.value),
            esc(r.unit),
        ]
        for r in ix.of("result")
    ]
    return document(
        "# Results",
        "Published measurements, each with the setting it was taken in, used to calibrate and "
        "check the cost core.",
        table(["Result", "Source", "Framework", "Metric", "Value", "Unit"], rows),
    )


def result_pages(ix: Index) -> Pages:
    pages = {index_of("result"): results_index(ix)}
    for result in ix.of("result"):
        pages[page_of("result", result.id)] = result_page(ix, result)
    return pages


def source_page(ix: Index, source: Source) -> str:
    src = page_of("source", source.id)
    citing = sorted(set(ix.cited_by.get(source.id, [])), key=lambda c: (c[1].lower(), c[0]))
    uses = bullets(link(src, page, esc(label)) for page, label in citing)
    return document(
        f"# {esc(source.title)}",
        fields(
            [
                ("Id", code(source.id)),
                ("Type", esc(source.type)),
                ("Authors", show(source.authors)),
                ("Year", show(source.year)),
                ("Venue", show(source.venue)),
                ("Address", external(source.url, esc(source.url))),
                ("Accessed", show(source.accessed)),
            ]
        ),
        "## Cited by",
        uses or "No record cites this source yet.",
    )


def sources_index(ix: Index) -> str:
    src = index_of("source")
    rows = [
        [
            link(src, page_of("source", s.id), esc(s.id)),
            esc(s.type),
            show(s.year),
            esc(s.title),
            number(len(set(ix.cited_by.get(s.id, [])))),
        ]
        for s in sorted(ix.catalog.of("source").values(), key=lambda s: s.id)
    ]
    return document(
        "# Sources",
        "Every paper, repository, documentation page, model configuration, datasheet and blog "
        "post the records cite. Each source's page lists what cites it.",
        table(["Source", "Type", "Year", "Title", "Cited by"], rows),
    )


def source_pages(ix: Index) -> Pages:
    pages = {index_of("source"): sources_index(ix)}
    for source in ix.catalog.of("source").values():
        pages[page_of("source", source.id)] = source_page(ix, source)
    return pages


# --- SQL reference ---------------------------------------------------------------------------


def value_cell(value: Any) -> str:
    """A database value for a Markdown cell: NULL reads `unknown`."""
    if isinstance(value, float):
        return number(value)
    return show(value)


def relations(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str | None]]:
    """(name, "table" | "view", comment) of the knowledge base's own relations."""
    return con.execute(
        """
        SELECT table_name, 'table', comment FROM duckdb_tables()
        WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal
        UNION ALL
        SELECT view_name, 'view', comment FROM duckdb_views()
        WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal
        ORDER BY 2, 1
        """
    ).fetchall()


def relation_columns(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[str, str, str]]]:
    found: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    rows = con.execute(
        """
        SELECT table_name, column_name, data_type, comment FROM duckdb_columns()
        WHERE database_name = current_database() AND schema_name = 'main'
        ORDER BY table_name, column_index
        """
    ).fetchall()
    for table_name, column, data_type, comment in rows:
        found[table_name].append((column, data_type, comment or ""))
    return found


def sql_reference(con: duckdb.DuckDBPyConnection) -> str:
    columns = relation_columns(con)
    found = relations(con)
    blocks = [
        "# SQL reference",
        "Every table and view of the knowledge base database, with its columns, their types "
        "and the comments stored in the database itself (`duckdb_tables()`, `duckdb_views()` "
        "and `duckdb_columns()` list the same). These names are a public interface. "
        f"{link(SQL_REFERENCE, SQL_HOWTO, 'How to query them')}.",
    ]
    for kind in ("table", "view"):
        blocks.append(f"## {kind.capitalize()}s")
        for name, relation_kind, comment in found:
            if relation_kind != kind:
                continue
            # A column without a comment gets a blank cell: "unknown" would suggest a NULL.
            rows = [(code(c), code(t), esc(note) or " ") for c, t, note in columns.get(name, [])]
            blocks += [
                f"### {name}",
                esc(comment) if comment else "",
                table(["Column", "Type", "Comment"], rows),
            ]
    return document(*blocks)


EXAMPLE_PARAM = re.compile(r"-p\s+(\w+)\s+(\S+)")


def example_params(query_text: str) -> dict[str, Any]:
    """Parameters a canned query's header gives as its example (`-p NAME VALUE`)."""
    header = "\n".join(line for line in query_text.splitlines() if line.startswith("--"))
    return dict(EXAMPLE_PARAM.findall(header))


def query_output(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    params = example_params(sql)
    try:
        rows = run(con, sql, params)
    except QueryError as exc:
        return f"This query needs parameters to run: {esc(exc)}."
    shown = rows.rows[:QUERY_ROW_LIMIT]
    cells = [[value_cell(v) for v in row] for row in shown]
    note = ""
    if len(rows.rows) > len(shown):
        note = f"First {len(shown)} of {len(rows.rows)} rows."
    given = " ".join(f"-p {k} {v}" for k, v in params.items())
    intro = f"Output with {code(given)}:" if given else "Output:"
    return document(intro, table([code(c) for c in rows.columns], cells), note)


def sql_queries(con: duckdb.DuckDBPyConnection) -> str:
    blocks = [
        "# Canned queries",
        "The queries shipped in `kb/queries/`, run on the current records when the site was "
        "built. Run one yourself with `rlmguide query NAME`.",
    ]
    for query in canned_queries().values():
        blocks += [
            f"## {esc(query.title)}",
            esc(query.description) if query.description else "",
            f"{code('rlmguide query ' + query.name)}",
            fenced("sql", query.sql),
            query_output(con, query.sql),
        ]
    return document(*blocks)


def sql_pages(con: duckdb.DuckDBPyConnection) -> Pages:
    return {SQL_REFERENCE: sql_reference(con), SQL_QUERIES: sql_queries(con)}


# --- the generator ---------------------------------------------------------------------------

BUILDERS: tuple[Callable[[Index], Pages], ...] = (
    taxonomy_pages,
    framework_pages,
    component_pages,
    algorithm_pages,
    rule_pages,
    catalog_pages,
    result_pages,
    source_pages,
)


def merge(pages: Pages, more: Mapping[str, str]) -> None:
    """Add pages, refusing a path twice: two generators writing one page is a bug."""
    for path, text in more.items():
        if path in pages or path in HAND_WRITTEN:
            raise ValueError(f"page {path} is generated twice")
        pages[path] = text


def generate(
    catalog: Catalog, con: duckdb.DuckDBPyConnection, extra: Mapping[str, str] | None = None
) -> Pages:
    """Every generated page of the site, {path inside the docs folder: Markdown}.

    `extra` adds pages made elsewhere (see `cost_pages`); their paths must be new.
    """
    ix = build_index(catalog)
    pages: Pages = {}
    for builder in BUILDERS:
        merge(pages, builder(ix))
    merge(pages, sql_pages(con))
    merge(pages, extra or {})
    return pages


def cost_pages(catalog: Catalog) -> Pages:
    """LEAD: the place for pages from the cost core; it returns none yet.

    Add here the plots (matplotlib SVG as text, e.g. `plots/step-time.svg`, embedded from
    `plots/index.md`) and the calibration table (`results/calibration.md`: each result beside
    the cost core's prediction and the error). `navigation` files new `.md` pages under the
    section of their folder and gives a new folder its own section, so nothing else changes.
    """
    del catalog  # used once the cost core is wired in
    return {}


# --- navigation and edit links ---------------------------------------------------------------

SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Taxonomy", ("techniques",)),
    ("Frameworks", ("frameworks", "components")),
    ("Algorithms", ("algorithms",)),
    ("Guidelines", ("rules",)),
    ("Hardware", ("accelerators",)),
    ("Models", ("models",)),
    ("Results", ("results",)),
    ("Sources", ("sources",)),
    ("SQL", ("sql",)),
)
"""Top-level sections of the navigation and the page folders each holds, in order."""

NavItem = str | dict[str, Any]


def page_title(markdown: str, path: str) -> str:
    """A page's first heading, the title MkDocs would give it."""
    for line in markdown.splitlines():
        if line.startswith("# "):
            return line[2:].strip().replace("\\", "")
    return posixpath.splitext(posixpath.basename(path))[0]


PINNED = (MATRIX, FACTS_PAGE)
"""Overview pages listed right after their folder's index, before the record pages."""


def folder_entries(folder: str, pages: Mapping[str, str], placed: set[str]) -> list[NavItem]:
    """A folder's index first, then pinned pages, then the rest by title (skipping placed ones)."""
    index = f"{folder}/index.md"
    names = [p for p in pages if posixpath.dirname(p) == folder and p not in placed]
    names.sort(key=lambda p: (p != index, p not in PINNED, page_title(pages[p], p).lower(), p))
    placed.update(names)
    return [p if p == index else {page_title(pages[p], p): p} for p in names]


def taxonomy_entries(catalog: Catalog, pages: Mapping[str, str], placed: set[str]) -> list[Any]:
    """The taxonomy index, then one subsection per root holding its subtree in tree order."""
    ix_children: dict[str | None, list[Technique]] = defaultdict(list)
    for tech in catalog.of("technique").values():
        assert isinstance(tech, Technique)
        ix_children[tech.parent].append(tech)

    def walk(parent: str) -> list[Technique]:
        kids = sorted(ix_children.get(parent, []), key=lambda t: (t.name.lower(), t.id))
        return [t for kid in kids for t in (kid, *walk(kid.id))]

    entries: list[NavItem] = [TAXONOMY] if TAXONOMY in pages else []
    placed.add(TAXONOMY)
    for root in sorted(ix_children.get(None, []), key=lambda t: (t.name.lower(), t.id)):
        items = [{"Overview": page_of("technique", root.id)}]
        items += [{t.name: page_of("technique", t.id)} for t in walk(root.id)]
        items = [i for i in items if next(iter(i.values())) in pages]
        placed.update(next(iter(i.values())) for i in items)
        entries.append({root.name: items})
    return entries


def navigation(catalog: Catalog, pages: Mapping[str, str]) -> list[NavItem]:
    """The MkDocs `nav`: every generated page and the hand-written ones, each exactly once."""
    placed: set[str] = set()
    nav: list[NavItem] = [{"Home": HOME}]
    for title, folders in SECTIONS:
        entries: list[Any] = []
        for folder in folders:
            if folder == "techniques":
                entries += taxonomy_entries(catalog, pages, placed)
            elif folder == "sql":
                entries += [{"Querying the knowledge base": SQL_HOWTO}]
            if folder == "components" and any(posixpath.dirname(p) == folder for p in pages):
                entries.append({"Components": folder_entries(folder, pages, placed)})
            else:
                entries += folder_entries(folder, pages, placed)
        if entries:
            nav.append({title: entries})
    for folder in sorted({posixpath.dirname(p) for p in pages if p not in placed}):
        name = folder.replace("-", " ").capitalize() or "More"
        nav.append({name: folder_entries(folder, pages, placed)})
    return nav


RULE_FILES = "rules/records"
RECORD_FILES = "kb/records"


def edit_paths(catalog: Catalog) -> dict[str, str]:
    """Page -> the repository path of the record file it shows, for "edit this page"."""
    found: dict[str, str] = {}
    for record in catalog.all():
        name = catalog.file_of(record)  # "<plural>/<file>.yaml"
        if record.kind == "rule":
            found[page_of("rule", record.id)] = f"{RULE_FILES}/{posixpath.basename(name)}"
        else:
            found[page_of(record.kind, record.id)] = f"{RECORD_FILES}/{name}"
    return found
