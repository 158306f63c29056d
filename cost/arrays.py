"""Array aliases shared by the cost core: every plan-dependent figure is a 1-D array over plans."""

from __future__ import annotations

from typing import TypeAlias

import numpy as np
import numpy.typing as npt

FloatArray: TypeAlias = npt.NDArray[np.float64]
IntArray: TypeAlias = npt.NDArray[np.int64]
BoolArray: TypeAlias = npt.NDArray[np.bool_]


def floats(values: npt.ArrayLike) -> FloatArray:
    """A float64 copy-free view where possible; the formulas never mix integer arithmetic in."""
    return np.asarray(values, dtype=np.float64)
