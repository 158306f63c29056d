"""Which algorithm a launch runs where its framework spells several with one estimator key
(NeMo-RL's and slime's DAPO are their GRPO with switches; OpenRLHF's GRPO, DAPO and GSPO share
`group_norm`): each candidate's own keys, written as export would write them for it, held
against the launch's keys.

A candidate's own keys are the keys export writes because of the algorithm (an entry over
`workload.algorithm` or conditioned on it) with a value no other candidate gets. Its settings
(the reference, the KL's side and estimator, the clip range) are not among them: frameworks'
own variant examples keep a KL loss (OpenRLHF's train_dapo_ray_hybrid_engine.sh, verl's DAPO
Megatron runs), and review holds those against the record apart (algorithm_settings).

1. A candidate whose objective keys (MappingEntry.objective: the loss's aggregation, ratio
   level or mode) the launch or the framework's default sets otherwise is dropped: slime's
   sequence-mean loss is not DAPO's token-level one.
2. The others score the own keys the launch sets as export would, less those it sets
   otherwise or leaves at a recorded default that is otherwise (a default that happens to
   be the variant's value is no sign of it: verl's token-mean is also its GRPO's). The
   single highest score above 0 names the algorithm; with none above 0, the one candidate
   without own keys (GRPO beside its variants) does.
3. Otherwise the keys cannot tell the candidates apart, and review says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rlmguide.export.mapping import KeyCannotHold, apply, compile_mapping, lookup_key
from rlmguide.kb.schema import Algorithm
from rlmguide.review.understand import Reading
from rlmguide.rules.facts import ALGORITHM_FACTS, algorithm_facts

ANY = "<any>"
"""An own key whose value export takes from the launch (a buffer length): it weighs for no
candidate."""

SETTINGS = ALGORITHM_FACTS - {"workload.algorithm"}
"""The record's settings, held against the launch by algorithm_settings, not by identity."""


@dataclass(frozen=True)
class Own:
    value: Any
    objective: bool


@dataclass(frozen=True)
class Told:
    algorithm: str | None
    """The candidate the launch's keys single out, or None when they cannot."""
    candidates: tuple[str, ...]
    """The candidates left after the objective keys dropped some."""
    dropped: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Candidate -> its objective keys the launch sets otherwise (key -> export's value)."""
    scores: dict[str, int] = field(default_factory=dict)
    agreeing: dict[str, Any] = field(default_factory=dict)
    """The own keys of `algorithm` the launch sets as export would (key -> value)."""
    differing: dict[str, Any] = field(default_factory=dict)
    """The own keys of `algorithm` the launch sets otherwise (key -> what export writes)."""


def _signature(reading: Reading, facts: Mapping[str, Any]) -> dict[str, Own]:
    """Key -> what export writes because of the algorithm, on the launch's facts with the
    candidate's record facts in place."""
    out: dict[str, Own] = {}
    for c in compile_mapping(reading.mapping):
        e = c.entry
        about = e.fact == "workload.algorithm" or "workload.algorithm" in c.when.names
        if not about or e.fact in SETTINGS:
            continue
        try:
            if not c.applies(facts, reading.backend, reading.engine):
                continue
            value = apply(e, facts) if e.fact in ALGORITHM_FACTS else ANY
        except (KeyError, TypeError, KeyCannotHold):
            continue  # a condition or value over a fact the launch does not give
        out[e.key.lstrip("+")] = Own(value, e.objective)
    return out


def _same(reading: Reading, key: str, got: Any, value: Any) -> bool:
    """Whether a launch value is what export writes, or a value the framework runs alike
    (MappingEntry.also_reads: SkyRL's token_mean_legacy is its token_mean)."""
    if lookup_key(got) == lookup_key(value):
        return True
    for e in reading.mapping.entries:
        if e.key.lstrip("+") != key or not e.also_reads:
            continue
        read_as = e.also_reads.get(lookup_key(got))
        if read_as is not None and lookup_key((e.table or {}).get(read_as)) == lookup_key(value):
            return True
    return False


def _said(reading: Reading, key: str, value: Any) -> bool | None:
    """Whether the launch itself sets `key` as export would write `value` (True), sets it
    otherwise (False) or leaves it out (None). An ANY key says nothing either way: a base
    config holds every key (NeMo-RL's grpo_math_1B.yaml has DAPO's buffer length too)."""
    if key not in reading.config or value == ANY:
        return None
    return _same(reading, key, reading.config[key], value)


def _held(reading: Reading, key: str, value: Any) -> bool | None:
    """As _said, with a key left out read at the framework's recorded default."""
    if (said := _said(reading, key, value)) is not None or key in reading.config:
        return said
    default = reading.mapping.config_defaults.get(key)
    if default is None or value == ANY:
        return None
    return _same(reading, key, default, value)


def _weighs(reading: Reading, key: str, value: Any) -> bool | None:
    """An own key's weight: for the candidate only where the launch itself sets it so (verl's
    default token-mean is no sign of DAPO), against it also where a recorded default it
    leaves the key at is otherwise (NeMo-RL's dynamic sampling, off in the base config)."""
    if (said := _said(reading, key, value)) is not None:
        return said
    return False if _held(reading, key, value) is False else None


def tell(reading: Reading, candidates: Sequence[str], algorithms: Mapping[str, Algorithm]) -> Told:
    """The candidate the launch's keys single out (see the module's docstring)."""
    known = [c for c in candidates if c in algorithms]
    # the launch's facts without the comparisons the expression language cached in them
    # (`_eq.workload.algorithm=dapo`, rules.expr._equals): each candidate's own are new
    launch = {k: v for k, v in reading.facts.items() if not k.startswith("_eq.")}
    signatures = {
        c: _signature(reading, {**launch, **algorithm_facts(algorithms[c])}) for c in known
    }
    own = {
        c: {
            k: o
            for k, o in sig.items()
            if any(
                k not in signatures[x] or lookup_key(signatures[x][k].value) != lookup_key(o.value)
                for x in known
                if x != c
            )
        }
        for c, sig in signatures.items()
    }
    dropped = {
        c: {
            k: o.value
            for k, o in own[c].items()
            if o.objective and _held(reading, k, o.value) is False
        }
        for c in known
    }
    dropped = {c: keys for c, keys in dropped.items() if keys}
    kept = tuple(c for c in known if c not in dropped)
    verdicts = {c: {k: _weighs(reading, k, o.value) for k, o in own[c].items()} for c in kept}
    scores = {
        c: sum(1 for v in verdicts[c].values() if v is True)
        - sum(1 for v in verdicts[c].values() if v is False)
        for c in kept
    }
    best = max(scores.values(), default=0)
    leaders = [c for c in kept if scores[c] == best]
    bare = [c for c in kept if not own[c]]
    if best > 0 and len(leaders) == 1:
        chosen = leaders[0]
    elif best <= 0 and len(bare) == 1 and scores[bare[0]] == best:
        chosen = bare[0]
    else:
        return Told(None, kept, dropped, scores)

    def keys(c: str, verdict: bool) -> dict[str, Any]:
        return {k: own[c][k].value for k, v in verdicts[c].items() if v is verdict}

    return Told(chosen, kept, dropped, scores, keys(chosen, True), keys(chosen, False))


def family_name(candidates: Sequence[str], algorithms: Mapping[str, Algorithm]) -> str:
    """How review names candidates it cannot tell apart: the family of the one they are all
    variants of (`GRPO-family`), else the candidates."""
    parents = {algorithms[c].variant_of for c in candidates if c in algorithms}
    for root in sorted({*candidates, *(p for p in parents if p)}):
        if all(
            c == root or (c in algorithms and algorithms[c].variant_of == root) for c in candidates
        ):
            return f"{root.upper()}-family"
    return "one of " + ", ".join(candidates)
