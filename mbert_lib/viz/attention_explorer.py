"""An attention explorer: one sentence, one layer, one head, one snapshot of the student.

Shapes: T real tokens of the sentence ([CLS] … [SEP]), N heads, L student layers.
Student layer l learns teacher layer t_l (`layer_map`). For the choice made, the view
holds the teacher's attention probabilities A^T [T, T] (layer t_l), the student's A^S
[T, T] (layer l), the KL(A^T ‖ A^S) of every query row [T], and one KL per student layer
[L] (mean over heads and query rows). Rows are queries, columns keys; padding is cut off.

Three layers of API, each usable alone:

    attention_view(teacher, student, tokenizer, sentence, layer, head) -> dict  (numbers)
    draw(view) -> matplotlib Figure                                            (static)
    AttentionExplorer(teacher, snapshots, tokenizer).update(...) -> (view, Figure)
    explore(explorer) -> ipywidgets box in a Jupyter kernel, else the static Figure

The student's probabilities are floored at `transfer_summary.KL_FLOOR` inside the KL:
a float32 softmax can round one to exactly 0 (the laptop no-AT student does), which
would make the exact KL infinite.
"""

from __future__ import annotations

import dataclasses
import html
import io
import os
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
import tensorflow as tf
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from mbert_lib.checkpoints import WEIGHTS_PREFIX, load_pretrainer
from mbert_lib.data import load_tokenizer
from mbert_lib.data.structured_task import task_tokenizer
from mbert_lib.distill import analysis
from mbert_lib.distill.trainer import load_stage_student, read_run
from mbert_lib.distill.transfer_summary import KL_FLOOR
from mbert_lib.experiment.distill import teacher_layer_map
from mbert_lib.lab.run import lab_models
from mbert_lib.lab.variants import LABELS
from mbert_lib.viz import style

TICK_SIZE = 9  # points; token labels stay legible


def _config(model):
    return getattr(model, "encoder", model).config


def encode_sentence(
    tokenizer, sentence: str, seq_length: int | None = None
) -> tuple[list[str], dict]:
    """([CLS] tokens … [SEP], a batch of one example), padded with [PAD] to seq_length.

    The batch holds input_word_ids / input_mask / input_type_ids, int32 [1, S] with S =
    seq_length or T.
    """
    if not sentence or not sentence.strip():
        raise ValueError("sentence is empty: type a few words")
    ids = [tokenizer.cls_id] + tokenizer.encode(sentence) + [tokenizer.sep_id]
    if len(ids) == 2:
        raise ValueError(f"sentence {sentence!r} has no tokens after normalisation")
    if seq_length is not None and len(ids) > seq_length:
        raise ValueError(
            f"sentence has {len(ids)} tokens with [CLS] and [SEP]; at most "
            f"{seq_length} fit (seq_length)"
        )
    length = seq_length or len(ids)
    pad = length - len(ids)
    batch = {
        "input_word_ids": tf.constant([ids + [tokenizer.pad_id] * pad], tf.int32),
        "input_mask": tf.constant([[1] * len(ids) + [0] * pad], tf.int32),
        "input_type_ids": tf.zeros([1, length], tf.int32),
    }
    return [tokenizer.vocab[i] for i in ids], batch


def row_kl(p, q) -> np.ndarray:
    """KL(p ‖ max(q, KL_FLOOR)) = Σ_keys p log(p / q) per row: [..., T, T] -> [..., T]."""
    p, q = np.asarray(p, np.float64), np.maximum(np.asarray(q, np.float64), KL_FLOOR)
    return (p * (np.log(np.where(p > 0, p, 1.0)) - np.log(q))).sum(-1)


def _check_index(name: str, value: int, count: int, what: str) -> None:
    if not 0 <= value < count:
        raise ValueError(f"{name} must be in 0..{count - 1} ({what}), got {value}")


@dataclasses.dataclass(frozen=True)
class ViewSettings:
    """How `attention_view` compares a student with the teacher, the same for every view of
    an explorer. layer_map: the teacher layer of each student layer (None: the same
    layer); seq_length: the length a sentence is padded to with [PAD] (None: no
    padding); reference: a student of the same shape (the untrained one) whose KL per
    layer the view adds (None: none)."""

    layer_map: Sequence[int] | None = None
    seq_length: int | None = None
    reference: object = None


def attention_view(
    teacher,
    student,
    tokenizer,
    sentence: str,
    layer: int,
    head: int,
    settings: ViewSettings = ViewSettings(),
) -> dict:
    """The numbers behind one explorer view (numpy, padding removed).

    teacher / student: Pretrainers or encoders with equal head counts; layer: student
    layer l, compared with teacher layer settings.layer_map[l] (default l). Returns
    tokens (list of T str), teacher_probs / student_probs [T, T], row_kl [T], layer_kl
    [L], and layer, teacher_layer, head; with a `settings.reference` student also
    reference_layer_kl [L], its KL per layer on the same sentence.
    """
    layer_map, reference = settings.layer_map, settings.reference
    layers, heads = _config(student).num_hidden_layers, _config(student).num_attention_heads
    layer_map = tuple(range(layers)) if layer_map is None else tuple(layer_map)
    _check_index("layer", layer, layers, f"the student has {layers} layers")
    _check_index("head", head, heads, f"{heads} attention heads")
    tokens, batch = encode_sentence(tokenizer, sentence, settings.seq_length)
    real = np.asarray(batch["input_mask"][0], bool)  # [S]
    t_probs = analysis.encode(teacher, batch)["attention_scores"][:, 0]  # [L_T, N, S, S]
    s_probs = analysis.encode(student, batch)["attention_scores"][:, 0]  # [L, N, S, S]
    t_probs = t_probs[np.array(layer_map)][:, :, real][..., real]  # [L, N, T, T]
    s_probs = s_probs[:, :, real][..., real]
    kl = row_kl(t_probs, s_probs)  # [L, N, T]
    extra = {}
    if reference is not None:
        r_probs = analysis.encode(reference, batch)["attention_scores"][:, 0][:, :, real][..., real]
        extra["reference_layer_kl"] = row_kl(t_probs, r_probs).mean((1, 2))
    return {
        **extra,
        "tokens": tokens,
        "teacher_probs": t_probs[layer, head],
        "student_probs": s_probs[layer, head],
        "row_kl": kl[layer, head],
        "layer_kl": kl.mean((1, 2)),
        "layer": layer,
        "teacher_layer": layer_map[layer],
        "head": head,
    }


def _heatmap(ax, values, tokens, diverging: bool) -> None:
    """One map on its own colour scale (0 .. max, or ±max|·| centred at 0) with a colour bar."""
    vmin, vmax, cmap = style.map_scale(values, diverging)
    sns.heatmap(
        values,
        ax=ax,
        cmap=cmap,
        vmin=vmin,
        vmax=vmax,
        square=True,
        xticklabels=tokens,
        yticklabels=tokens,
        cbar_kws={"shrink": 0.7},
    )
    ax.tick_params(axis="both", labelsize=TICK_SIZE, length=0)
    ax.set_xlabel("key", fontsize=11)
    ax.set_ylabel("query", fontsize=11)


def draw(view: Mapping, title: str | None = None, path=None):
    """The view as one figure: teacher, student and teacher − student maps (a colour bar
    each), the KL of each query row beside them, the per-layer KL below."""
    style.apply()
    tokens, t = list(view["tokens"]), len(view["tokens"])
    side = max(3.4, 0.2 * t)  # inches per map: ≥ 9 pt labels
    fig = plt.figure(figsize=(3.9 * side + 0.6 * side, side + 3.2), layout="constrained")
    grid = fig.add_gridspec(2, 4, width_ratios=[1.3, 1.3, 1.3, 0.75], height_ratios=[side, 2.2])
    where = f"layer {{}} · head {view['head']}"
    panels = [
        (f"teacher · {where.format(view['teacher_layer'])}", view["teacher_probs"], False),
        (f"student · {where.format(view['layer'])}", view["student_probs"], False),
        ("teacher − student", view["teacher_probs"] - view["student_probs"], True),
    ]
    for j, (name, values, diverging) in enumerate(panels):
        ax = fig.add_subplot(grid[0, j])
        _heatmap(ax, np.asarray(values), tokens, diverging)
        ax.set_title(name, fontsize=12)

    rows = fig.add_subplot(grid[0, 3])
    rows.barh(np.arange(t) + 0.5, view["row_kl"], height=0.8, color=style.OURS)
    rows.set_ylim(t, 0)  # row i beside the maps' row i
    rows.set_yticks(np.arange(t) + 0.5, tokens, fontsize=TICK_SIZE)
    rows.xaxis.set_major_locator(MaxNLocator(3))
    rows.ticklabel_format(axis="x", style="sci", scilimits=(-2, 3))
    rows.tick_params(axis="x", labelsize=TICK_SIZE)
    rows.set_title("KL per query row", fontsize=11)

    per_layer = fig.add_subplot(grid[1, :])
    kl = np.asarray(view["layer_kl"])
    colors = [style.OURS if k == view["layer"] else style.GREY for k in range(len(kl))]
    bars = per_layer.bar(np.arange(len(kl)), kl, width=0.6, color=colors)
    per_layer.bar_label(bars, fmt="%.3g", fontsize=10)
    if "reference_layer_kl" in view:
        reference = np.asarray(view["reference_layer_kl"])
        per_layer.hlines(
            reference,
            np.arange(len(kl)) - 0.4,
            np.arange(len(kl)) + 0.4,
            colors="black",
            linestyles="--",
            linewidth=2,
            label="untrained student",
        )
        per_layer.set_ylim(0, 1.25 * max(kl.max(), reference.max()))
        snapshot = Patch(color=style.OURS, label=view.get("snapshot", "student"))
        per_layer.legend(
            handles=[snapshot, *per_layer.get_legend_handles_labels()[0]],
            fontsize=10,
            loc="upper left",
        )
    per_layer.margins(y=0.2)
    per_layer.set_xticks(np.arange(len(kl)), [f"layer {k}" for k in range(len(kl))], fontsize=11)
    per_layer.set_ylabel("mean KL", fontsize=11)
    per_layer.set_title(
        "KL(teacher ‖ student) per student layer, mean over heads and query "
        "rows (chosen layer in colour)",
        fontsize=12,
    )
    if title:
        fig.suptitle(title, fontsize=14)
    style.save(fig, path)
    return fig


class AttentionExplorer:
    """Teacher vs named student snapshots on free-text sentences.

    snapshots: {name: student Pretrainer or encoder}, in the order a menu lists them;
    all share one architecture. layer_map: teacher layer per student layer (default
    identity). seq_length: pad every sentence with [PAD] to this length, as training
    batches are (None: no padding, as notebook 05). The maps differ slightly between the
    two: the trigram embedding shows the last real token its right neighbour, the [PAD]
    embedding when padded and zeros when not. reference: a student of the same shape
    whose per-layer KL every view shows beside the snapshot's (the untrained student).
    notes: lines the explorer shows above its figure (what is missing and how to make
    it).
    """

    def __init__(
        self,
        teacher,
        snapshots: Mapping[str, object],
        tokenizer,
        layer_map: Sequence[int] | None = None,
        seq_length: int | None = None,
        reference=None,
        notes: Sequence[str] = (),
    ):
        if not snapshots:
            raise ValueError("snapshots is empty: name at least one student")
        configs = {name: _config(model) for name, model in snapshots.items()}
        if reference is not None:
            configs["reference (the untrained student)"] = _config(reference)
        first = next(iter(configs.values()))
        shape = (first.num_hidden_layers, first.num_attention_heads)
        for name, c in configs.items():
            if (c.num_hidden_layers, c.num_attention_heads) != shape:
                raise ValueError(
                    f"snapshot {name!r} has {c.num_hidden_layers} layers and "
                    f"{c.num_attention_heads} heads; the first has {shape[0]} and "
                    f"{shape[1]}"
                )
        teacher_config = _config(teacher)
        if teacher_config.num_attention_heads != shape[1]:
            raise ValueError(
                f"the teacher has {teacher_config.num_attention_heads} heads, the "
                f"students {shape[1]}: head-by-head maps need equal counts"
            )
        self.layer_map = tuple(range(shape[0])) if layer_map is None else tuple(layer_map)
        if len(self.layer_map) != shape[0] or not all(
            0 <= t < teacher_config.num_hidden_layers for t in self.layer_map
        ):
            raise ValueError(
                f"layer_map {self.layer_map} must name one teacher layer in "
                f"0..{teacher_config.num_hidden_layers - 1} per student layer "
                f"({shape[0]})"
            )
        self.teacher, self.snapshots, self.tokenizer = teacher, dict(snapshots), tokenizer
        self.num_layers, self.num_heads, self.seq_length = shape[0], shape[1], seq_length
        self.reference, self.notes = reference, tuple(notes)

    @classmethod
    def from_runs(
        cls, teacher_dir, pkt_dir, ablation_dir=None, seq_length: int | None = None
    ) -> AttentionExplorer:
        """The teacher, every snapshot of the progressive run in pkt_dir and, once it has
        finished, the run without attention transfer in ablation_dir.

        Snapshots: "PKT: before stage layer_k" / "PKT: after stage layer_k" for every
        layer-wise stage (before stage k is after stage k − 1), "PKT: after PD" (the
        finished student), and the same for the ablation ("no AT: ..."). An ablation_dir
        without a finished run adds a note instead of its snapshots. The reference is the
        PKT run's initial student (before any stage). The tokenizer is the run's (its
        vocab.txt).
        """

        for name, directory in [("teacher_dir", teacher_dir), ("pkt_dir", pkt_dir)]:
            if not os.path.isdir(directory):
                raise FileNotFoundError(
                    f"{name} {os.fspath(directory)!r} is not a directory "
                    "(has the pipeline step run?)"
                )
        experiment, stages = read_run(pkt_dir)
        if experiment.distillation.strategy != "progressive":
            raise ValueError(
                f"{pkt_dir}: the explorer's stage snapshots need a progressive "
                f"run, this one is {experiment.distillation.strategy!r}"
            )
        notes = []
        if ablation_dir is not None and not _finished(ablation_dir):
            notes.append(
                f"The no-AT snapshots appear once {os.path.basename(os.fspath(ablation_dir))!r}"
                " has finished: python -m mbert_lib reproduce --steps ablation_pd_fmt"
            )
            ablation_dir = None
        ablation = read_run(ablation_dir) if ablation_dir is not None else None
        if ablation is not None and any(s.use_attention and s.layer_wise for s in ablation[1]):
            raise ValueError(
                f"{ablation_dir}: this run trained with attention transfer; "
                "the ablation snapshot must be a run without it"
            )
        teacher = load_pretrainer(teacher_dir)
        config = experiment.student.build_config()
        layer_map = teacher_layer_map(
            experiment.distillation.transfer_teacher_layers,
            config.num_hidden_layers,
            _config(teacher).num_hidden_layers,
        )
        snapshots = _run_snapshots("PKT", pkt_dir, stages, config)
        if ablation is not None:
            no_at, no_at_stages = ablation
            snapshots.update(
                _run_snapshots("no AT", ablation_dir, no_at_stages, no_at.student.build_config())
            )
        reference = load_stage_student(pkt_dir, None, config)
        return cls(
            teacher, snapshots, load_tokenizer(pkt_dir), layer_map, seq_length, reference, notes
        )

    @classmethod
    def from_lab(cls, out_dir, seed: int = 0) -> AttentionExplorer:
        """The attention lab in out_dir (`mbert_lib.lab`): its teacher against seed `seed`'s
        students, "before transfer" first, then PKT, AT only, FMT only, copy only and no
        transfer; the reference is the student before transfer. Sentences are the task's
        symbols (s000 s001 ...), padded to the task's sequence length as in training."""
        settings, models = lab_models(out_dir, seed)
        teacher, before = models.pop("teacher"), models["before transfer"]
        snapshots = {LABELS.get(k, k): model for k, model in models.items()}
        tokenizer = task_tokenizer(settings.task)
        return cls(teacher, snapshots, tokenizer, None, settings.task.seq_length, before)

    def view(self, sentence: str, layer: int, head: int, snapshot: str) -> dict:
        """`attention_view` for the named snapshot, plus its name under "snapshot"."""
        if snapshot not in self.snapshots:
            raise ValueError(f"unknown snapshot {snapshot!r}; known: {list(self.snapshots)}")
        return {
            **attention_view(
                self.teacher,
                self.snapshots[snapshot],
                self.tokenizer,
                sentence,
                layer,
                head,
                ViewSettings(self.layer_map, self.seq_length, self.reference),
            ),
            "snapshot": snapshot,
        }

    def update(self, sentence: str, layer: int, head: int, snapshot: str):
        """(view, Figure) for one choice: what the widgets' callback shows."""
        view = self.view(sentence, layer, head, snapshot)
        return view, draw(
            view,
            title=f"{snapshot} · student layer {layer} vs teacher layer "
            f"{view['teacher_layer']} · head {head}",
        )


def _finished(run_dir) -> bool:
    """Whether a distillation run in run_dir has saved its finished student."""
    return os.path.exists(os.path.join(os.fspath(run_dir), WEIGHTS_PREFIX + ".index"))


def _run_snapshots(label: str, run_dir, stages, config) -> dict:
    """{"<label>: before stage layer_k", "<label>: after stage layer_k", ..., "<label>:
    after PD"}: the student of a layer-wise run at each of its stage boundaries, in order
    (the same model object where "after stage k" is "before stage k + 1")."""
    snapshots, before = {}, load_stage_student(run_dir, None, config)
    for stage in (s for s in stages if s.transfer_stage):
        after = load_stage_student(run_dir, stage, config)
        snapshots[f"{label}: before stage {stage.name}"] = before
        snapshots[f"{label}: after stage {stage.name}"] = after
        before = after
    snapshots[f"{label}: after PD"] = load_pretrainer(run_dir)
    return snapshots


def widgets_available() -> bool:
    """True inside a Jupyter kernel (one that can open widget comms) with ipywidgets."""
    try:  # on use: the notebook front end, only where a widget is drawn
        import ipywidgets  # noqa: F401
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return getattr(shell, "kernel", None) is not None


def figure_png(fig, dpi: int = 100) -> bytes:
    """The figure as PNG bytes (closed afterwards)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return buffer.getvalue()


def explore(
    explorer: AttentionExplorer,
    sentence: str,
    layer: int = 0,
    head: int = 0,
    snapshot: str | None = None,
    widgets: bool | None = None,
):
    """The interactive explorer: a text box, layer / head sliders and a snapshot menu above
    the figure, redrawn on every change (returned as an ipywidgets VBox; leave it as a
    cell's last expression). Without widgets (widgets=False, or None outside a Jupyter
    kernel) the static Figure of the given choice instead.

    The figure is an Image widget whose PNG each change replaces, not an Output widget
    that captures display(): notebook runners (nbclient, nbmake) can wait forever on
    an Output widget's captured messages, and a saved notebook keeps the last image.
    """
    snapshot = next(iter(explorer.snapshots)) if snapshot is None else snapshot
    if not (widgets_available() if widgets is None else widgets):
        for note in explorer.notes:
            print(note)
        return explorer.update(sentence, layer, head, snapshot)[1]
    import ipywidgets as w  # on use: the notebook front end, only where a widget is drawn

    controls = {
        "sentence": w.Text(
            value=sentence,
            description="sentence",
            continuous_update=False,
            layout=w.Layout(width="60%"),
        ),
        "layer": w.IntSlider(
            value=layer,
            min=0,
            max=explorer.num_layers - 1,
            description="layer",
            continuous_update=False,
        ),
        "head": w.IntSlider(
            value=head,
            min=0,
            max=explorer.num_heads - 1,
            description="head",
            continuous_update=False,
        ),
        "snapshot": w.Dropdown(
            options=list(explorer.snapshots),
            value=snapshot,
            description="snapshot",
            layout=w.Layout(width="40%"),
        ),
    }
    image, message = w.Image(format="png"), w.HTML()
    notes = w.HTML("<br>".join(html.escape(note) for note in explorer.notes))

    def redraw(_=None):
        try:
            _, fig = explorer.update(**{k: c.value for k, c in controls.items()})
        except ValueError as e:  # e.g. an empty sentence: say so, keep the figure
            message.value = f"<b>{html.escape(str(e))}</b>"
            return
        except Exception as e:  # noqa: BLE001 -- a widget callback's error is otherwise
            # only in the kernel's log: show it with its type, keep the figure
            message.value = f"<b>{type(e).__name__}: {html.escape(str(e))}</b>"
            return
        image.value, message.value = figure_png(fig), ""

    for control in controls.values():
        control.observe(redraw, names="value")
    redraw()
    return w.VBox(
        [
            controls["sentence"],
            w.HBox([controls["layer"], controls["head"], controls["snapshot"]]),
            notes,
            message,
            image,
        ]
    )
