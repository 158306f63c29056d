"""An exported launch checked as it will run: its script read back through the framework's
parser and the mapping inverted (as `review` reads any launch), then judged by every start-up
check and constraint record of the framework, and against the memory its plan assumed (the
engine's memory fraction it needs, no training micro-batch above the one its activations were
costed at)."""

from __future__ import annotations

from typing import Any

from rlmguide.export import Exported, script
from rlmguide.export.mapping import INPUTS
from rlmguide.export.startup import (
    ABSENT,
    binding,
    compile_checks,
    derived,
    engine_fraction,
    tripped,
    typed,
)
from rlmguide.kb.load import Catalog
from rlmguide.review.config import argparse_config, hydra_config
from rlmguide.review.recipe import document_config
from rlmguide.review.shell import command_arguments
from rlmguide.review.understand import entry_module, read_launch
from rlmguide.rules.frameworks import compile_constraints


def read_back(done: Exported) -> dict[str, Any]:
    """The launch facts of the exported script, as review reads them."""
    text = script(done, "check", "policy")
    module = entry_module(done.launch.command)
    inputs = {var: f"${{{var}}}" for var, _ in INPUTS.values()}
    if done.mapping.syntax == "yaml":
        config = document_config(text)
    else:
        words, _ = command_arguments(text, module, inputs)
        config = hydra_config(words) if done.mapping.syntax == "hydra" else argparse_config(words)
    return read_launch(done.mapping, module, config, done.backend, done.engine).facts


def launch_problems(done: Exported, catalog: Catalog) -> list[str]:
    """What would stop the exported launch or break its plan's memory; empty when nothing."""
    plan = done.plan
    plan_facts = done.found.recommender.row_facts(done.found.row)
    read = typed(read_back(done))
    facts = {**ABSENT, **plan_facts, **derived(plan), **read}
    records = compile_checks(catalog)[0] + compile_constraints(catalog)[0]
    mine = binding(records, done.mapping, done.backend, done.engine)
    problems = [f"trips {r.id}" for r in tripped(mine, facts)]
    hbm = float(plan_facts["cluster.memory_gib"])
    wanted = engine_fraction(plan, hbm, done.engine or "", done.mapping.engine_starts_first)
    got = read.get("launch.engine_memory_fraction")
    if wanted is not None and got != wanted:
        problems.append(f"engine memory fraction {got}, the plan needs {wanted}")
    costed = plan["train"].get("micro_batch_tokens")
    if costed:
        tokens = read.get("launch.micro_batch_tokens")
        longest = int(plan_facts["workload.sequence_tokens"])
        group = int(plan_facts["plan.train.cp"]) * int(plan_facts["plan.train.tp"])
        # a budget rounds to a whole per-GPU count, up only to hold one longest sequence
        if tokens is None or tokens > max(costed, longest + group - 1):
            problems.append(f"micro-batch {tokens} tokens over the costed {costed}")
    return problems
