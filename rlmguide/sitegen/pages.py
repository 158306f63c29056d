"""Pages of the record kinds, the lookups they share, and the site's navigation.

`rlmguide.sitegen.generate` puts these and the other modules' pages together (records in,
{page path: Markdown} out, no file writes). `navigation` lays the pages out for MkDocs,
`edit_paths` maps each record page to its YAML file for the "edit this page" button. Values
nobody recorded read "unknown", never "no".

Prose and lists are Markdown (MkDocs checks their links); tables are HTML built by
`rlmguide.sitegen.mdtext.table`, whose links come from `href` and are checked by the site tests.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from rlmguide.kb.evidence import claim_stale
from rlmguide.kb.load import Catalog
from rlmguide.kb.paths import PLURALS
from rlmguide.kb.schema import (
    Accelerator,
    Algorithm,
    Architecture,
    Claim,
    Component,
    Constraint,
    Framework,
    Model,
    Record,
    Result,
    Rule,
    Source,
    Technique,
)
from rlmguide.rules.engine import compile_rules
from rlmguide.rules.facts import PLAN_FACTS, SCENARIO_FACTS
from rlmguide.sitegen.mdtext import (
    SEARCH_EXCLUDE,
    UNKNOWN,
    anchor,
    bullets,
    cell,
    document,
    esc,
    external,
    fenced,
    fields,
    front_matter,
    href,
    html,
    html_code,
    link,
    number,
    show,
    table,
)
from rlmguide.sitegen.tree_svg import Node, tree_svg

Pages = dict[str, str]

HOME = "index.md"
SQL_HOWTO = "sql/index.md"
PYTHON_API = "python.md"
HAND_WRITTEN = (HOME, SQL_HOWTO, PYTHON_API)
"""Pages written by hand in `site/docs/`; the generator never produces these paths."""

MATRIX = "frameworks/matrix.md"
TAXONOMY = "techniques/index.md"
FACTS_PAGE = "rules/facts.md"
SQL_REFERENCE = "sql/reference.md"
SQL_QUERIES = "sql/queries.md"

FEATURE_KINDS = ("algorithm", "technique", "component")


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


def badge(support: str) -> str:
    """A support level as inline HTML, coloured by the site's stylesheet."""
    return f'<span class="support support-{support}">{support}</span>'


def to_page(src: str, dst: str, text: str) -> str:
    """An HTML link between two generated pages; `text` is plain and gets escaped."""
    return anchor(href(src, dst), html(text))


def outside(address: str, text: str | None = None) -> str:
    """An HTML link to another site, showing the address unless told otherwise."""
    return anchor(address, html(text or address))


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
    fact_users: dict[str, list[str]]
    """fact name -> ids of the rules whose expressions read it"""

    def of(self, kind: str) -> list[Any]:
        return by_title(self.catalog.of(kind).values())

    def get(self, kind: str, record_id: str | None) -> Any:
        return self.catalog.of(kind).get(record_id) if record_id else None

    def feature_kind(self, feature: str) -> str | None:
        return next((k for k in FEATURE_KINDS if feature in self.catalog.of(k)), None)

    def record_link(self, src: str, kind: str, record_id: str) -> str:
        """An HTML link to a record's page by its title, or the bare id if it is unknown."""
        record = self.get(kind, record_id)
        if record is None:
            return html(record_id)
        return to_page(src, page_of(kind, record_id), title_of(record))

    def feature_link(self, src: str, feature: str) -> str:
        kind = self.feature_kind(feature)
        return self.record_link(src, kind, feature) if kind else html(feature)

    def feature_md(self, src: str, feature: str) -> str:
        """A Markdown link to a feature's page, for prose."""
        kind = self.feature_kind(feature)
        if kind is None:
            return esc(feature)
        return link(src, page_of(kind, feature), esc(title_of(self.catalog.of(kind)[feature])))

    def source_link(self, src: str, source_id: str | None) -> str:
        """HTML: the source's page by id and, beside it, a link to its address."""
        source = self.get("source", source_id)
        if source is None:
            return cell(source_id)
        own = to_page(src, page_of("source", source.id), source.id)
        return f"{own} {anchor(source.url, '↗', source.url)}"

    def sources_list(
        self, src: str, ids: Iterable[str], locators: Mapping[str, str] | None = None
    ) -> str:
        """The sources as links, each with the place in it the record rests on, if given."""
        items = []
        for source_id in dict.fromkeys(ids):
            source = self.get("source", source_id)
            if source is None:
                items.append(esc(source_id))
                continue
            year = f" ({source.year})" if source.year else ""
            name = link(src, page_of("source", source.id), esc(source.title))
            where = (locators or {}).get(source.id)
            at = f", {esc(where)}" if where else ""
            items.append(f"{name}{year}{at}: {external(source.url, esc(source.url))}")
        return bullets(items)


def build_index(catalog: Catalog) -> Index:
    frameworks = by_title(catalog.of("framework").values())
    claims: dict[str, dict[str, Claim]] = defaultdict(dict)
    cited_by: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for fw in frameworks:
        for claim in fw.claims:
            claims[claim.feature][fw.id] = claim
            cited_by[claim.source].append(
                (page_of("framework", fw.id), f"{fw.name}: claim on {claim.feature}")
            )
    for record in catalog.all():
        locators: Mapping[str, str] = getattr(record, "locators", {})
        for source in dict.fromkeys(record.cited_sources()):
            where = f" ({locators[source]})" if source in locators else ""
            label = f"{record.kind} {title_of(record)}{where}"
            cited_by[source].append((page_of(record.kind, record.id), label))
    children: dict[str | None, list[Technique]] = defaultdict(list)
    for tech in catalog.of("technique").values():
        assert isinstance(tech, Technique)
        children[tech.parent].append(tech)
    for kids in children.values():
        kids.sort(key=lambda t: (t.name.lower(), t.id))
    fact_users: dict[str, list[str]] = defaultdict(list)
    for compiled in compile_rules(catalog)[0]:
        for name in sorted(compiled.applies.names | compiled.condition.names):
            fact_users[name].append(compiled.id)
    return Index(catalog, frameworks, dict(claims), dict(cited_by), dict(children), fact_users)


# --- shared blocks ---------------------------------------------------------------------------


DATE_HEADERS = ["Checked", "As of", "Stale"]
"""The two dates of a claim and its stale flag (`kb.evidence`), in every claims table."""


def dates(fw: Framework, claim: Claim) -> list[str]:
    return [cell(claim.checked), cell(claim.as_of), cell(claim_stale(fw, claim))]


def support_block(ix: Index, src: str, feature: str) -> str:
    """The frameworks claiming a feature, then those with no claim, which read "unknown"."""
    mine = ix.claims.get(feature, {})
    rows = [
        [
            ix.record_link(src, "framework", fw.id),
            badge(claim.support),
            cell(claim.note),
            ix.source_link(src, claim.source),
            *dates(fw, claim),
        ]
        for fw in ix.frameworks
        if (claim := mine.get(fw.id)) is not None
    ]
    # Out of the search index: each claim is indexed once, on its framework's page.
    headers = ["Framework", "Support", "Note", "Source", *DATE_HEADERS]
    claimed = table(headers, rows, searchable=False) if rows else ""
    silent = [ix.record_link(src, "framework", fw.id) for fw in ix.frameworks if fw.id not in mine]
    unknown = unsearched(f"Unknown (no claim recorded) for: {', '.join(silent)}.") if silent else ""
    return document("## Framework support", claimed or "No framework claims it yet.", unknown)


def unsearched(text: str) -> str:
    """An HTML paragraph kept out of the search index: lists of names that would make every
    page match every name."""
    return f"<p{SEARCH_EXCLUDE}>{text}</p>"


def sources_section(
    ix: Index, src: str, ids: Iterable[str], locators: Mapping[str, str] | None = None
) -> str:
    listed = ix.sources_list(src, ids, locators)
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


def tree_diagram(ix: Index, src: str, root: Technique) -> str:
    """One subtree as an inline SVG drawn at build time, each box linking to its page."""
    subtree = [root, *(t for _, t in descendants(ix, root))]
    nodes = [
        # The drawing starts at `root`: its own parent, if any, is not part of it.
        Node(t.id, t.name, None if t is root else t.parent, href(src, page_of("technique", t.id)))
        for t in subtree
    ]
    return tree_svg(nodes, f"The {root.name} subtree of the taxonomy")


def tree_list(ix: Index, src: str, root: Technique) -> str:
    """The subtree as nested Markdown lists (Python-Markdown nests by four spaces)."""
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
        blocks += [f"## {esc(root.name)}", esc(root.description), tree_diagram(ix, TAXONOMY, root)]
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
        "Path: " + " / ".join(trail),
        fields(
            [
                ("Id", html_code(tech.id)),
                ("Scope", html(tech.scope)),
                ("Also known as", cell(tech.aliases)),
            ]
        ),
        esc(tech.description),
        "## What it splits or overlaps",
        show(tech.splits),
        "## Effects",
        table(["On", "Effect"], [(name, cell(value)) for name, value in effects]),
        "## Trade-offs",
        show(tech.tradeoffs),
    ]
    if kids:
        items = [link(src, page_of("technique", k.id), esc(k.name)) for k in kids]
        blocks += ["## Refinements", bullets(items)]
    blocks += [
        support_block(ix, src, tech.id),
        sources_section(ix, src, tech.sources, tech.locators),
    ]
    return document(*blocks)


def taxonomy_pages(ix: Index) -> Pages:
    return {TAXONOMY: taxonomy_index(ix), **record_pages(ix, "technique", technique_page)}


# --- frameworks and the matrix ---------------------------------------------------------------


def claims_table(ix: Index, src: str, fw: Framework, claims: list[Claim]) -> str:
    rows = [
        [
            ix.feature_link(src, c.feature),
            badge(c.support),
            cell(c.note),
            ix.source_link(src, c.source),
            *dates(fw, c),
            cell(c.version),
        ]
        for c in sorted(claims, key=lambda c: c.feature)
    ]
    return table(["Feature", "Support", "Note", "Source", *DATE_HEADERS, "Version"], rows)


def latest_release(ix: Index, src: str, fw: Framework) -> str:
    release = fw.latest_release
    if release is None:
        return UNKNOWN
    return f"{html(release.version)} ({cell(release.date)}, {ix.source_link(src, release.source)})"


def availability(ix: Index, src: str, fw: Framework) -> str:
    """What a user can run, with what is public, the version and where it is shown."""
    a = fw.availability
    what = f"{html(a.status)}: {esc(a.part)}" if a.part else html(a.status)
    pinned = f" at {html(a.version)}" if a.version else ""
    return f"{what}{pinned} ({ix.source_link(src, a.source)}, as of {cell(a.as_of)})"


def framework_fields(ix: Index, src: str, fw: Framework) -> str:
    return fields(
        [
            ("Id", html_code(fw.id)),
            ("Type", html(fw.type)),
            ("Availability", availability(ix, src, fw)),
            ("Organisation", cell(fw.organisation)),
            ("Repository", outside(fw.repository) if fw.repository else UNKNOWN),
            ("Paper", ix.source_link(src, fw.paper) if fw.paper else UNKNOWN),
            ("Licence", cell(fw.licence)),
            ("First release", cell(fw.first_release)),
            ("Latest release", latest_release(ix, src, fw)),
            ("Class in the survey (§6.2)", cell(fw.survey_class)),
            ("Claims", number(len(fw.claims))),
        ]
    )


def versions_of(ix: Index, src: str, c: Constraint) -> str:
    """The versions a constraint binds: links to the mappings it was read at, or every one."""
    if not c.versions:
        return "every version"
    return "at " + ", ".join(ix.record_link(src, "mapping", v) for v in c.versions)


def framework_page(ix: Index, fw: Framework) -> str:
    src = page_of("framework", fw.id)
    blocks = [
        # The claims tables need the width; the table of contents would only list kinds.
        front_matter(["toc"]),
        f"# {esc(fw.name)}",
        framework_fields(ix, src, fw),
        esc(fw.description),
        "## Claims",
        "Every claim names the source it was checked against, the day it was checked, the date "
        "of the evidence itself (*as of*: the commit date of the pinned version, or the "
        "release or publication date of a docs or paper version) and whether that evidence "
        "is *stale*: more than a year older than the framework's latest release, or than the "
        "day it was checked when no release is recorded. "
        f"The {link(src, MATRIX, 'comparison matrix')} puts them beside the other frameworks'.",
    ]
    for kind in FEATURE_KINDS:
        mine = [c for c in fw.claims if ix.feature_kind(c.feature) == kind]
        if mine:
            blocks += [f"### {PLURALS[kind].capitalize()}", claims_table(ix, src, fw, mine)]
    claimed = {c.feature for c in fw.claims}
    missing = [f for k in FEATURE_KINDS for f in sorted(ix.catalog.of(k)) if f not in claimed]
    if missing:
        names = ", ".join(ix.feature_link(src, f) for f in missing)
        blocks += ["### Unknown", unsearched(f"No claim is recorded for these features: {names}.")]
    results = [r for r in ix.of("result") if r.framework == fw.id]
    if results:
        blocks += ["## Published measurements", results_table(ix, src, results)]
    refusals = [c for c in ix.of("constraint") if c.framework == fw.id]
    if refusals:
        items = (
            f"{ix.record_link(src, 'constraint', c.id)}: {esc(c.title)} ({versions_of(ix, src, c)})"
            for c in refusals
        )
        blocks += ["## What its code refuses", bullets(items)]
    mappings = sorted(
        (m for m in ix.of("mapping") if m.framework == fw.id),
        key=lambda m: m.committed,
        reverse=True,
    )
    if mappings:
        items = (f"{ix.record_link(src, 'mapping', m.id)}: {esc(m.versions)}" for m in mappings)
        blocks += [
            "## Launch configuration",
            "`rlmguide export SCENARIO --framework "
            f"{fw.id}` writes a plan as this framework's launch with these mappings (the "
            "newest by default); each lists every plan field with the config key it becomes.",
            bullets(items),
        ]
    runs = [d for d in ix.of("deployment") if d.framework == fw.id]
    if runs:
        items = (f"{ix.record_link(src, 'deployment', d.id)}: {esc(d.name)}" for d in runs)
        blocks += ["## Published deployments", bullets(items)]
    # Every source the page cites: the framework's own, then its claims' in table order.
    claimed_sources = [c.source for c in sorted(fw.claims, key=lambda c: c.feature)]
    cited = [*fw.cited_sources(), *claimed_sources, *(c.source for c in refusals)]
    blocks.append(sources_section(ix, src, cited, fw.locators))
    return document(*blocks)


def frameworks_index(ix: Index) -> str:
    src = index_of("framework")
    rows = [
        [
            ix.record_link(src, "framework", fw.id),
            html(fw.type),
            html(fw.availability.status),
            cell(fw.organisation),
            cell(fw.licence),
            cell(fw.first_release),
            number(len(fw.claims)),
        ]
        for fw in ix.frameworks
    ]
    return document(
        "# Frameworks",
        "RL-for-LLM systems and what each supports, claim by claim. The "
        f"{link(src, MATRIX, 'comparison matrix')} shows them side by side; the "
        f"{link(src, index_of('component'), 'components')} are the training backends, rollout "
        "engines and orchestrators they build on. *Availability* says what a user can run: "
        "`released` end-to-end training code, `partial-code` (some parts public), "
        "`paper-only` or `closed`; only released frameworks make a recommended plan "
        "launchable.",
        table(
            [
                "Framework",
                "Type",
                "Availability",
                "Organisation",
                "Licence",
                "First release",
                "Claims",
            ],
            rows,
        ),
    )


def framework_pages(ix: Index) -> Pages:
    return {
        index_of("framework"): frameworks_index(ix),
        **record_pages(ix, "framework", framework_page),
    }


def claimed_by(ix: Index, feature: str) -> str:
    """How many frameworks claim a feature fully, as text for index tables."""
    claims = ix.claims.get(feature, {})
    full = sum(c.support == "yes" for c in claims.values())
    return f"{full} yes of {len(claims)} claims"


def component_page(ix: Index, comp: Component) -> str:
    src = page_of("component", comp.id)
    home = outside(comp.url) if comp.url else UNKNOWN
    return document(
        f"# {esc(comp.name)}",
        fields([("Id", html_code(comp.id)), ("Role", html(comp.role)), ("Home", home)]),
        esc(comp.description),
        support_block(ix, src, comp.id),
        sources_section(ix, src, comp.sources, comp.locators),
    )


def component_pages(ix: Index) -> Pages:
    src = index_of("component")
    rows = [
        [ix.record_link(src, "component", c.id), html(c.role), claimed_by(ix, c.id)]
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
    return {**pages, **record_pages(ix, "component", component_page)}


# --- algorithms ------------------------------------------------------------------------------


def step_models(alg: Algorithm) -> tuple[list[str], list[str]]:
    """(trained, forward-only) models of one step: what the algorithm costs beyond generation
    (a critic and a scoring model per objective)."""
    k = alg.objectives
    each = f"{k} x " if k > 1 else ""
    trained = ["actor", *([f"{each}critic"] if alg.needs_critic else [])]
    forward = [*(["reference"] if alg.needs_reference else [])]
    if not alg.online:
        return trained, forward  # offline, nothing scores responses in the loop
    if alg.reward == "model":
        forward.append(f"{each}reward model")
    elif alg.reward == "either":
        forward.append(f"{each}reward model (or a verifier)")
    return trained, forward


def algorithm_fields(ix: Index, src: str, alg: Algorithm) -> str:
    trained, forward = step_models(alg)
    parent = ix.get("algorithm", alg.variant_of)
    return fields(
        [
            ("Id", html_code(alg.id)),
            (
                "Variant of",
                ix.record_link(src, "algorithm", parent.id) if parent else "none (a base one)",
            ),
            ("Trained models", html(", ".join(trained))),
            ("Forward-only models", html(", ".join(forward)) if forward else "none"),
            ("Reward", html(alg.reward)),
            (
                "Generation",
                "online: samples from the policy"
                if alg.online
                else "none: offline, trains on a fixed dataset",
            ),
            ("Samples a group per prompt", cell(alg.grouped)),
            ("Typical samples per prompt", cell(alg.typical_samples_per_prompt)),
            ("Extra generations per prompt", cell(alg.extra_generations_per_prompt)),
            (
                "KL penalty to the reference",
                f"in the {alg.kl_placement}" if alg.kl_placement else "not stated, or none",
            ),
            (
                "Estimator of that KL",
                alg.kl_estimator or "not fixed by the sources read, or none",
            ),
            (
                "Ratio clip range",
                f"1 - {alg.clip_low:g} to 1 + {alg.clip_high:g}"
                if alg.clip_low and alg.clip_high
                else "not set by the record (frameworks default to PPO's 0.2)",
            ),
            ("Objectives scored and valued apart", cell(alg.objectives)),
            (
                "Completions decoded per state to value it",
                cell(alg.value_rollouts_per_state)
                if alg.value_rollouts_per_state
                else "none: no search from the responses' states",
            ),
        ]
    )


def algorithm_page(ix: Index, alg: Algorithm) -> str:
    src = page_of("algorithm", alg.id)
    variants = [a for a in ix.of("algorithm") if a.variant_of == alg.id]
    blocks = [
        f"# {esc(alg.name)}",
        algorithm_fields(ix, src, alg),
        esc(alg.description),
        "## Advantage",
        esc(alg.advantage),
        "## KL handling",
        esc(alg.kl),
        "## Off-policy tolerance",
        show(alg.off_policy),
    ]
    if alg.specification:
        blocks += specification_section(alg)
    if variants:
        items = [link(src, page_of("algorithm", a.id), esc(a.name)) for a in variants]
        blocks += ["## Variants", bullets(items)]
    blocks += [support_block(ix, src, alg.id), sources_section(ix, src, alg.sources, alg.locators)]
    return document(*blocks)


SURVEY_ALGORITHMS = {
    1: "Algorithm 1 (rollout generation shared by PPO and GRPO)",
    2: "Algorithm 2 (PPO)",
    3: "Algorithm 3 (GRPO)",
    4: "Algorithm 4 (DPO)",
}


def specification_section(alg: Algorithm) -> list[str]:
    """The survey's §5 specification: every model invocation with its [DP] loops, the
    models it may run concurrently with, and its intra-model parallelism tags."""
    rows = [
        [
            html(SURVEY_ALGORITHMS[s.algorithm]),
            html(s.stage),
            html(s.model),
            html(s.step),
            html(", ".join(s.dp_loops)) if s.dp_loops else "none",
            html(", ".join(s.concurrent_with)) if s.concurrent_with else "none",
            html(", ".join(t.upper() for t in s.intra)) if s.intra else "none",
            html(s.sequential) if s.sequential else "none",
        ]
        for s in alg.specification
    ]
    headers = [
        "Survey algorithm", "Stage", "Model", "Step", "[DP] loops",
        "Inter-model concurrency with", "Intra-model tags", "Sequential chain",
    ]  # fmt: skip
    return [
        "## Parallelism specification (survey §5)",
        "The steps of the algorithm as the survey's parallelism-focused specification gives "
        "them (arXiv:2608.27046, §5). [DP] loops are independent sample-level work; models of "
        "one inter-model concurrency region have no data dependency and run at once when "
        "placed on separate device groups; the tags are the intra-model parallelism each "
        "invocation admits (TP and PP for capacity or latency, SP on trainable passes, CP on "
        "long contexts, EP for mixtures of experts only). The same table is the "
        "`specification` JSON column of the `algorithms` table.",
        table(headers, rows),
    ]


def algorithms_index(ix: Index) -> str:
    src = index_of("algorithm")
    rows = []
    for alg in ix.of("algorithm"):
        trained, forward = step_models(alg)
        rows.append(
            [
                ix.record_link(src, "algorithm", alg.id),
                html(", ".join(trained)),
                html(", ".join(forward)) if forward else "none",
                html(alg.reward),
                cell(alg.grouped),
                cell(alg.typical_samples_per_prompt),
                cell(alg.extra_generations_per_prompt),
                claimed_by(ix, alg.id),
            ]
        )
    headers = [
        "Algorithm",
        "Trained",
        "Forward only",
        "Reward",
        "Grouped",
        "Samples per prompt",
        "Extra generations",
        "Frameworks",
    ]
    return document(
        "# Algorithms",
        "What a step of each algorithm runs besides generation. Every trained model costs a "
        "forward and backward pass and holds weights, gradients and optimizer state; every "
        "forward-only model costs one forward pass over every response; a grouped algorithm "
        "multiplies rollout work by its group size, and extra generations add rollouts on top.",
        table(headers, rows),
    )


def algorithm_pages(ix: Index) -> Pages:
    return {
        index_of("algorithm"): algorithms_index(ix),
        **record_pages(ix, "algorithm", algorithm_page),
    }


# --- guidelines ------------------------------------------------------------------------------

EFFECTS = {
    "require": "a plan where the rule applies and the condition fails is rejected",
    "prefer": "among near-equal plans, one where the rule applies and the condition holds "
    "ranks first",
    "advise": "where the rule applies and the condition holds, its statement is shown as a note",
}


def rule_fields(ix: Index, rule: Rule) -> str:
    used = sorted(n for n, users in ix.fact_users.items() if rule.id in users)
    return fields(
        [
            ("Id", html_code(rule.id)),
            ("Topic", html(rule.topic)),
            ("Effect", f"{html(rule.effect)}: {EFFECTS[rule.effect]}"),
            ("Lifecycle", html(rule.lifecycle)),
            ("Applies when", html_code(rule.applies)),
            ("Condition", html_code(rule.condition)),
            ("Facts read", ", ".join(html_code(n) for n in used) if used else "none"),
        ]
    )


def rule_examples(rule: Rule) -> list[str]:
    blocks = [
        "## Examples",
        "Each example is a test: the rule must fire where it says so and stay silent elsewhere.",
    ]
    for example in rule.examples:
        verdict = "fires" if example.fires else "stays silent"
        blocks += [
            f"### {esc(example.description)}",
            f"The rule {verdict}.",
            scenario_yaml(example.scenario),
        ]
    return blocks


def rule_page(ix: Index, rule: Rule) -> str:
    src = page_of("rule", rule.id)
    kind = "warning" if rule.effect == "require" else "tip"
    return document(
        f"# {esc(rule.title)}",
        f'!!! {kind} "{rule.effect}"\n\n    {esc(rule.statement)}',
        rule_fields(ix, rule),
        "## Why",
        esc(rule.rationale),
        f"The facts are described on the {link(src, FACTS_PAGE, 'facts page')}.",
        *rule_techniques(ix, src, rule),
        sources_section(ix, src, rule.sources, rule.locators),
        *rule_examples(rule),
    )


def rule_techniques(ix: Index, src: str, rule: Rule) -> list[str]:
    """The techniques a rule concerns and the frameworks whose claims support them."""
    if not rule.techniques:
        return []
    rows = []
    for technique in rule.techniques:
        frameworks = sorted(
            fw.id
            for fw in ix.of("framework")
            if any(c.feature == technique and c.support in ("yes", "partial") for c in fw.claims)
        )
        shown = ", ".join(ix.record_link(src, "framework", f) for f in frameworks)
        rows.append([ix.record_link(src, "technique", technique), shown or UNKNOWN])
    return ["## Techniques and the frameworks that implement them",
            table(["Technique", "Frameworks claiming it (yes or partial)"], rows)]  # fmt: skip


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
        table(["Effect", "Meaning"], [(e, html(m)) for e, m in EFFECTS.items()]),
    ]
    for topic in sorted(topics):
        rows = [
            [ix.record_link(src, "rule", r.id), html(r.effect), html(r.lifecycle)]
            for r in topics[topic]
        ]
        blocks += [f"## {esc(topic.capitalize())}", table(["Rule", "Effect", "Lifecycle"], rows)]
    return document(*blocks)


def facts_page(ix: Index) -> str:
    def users(name: str) -> list[str]:
        return ix.fact_users.get(name, [])

    def rows(facts: Iterable[Any]) -> list[list[str]]:
        return [
            [
                html_code(f.name),
                f.type,
                ", ".join(html_code(v) for v in f.values) if f.values else "any",
                html(f.description),
                ", ".join(to_page(FACTS_PAGE, page_of("rule", r), r) for r in users(f.name))
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
    return {
        index_of("rule"): rules_index(ix),
        FACTS_PAGE: facts_page(ix),
        **record_pages(ix, "rule", rule_page),
    }


# --- hardware and models ---------------------------------------------------------------------


def accelerator_page(ix: Index, acc: Accelerator) -> str:
    src = page_of("accelerator", acc.id)
    figures = [
        ("Id", html_code(acc.id)),
        ("Vendor", html(acc.vendor)),
        ("Released", cell(acc.released)),
        ("Memory (GiB)", cell(acc.memory_gib)),
        ("Memory the driver reports (MiB)", cell(acc.visible_memory_mib)),
        ("HBM bandwidth (TB/s)", cell(acc.hbm_tbytes_per_s)),
        ("Dense bf16 (TFLOP/s)", cell(acc.bf16_dense_tflops)),
        ("Dense fp8 (TFLOP/s)", cell(acc.fp8_dense_tflops)),
        ("Scale-up bandwidth (GB/s)", cell(acc.scale_up_gbytes_per_s)),
        ("Scale-up domain (GPUs)", cell(acc.scale_up_domain_gpus)),
        ("Scale-out per GPU (Gbit/s)", cell(acc.scale_out_gbits_per_s)),
        ("TDP (W)", cell(acc.tdp_watts)),
        ("Ridge point (FLOP/byte, derived)", number(acc.ridge_flop_per_byte)),
        ("On-demand price per GPU-hour", _price(acc)),
    ]
    return document(
        f"# {esc(acc.name)}",
        fields(figures),
        "The ridge point is dense bf16 FLOP/s over HBM bandwidth: a kernel doing fewer FLOPs per "
        "byte it reads (token-by-token decoding, for one) is bound by memory bandwidth, not "
        "compute. Plans are costed with the memory the driver reports (nvidia-smi's total: "
        "PyTorch and vLLM never get more) where it is recorded, else with the datasheet figure.",
        f"## Notes\n\n{show(acc.notes)}",
        sources_section(ix, src, acc.cited_sources(), acc.locators),
    )


def _price(acc: Accelerator) -> str:
    """The default price of a run on this part, with its offering and dates; none is never
    estimated."""
    if acc.price is None:
        return html("no public on-demand price known")
    p = acc.price
    return html(
        f"{p.per_gpu_hour:g} {p.currency}: {p.offering} (as of {p.as_of or 'unknown'}, "
        f"checked {p.checked})"
    )


def accelerators_index(ix: Index) -> str:
    src = index_of("accelerator")
    rows = [
        [
            ix.record_link(src, "accelerator", a.id),
            html(a.vendor),
            cell(a.memory_gib),
            cell(a.hbm_tbytes_per_s),
            cell(a.bf16_dense_tflops),
            cell(a.fp8_dense_tflops),
            number(a.ridge_flop_per_byte),
            cell(a.scale_up_gbytes_per_s),
            cell(a.scale_up_domain_gpus),
            cell(a.scale_out_gbits_per_s),
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


def model_figures(model: Architecture) -> list[tuple[str, str]]:
    """Figures derived from the architecture: parameters, weight bytes and KV-cache bytes."""
    kv, context = model.kv_bytes_per_token, model.max_context_tokens
    window = model.window_kv_bytes_per_token
    full_context = kv * context + window * min(context, model.sliding_window or 0)
    full_context += model.state_bytes_per_sequence
    rows = [
        ("Parameters, total", f"{number(model.params_total / 1e9)} B"),
        ("Parameters, active per token", f"{number(model.params_active / 1e9)} B"),
        ("Embedding parameters", f"{number(model.embedding_params / 1e9)} B"),
        ("bf16 weights", f"{number(model.params_total * 2 / 2**30)} GiB"),
        ("KV cache per token, bf16", f"{number(kv)} bytes ({number(kv / 1024)} KiB)"),
    ]
    if window:
        rows.append(("Sliding-window KV per token, bf16 (to the window)", f"{number(window)} B"))
    if model.state_bytes_per_sequence:
        state = model.state_bytes_per_sequence
        rows.append(("Linear-layer state per sequence, bf16", f"{number(state / 2**20)} MiB"))
    rows.append(("KV cache of one full-context sequence", f"{number(full_context / 2**30)} GiB"))
    return rows


def model_identity(model: Model) -> list[tuple[str, str]]:
    return [
        ("Id", html_code(model.id)),
        ("Family", html(model.family)),
        ("Also known as", cell(model.aliases)),
        ("Organisation", cell(model.organisation)),
        ("Released", cell(model.released)),
        ("Weights", html(model.access)),
    ]


def model_architecture(model: Architecture) -> list[tuple[str, str]]:
    return [
        ("Attention", html(model.attention)),
        ("Layers", f"{cell(model.layers)} ({html(model.layer_mix)})"),
        ("Hidden size", cell(model.hidden)),
        ("Attention heads", cell(model.heads)),
        ("KV heads", cell(model.kv_heads)),
        ("Head dimension", cell(model.attention_head_dim)),
        ("FFN width", f"{cell(model.ffn)} ({html(model.ffn_kind)})"),
        ("Vocabulary", cell(model.vocab)),
        ("Context (tokens)", cell(model.max_context_tokens)),
        ("Tied embeddings", cell(model.tied_embeddings)),
        ("QKV bias", cell(model.qkv_bias)),
        ("Attention output gate", cell(model.attention_output_gate)),
        ("QK norm", "unknown" if model.qk_norm is None else cell(model.qk_norm)),
        ("Sliding window (tokens)", cell(model.sliding_window)),
        ("MTP layers", cell(model.mtp_layers)),
    ]


def model_extras(model: Architecture) -> list[str]:
    """The mixture-of-experts and latent-attention numbers, for models that have them."""
    blocks = []
    if model.moe:
        moe = model.moe
        rows = [
            ("Routed experts", cell(moe.experts)),
            ("Experts per token", cell(moe.experts_per_token)),
            ("Shared experts", cell(moe.shared_experts)),
            ("Expert FFN width", cell(moe.expert_ffn)),
            ("Dense MLP beside the experts", cell(moe.dense_beside)),
            ("Leading dense layers", cell(moe.dense_layers)),
        ]
        blocks += ["## Mixture of experts", fields(rows)]
    if model.mla:
        mla = model.mla
        rows = [
            ("Query LoRA rank", cell(mla.q_lora_rank)),
            ("KV LoRA rank", cell(mla.kv_lora_rank)),
            ("QK no-RoPE head dim", cell(mla.qk_nope_head_dim)),
            ("QK RoPE head dim", cell(mla.qk_rope_head_dim)),
            ("V head dim", cell(mla.v_head_dim)),
        ]
        blocks += ["## Multi-head latent attention", fields(rows)]
    if model.linear:
        lin = model.linear
        rows = [
            ("Kind", html(lin.kind)),
            ("Value heads", cell(lin.heads)),
            ("Key heads (groups)", cell(lin.key_heads)),
            ("Key (state) dim", cell(lin.key_dim)),
            ("Value dim", cell(lin.value_dim)),
            ("Conv kernel", cell(lin.conv_kernel)),
        ]
        blocks += ["## Linear attention", fields(rows)]
    if model.sparse:
        sp = model.sparse
        rows = [
            ("Keys selected per query", cell(sp.top_k)),
            ("Indexer heads", cell(sp.indexer_heads)),
            ("Indexer head dim", cell(sp.indexer_head_dim)),
        ]
        blocks += ["## Sparse attention", fields(rows)]
    if model.full_attention:
        own = model.full_attention
        rows = [
            ("Head dimension", cell(own.head_dim)),
            ("KV heads", cell(own.kv_heads)),
            ("K shared with V", cell(own.shared_kv)),
        ]
        blocks += ["## Full-attention layers' own head shape", fields(rows)]
    return blocks


def model_published(model: Model) -> list[tuple[str, str]]:
    """What is published about a model whose architecture is not."""
    active = f"{number(model.active_params_b)} B" if model.active_params_b else "unknown"
    return [
        ("Scale, as published", cell(model.scale)),
        ("Parameters active per token, as published", active),
        ("Post-training signal", cell(model.post_training)),
    ]


def model_page(ix: Index, model: Model) -> str:
    src = page_of("model", model.id)
    arch = model.architecture
    if arch is None:
        absent = (
            f"Its weights are open but its architecture is not recorded: "
            f"{esc(model.architecture_absent)} The planner cannot cost it."
            if model.architecture_absent
            else "Its architecture is not published, so the planner cannot cost it."
        )
        body = [fields([*model_identity(model), *model_published(model)]), absent]
    else:
        body = [
            fields([*model_identity(model), *model_architecture(arch)]),
            "## Derived figures",
            "Computed from the architecture above, never typed in; the KV cache assumes bf16.",
            fields(model_figures(arch)),
            *model_extras(arch),
        ]
        if model.costing_gap:
            body.insert(1, f"The planner cannot cost it yet: it {esc(model.costing_gap)}.")
        if model.vision:
            share = f"{number(100 * (model.vision_share or 0))} %"
            vision = [
                ("Encoder blocks", cell(model.vision.layers)),
                ("Hidden size", cell(model.vision.hidden)),
                ("MLP width", f"{cell(model.vision.ffn)} ({html(model.vision.ffn_kind)})"),
                ("Weights (blocks)", f"{number((model.vision_params or 0) / 1e9)} B"),
                ("Share of all weights", share),
            ]
            body += [
                "## Vision encoder",
                "The architecture above is the language tower, which the planner costs.",
                fields(vision),
            ]
        if model.post_training:
            body.insert(1, fields([("Post-training signal", cell(model.post_training))]))
    return document(
        f"# {esc(model.name)}",
        *body,
        sources_section(ix, src, model.sources, model.locators),
    )


def models_index(ix: Index) -> str:
    src = index_of("model")
    costed = [(m, m.architecture) for m in ix.of("model") if m.architecture is not None]
    rows = [
        [
            ix.record_link(src, "model", m.id),
            html(a.attention),
            number(a.params_total / 1e9),
            number(a.params_active / 1e9),
            cell(a.layers),
            cell(a.hidden),
            f"{a.heads}/{a.kv_heads}",
            cell(a.moe.experts) if a.moe else "dense",
            number(a.kv_bytes_per_token / 1024),
            cell(a.max_context_tokens),
        ]
        for m, a in sorted(costed, key=lambda pair: (pair[1].params_total, pair[0].id))
    ]
    published = sorted((m for m in ix.of("model") if m.architecture is None), key=lambda m: m.id)
    closed_rows = [
        [
            ix.record_link(src, "model", m.id),
            html(m.access),
            cell(m.scale),
            number(m.active_params_b) if m.active_params_b else "",
            cell(m.post_training),
        ]
        for m in published
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
        *(
            [
                "## Models without a published architecture",
                "What their makers publish: the planner cannot cost them.",
                table(
                    ["Model", "Weights", "Scale", "Active B", "Post-training"],
                    closed_rows,
                    searchable=False,
                ),
            ]
            if closed_rows
            else []
        ),
    )


def catalog_pages(ix: Index) -> Pages:
    return {
        index_of("accelerator"): accelerators_index(ix),
        index_of("model"): models_index(ix),
        **record_pages(ix, "accelerator", accelerator_page),
        **record_pages(ix, "model", model_page),
    }


# --- results and sources ---------------------------------------------------------------------


def result_page(ix: Index, result: Result) -> str:
    src = page_of("result", result.id)
    framework = ix.record_link(src, "framework", result.framework) if result.framework else None
    blocks = [
        f"# {esc(result.id)}",
        esc(result.description),
        fields(
            [
                ("Source", ix.source_link(src, result.source)),
                ("Where in the source", html(result.locator)),
                ("Framework", framework or UNKNOWN),
                ("Metric", html_code(result.metric)),
                ("Value", f"{number(result.value)} {html(result.unit)}"),
                ("Baseline", cell(result.baseline)),
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


def results_table(
    ix: Index, src: str, results: Iterable[Result], framework: bool = True, searchable: bool = True
) -> str:
    """Measurements with their values; the framework column is left out on a framework's page,
    and the index's copy is left out of the search index (each result page has the text)."""
    headers = ["Result", "Measured", "Metric", "Value", "Unit", "Source"]
    rows = []
    for r in results:
        row = [
            to_page(src, page_of("result", r.id), r.id),
            cell(r.description),
            html_code(r.metric),
            number(r.value),
            html(r.unit),
            f"{ix.source_link(src, r.source)}, {html(r.locator)}",
        ]
        if framework:
            row.insert(1, ix.record_link(src, "framework", r.framework) if r.framework else "")
        rows.append(row)
    if framework:
        headers.insert(1, "Framework")
    return table(headers, rows, searchable=searchable)


def results_index(ix: Index) -> str:
    return document(
        "# Results",
        "Published measurements, each with the setting it was taken in, used to calibrate and "
        "check the cost core.",
        results_table(ix, index_of("result"), ix.of("result"), searchable=False),
    )


def result_pages(ix: Index) -> Pages:
    return {index_of("result"): results_index(ix), **record_pages(ix, "result", result_page)}


def source_page(ix: Index, source: Source) -> str:
    src = page_of("source", source.id)
    citing = sorted(set(ix.cited_by.get(source.id, [])), key=lambda c: (c[1].lower(), c[0]))
    # Out of the search index: the citing records are found on their own pages, and a list
    # of them put every source above the technique a search was for.
    items = "".join(f"<li>{to_page(src, page, label)}</li>" for page, label in citing)
    uses = f"<ul{SEARCH_EXCLUDE}>{items}</ul>" if items else ""
    return document(
        f"# {esc(source.title)}",
        fields(
            [
                ("Id", html_code(source.id)),
                ("Type", html(source.type)),
                ("Authors", cell(source.authors)),
                ("Year", cell(source.year)),
                ("Venue", cell(source.venue)),
                ("Address", outside(source.url)),
                ("Accessed", cell(source.accessed)),
            ]
        ),
        "## Cited by",
        uses or "No record cites this source yet.",
    )


def sources_index(ix: Index) -> str:
    src = index_of("source")
    rows = [
        [
            to_page(src, page_of("source", s.id), s.id),
            html(s.type),
            cell(s.year),
            html(s.title),
            number(len(set(ix.cited_by.get(s.id, [])))),
        ]
        for s in sorted(ix.catalog.of("source").values(), key=lambda s: s.id)
    ]
    return document(
        "# Sources",
        "Every paper, repository, documentation page, model configuration, datasheet and blog "
        "post the records cite. Each source's page lists what cites it.",
        table(["Source", "Type", "Year", "Title", "Cited by"], rows, searchable=False),
    )


def source_pages(ix: Index) -> Pages:
    pages = {index_of("source"): sources_index(ix)}
    for source in ix.catalog.of("source").values():
        pages[page_of("source", source.id)] = source_page(ix, source)
    return pages


# --- the generator ---------------------------------------------------------------------------


def record_pages(ix: Index, kind: str, page: Callable[[Index, Any], str]) -> Pages:
    """One page per record of `kind`, each made by `page`."""
    return {page_of(kind, record.id): page(ix, record) for record in ix.of(kind)}


def merge(pages: Pages, more: Mapping[str, str]) -> None:
    """Add pages, refusing a path twice: two generators writing one page is a bug."""
    for path, text in more.items():
        if path in pages or path in HAND_WRITTEN:
            raise ValueError(f"page {path} is generated twice")
        pages[path] = text


# --- navigation and edit links ---------------------------------------------------------------

SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Taxonomy", ("techniques",)),
    ("Frameworks", ("frameworks", "components", "constraints", "mappings")),
    ("Algorithms", ("algorithms",)),
    ("Guidelines", ("rules",)),
    ("Hardware", ("accelerators",)),
    ("Models", ("models",)),
    ("Results", ("results",)),
    ("Deployments", ("deployments",)),
    ("Survey", ("survey", "directions")),
    ("Sources", ("sources",)),
    ("SQL", ("sql",)),
)
"""Top-level sections of the navigation and the page folders each holds, in order."""

UNLISTED_FOLDERS = ("sources",)
"""Folders whose record pages stay out of the navigation (their index table lists them).

Some 380 sources, even grouped by type, put a few hundred entries in the navigation of each
source page, most of its bytes; nobody browses them there, they arrive from a citation."""

PINNED = (MATRIX, FACTS_PAGE)
"""Overview pages listed right after their folder's index, before the record pages."""

CALIBRATION_PAGE = "results/calibration.md"
"""Written by the cost pages (rlmguide.sitegen.cost_pages); listed right after the results index."""

NavItem = str | dict[str, Any]


def page_title(markdown: str, path: str) -> str:
    """A page's first heading, the title MkDocs would give it."""
    for line in markdown.splitlines():
        if line.startswith("# "):
            return line[2:].strip().replace("\\", "")
    return posixpath.splitext(posixpath.basename(path))[0]


def titled(pages: Mapping[str, str], paths: Iterable[str]) -> list[NavItem]:
    return [{page_title(pages[p], p): p} for p in paths]


def folder_entries(folder: str, pages: Mapping[str, str], placed: set[str]) -> list[NavItem]:
    """A folder's index first, then pinned pages, then the rest by title (skipping placed ones)."""
    index = f"{folder}/index.md"
    names = [p for p in pages if posixpath.dirname(p) == folder and p not in placed]
    names.sort(key=lambda p: (p != index, p not in PINNED, page_title(pages[p], p).lower(), p))
    placed.update(names)
    return [p if p == index else titled(pages, [p])[0] for p in names]


def taxonomy_entries(catalog: Catalog, pages: Mapping[str, str], placed: set[str]) -> list[Any]:
    """The taxonomy index, then one subsection per root holding its subtree in tree order."""
    kids: dict[str | None, list[Technique]] = defaultdict(list)
    for tech in catalog.of("technique").values():
        assert isinstance(tech, Technique)
        kids[tech.parent].append(tech)

    def ordered(parent: str | None) -> list[Technique]:
        return sorted(kids.get(parent, []), key=lambda t: (t.name.lower(), t.id))

    def walk(parent: str) -> list[Technique]:
        return [t for kid in ordered(parent) for t in (kid, *walk(kid.id))]

    entries: list[NavItem] = [TAXONOMY] if TAXONOMY in pages else []
    placed.add(TAXONOMY)
    for root in ordered(None):
        paths = [page_of("technique", t.id) for t in (root, *walk(root.id))]
        paths = [p for p in paths if p in pages]
        placed.update(paths)
        items = titled(pages, paths)
        if items:
            items[0] = {"Overview": paths[0]}
            entries.append({root.name: items})
    return entries


def unlisted(pages: Iterable[str]) -> set[str]:
    """The pages left out of the navigation: records of the UNLISTED_FOLDERS, not their index."""
    return {
        p
        for p in pages
        if posixpath.dirname(p) in UNLISTED_FOLDERS and posixpath.basename(p) != "index.md"
    }


def result_entries(catalog: Catalog, pages: Mapping[str, str], placed: set[str]) -> list[Any]:
    """The results index and calibration, then one subsection per framework measured (and one
    for measurements of no framework): with `navigation.prune` a page renders its own section,
    and one flat list of 200+ results on each of them made pages heavy and the build slow."""
    entries: list[Any] = []
    index = index_of("result")
    if index in pages:
        entries.append(index)
    if CALIBRATION_PAGE in pages:
        entries += titled(pages, [CALIBRATION_PAGE])
    placed.update((index, CALIBRATION_PAGE))
    groups: dict[str, list[str]] = defaultdict(list)
    for result in catalog.of("result").values():
        path = page_of("result", result.id)
        if path in pages and path not in placed:
            framework = getattr(result, "framework", None)
            fw = catalog.of("framework").get(framework) if framework else None
            groups[getattr(fw, "name", None) or framework or "No single framework"].append(path)
    for title in sorted(groups, key=lambda t: (t == "No single framework", t.lower())):
        paths = sorted(groups[title], key=lambda p: page_title(pages[p], p).lower())
        placed.update(paths)
        entries.append({title: titled(pages, paths)})
    return entries


def section_entries(
    folder: str, catalog: Catalog, pages: Mapping[str, str], placed: set[str]
) -> list[Any]:
    """The nav entries of one page folder (special layouts first, then whatever is left)."""
    entries: list[Any] = []
    if folder == "techniques":
        entries += taxonomy_entries(catalog, pages, placed)
    elif folder == "results":
        entries += result_entries(catalog, pages, placed)
    elif folder == "sql":
        entries.append({"Querying the knowledge base": SQL_HOWTO})
    rest = folder_entries(folder, pages, placed)
    if folder == "components" and rest:
        return [{"Components": rest}]
    return entries + rest


def navigation(catalog: Catalog, pages: Mapping[str, str]) -> list[NavItem]:
    """The MkDocs `nav`: every generated page and the hand-written ones, each exactly once,
    except the `unlisted` ones."""
    pages = {path: text for path, text in pages.items() if path.endswith(".md")}
    placed = unlisted(pages)
    nav: list[NavItem] = [{"Home": HOME}]
    for title, folders in SECTIONS:
        entries = [e for f in folders for e in section_entries(f, catalog, pages, placed)]
        if entries:
            nav.append({title: entries})
    nav.append({"Python API": PYTHON_API})
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
