"""Is one model better than another over seeds? A difference of means and its standard error.

For independent runs (each model trained with its own seeds), a linear
combination of model means  d = Σ_m c_m · mean(x_m)  has the standard error

    s.e.(d) = sqrt( Σ_m c_m² · s_m² / n_m )        s_m: sample std of model m's n_m runs

e.g. d = mean(a) − mean(b) (c = +1, −1), or the difference of two gains
(c − b) − (b − a) = a − 2b + c. A claim "d > 0" is taken as shown when d is
more than twice its standard error (about 95 % one-sided under a normal
approximation; with three seeds per model this is a rough guide, not a test).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

SHOWN_AT = 2.0  # d > SHOWN_AT × s.e.


def contrast(
    coefficients: Mapping[str, float], values: Mapping[str, Sequence[float]]
) -> tuple[float, float]:
    """(d, s.e.) of Σ c_m · mean(values[m]); s.e. is nan when a model has fewer than 2 runs."""
    missing = [m for m in coefficients if not len(values.get(m, ()))]
    if missing:
        raise ValueError(f"contrast: no values for {missing} (have {sorted(values)})")
    d, variance = 0.0, 0.0
    for model, c in coefficients.items():
        x = np.asarray(values[model], np.float64)
        d += c * x.mean()
        variance += c * c * (x.var(ddof=1) / len(x) if len(x) > 1 else math.nan)
    return float(d), math.sqrt(variance)


def verdict(d: float, se: float) -> str:
    """ "shown" (d > 2 s.e.), "same sign, within 2 s.e.", "opposite sign", or "no s.e."."""
    if math.isnan(se):
        return "no s.e. (one run)"
    if d > SHOWN_AT * se:
        return "shown"
    return "same sign, within 2 s.e." if d > 0 else "opposite sign"
