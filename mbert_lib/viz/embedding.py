"""The trigram embedding (paper section 3, embedding factorization): its window and its size."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import tensorflow as tf
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch

from mbert_lib.layers.embedding import trigram_concat
from mbert_lib.viz import style

SLOTS = ("e_{t+1}", "e_t", "e_{t−1}")
SLOT_COLORS = (style.ALT, style.OURS, "#2ca02c")


def trigram_sources(seq_length: int) -> np.ndarray:
    """[T, T + 2] map from `trigram_concat`: entry [t, j] is the slot (0: e_{t+1}, 1: e_t,
    2: e_{t−1}) through which input column j reaches output t, or −1.

    Column 0 is the zero vector before the sequence, columns 1..T the tokens,
    column T + 1 the zero vector after it. Computed by feeding one-hot
    embeddings (E = T) through `trigram_concat`.
    """
    if seq_length < 1:
        raise ValueError(f"seq_length must be >= 1, got {seq_length}")
    T = seq_length
    x = trigram_concat(tf.eye(T)[tf.newaxis]).numpy()[0].reshape(T, 3, T)  # [T, slot, T]
    sources = np.full((T, T + 2), -1)
    for t in range(T):
        for slot in range(3):
            hits = np.flatnonzero(x[t, slot])
            if hits.size:
                sources[t, hits[0] + 1] = slot
            else:  # an all-zero slot: the zero vector past an end
                sources[t, 0 if slot == 2 else T + 1] = slot
    return sources


def plot_trigram_window(tokens: Sequence[str], num_real: int, path=None):
    """Which token embeddings feed each position's trigram input x_t (from `trigram_sources`).

    `tokens` label the T positions; the first `num_real` are real, the rest padding.
    """
    style.apply()
    T = len(tokens)
    sources = trigram_sources(T)
    fig, ax = plt.subplots(figsize=(1.05 * (T + 2) + 3.5, 0.75 * T + 2.2))
    cmap = ListedColormap(["white", *SLOT_COLORS])
    ax.imshow(sources + 1, cmap=cmap, vmin=0, vmax=3, aspect="auto")
    for t in range(T):
        for j in range(T + 2):
            if sources[t, j] >= 0:
                ax.text(
                    j,
                    t,
                    "$" + SLOTS[sources[t, j]].replace("−", "-") + "$",
                    ha="center",
                    va="center",
                    fontsize=12,
                    color="white",
                )
    columns = ["0\n(before)"] + list(tokens) + ["0\n(after)"]
    ax.set_xticks(range(T + 2), columns, rotation=0)
    ax.set_yticks(range(T), [f"x_{t}  ({tok})" for t, tok in enumerate(tokens)])
    ax.set_xticks(np.arange(-0.5, T + 2), minor=True)
    ax.set_yticks(np.arange(-0.5, T), minor=True)
    ax.grid(which="minor", color="#cccccc", lw=1)
    ax.tick_params(which="minor", length=0)
    ax.axvline(num_real + 0.5, color=style.PAPER, lw=3)
    ax.axhline(num_real - 0.5, color=style.PAPER, lw=3)
    last = num_real - 1
    if num_real < T:
        ax.annotate(
            "the last real token\nsees the first [PAD]",
            xy=(num_real + 1.5, last),
            xytext=(T + 2.1, last - 1.2),
            fontsize=12,
            color=style.PAPER,
            annotation_clip=False,
            arrowprops=dict(arrowstyle="->", color=style.PAPER, lw=2),
        )
    ax.set_xlabel("input: token embeddings (zero vectors past either end)")
    ax.set_ylabel("output position")
    ax.set_title(
        "Trigram input $x_t = [e_{t+1};\\ e_t;\\ e_{t-1}]$ (paper §3.4): a width-3 window "
        "(red lines: end of the real tokens)"
    )
    ax.legend(
        handles=[
            Patch(color=c, label=f"${s.replace('−', '-')}$") for c, s in zip(SLOT_COLORS, SLOTS)
        ],
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        title="slot of $x_t$",
    )
    fig.tight_layout()
    style.save(fig, path)
    return fig


def plot_param_stacks(stacks: Mapping[str, Mapping[str, int]], path=None, title: str = ""):
    """Horizontal stacked bars: one bar per entry of `stacks` ({bar: {component: params}}),
    components coloured consistently across bars, total at the end of each bar."""
    style.apply()
    components = list(dict.fromkeys(c for parts in stacks.values() for c in parts))
    palette = plt.get_cmap("tab10").colors
    colors = dict(zip(components, palette))
    bars = list(stacks)
    fig, ax = plt.subplots(figsize=(15, 1.1 * len(bars) + 2.2))
    totals, labelled = [], set()
    for i, bar in enumerate(bars):
        left = 0.0
        for component, count in stacks[bar].items():
            ax.barh(
                i,
                count / 1e6,
                left=left,
                color=colors[component],
                edgecolor="white",
                label=None if component in labelled else component,
            )
            labelled.add(component)
            left += count / 1e6
        totals.append(left)
        ax.text(left + max(totals) * 0.01, i, f"{left:.2f}M", va="center", fontsize=13)
    ax.set_yticks(range(len(bars)), bars)
    ax.invert_yaxis()
    ax.set_xlim(0, max(totals) * 1.15)
    ax.set_xlabel("parameters (millions)")
    if title:
        ax.set_title(title)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=min(4, len(components)))
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    style.save(fig, path)
    return fig
