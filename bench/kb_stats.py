"""Knowledge-base statistics: records per kind, claims per framework, how many claims rest on a
primary source, and how much of the framework x dimension matrix is known.

Run: python bench/kb_stats.py
"""

from __future__ import annotations

from collections import Counter

from rlmguide.kb.coverage import DIMENSIONS, framework_dimensions
from rlmguide.kb.evidence import claim_stale, is_pinned
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS, PLURALS, RULES_ROOT

PRIMARY = {"paper", "repository", "documentation", "model-config", "datasheet"}
LAYOUT_SCOPES = {"intra-model", "inter-model", "execution"}
"""Technique scopes whose claims decide what plans a framework can run (parallelism, placement,
execution mode): issue 17 wants these read from code at a pinned commit."""


def main() -> None:
    catalog = load_catalog([*DEFAULT_ROOTS, RULES_ROOT])
    print("records per kind:")
    for kind, plural in PLURALS.items():
        print(f"  {plural:<13} {len(catalog.of(kind)):>5}")
    frameworks = catalog.of("framework").values()
    claims = [c for fw in frameworks for c in fw.claims]  # type: ignore[attr-defined]
    sources = catalog.of("source")
    primary = sum(1 for c in claims if sources[c.source].type in PRIMARY)  # type: ignore[attr-defined]
    support = Counter(c.support for c in claims)
    print(f"claims: {len(claims)} ({', '.join(f'{k} {v}' for k, v in support.most_common())})")
    print(
        f"claims citing a primary source (paper, repository, docs, config, datasheet): "
        f"{primary}/{len(claims)} = {100 * primary / max(len(claims), 1):.1f}%"
    )
    per = sorted(((len(fw.claims), fw.id) for fw in frameworks), reverse=True)  # type: ignore[attr-defined]
    print("claims per framework: " + ", ".join(f"{i} {n}" for n, i in per))
    dims = framework_dimensions(catalog)
    axes = (*DIMENSIONS, "licence")
    known = sum(len(d) for d in dims.values())
    print(
        f"matrix: {len(dims)} frameworks x {len(axes)} dimensions; cells known "
        f"{known}/{len(dims) * len(axes)} = {100 * known / (len(dims) * len(axes)):.1f}%"
    )
    thin = sorted(f for f, d in dims.items() if len(d) < 10)
    print(f"frameworks with fewer than 10 dimensions known: {len(thin)} ({', '.join(thin)})")
    techniques = catalog.of("technique")
    layout = {t for t, rec in techniques.items() if rec.scope in LAYOUT_SCOPES}  # type: ignore[attr-defined]
    print(
        "parallelism/placement/execution claims read from code at a pinned version (a "
        "repository source with a commit or release), per framework with a repository:"
    )
    total = code_total = 0
    for fw in sorted(frameworks, key=lambda f: f.id):
        mine = [c for c in fw.claims if c.feature in layout]  # type: ignore[attr-defined]
        if not mine or not fw.repository:  # type: ignore[attr-defined]
            continue
        code = sum(
            1
            for c in mine
            if sources[c.source].type == "repository" and is_pinned(c.version)  # type: ignore[attr-defined]
        )
        total, code_total = total + len(mine), code_total + code
        print(f"  {fw.id:<16} {code:>3}/{len(mine):<3} = {100 * code / len(mine):5.1f}%")
    print(
        f"  overall          {code_total:>3}/{total:<3} = {100 * code_total / max(total, 1):5.1f}%"
    )
    stale_of = Counter(
        claim_stale(fw, c)  # type: ignore[arg-type]
        for fw in frameworks
        for c in fw.claims  # type: ignore[attr-defined]
    )
    print(
        f"claims whose evidence is stale: {stale_of[True]}, current {stale_of[False]}, "
        f"evidence date unknown {stale_of[None]}"
    )


if __name__ == "__main__":
    main()
