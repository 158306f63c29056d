"""A pool spelled as one string: AReaL's allocation strings (`fsdp:d4t2`, `sglang:d4p1t1`,
`megatron:d2p2t4e4`, `megatron:(attn:d4p2t2c2|ffn:p2t1e8)`; the grammar of
areal/api/alloc_mode.py at 4aef98d), `allocation` writing a plan's pool and `read_allocation`
giving its degrees back; and ROLL's device lists (`list(range(0,8))`, which ROLL's
WorkerConfig evaluates as Python: here they are parsed, never evaluated), `devices` and
`read_devices`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

DIMENSION = re.compile(r"([dtpce])(\d+)")
ALLOCATION = re.compile(r"([a-z]+):(.+)")
HYBRID = re.compile(r"\(?attn:([dtpc\d]+)\|ffn:([dtpe\d]+)\)?")
RANGE = re.compile(r"(?:list\()?range\((\d+)(?:,(\d+))?(?:,(\d+))?\)\)?")
IDS = re.compile(r"(?:list\()?\[(\d+(?:,\d+)*)?,?\]\)?")
MAX_DEVICES = 1 << 20
"""More device ids than any cluster has: a list past it is not read (`range(0, 10**12)`)."""


class PoolSpelling(ValueError):
    """A pool string that is not the framework's syntax (review names the key)."""


def allocation(pool: str, names: Mapping[str, Any], facts: Mapping[str, Any]) -> str:
    """The pool `pool` ("train" or "rollout") as an allocation string named by
    `names[component]` (KeyError where the component has no name). Data parallelism is what
    the GPUs leave over the model-parallel degrees; an engine's dimensions are d, p and t;
    expert parallelism with expert TP 1 is the plain `e` dimension, an MoE's other expert TP
    (with or without expert parallelism) the hybrid `(attn:...|ffn:...)` form."""
    component = facts["run.training_backend" if pool == "train" else "run.rollout_engine"]
    name = names[component]

    def degree(d: str) -> int:
        return int(facts.get(f"plan.{pool}.{d}") or 1)

    gpus, tp, pp = int(facts[f"plan.{pool}.gpus"]), degree("tp"), degree("pp")
    cp = degree("cp") if pool == "train" else 1
    dims = f"d{gpus // (tp * pp * cp)}p{pp}t{tp}" + (f"c{cp}" if cp > 1 else "")
    ep = degree("ep") if pool == "train" else 1
    # a dense model's etp is its tp (nothing to split); an MoE's experts split by tp over
    # expert ranks need the hybrid form even without expert parallelism, as the plain one
    # leaves expert TP at 1 (areal/api/alloc_mode.py L85-L91 at fee938ea)
    moe = ep > 1 or bool(facts.get("model.is_moe"))
    etp = degree("etp") if pool == "train" and moe else 1
    if ep <= 1 and etp == 1:
        return f"{name}:{dims}"
    if etp == 1:
        return f"{name}:{dims}e{ep}"
    return f"{name}:(attn:{dims}|ffn:p{pp}t{etp}" + (f"e{ep})" if ep > 1 else ")")


def _dimensions(text: str, where: str) -> dict[str, int]:
    found = DIMENSION.findall(text)
    if not found or "".join(f"{k}{v}" for k, v in found) != text:
        raise PoolSpelling(f"{where}: {text!r} is not dimensions such as d4t2")
    return {k: int(v) for k, v in found}


def read_allocation(text: Any) -> tuple[str, dict[str, int]]:
    """(name, degrees) of an allocation string: gpus, dp, tp, pp, cp, ep, etp (1 where
    absent)."""
    match = ALLOCATION.fullmatch(str(text).strip().replace(" ", ""))
    if match is None:
        raise PoolSpelling(f"{str(text)[:60]!r} is not an allocation such as fsdp:d4t2")
    name, body = match.groups()
    hybrid = HYBRID.fullmatch(body)
    if hybrid:
        attn = _dimensions(hybrid.group(1), "attn")
        ffn = _dimensions(hybrid.group(2), "ffn")
    else:
        attn = _dimensions(body, name)
        ffn = {"t": 1, "e": attn.pop("e", 1)}
    degrees = {d: attn.get(k, 1) for d, k in (("dp", "d"), ("tp", "t"), ("pp", "p"), ("cp", "c"))}
    degrees |= {"ep": ffn.get("e", 1), "etp": ffn.get("t", 1)}
    degrees["gpus"] = degrees["dp"] * degrees["tp"] * degrees["pp"] * degrees["cp"]
    return name, degrees


def devices(first: int, gpus: int) -> str:
    """A pool of `gpus` GPUs from device id `first` on, as ROLL's device_mapping writes it."""
    return f"list(range({first},{first + gpus}))"


def read_devices(value: Any) -> list[int]:
    """The device ids of a device_mapping: a YAML list of ids, or the text of one
    (`[0,1,2]`, `list([0,1,8,9])`) or of a range (`list(range(0,8))`, `range(8, 16, 2)`),
    spaces ignored."""
    if isinstance(value, list) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        ids = list(value)
    else:
        text = str(value).replace(" ", "")
        ranged, listed = RANGE.fullmatch(text), IDS.fullmatch(text)
        if ranged:
            a, b, by = ranged.groups()
            start, stop = (0, int(a)) if b is None else (int(a), int(b))
            step = int(by) if by else 1
            if step < 1 or (stop - start) // step > MAX_DEVICES:
                raise PoolSpelling(f"{text[:60]!r} is no range of a cluster's devices")
            ids = list(range(start, stop, step))
        elif listed:
            ids = [int(i) for i in (listed.group(1) or "").split(",") if i]
        else:
            raise PoolSpelling(f"{str(value)[:60]!r} is not device ids such as list(range(0,8))")
    if len(ids) > MAX_DEVICES:
        raise PoolSpelling("more device ids than a cluster has")
    if not ids or len(set(ids)) != len(ids):
        raise PoolSpelling(f"{str(value)[:60]!r} does not list distinct devices")
    return ids
