"""The condition language: what it accepts, what it refuses, and array evaluation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rlmguide.rules.expr import Condition, ConditionError
from rlmguide.rules.facts import FACTS


def test_evaluates_over_arrays_and_scalars() -> None:
    c = Condition("cluster.gpus <= 8 and plan.train.tp in (1, 2) and not model.is_moe", FACTS)
    env = {"cluster.gpus": 8, "plan.train.tp": np.array([1, 2, 4]), "model.is_moe": False}
    assert c.evaluate(env).tolist() == [True, True, False]
    assert c.names == {"cluster.gpus", "plan.train.tp", "model.is_moe"}


def test_text_facts_arithmetic_and_functions() -> None:
    c = Condition(
        "plan.placement == 'colocated' and plan.train.tp * plan.train.pp <= "
        "max(cluster.gpus_per_node, 4) and plan.share.rollout > 0.5",
        FACTS,
    )
    env = {
        "plan.placement": np.array(["colocated", "disaggregated", "colocated"]),
        "plan.train.tp": np.array([2, 2, 8]),
        "plan.train.pp": np.array([2, 1, 2]),
        "cluster.gpus_per_node": 8,
        "plan.share.rollout": np.array([0.7, 0.9, 0.6]),
    }
    assert c.evaluate(env).tolist() == [True, False, False]


def test_chained_text_comparison_compares_each_pair() -> None:
    # The second link compares plan.execution (not plan.placement) with 'sync', and the
    # equality kept in the env for other conditions does not leak across facts.
    c = Condition("plan.placement != plan.execution != 'sync'", FACTS)
    env = {
        "plan.placement": np.array(["colocated", "colocated"]),
        "plan.execution": np.array(["sync", "async"]),
    }
    assert c.evaluate(env).tolist() == [False, True]
    assert c.evaluate(env).tolist() == [False, True]
    assert Condition("plan.placement == 'colocated'", FACTS).evaluate(env).tolist() == [True, True]


def test_chained_comparison() -> None:
    c = Condition("1 < plan.train.tp <= 8", FACTS)
    assert c.evaluate({"plan.train.tp": np.array([1, 2, 8, 16])}).tolist() == [
        False,
        True,
        True,
        False,
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("cluster.gpu <= 8", "unknown fact 'cluster.gpu'; did you mean cluster.gpus"),
        ("plan.placement == 'colocate'", "plan.placement is never 'colocate'"),
        ("cluster.gpus + 1", "is not a true/false condition"),
        ("cluster.gpus < 'eight'", "compares number with text"),
        ("plan.placement < 'colocated'", "text compares only with == and !="),
        ("__import__('os').system('true')", "only min(a, b, ...) and max(a, b, ...)"),
        ("open('/etc/passwd')", "only min(a, b, ...)"),
        ("cluster.gpus.__class__ == 1", "unknown fact 'cluster.gpus.__class__'"),
        ("[g for g in cluster.gpus]", "ListComp is not allowed"),
        ("lambda: True", "Lambda is not allowed"),
        ("cluster.gpus <=", "cannot parse"),
        ("cluster.gpus and model.is_moe", "`and`/`or` join conditions"),
        ("plan.train.tp in cluster.gpus", "`in` needs a literal list"),
        ("cluster.gpus is 8", "Is is not allowed"),
    ],
)
def test_refused_conditions_say_why(text: str, message: str) -> None:
    with pytest.raises(ConditionError) as caught:
        Condition(text, FACTS)
    assert message in str(caught.value)


@given(st.lists(st.integers(1, 64), min_size=1, max_size=50), st.integers(1, 64))
def test_negation_is_complement(values: list[int], bound: int) -> None:
    env = {"plan.train.tp": np.array(values)}
    yes = Condition(f"plan.train.tp <= {bound}", FACTS).evaluate(env)
    no = Condition(f"not plan.train.tp <= {bound}", FACTS).evaluate(env)
    assert (yes ^ no).all()
    both = Condition(f"plan.train.tp <= {bound} or plan.train.tp > {bound}", FACTS).evaluate(env)
    assert both.all()
