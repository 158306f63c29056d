"""Every launch export writes reads back as the plan it encodes (tests/round_trip.py): for each
framework with a mapping, each bundled example and each of its deployments, with nothing set
but the accelerator. A pair export refuses is checked by tests/test_export.py; a pair that does
not read back yet is listed here with why (strict: one that starts to read back fails until it
is taken off the list)."""

from __future__ import annotations

import pytest
from round_trip import Case, cases, round_trip

NOT_YET: dict[str, str] = {}


def _marked(case: Case) -> object:
    reason = NOT_YET.get(case.name)
    marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
    return pytest.param(case, id=case.name, marks=marks)


@pytest.mark.parametrize("case", [_marked(c) for c in cases()])
def test_an_exported_launch_reads_back_as_its_plan(case: Case) -> None:
    status, why = round_trip(case)
    if status == "refused":
        pytest.skip(f"export refuses it: {why}")
    assert status == "same", why


def test_the_not_yet_list_names_real_cases() -> None:
    assert set(NOT_YET) <= {c.name for c in cases()}
