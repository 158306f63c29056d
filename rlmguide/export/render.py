"""An exported launch as a shell script: deterministic (sorted keys, no timestamps), with a
header saying what produced it, from which scenario and mapping, and the plan it encodes."""

from __future__ import annotations

import re
import shlex
from typing import Any

import yaml

from rlmguide.export.launch import Exported

REFERENCE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")
EXPANDED = re.compile(r'[$`"\\!]')
"""What double quotes do not keep as written, once the `${VAR}` references are taken out."""


UNQUOTED = re.compile(r"[\w\-/\\+.$%*@?|: ]*")
"""What Hydra's override grammar takes as an unquoted string (hydra/grammar/OverrideLexer.g4:
ID, UNQUOTED_CHAR, COLON, WS); anything else, such as the parentheses of AReaL's hybrid
allocation `megatron:(attn:...|ffn:...)`, is its own syntax (a call, a list, a sweep)."""


def override_value(value: Any) -> str:
    """A value as a Hydra override writes it: a string Hydra would parse as its own syntax
    in single quotes, which Hydra takes off (a user input, `${VAR}`, the shell expands first)."""
    text = hydra_value(value)
    if isinstance(value, str) and "${" not in text and "'" not in text:
        return text if UNQUOTED.fullmatch(text) else f"'{text}'"
    return text


def hydra_value(value: Any) -> str:
    """A value as a Hydra override writes it."""
    if value is None:
        return "null"
    if isinstance(value, list):
        return "[" + ",".join(hydra_value(v) for v in value) + "]"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, float) and value.is_integer():
        return str(int(value)) if abs(value) >= 1 else repr(value)
    return str(value)


def _word(text: str) -> str:
    """A shell word: a value ending in a `${VAR}` reference (a user input) stays expandable
    in double quotes; anything else is quoted as needed."""
    head, sep, var = text.rpartition("${")
    if sep and var.endswith("}") and var[:-1].isidentifier() and "$" not in head:
        return f'{shlex.quote(head) if head else ""}"${{{var}"'
    if sep and not EXPANDED.search(REFERENCE.sub("", text)):
        return f'"{text}"'  # a reference inside the value (SkyRL's [${TRAIN_DATA}])
    if "'" in text and not EXPANDED.search(text):
        return f'"{text}"'  # a value Hydra reads quoted (override_value)
    return shlex.quote(text)


def words(exported: Exported) -> list[str]:
    """The arguments after the command, one shell word or flag with its value per item."""
    fixed = [*exported.mapping.fixed, *exported.launch.fixed]
    lines = [_word(f) for f in fixed if f.startswith("--")]
    rest = [_word(f) for f in fixed if not f.startswith("--")]
    if exported.mapping.syntax == "hydra":
        rest += [_word(f"{a.key}={override_value(a.value)}") for a in exported.arguments]
        return lines + sorted(rest, key=lambda w: w.strip("'\"+"))
    for a in exported.arguments:
        if isinstance(a.value, bool) or a.value is None:
            if a.value:  # store_true switches: absent is false
                lines.append(f"--{a.key}")
            continue
        values = a.value if isinstance(a.value, list) else [a.value]
        lines.append(f"--{a.key} " + " ".join(_word(hydra_value(v)) for v in values))
    # shell words the launch always passes as written (slime's "${MODEL_ARGS[@]}")
    return lines + [f for f in fixed if not f.startswith("--")]


def _nested(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """Dotted keys as the nested mappings of a YAML config."""
    tree: dict[str, Any] = {}
    for key, value in pairs:
        *parents, leaf = key.lstrip("+").split(".")
        node = tree
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return tree


def _env(value: Any, defaults: dict[str, str]) -> Any:
    """A user input (`${VAR}`) as OmegaConf reads it from the environment, with the default
    the script would take (`${oc.env:VAR,'default'}`)."""
    if isinstance(value, list):
        return [_env(v, defaults) for v in value]
    if not isinstance(value, str):
        return value

    def env(match: re.Match[str]) -> str:
        var = match.group(0)[2:-1]
        default = defaults.get(var)
        return f"${{oc.env:{var},'{default}'}}" if default else f"${{oc.env:{var}}}"

    return REFERENCE.sub(env, value)


def document(exported: Exported, header: list[str]) -> str:
    """The launch as the YAML config its entry point composes whole (ROLL's), the command to
    start it in the header."""
    fixed = [f.partition("=") for f in (*exported.mapping.fixed, *exported.launch.fixed)]
    pairs = [(k, yaml.safe_load(v)) for k, _, v in fixed]
    pairs += [(a.key, _env(a.value, exported.defaults)) for a in exported.arguments]
    needed = [var for var in exported.inputs if var not in exported.defaults]
    lines = [*header]
    if needed:
        lines.append(f"# Set before running (read from the environment): {', '.join(needed)}")
    for var, text in exported.inputs.items():
        default = exported.defaults.get(var)
        lines.append(f"#   {var}: {text}" + (f" (default {default})" if default else ""))
    lines += [
        "# Run from a ROLL checkout, with this file saved as examples/rlmguide/plan.yaml:",
        f"#   {exported.launch.command} --config_path rlmguide --config_name plan",
        "",
    ]
    body = yaml.safe_dump(_nested(pairs), sort_keys=True, default_flow_style=False)
    return "\n".join(lines) + body


MAPPING_LINE = "# Mapping"
"""How an export's header names its mapping (`# Mapping <id>: ...`): review reads the launch with
that mapping, whatever version the keys alone would suggest."""
BUDGET_LINE = "# Reasoning budget (rlmguide review reads this line):"
"""The header line that carries a reasoning budget: a launch writes the budget as its response
cap (every framework's key for the longest response), and the lengths the model writes
without it have no key; `rlmguide review` reads them back from here (review.budget_line)."""
DEPARTURE_LINE = "# Departure (from the scenario, the algorithm's record or the framework's image):"
"""The prefix of each header line carrying one of the mapping's departures that hold
(Mapping.departures): not only the algorithm's (its KL side, DAPO's overlong shaping in slime)
but the scenario's (a multi-turn episode's budget) and the image's (verl's without
Megatron-Bridge). Review recomputes them from the mapping rather than reading these lines."""
BUDGET_FIELDS = ("reasoning_budget", "response_tokens", "max_response_tokens")


def budget_line(workload: dict[str, Any]) -> list[str]:
    """The header line stating the scenario's reasoning budget and the lengths it cuts (none
    without a budget, or for an episode, whose launch caps the trajectory, not a turn)."""
    if workload.get("reasoning_budget") is None or workload.get("agent"):
        return []
    stated = " ".join(f"workload.{name}={workload[name]}" for name in BUDGET_FIELDS)
    return [f"{BUDGET_LINE} {stated}"]


SCENARIO_LINE = "# Scenario (rlmguide review reads this line):"
"""The header line naming the scenario the launch was exported from: what a launch has no key
for (the accelerator, the model record where the path is a user input, the mean lengths under
the caps) and what review compares the launch's keys with (an edited key is named)."""
SCENARIO_FIELDS = (
    "cluster.accelerator",
    "cluster.nodes",
    "cluster.gpus_per_node",
    "models.policy",
    "workload.algorithm",
    "workload.prompts_per_step",
    "workload.samples_per_prompt",
    "workload.prompt_tokens",
    "workload.max_prompt_tokens",
    "workload.response_tokens",
    "workload.max_response_tokens",
    "workload.minibatches_per_step",
    "workload.epochs",
    "workload.max_staleness",
    "plan.max_staleness",
)


def scenario_line(scenario: Any) -> list[str]:
    """The header line stating the scenario's ids and numbers (SCENARIO_FIELDS), each where it
    has one: a mixed cluster states no accelerator, an inline policy no record, and a mean
    taken from its cap (the length prior's, the prompt cap's) is left to review to take so."""
    workload = scenario.workload
    derived = {
        "workload.response_tokens": workload.response_tokens_from != "stated",
        "workload.prompt_tokens": workload.prompt_tokens_from != "stated",
    }
    stated = []
    for name in SCENARIO_FIELDS:
        section, field = name.split(".")
        value = getattr(getattr(scenario, section), field)
        if derived.get(name):
            continue
        if isinstance(value, int | str) and not isinstance(value, bool):
            stated.append(f"{name}={value}")
    return [f"{SCENARIO_LINE} {' '.join(stated)}"]


def prompt_cap_line(exported: Exported) -> list[str]:
    """The header line saying the prompt cap written is only the mean, where the scenario
    gives no max_prompt_tokens: the framework truncates or drops every longer prompt."""
    workload = exported.found.recommender.resolved.scenario.workload
    if workload.max_prompt_tokens is not None:
        return []
    return [
        f"# Prompt cap: workload.max_prompt_tokens is not given, so the prompt cap written is the "
        f"mean prompt ({workload.prompt_tokens} tokens) and longer prompts are truncated or "
        "dropped; give the dataset's longest prompt to export its cap."
    ]


def script(exported: Exported, origin: str, policy: str) -> str:
    """The launch as a bash script (a YAML config for a framework launched from one)."""
    m, plan = exported.mapping, exported.plan
    r, t = plan["rollout"], plan["train"]
    rollout_pp = f" PP {r['pp']}" if r.get("pp", 1) > 1 else ""
    rollout_ep = f" EP {r['ep']}" if r["ep"] > 1 else ""
    chunks = t.get("virtual_stages", 1)
    interleaved = f" x {chunks} chunks" if chunks > 1 else ""
    described = (
        f"{plan['placement']} {plan['execution']}; rollout {r['gpus']} GPUs TP {r['tp']}"
        f"{rollout_pp}{rollout_ep}; train {t['gpus']} GPUs TP {t['tp']} PP {t['pp']}{interleaved} "
        f"CP {t['cp']} EP {t['ep']} ZeRO {t['zero']}, recompute {t['recompute']}"
    )
    # what the plan offloads; a part the framework's own code does (its mapping's `implied`
    # facts: ROLL, NeMo-RL, slime and SkyRL park the frozen models) is written by no key
    implied = m.implied_facts()
    offloaded = [
        f"{part} (by {exported.framework} itself)"
        if f"plan.train.offload_{part}" in implied
        else part
        for part, value in t.get("offload", {}).items()
        if value
    ]
    if offloaded:
        described += f", offload {' + '.join(offloaded)}"
    if frozen := plan.get("assessment"):
        described += f"; frozen models TP {frozen['tp']} PP {frozen['pp']} replicas"
    step = f"{plan['step_seconds']:.1f} s per step predicted"
    ranked = f"rank {exported.found.rank} of `rlmguide recommend --framework {exported.framework}`"
    passed = exported.found.result.get("passed_over_count", 0)
    if passed:
        ranked += f" (the {passed} ranked above it: no launch of this mapping runs them)"
    lines = [
        *(["#!/usr/bin/env bash"] if m.syntax != "yaml" else []),
        f"# Generated by `rlmguide export --framework {exported.framework}` from {origin}.",
        f"{MAPPING_LINE} {m.id}: {exported.framework} at commit {m.commit[:12]} ({m.url}).",
        f"# Training backend {exported.backend}, rollout engine {exported.engine}.",
        f"# Plan: {described}; {step}; {ranked}.",
        *scenario_line(exported.found.recommender.resolved.scenario),
        *budget_line(exported.found.result["scenario"]["workload"]),
        *prompt_cap_line(exported),
        *(f"{DEPARTURE_LINE} {note}" for note in exported.departures),
    ]
    if m.syntax == "yaml":
        return document(exported, lines)
    lines += ["set -euo pipefail", ""]
    needed = [var for var in exported.inputs if var not in exported.defaults]
    if needed:
        lines.append(f"# Set before running: {', '.join(needed)} (what each is: below).")
    for var, text in exported.inputs.items():
        what = f"{text} ({policy})" if var == "MODEL_PATH" else text
        if var in exported.defaults:
            # a default the reader of the script (and `rlmguide review`) sees without a setting
            lines.append(f"# {var}: {what}; set it to load another copy (a local folder)")
            lines.append(f'{var}="${{{var}:-{exported.defaults[var]}}}"')
        else:
            lines.append(f': "${{{var}:?set {var} to {what}}}"')
    lines += [*m.preamble, *exported.launch.preamble]
    command = exported.launch.command
    body = words(exported)
    lines += ["", f"{command} \\"]
    lines += [f"    {w} \\" for w in body[:-1]] + [f"    {body[-1]}"]
    return "\n".join(lines) + "\n"
