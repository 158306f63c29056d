"""The page stating the survey's formulas (Tables 3-9, §3.7.1) as the cost core evaluates them.

Every row comes from a `states` mark on a function of `cost.survey_model`,
`cost.survey_assessment` or `cost.survey_iteration` (`cost.survey_formula.FORMULAS`): the
formula, where the survey states and derives it, what this code reads into it, and the function
that computes it.
"""

from __future__ import annotations

from rlmguide.cost import agentic, survey_assessment, survey_iteration, survey_model
from rlmguide.cost.survey_formula import FORMULAS, Formula
from rlmguide.sitegen.mdtext import document, html, html_code, table
from rlmguide.sitegen.pages import Index, Pages, sources_section

FORMULAS_PAGE = "survey/formulas.md"
SURVEY = "arxiv-2608.27046"
MODULES = (survey_model, survey_assessment, survey_iteration)
"""The modules whose marks fill FORMULAS (importing them registers their formulas)."""
GROUPS = {
    "Table 3": "Table 3: building blocks (§2.5, B.1)",
    "Table 4": "Table 4: the three stages of one iteration (§2.5, B.2, B.4.1)",
    "Table 7": "Table 7: one training iteration per rank (§3.7, B.3)",
    "Table 8": "Table 8: one training iteration, global (§3.7, B.3)",
    "§3.7.1": "§3.7.1: ZeRO and FSDP model state",
    "Table 9": "Table 9: inter-model configurations, one PPO iteration (§4.6, B.4)",
}
"""The groups in the survey's order; every formula's `table` is one of them."""


def _row(f: Formula) -> list[str]:
    return [
        html(f.name),
        html_code(f.symbol),
        html_code(f.text),
        html(f.derived),
        html(f.note) if f.note else "as stated: its inputs are the survey's own symbols",
        html_code(f.function),
    ]


def formulas_page(ix: Index) -> str:
    blocks = []
    for key, heading in GROUPS.items():
        rows = [_row(f) for f in FORMULAS if f.table == key]
        blocks += [
            f"## {heading}",
            table(["Quantity", "Symbol", "Formula", "Derived in", "Read as", "Code"], rows),
        ]
    blocks += [
        "## Beyond the survey: agentic episodes",
        "The survey names tools and external state as operators of the same execution graph "
        "(§7) and counts one prompt and one response per rollout; "
        f"{html_code(agentic.__name__)} costs episodes of N model turns (r tokens each) with an "
        "environment step of e seconds after each turn, o observation tokens appended, a "
        "setup of u seconds, n episodes per engine, over the same decode step as the "
        "single-turn rollout. With one turn and no environment every row below is the "
        "single-turn rollout's.",
        table(
            ["Quantity", "Formula", "Read as"],
            [[html(q), html_code(f), html(n)] for q, f, n in agentic.FORMULAS],
        ),
    ]
    where = ", ".join(GROUPS) + ", Appendix B, §7"
    code = ", ".join(html_code(m.__name__) for m in MODULES)
    return document(
        "# The survey's cost model, formula by formula",
        "The idealised work-depth-memory model of the survey (arXiv:2608.27046), as "
        f"{code} evaluate it; this page is generated from those functions. Work is in "
        "FLOPs (an add and a multiply are two), "
        "depth in operations on the critical path (log2 levels of reduction trees under "
        "unbounded parallelism), memory in elements (trained state is 4 a parameter: the "
        "parameter, its gradient and Adam's two moments). Symbols: B prompts, K responses each, "
        "S and T prompt and response tokens, m = S + T, L layers, d width, d_ff FFN width, "
        "h heads, V vocabulary, E experts (E_a active, width d_e), P_d, P_p, P_t, P_c, P_e "
        "the parallel degrees, P_z the ZeRO group.",
        "The calibrated model the planner ranks plans by is another: bytes, seconds, "
        "efficiencies and communication. `rlmguide estimate SCENARIO --survey` shows a plan in "
        "both.",
        *blocks,
        sources_section(ix, FORMULAS_PAGE, [SURVEY], {SURVEY: where}),
    )


def formula_pages(ix: Index) -> Pages:
    return {FORMULAS_PAGE: formulas_page(ix)}
