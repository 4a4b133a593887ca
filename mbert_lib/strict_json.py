"""JSON that any parser reads: NaN and ±inf (e.g. the std of a single seed) become null.

Python's `json` writes float('nan') as the bare word NaN, which is not JSON;
jq, JavaScript and strict parsers refuse the whole file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any


def finite_or_null(value: Any) -> Any:
    """`value` with every non-finite float, at any depth, replaced by None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {k: finite_or_null(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_null(v) for v in value]
    return value


def dumps(value: Any, **kwargs) -> str:
    """json.dumps of finite_or_null(value); refuses anything still non-finite."""
    return json.dumps(finite_or_null(value), allow_nan=False, **kwargs)
