"""Does A beat B? One paired difference, its 95 % confidence interval and a verdict word.

Every comparison the project states ("PKT beats the copy", "soft labels beat labels
alone") pairs runs that share everything but the one thing compared: seed i of A and
seed i of B start from the same initialisation and read the data in the same order (or
prediction i of two models is the same masked token). With d_i = a_i − b_i over n pairs,

    d̄ = (1/n) Σ d_i,   s.e.(d̄) = s_d / √n,   95 % CI = d̄ ± t_{0.975, n−1} · s.e.(d̄)

where s_d is the sample standard deviation of the d_i (Student's t, n − 1 degrees of
freedom: with 3 pairs the interval is d̄ ± 4.30 s.e., with 5 pairs ± 2.78 s.e.). The
verdict reads the interval: **beats** when it lies above 0, **behind** when below,
**level** when it holds 0. Pairing removes what the two runs share (a hard seed is hard
for both), so it sees differences an unpaired comparison of two means would not.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
VERDICTS = ("beats", "level", "behind")


@dataclasses.dataclass(frozen=True)
class PairedDifference:
    """a − b over n pairs: mean, standard error, the 95 % CI and the verdict."""

    mean: float
    se: float
    low: float
    high: float
    n: int
    verdict: str  # "beats" | "level" | "behind" (a against b)

    def describe(self, scale: float = 1.0, digits: int = 2, unit: str = "") -> str:
        """e.g. '+1.23 [+0.45, +2.01]' (× scale, e.g. 100 for points), then the verdict."""
        f = f"{{:+.{digits}f}}"
        return (
            f"{f.format(self.mean * scale)}{unit} [{f.format(self.low * scale)}, "
            f"{f.format(self.high * scale)}] ({self.verdict}, n={self.n})"
        )

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def paired_difference(a: Sequence[float], b: Sequence[float]) -> PairedDifference:
    """a − b, pair by pair (a[i] with b[i]); raises ValueError naming what is wrong."""
    return paired_contrast({"a": 1.0, "b": -1.0}, {"a": a, "b": b})


def paired_contrast(
    coefficients: Mapping[str, float], values: Mapping[str, Sequence[float]]
) -> PairedDifference:
    """Σ_m c_m · x_m, pair by pair (d_i = Σ_m c_m x_{m,i}): e.g. {a: 1, b: −1} is a − b,
    {a: 1, b: −2, c: 1} the difference of two gains (c − b) − (b − a) over the same seeds.
    Every model's list holds one value per pair, in the same order."""
    missing = [m for m in coefficients if m not in values]
    if missing:
        raise ValueError(f"paired: no values for {missing} (have {sorted(values)})")
    arrays = {m: np.asarray(values[m], np.float64) for m in coefficients}
    lengths = {m: x.shape for m, x in arrays.items()}
    if any(x.ndim != 1 for x in arrays.values()) or len({x.shape for x in arrays.values()}) > 1:
        raise ValueError(
            f"paired: every model needs one list of values of equal length, paired by index; "
            f"got shapes {lengths}"
        )
    n = len(next(iter(arrays.values())))
    if n < 2:
        raise ValueError(f"paired: needs at least 2 pairs for a confidence interval, got {n}")
    if not all(np.all(np.isfinite(x)) for x in arrays.values()):
        raise ValueError("paired: values must be finite numbers (found NaN or inf)")
    d = sum(c * arrays[m] for m, c in coefficients.items())
    mean = float(d.mean())
    se = float(d.std(ddof=1) / math.sqrt(n))
    half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, n - 1)) * se
    low, high = mean - half, mean + half
    verdict = "beats" if low > 0 else "behind" if high < 0 else "level"
    return PairedDifference(mean, se, low, high, n, verdict)
