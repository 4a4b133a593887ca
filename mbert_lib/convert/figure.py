"""The per-head reshape drawn: a TF1 [D, N·d] kernel and the N Keras heads [D, d] it becomes."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle


def plot_per_head_reshape(
    kernel: np.ndarray, num_heads: int, column: tuple[int, int] = (1, 3), name: str = "query kernel"
):
    """Left: the TF1 kernel [D, N·d] with head n's columns n·d … n·d + d − 1 framed;
    right: the Keras kernel [D, N, d] as N panels [D, d]. Column (n, j) is outlined on both sides.
    Returns the matplotlib figure.
    """
    rows, width = kernel.shape
    d = width // num_heads
    per_head = kernel.reshape(rows, num_heads, d)  # [D, N, d]
    n_mark, j_mark = column
    colors = plt.get_cmap("tab10").colors
    limit = float(np.abs(kernel).max())
    style = dict(cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto", interpolation="nearest")

    fig = plt.figure(figsize=(14, 6), constrained_layout=True)
    grid = fig.add_gridspec(1, 2, width_ratios=[1.15, 1.0])
    left = fig.add_subplot(grid[0])
    image = left.imshow(kernel, **style)
    for n in range(num_heads):
        # A coloured bar above head n's columns n·d … n·d + d − 1, a white line between heads.
        left.add_patch(
            Rectangle(
                (n * d - 0.5, -0.5 - 0.07 * rows),
                d,
                0.05 * rows,
                color=colors[n % 10],
                clip_on=False,
            )
        )
        left.text(
            n * d + d / 2 - 0.5,
            -0.5 - 0.09 * rows,
            f"head {n}",
            ha="center",
            va="bottom",
            fontsize=13,
            color=colors[n % 10],
            fontweight="bold",
        )
        if n:
            left.axvline(n * d - 0.5, color="white", lw=3)
    left.add_patch(
        Rectangle((n_mark * d + j_mark - 0.5, -0.5), 1, rows, fill=False, lw=2, edgecolor="black")
    )
    left.set_title(f"TF1 {name}  [D, N·d] = [{rows}, {width}]", fontsize=14, pad=48)
    left.set_xlabel("column c = n·d + j", fontsize=13)
    left.set_ylabel("input channel (D)", fontsize=13)
    fig.colorbar(image, ax=left, shrink=0.8)

    right = grid[1].subgridspec(1, num_heads, wspace=0.08)
    for n in range(num_heads):
        ax = fig.add_subplot(right[n])
        ax.imshow(per_head[:, n, :], **style)
        for spine in ax.spines.values():
            spine.set_edgecolor(colors[n % 10])
            spine.set_linewidth(3)
        if n == n_mark:
            ax.add_patch(
                Rectangle((j_mark - 0.5, -0.5), 1, rows, fill=False, lw=2, edgecolor="black")
            )
        ax.set_title(f"head {n}\nkernel[:, {n}, :]", fontsize=13, color=colors[n % 10])
        ax.set_xlabel("j", fontsize=12)
        ax.set_yticks([])
    fig.suptitle(
        f"Per-head reshape (not in the paper): [D, N·d] → [D, N, d] with N = {num_heads}, d = {d}; "
        f"outlined: column {n_mark}·{d} + {j_mark} = {n_mark * d + j_mark} "
        f"→ head {n_mark}, j = {j_mark}",
        fontsize=14,
    )
    return fig
