"""Pages of framework mappings: how each framework version spells a plan in its launch, one
page per record (entry points and the plan field -> config key table) and an index. `rlmguide
export` reads the same records (rlmguide.export)."""

from __future__ import annotations

from rlmguide.kb.schema import Mapping, MappingEntry
from rlmguide.sitegen.mdtext import anchor, document, esc, fields, html, html_code, table
from rlmguide.sitegen.pages import Index, Pages, index_of, page_of, record_pages, sources_section


def code_at(m: Mapping, path: str) -> str:
    """A file of the framework's repository, linked at the mapping's commit where the
    repository is on GitHub."""
    shown = html_code(path)
    for prefix, base in m.repositories.items():
        if path.startswith(prefix):  # a file of another repository (slime's Megatron flags)
            return anchor(f"{base.rstrip('/')}/{path}", shown, f"{base.rstrip('/')}/{path}")
    root = m.url.split("/blob/")[0].split("/tree/")[0]
    if not root.startswith("https://github.com/"):
        return shown
    return anchor(f"{root}/blob/{m.commit}/{path}", shown, f"{path} at {m.commit[:12]}")


def transform_text(e: MappingEntry) -> str:
    if e.transform == "lookup":
        pairs = ", ".join(f"{k} → {v}" for k, v in (e.table or {}).items())
        pairs += "".join(f"; {v} read as {k}" for v, k in e.also_reads.items())
        return html(f"lookup: {pairs}")
    if e.argument is not None:
        return html(f"{e.transform} ({e.argument})")
    return html(e.transform)


def entries_table(ix: Index, src: str, m: Mapping) -> str:
    rows = [
        [
            html_code(e.fact),
            html_code(e.key),
            transform_text(e),
            "always" if e.when == "true" else html_code(e.when),
            ix.record_link(src, "component", e.component) if e.component else "all",
            code_at(m, e.file),
        ]
        for e in m.entries
    ]
    # an empty cell reads "unknown"; a key written always says so instead
    rows = [[*r[:3], r[3] or "always", *r[4:]] for r in rows]
    return table(
        ["Plan fact", "Config key", "Transform", "Written when", "On", "Declared in"], rows
    )


def launches_table(ix: Index, src: str, m: Mapping) -> str:
    rows = [
        [
            html(launch.execution),
            html(launch.placement),
            ix.record_link(src, "component", launch.component) if launch.component else "all",
            html_code(" ".join([launch.command, *launch.fixed])),
            code_at(m, launch.file),
            "<br>".join(html_code(line) for line in launch.preamble),
        ]
        for launch in m.launches
    ]
    headers = ["Execution", "Placement", "On", "Command", "Entry point", "Before the command"]
    if not any(launch.preamble for launch in m.launches):
        headers, rows = headers[:-1], [r[:-1] for r in rows]
    return table(headers, rows)


def mapping_page(ix: Index, m: Mapping) -> str:
    src = page_of("mapping", m.id)
    syntax = {
        "hydra": "Hydra overrides",
        "argparse": "command-line flags (argparse)",
        "yaml": "one YAML config the entry point composes whole",
    }[m.syntax]
    return document(
        f"# {esc(m.id)}",
        esc(m.versions),
        fields(
            [
                ("Framework", ix.record_link(src, "framework", m.framework)),
                ("Syntax", html(syntax)),
                ("Commit", anchor(m.url, html_code(m.commit[:12]), m.url)),
                ("Committed", html(str(m.committed))),
                (
                    "Components",
                    ", ".join(ix.record_link(src, "component", c) for c in m.components),
                ),
                ("Always written", html_code(" ".join(m.fixed)) if m.fixed else "nothing"),
                *(
                    [("Before the command", "<br>".join(html_code(line) for line in m.preamble))]
                    if m.preamble
                    else []
                ),
                *(
                    [
                        (
                            "Engine concurrency",
                            html(
                                f"{m.engine_max_seqs} sequences per engine, the engine's "
                                "default: no key writes it, plans are costed at no more"
                            ),
                        )
                    ]
                    if m.engine_max_seqs
                    else []
                ),
                (
                    "Gradient buffers",
                    html(
                        "fp32 beside bf16 weights, the Megatron backend's default: plans are "
                        "costed so"
                        if m.fp32_gradients
                        else "as the plan says (bf16 unless it sets train.fp32_gradients)"
                    ),
                ),
                ("Read on", html(str(m.checked))),
            ]
        ),
        "## Entry points",
        "`rlmguide export` searches only the execution modes and placements listed here; a "
        "plan the framework's constraints refuse is refused before any key is written.",
        launches_table(ix, src, m),
        "## Plan field → config key",
        "Facts are named as in rule conditions (see the facts page); `input.*` are paths the "
        "user supplies as shell variables. A plan fact away from its neutral value (a degree "
        "above 1, an offload, a pool of its own) that no written key accounts for makes the "
        "export refuse.",
        entries_table(ix, src, m),
        *absent_section(m),
        *([esc(m.notes)] if m.notes else []),
        sources_section(ix, src, m.cited_sources()),
    )


def absent_section(m: Mapping) -> list[str]:
    """The facts the framework has no key for, with why: the reason an export that needs one
    is refused."""
    if not m.absent:
        return []
    rows = "\n".join(f"- `{name}`: {esc(why)}" for name, why in sorted(m.absent.items()))
    return ["## No key in the framework", "An export whose plan needs one is refused so:", rows]


def mappings_index(ix: Index) -> str:
    src = index_of("mapping")
    records: list[Mapping] = sorted(ix.of("mapping"), key=lambda m: (m.framework, m.committed))
    rows = [
        [
            ix.record_link(src, "mapping", m.id),
            ix.record_link(src, "framework", m.framework),
            html(m.syntax),
            html(str(m.committed)),
            html(str(len(m.entries))),
        ]
        for m in records
    ]
    return document(
        "# Framework mappings",
        "How each framework version spells a plan in its launch: entry points per execution "
        "mode and placement, and each config key with the plan fact it comes from and the file "
        "that declares it. `rlmguide export SCENARIO --framework ID` writes launches with them.",
        table(["Mapping", "Framework", "Syntax", "Committed", "Keys"], rows)
        if rows
        else "No mapping is recorded yet.",
    )


def mapping_pages(ix: Index) -> Pages:
    return {
        index_of("mapping"): mappings_index(ix),
        **record_pages(ix, "mapping", mapping_page),
    }
