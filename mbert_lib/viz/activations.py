"""gelu against relu (paper section 3.3): the curves and how far apart they are."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import tensorflow as tf

from mbert_lib.layers.activations import get_activation
from mbert_lib.viz import style

LABELS = {
    "relu": "relu = max(0, x)",
    "gelu": "gelu = x·Φ(x) (erf)",
    "gelu_new": "gelu, tanh approximation",
}


def plot_activation_curves(
    names: Sequence[str] = ("relu", "gelu", "gelu_new"),
    x_range: tuple[float, float] = (-4.0, 4.0),
    path=None,
):
    """Left: the activations of `names` (by `hidden_act` name). Right: each minus relu."""
    style.apply()
    x = np.linspace(*x_range, 801, dtype=np.float32)
    values = {n: get_activation(n)(tf.constant(x)).numpy() for n in names}
    fig, (left, right) = plt.subplots(1, 2, figsize=(15, 5.8))
    colors = dict(zip(names, [style.OURS, style.PAPER, style.ALT, style.GREY]))
    styles = {"gelu_new": (0, (4, 3))}
    for n in names:
        left.plot(
            x, values[n], lw=2.5, color=colors[n], ls=styles.get(n, "-"), label=LABELS.get(n, n)
        )
    left.set_xlabel("x")
    left.set_ylabel("act(x)")
    left.set_title("Activations (relu for gelu: paper §3.3)")
    left.legend(loc="upper left")
    left.grid(alpha=0.3)
    relu = np.maximum(x, 0)
    for n in names:
        if n != "relu":
            right.plot(
                x,
                values[n] - relu,
                lw=2.5,
                color=colors[n],
                ls=styles.get(n, "-"),
                label=f"{n} − relu",
            )
    right.axhline(0, color=style.GREY, lw=1)
    right.set_xlabel("x")
    right.set_ylabel("act(x) − relu(x)")
    right.set_title("Where they differ: |x| ≲ 3")
    right.legend(loc="lower left")
    right.grid(alpha=0.3)
    fig.tight_layout()
    style.save(fig, path)
    return fig
