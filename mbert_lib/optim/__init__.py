"""Optimizers: LAMB (You et al., 2019) and the warmup + polynomial-decay schedule.

`mbert_lib.optim.trust.lamb_step_report` shows what LAMB's next update would do
to each variable (norms, trust ratio) without applying it.
"""

from mbert_lib.optim.factory import create_optimizer
from mbert_lib.optim.groups import GroupedOptimizer
from mbert_lib.optim.lamb import DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY, Lamb, variable_name
from mbert_lib.optim.schedules import WarmupPolynomialDecay

__all__ = [
    "DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY",
    "GroupedOptimizer",
    "Lamb",
    "WarmupPolynomialDecay",
    "create_optimizer",
    "variable_name",
]
