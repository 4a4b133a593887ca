"""strict_json: what Python's json would write as NaN / Infinity becomes null."""

import math

import numpy as np

from mbert_lib import strict_json
from tests.helpers import strict_json_loads


def test_non_finite_numbers_at_any_depth_become_null_and_the_rest_is_kept():
    value = {
        "std": math.nan,
        "rows": [{"std": np.float64("nan"), "mean": 0.5}, (1, -math.inf, "nan")],
        "n": 3,
        "ok": True,
    }
    assert strict_json_loads(strict_json.dumps(value)) == {
        "std": None,
        "rows": [{"std": None, "mean": 0.5}, [1, None, "nan"]],
        "n": 3,
        "ok": True,
    }
