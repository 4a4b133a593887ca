"""REPORT.md: every paper-vs-reproduced table of a run, built from its step records.

`build_markdown` is pure (records and machine info in, text out) so tests can
feed it fixture records; `write_report` reads a run directory, draws the
figures and writes the file(s). A section whose step has no record says
"not run"; nothing here raises because a step is missing.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from mbert_lib import atomic, paper
from mbert_lib.finetune.report import aim_check
from mbert_lib.report import deployment, run
from mbert_lib.report.machine import machine_info
from mbert_lib.report.markdown import not_run, table
from mbert_lib.report.payoff import FIGURES as PAYOFF_FIGURES
from mbert_lib.report.payoff import payoff_section
from mbert_lib.step_records import Records, load_records, result
from mbert_lib.tables import sst2_finetuning, table1_sizes, tables8_9_transfer
from mbert_lib.viz.payoff import plot_attention_recipe, plot_label_budget
from mbert_lib.viz.report import plot_finetune_bars, plot_step_times

FIGURES = {
    "step_times": "report_step_times.png",
    "finetune": "report_finetune.png",
    **PAYOFF_FIGURES,
}
SECTIONS = (
    "Payoff",
    "Machine",
    "Data and seeds",
    "Wall time",
    "Table 1",
    "Table 8",
    "Table 9",
    "Findings",
    "Transfer",
    "Fine-tuning",
    "Table 6",
    "Table 7",
    "Latency and size ratios",
)


def command(recipe: str, data_dir: str | None, out: str | None) -> str:
    """The command line that makes this run."""
    return (
        "python -m mbert_lib reproduce --recipe "
        + recipe
        + (f" --data-dir {data_dir}" if data_dir else "")
        + (f" --out {out}" if out else "")
    )


def _machine(machine: Mapping) -> str:
    v = machine["versions"]
    rows = [
        ("CPU", machine["cpu"]),
        ("cores", machine["cores"]),
        ("memory", f"{machine['memory_gib']:.1f} GiB" if machine["memory_gib"] else "—"),
        ("OS", machine["os"]),
        *[(k, v[k]) for k in v],
        (
            "load average now (1, 5, 15 min)",
            ", ".join(map(str, machine["load_average"] or [])) or "—",
        ),
    ]
    return table(pd.DataFrame(rows, columns=["", "value"])) + (
        "\n\nThe paper trains on TPUs and measures latency on a Pixel 4 phone (TFLite, 4 "
        "threads); everything here ran on the CPU above."
    )


def _data(records: Records) -> str:
    prov = run.data_provenance(records)
    if prov is None:
        return not_run("data")
    files = pd.DataFrame(
        [
            {
                "file": f["name"],
                "bytes": f["size_bytes"],
                "sha256": f["sha256"],
                "matches the published sha256": "yes"
                if f.get("sha256") == f.get("expected_sha256")
                else ("—" if not f.get("expected_sha256") else "NO"),
            }
            for f in prov["files"]
        ]
    )
    counts = ", ".join(f"{k} {v:,}" for k, v in (prov["counts"] or {}).items())
    lines = [
        f"Source **{prov['source']}**"
        + (f" (`{prov['data_dir']}`)" if prov["data_dir"] else " (the offline builtin corpus)")
        + f", corpus `{prov['corpus']}`; pre-training examples: {counts}.",
        f"Training text sha256 `{prov['train_text_sha256']}`, held-out text "
        f"`{prov['heldout_text_sha256']}`, tokenizer `{prov['tokenizer_sha256']}`; data "
        f"step fingerprint `{prov['fingerprint']}`.",
    ]
    vocab = (records.get("data") or {}).get("settings", {}).get("vocab")
    if isinstance(vocab, dict) and "shipped_teacher" in vocab:
        lines.append(
            "Vocabulary: the shipped teacher's own "
            f"({vocab['shipped_teacher']['vocab_size']:,} WordPiece tokens), so that the "
            "run's token ids are the teacher's."
        )
    elif vocab == "trained":
        lines.append("Vocabulary: a WordPiece vocabulary trained on the run's training text.")
    if not files.empty:
        lines.append(table(files))
    seeds = run.seeds_table(records)
    lines.append("Seeds:\n\n" + table(seeds))
    return "\n\n".join(lines)


def _wall_time(
    records: Records,
    cores: int,
    budget: float,
    figure: str | None,
    pipeline: Sequence[str],
    optional: Sequence[str],
) -> str:
    if not records:
        return not_run("any")
    times = run.wall_time_table(records, cores)
    s = run.budget_summary({k: r for k, r in records.items() if k not in optional}, budget)
    extra = [name for name in optional if name in records]
    busy = times[times["busy machine"] == "yes"]["step"].tolist()
    missing = [name for name in pipeline if name not in records]
    lines = [
        table(times, decimals={"seconds": 1, "minutes": 2, "share (%)": 1}),
        f"**Total {s['minutes']:.1f} min** over {s['steps']} steps (the sum of their "
        f"wall times"
        + (f"; the optional {', '.join(extra)} not counted" if extra else "")
        + f") against a budget of {budget:g} min: **{s['status']}**"
        + (
            f", but partial: {len(missing)} step(s) of the pipeline have not run "
            f"({', '.join(missing)})."
            if missing
            else "."
        )
        + (
            f" From the first step's start to the last one's end: {s['span_minutes']:.1f} "
            "min (includes pauses and resumed runs)."
            if s["span_minutes"]
            else ""
        ),
        _busy_note(times, busy, run.busy_threshold(cores)),
    ]
    if figure:
        lines.append(f"![wall time per step]({figure})")
    return "\n\n".join(lines)


def _busy_note(times: pd.DataFrame, busy: Sequence[str], threshold: float) -> str:
    unknown = times[times["busy machine"] == "—"]["step"].tolist()
    text = "Load average: " + (
        f"{len(busy)} step(s) ({', '.join(busy)}) started or ended with a 1-minute load above "
        f"{threshold:g} (cores + 1): other work was competing for the CPU, so their times (and "
        "any latency measured then) are inflated."
        if busy
        else f"no step with a recorded load ran on a busy machine (1-minute load at most "
        f"{threshold:g} = cores + 1)."
    )
    if unknown:
        text += (
            f" Unknown for {', '.join(unknown)}: their records were made before the "
            "pipeline recorded load averages."
        )
    return text


def _table1(records: Records) -> str:
    lines = [
        table(table1_sizes.table1(records), decimals=2),
        "Ours: encoder parameters of the presets (closed form, `mbert_lib.anatomy`), "
        "without MLM/NSP heads; the paper counts whole models.",
    ]
    sizes = table1_sizes.run_sizes(records)
    if sizes is not None:
        lines += [
            "The reduced-size models this run trained (encoders as built):",
            table(sizes, decimals=2),
        ]
    return "\n\n".join(lines)


def _transfer(records: Records, frame: pd.DataFrame | None, steps: str, finding: str) -> str:
    if frame is None:
        return not_run(steps)
    teacher = (result(records, "teacher") or {}).get("eval") or {}
    reference = (
        f"The teacher, for reference: held-out MLM accuracy "
        f"{100 * teacher['mlm_accuracy']:.2f}%, perplexity {teacher['perplexity']:.1f}."
        if {"mlm_accuracy", "perplexity"} <= set(teacher)
        else ""
    )
    seeded = frame["ours, seeds: MLM acc mean (%)"].notna().any()
    if seeded:
        order = (
            tables8_9_transfer.ranking(frame, "ours, seeds: MLM acc mean (%)") or "no numbers yet"
        )
        ours = (
            f"Ours, by held-out MLM accuracy averaged over the pre-training seeds (a gap "
            f"smaller than about two seed standard deviations is seed-to-seed noise): "
            f"{order}"
        )
    else:
        order = tables8_9_transfer.ranking(frame) or "no numbers yet"
        ours = (
            f"Ours, by held-out MLM accuracy (one run each; differences within about two "
            f"standard errors are measurement noise, and seed-to-seed spread comes on top: "
            f"`--steps distill_seeds,report` adds seeds): {order}"
        )
    return "\n\n".join(
        [
            table(frame, decimals=2) + ("\n\n" + reference if reference else ""),
            f"Paper: {finding}. {ours}. The paper's columns are GLUE dev scores of full-size "
            "models (MNLI-m confirmed from its tables, SST-2 ≈: recalled); ours are held-out "
            "MLM/NSP metrics of the reduced-size students and their fine-tuned dev accuracy "
            "(the finetune step's "
            "seeds of the seed-0 student; over the pre-training seeds, one fine-tuning run each).",
        ]
    )


def _findings(records: Records) -> str:
    seeds = result(records, "distill_seeds")
    frame = tables8_9_transfer.findings_table((seeds or {}).get("rows", {}))
    if frame is None:
        return not_run("distill_seeds (optional: `--steps distill_seeds,report`)")
    n = sorted({len(e["seeds"]) for e in seeds["rows"].values()})
    return "\n\n".join(
        [
            f"Each paper finding as differences of rows paired by pre-training seed over "
            f"{'/'.join(map(str, n))} seeds (`mbert_lib/tables/tables8_9_transfer.py`, "
            "`mbert_lib/paired.py`): ours in percentage points with its standard error and "
            "95 % confidence interval; a comparison *beats* zero when the interval lies above "
            "it, and a finding is reproduced when all of its deciding comparisons do. Our +PD "
            "is decided against the row above it (no transfer with the copied embedding and "
            "MLM head), so each gain is that of one change; the paper's pairing (+PD against "
            "no transfer, which also gains the copy) is shown beside it, `decides` False. The "
            "paper's column compares its own rows.",
            table(frame, decimals=2),
        ]
    )


def _transfer_mechanism(records: Records) -> str:
    summary = result(records, "transfer")
    if summary is None:
        return not_run("transfer")
    frame = pd.DataFrame(summary["layers"]).set_index("layer")
    frame["max prob / uniform"] = frame["max_prob_after"] / frame["max_prob_uniform"]
    if "max_prob_teacher" in frame:  # records made before the teacher's sharpness was kept
        frame["teacher's / uniform"] = frame["max_prob_teacher"] / frame["max_prob_uniform"]
    lines = [
        f"Each PKT student layer around its own stage, on one held-out batch "
        f"(`{summary['path'].rsplit('/', 2)[-2]}/transfer.json`): attention KL (teacher ‖ "
        "student), the plain feature MSE of eq. (1), the per-token feature spread, and "
        "the mean largest attention probability after the stage against uniform "
        "attention (and the teacher layer's own).",
        table(frame, decimals=4),
    ]
    ablation = summary.get("ablation_at_kl")
    if ablation:
        with_at, without = (ablation[k] for k in ("with_at", "without_at"))
        ratio = (
            f"{without / with_at:.2f}x"
            if with_at and without is not None
            else "no ratio (a KL is undefined)"
        )
        shown = ["undefined" if v is None else f"{v:.4f}" for v in (with_at, without)]
        lines.append(
            f"Final attention KL, mean over layers: {shown[0]} with AT (pkt), "
            f"{shown[1]} without (ablation_pd_fmt): {ratio}."
        )
    aims = ", ".join(f"{k} {'met' if v else 'NOT met'}" for k, v in summary["targets"].items())
    lines.append(
        f"Aims (AT and MSE at least halved in each stage, attention after it at least "
        f"3x uniform, spread toward the teacher's, no-AT KL at least 2x): {aims}."
    )
    return "\n\n".join(lines)


def _finetune(records: Records, figure: str | None) -> str:
    finetune = result(records, "finetune")
    frame = sst2_finetuning.sst2_table(records)
    if frame is None:
        return not_run("finetune")

    task = finetune["task"]
    name = (
        "GLUE SST-2 dev"
        if task == "sst2"
        else f"the offline stand-in task `{task}` (NOT SST-2: no GLUE data was given)"
    )
    lines = [
        f"Task: {name}; source {finetune.get('source')}.",
        table(frame, decimals=1),
        "Aim: " + aim_check(finetune)["text"] + ".",
    ]
    if figure:
        lines.append(f"![fine-tuning comparison]({figure})")
    return "\n\n".join(lines)


@dataclasses.dataclass(frozen=True)
class ReportRun:
    """The run a report describes, as the report names it.

    recipe: its recipe; budget_minutes: the recipe's time budget; command_line: the
    command that made the report; source: how the report names the run directory (None:
    `write_report` names it as given); steps: the steps a complete run has, in order
    (those without a record are listed); optional: steps a full run leaves out (shown,
    not counted against the budget).
    """

    recipe: str
    budget_minutes: float
    command_line: str
    source: str | None = None
    steps: Sequence[str] = ()
    optional: Sequence[str] = ()


def build_markdown(
    records: Records,
    machine: Mapping,
    report_run: ReportRun,
    figures: Mapping[str, str | None] = {},
) -> str:
    """The whole report of `report_run`. `figures`: FIGURES key -> link (relative to the
    file) or None."""
    recipe, budget_minutes = report_run.recipe, report_run.budget_minutes
    cores = machine.get("cores") or os.cpu_count() or 1
    body = {
        "Payoff": payoff_section(records, figures),
        "Machine": _machine(machine),
        "Data and seeds": _data(records),
        "Wall time": _wall_time(
            records,
            cores,
            budget_minutes,
            figures.get("step_times"),
            report_run.steps,
            report_run.optional,
        ),
        "Table 1": _table1(records),
        "Table 8": _transfer(
            records, tables8_9_transfer.table8(records), "pkt/jkt/akt", paper.TABLE8_FINDING
        ),
        "Table 9": _transfer(
            records, tables8_9_transfer.table9(records), "ablation_*", paper.TABLE9_FINDING
        ),
        "Findings": _findings(records),
        "Transfer": _transfer_mechanism(records),
        "Fine-tuning": _finetune(records, figures.get("finetune")),
        "Table 6": deployment.table6_section(records),
        "Table 7": deployment.table7_section(records),
        "Latency and size ratios": deployment.ratios_section(records),
    }
    titles = {
        "Payoff": "Does distillation pay off? (not in the paper)",
        "Wall time": "Wall time per step",
        "Table 1": "Table 1: model sizes",
        "Table 8": "Table 8: knowledge-transfer strategies (AKT, JKT, PKT)",
        "Table 9": "Table 9: which transfer objective helps",
        "Findings": "Tables 8 and 9: the paper's findings over pre-training seeds",
        "Transfer": "Does each transfer objective do its job?",
        "Fine-tuning": "Fine-tuning: teacher, students, baselines",
        "Table 6": "Table 6: accuracy per TFLite precision",
        "Table 7": "Table 7: NoNorm and relu, latency",
        "Latency and size ratios": 'Latency and size ratios: "4.3× smaller, 5.5× faster"',
    }
    head = [
        f"# MobileBERT, step by step: reproduction report (`{recipe}` recipe)",
        f"Made by `{report_run.command_line}` on {time.strftime('%Y-%m-%d %H:%M:%S')}. Every "
        f"number of ours is read from the step records under `{report_run.source}`; the "
        "paper's come from `mbert_lib/paper.py` (≈: not confirmed from the paper's own table).",
    ]
    parts = [f"## {titles.get(name, name)}\n\n{body[name]}" for name in SECTIONS]
    return "\n\n".join(head + parts) + "\n"


def write_figures(
    records: Records, directory: Path, budget_minutes: float, recipe: str
) -> dict[str, Path]:
    """Draws the figures whose steps have run into `directory`; FIGURES key -> path."""
    out = {}
    if records:
        times = run.wall_time_table(records, os.cpu_count() or 1)
        out["step_times"] = directory / FIGURES["step_times"]
        plt.close(
            plot_step_times(
                times,
                budget_minutes,
                f"`{recipe}` run: wall time (not in the paper)",
                out["step_times"],
            )
        )
    payoff = result(records, "payoff")
    if payoff and payoff["label_budget"]:
        out["label_budget"] = directory / FIGURES["label_budget"]
        plt.close(
            plot_label_budget(
                payoff,
                "SST-2 dev accuracy by label budget, paired seeds (not in the paper)",
                out["label_budget"],
            )
        )
    if payoff:
        out["attention"] = directory / FIGURES["attention"]
        plt.close(
            plot_attention_recipe(
                payoff,
                "Attention transfer through the recipe (not in the paper)",
                out["attention"],
            )
        )
    finetune = result(records, "finetune")
    if finetune and any(e.get("status") == "done" for e in finetune["models"].values()):
        labels = {m: label for m, (label, _) in sst2_finetuning.SST2_MODELS.items()}
        line = (
            ("paper: MobileBERT, SST-2 GLUE test", paper.GLUE_TEST_MOBILEBERT["SST-2"])
            if finetune["task"] == "sst2"
            else None
        )
        out["finetune"] = directory / FIGURES["finetune"]
        plt.close(plot_finetune_bars(finetune, labels, line, out["finetune"]))
    return out


def write_report(
    out_dir: str | os.PathLike,
    report_run: ReportRun,
    *,
    figures_dir: str | os.PathLike,
    report_path: str | os.PathLike,
    exclude=("report",),
) -> dict:
    """Reads the records under `out_dir` (the run's steps, then its optional ones, first;
    `exclude` left out), draws the figures into `figures_dir` and writes `report_path`
    (figure links relative to it). Returns {"path", "figures", "sections"}."""

    steps, optional = report_run.steps, report_run.optional
    records = load_records(out_dir, order=[*steps, *optional], exclude=exclude)
    figures = write_figures(
        records, Path(figures_dir), report_run.budget_minutes, report_run.recipe
    )
    report_path = Path(report_path)
    links = {k: os.path.relpath(p, report_path.parent) for k, p in figures.items()}
    shown = dataclasses.replace(
        report_run,
        source=report_run.source or str(out_dir),
        steps=[name for name in steps if name not in exclude],
    )
    text = build_markdown(records, machine_info(), shown, figures=links)
    atomic.write_text(report_path, text)
    return {
        "path": str(report_path),
        "figures": [str(p) for p in figures.values()],
        "sections": section_status(text),
    }


def section_status(text: str) -> dict[str, str]:
    """{section title: "not run" or "ok"} of a report's text."""
    status = {}
    for part in text.split("\n## ")[1:]:
        title, _, body = part.partition("\n")
        status[title.strip()] = "not run" if body.strip().startswith("_not run") else "ok"
    return status
