"""strict_json: what Python's json would write as NaN / Infinity becomes null."""

import json
import math

import numpy as np

from mbert_lib import strict_json


def _strict_loads(text):
    def refuse(constant):
        raise ValueError(f"non-standard JSON constant {constant}")
    return json.loads(text, parse_constant=refuse)


def test_non_finite_numbers_at_any_depth_become_null_and_the_rest_is_kept():
    value = {"std": math.nan, "rows": [{"std": np.float64("nan"), "mean": 0.5},
                                       (1, -math.inf, "nan")], "n": 3, "ok": True}
    assert _strict_loads(strict_json.dumps(value)) == {
        "std": None, "rows": [{"std": None, "mean": 0.5}, [1, None, "nan"]], "n": 3, "ok": True}

