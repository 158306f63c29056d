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
    layouts, so the costly formulas run once per layout and are spread back with the index.

    Each row is numbered exactly in mixed radix (a column of whole numbers by its offset from
    its least value, any other column by the rank of its value), so one sort of integers finds
    the combinations; rows too varied for a 62-bit number are sorted whole instead."""
    arrays = [np.asarray(c) for c in columns]
    key = np.zeros(arrays[0].shape[0], dtype=np.int64)
    radix = 1
    for column in arrays:
        codes, span = _codes(column)
        if radix * span >= 2**62:
            return _unique_whole_rows(arrays)
        key += codes * radix
        radix *= span
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return first.astype(np.int64), inverse.ravel().astype(np.int64)


def _codes(column: np.ndarray) -> tuple[IntArray, int]:
    """Codes 0..span-1 that are equal exactly where the column's values are."""
    if column.dtype.kind == "b":
        return column.astype(np.int64), 2
    if column.size and column.dtype.kind in "iuf":
        low, high = column.min(), column.max()
        whole = column.dtype.kind != "f" or bool(np.all(column == np.floor(column)))
        if whole and np.isfinite(low) and np.isfinite(high) and high - low < 2**62:
            return (column - low).astype(np.int64), int(high - low) + 1
    values, codes = np.unique(column, return_inverse=True)
    return codes.ravel().astype(np.int64), max(len(values), 1)


def _unique_whole_rows(arrays: list[np.ndarray]) -> tuple[IntArray, IntArray]:
    stacked = np.ascontiguousarray(np.stack([a.astype(np.float64) for a in arrays], axis=1))
    rows = stacked.view(np.dtype((np.void, stacked.dtype.itemsize * stacked.shape[1]))).ravel()
    _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    return first.astype(np.int64), inverse.ravel().astype(np.int64)
