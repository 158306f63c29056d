"""The spread of response lengths and the grid over which the rollout's batch shrinks.

Only the mean r and the maximum L of the response lengths are known. The cost core takes the
one-parameter family whose survival (share of responses still generating after t tokens) is

    S(t) = 1 - (t / L)^a,   a = r / (L - r),

which has mean exactly r and maximum exactly L: a -> infinity is "every response has length L",
small a is a long tail where few responses run to the cap (the straggler effect of reasoning RL).
The decode steps [0, end] are cut into equal segments; on each the exact mean of S and the
S-weighted mean position are used, so token counts integrate exactly (sum of widths x mean S
over [0, L] is r) and the mean context of a decoded token is exact.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rlmguide.cost.arrays import FloatArray


@dataclass(frozen=True, slots=True)
class LengthGrid:
    """Segments of decode steps [0, end]: widths, mean survival and mean position on each."""

    widths: FloatArray
    survival: FloatArray
    position: FloatArray

    @property
    def end(self) -> float:
        return float(self.widths.sum())

    @property
    def tokens_per_sequence(self) -> float:
        """Mean tokens a sequence generates within [0, end] (r when end = L)."""
        return float((self.widths * self.survival).sum())


def shape_exponent(mean: float, longest: float) -> float:
    """a of the survival S(t) = 1 - (t/L)^a, infinite when every response has length L."""
    if not 0 < mean <= longest:
        raise ValueError(f"mean response length {mean} must lie in (0, {longest}]")
    return np.inf if mean >= longest else mean / (longest - mean)


def _integral_of_power(t: FloatArray, longest: float, power: float) -> FloatArray:
    """Integral from 0 to t of (x/L)^(power-1) dx = L/power * (t/L)^power."""
    return longest / power * (t / longest) ** power


def length_grid(mean: float, longest: float, end: float, segments: int) -> LengthGrid:
    """The segments of [0, end] (end <= longest caps the rollout, as partial rollouts do)."""
    end = min(end, longest)
    edges = np.linspace(0.0, end, segments + 1)
    t0, t1 = edges[:-1], edges[1:]
    widths = t1 - t0
    a = shape_exponent(mean, longest)
    if np.isinf(a):
        return LengthGrid(widths, np.ones(segments), (t0 + t1) / 2)
    # On [t0, t1]: integral of S = (t1 - t0) - L/(a+1) [(t/L)^(a+1)],
    # integral of t S = [t^2] / 2 - L^2/(a+2) [(t/L)^(a+2)].
    area = widths - np.diff(_integral_of_power(edges, longest, a + 1))
    moment = (t1**2 - t0**2) / 2 - longest * np.diff(_integral_of_power(edges, longest, a + 2))
    survival = area / widths
    position = np.where(area > 0, moment / np.where(area > 0, area, 1.0), (t0 + t1) / 2)
    return LengthGrid(widths, survival, position)


def mean_position(mean: float, longest: float) -> float:
    """Mean position t of a decoded token over the whole distribution: E[l^2] / (2 E[l]).

    With S(t) = 1 - (t/L)^a: (integral of t S) / (integral of S) = L (a + 1) / (2 (a + 2)).
    """
    a = shape_exponent(mean, longest)
    return longest / 2 if np.isinf(a) else longest * (a + 1) / (2 * (a + 2))


def expected_longest(mean: float, longest: float, count: float) -> float:
    """Mean of the longest of `count` independent responses: with F(t) = (t/L)^a the longest
    of g has F^g = (t/L)^(a g), whose mean is L a g / (a g + 1) (L when every response has
    length L; the mean itself for one response)."""
    a = shape_exponent(mean, longest)
    if np.isinf(a):
        return float(longest)
    ag = a * max(count, 1.0)
    return float(longest * ag / (ag + 1.0))


def budgeted(mean: float, longest: float, budget: float | None) -> tuple[float, float]:
    """Mean and longest response length when every response is cut at `budget` tokens (a
    reasoning budget, workload.reasoning_budget); unchanged without one or when it cuts nothing.

    Below the budget the survival is S(t) as before; the responses still generating at the
    budget, a share S(budget), end there. So the longest is the budget and the mean is the
    integral of S over [0, budget]: budget - L/(a+1) (budget/L)^(a+1). The cost core then
    describes the cut lengths by their mean and longest, as it does any other (the family of
    this module refitted to them): the tokens generated and trained and the rollout's depth
    are exact, the shape of the drain between them is the family's (it spreads the share that
    ends at the budget over the last stretch before it).
    """
    if budget is None or budget >= longest:
        return float(mean), float(longest)
    a = shape_exponent(mean, longest)
    if np.isinf(a):
        return float(budget), float(budget)
    cut_mean = budget - float(_integral_of_power(np.asarray(budget), longest, a + 1.0))
    return cut_mean, float(budget)
