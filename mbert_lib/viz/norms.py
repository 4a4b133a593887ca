"""How well can NoNorm imitate LayerNorm? One channel's scatter and a sweep (paper section 3.3)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import PercentFormatter

from mbert_lib.viz import style


def plot_nonorm_imitation(
    layer_norm_out: np.ndarray,
    nonorm_out: np.ndarray,
    channel: int,
    sweep: pd.DataFrame,
    setting: str = "",
    path=None,
):
    """Left: LayerNorm output vs the best-fitting NoNorm output of one channel, over tokens.
    Right: the fraction of LayerNorm's output variance the best NoNorm leaves unexplained,
    against how much the tokens' scale or offset varies.

    `layer_norm_out`, `nonorm_out`: [tokens, C]. `sweep`: columns `spread`,
    `unexplained` and `varies` (one line per distinct value of `varies`).
    `setting` describes the tokens of the left panel (added to its title).
    """
    style.apply()
    fig, (left, right) = plt.subplots(1, 2, figsize=(15, 6))
    y, y_hat = layer_norm_out[:, channel], nonorm_out[:, channel]
    unexplained = np.sum((y - y_hat) ** 2) / np.sum((y - y.mean()) ** 2)
    overall = np.sum((layer_norm_out - nonorm_out) ** 2) / np.sum(
        (layer_norm_out - layer_norm_out.mean(axis=0)) ** 2
    )
    left.scatter(y, y_hat, s=8, alpha=0.4, color=style.OURS, label="tokens")
    lim = [min(y.min(), y_hat.min()), max(y.max(), y_hat.max())]
    left.plot(lim, lim, color=style.PAPER, lw=2, label="perfect imitation (y = x)")
    left.set_xlabel(f"LayerNorm(h)[{channel}]")
    left.set_ylabel(f"best NoNorm(h)[{channel}] = γ·h + β")
    left.set_title(
        f"Channel {channel}{' (' + setting + ')' if setting else ''}: best γ, β\n"
        f"leave {unexplained:.0%} of its variance unexplained "
        f"({overall:.1%} over all channels)"
    )
    left.legend(loc="upper left")
    left.grid(alpha=0.3)

    colors = [style.OURS, style.ALT, style.PAPER, style.GREY]
    for color, (name, group) in zip(colors, sweep.groupby("varies", sort=False)):
        right.plot(group.spread, group.unexplained, marker="o", lw=2.5, color=color, label=name)
    right.set_xlabel("spread across tokens (std of log-scale, or of offset / channel std)")
    right.set_ylabel("unexplained variance, all channels")
    right.set_title("The more token statistics vary,\nthe worse any fixed γ, β imitates LayerNorm")
    right.set_ylim(0, 1)
    right.yaxis.set_major_formatter(PercentFormatter(1.0))
    right.legend(loc="upper left")
    right.grid(alpha=0.3)
    fig.tight_layout()
    style.save(fig, path)
    return fig
