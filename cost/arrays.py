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


def unique_rows(*columns: npt.ArrayLike) -> tuple[IntArray, IntArray]:
    """The first row of each distinct combination of `columns`, and for every row the index
    of its combination: a table of millions of candidate plans repeats a few thousand
    layouts, so the costly formulas run once per layout and are spread back with the index."""
    stacked = np.ascontiguousarray(
        np.stack([np.asarray(c, dtype=np.float64) for c in columns], axis=1)
    )
    rows = stacked.view(np.dtype((np.void, stacked.dtype.itemsize * stacked.shape[1]))).ravel()
    _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    return first.astype(np.int64), inverse.ravel().astype(np.int64)
