"""Efficiency factors: named as the scenario schema names them, bounded, cited, overridable."""

from __future__ import annotations

import dataclasses
import re

import pytest
from rlmguide.cost import EFFICIENCY_DEFAULTS, EfficiencyFactors, evaluate, resolve_efficiency
from rlmguide.cost.efficiency import default_sources
from rlmguide.cost.overheads import Overheads
from rlmguide.kb.schema import Efficiency
from rlmguide.kb.schema.common import SLUG_PATTERN
from test_cost_specs import H100, QWEN25_7B, one_plan, workload


def test_factors_are_the_schema_fields() -> None:
    names = {f.name for f in dataclasses.fields(EfficiencyFactors)}
    assert names == set(Efficiency.model_fields) == set(EFFICIENCY_DEFAULTS)


def test_defaults_are_fractions_with_sources() -> None:
    for name, default in EFFICIENCY_DEFAULTS.items():
        assert 0 < default.value <= 1, name
        assert default.sources, name
        assert all(re.match(SLUG_PATTERN, s) for s in default.sources), name
        assert getattr(EfficiencyFactors(), name) == default.value


def test_cited_sources_are_listed_for_the_knowledge_base() -> None:
    sources = default_sources()
    assert sources == sorted(set(sources))
    assert {"arxiv-2104.04473", "arxiv-2407.21783", "github-stas00-ml-engineering"} <= set(sources)


def test_overrides_replace_only_what_they_set() -> None:
    factors = resolve_efficiency(Efficiency(decode_hbm=0.8))
    assert factors.decode_hbm == 0.8
    assert factors.train_compute == EFFICIENCY_DEFAULTS["train_compute"].value
    assert resolve_efficiency(None) == EfficiencyFactors()
    with pytest.raises(ValueError, match="outside"):
        EfficiencyFactors(train_compute=1.5)


def test_each_factor_moves_the_stages_that_use_it() -> None:
    base = evaluate(H100, QWEN25_7B, workload(), one_plan())
    fast = evaluate(H100, QWEN25_7B, workload(), one_plan(), efficiency=Efficiency(decode_hbm=0.9))
    assert fast.stages["rollout"].seconds[0] < 0.8 * base.stages["rollout"].seconds[0]
    # decode_hbm is also the share streaming kernels reach (the Adam update): a small effect
    assert fast.stages["training"].seconds[0] < base.stages["training"].seconds[0]
    assert fast.stages["training"].seconds[0] > 0.999 * base.stages["training"].seconds[0]
    assert fast.stages["assessment"].seconds[0] == base.stages["assessment"].seconds[0]
    train = evaluate(
        H100, QWEN25_7B, workload(), one_plan(), efficiency=Efficiency(train_compute=0.9)
    )
    assert train.stages["rollout"].seconds[0] == base.stages["rollout"].seconds[0]
    assert train.stages["training"].seconds[0] < 0.6 * base.stages["training"].seconds[0]


def test_overheads_are_validated() -> None:
    with pytest.raises(ValueError):
        Overheads(usable_memory_fraction=1.2)
    with pytest.raises(ValueError):
        Overheads(decode_step_seconds=-1)
