"""Shared building blocks of the record models: the base class, ids and small enums."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

SLUG_PATTERN = r"^[a-z0-9]+(?:[._-][a-z0-9]+)*$"

Slug = Annotated[str, StringConstraints(pattern=SLUG_PATTERN, max_length=80)]
"""A record id: lowercase letters, digits and single separators (`.`, `_`, `-`)."""

Text = Annotated[str, StringConstraints(min_length=1, strip_whitespace=True)]
Url = Annotated[str, StringConstraints(pattern=r"^https?://\S+$")]
Positive = Annotated[float, Field(gt=0)]
PositiveInt = Annotated[int, Field(gt=0)]
NonNegativeInt = Annotated[int, Field(ge=0)]

Support = Literal["yes", "partial", "planned", "no", "undocumented"]
"""How far a framework supports a feature. `no`: the sources read document no support (Table 11's
empty mark, "no documented public support"); `undocumented`: what could be read (often a paper's
abstract) neither documents the feature nor rules it out (Table 11's "?", "undocumented or
unclear"), so the claim records what was read rather than leaving the cell unknown."""
SUPPORT_ORDER = {"yes": 0, "partial": 1, "planned": 2, "no": 3, "undocumented": 4}
"""Best first: the order the matrix sorts by and a Table 11 column picks its best claim in."""
Date = dt.date


class Strict(BaseModel):
    """Base of every authored structure: unknown keys are errors and values never change."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        str_strip_whitespace=True,
        defer_build=True,
        use_attribute_docstrings=True,
    )
