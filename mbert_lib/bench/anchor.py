"""tensorflow/models' BertDistillationTask as the same-run anchor of `bench distill`.

A speed-up only means something against a baseline measured on the same
machine at the same time. The anchor, `experiments/tf_models_anchor/bench_distill.py`,
runs in its own venv (tf-models-official pins its own TensorFlow; see the
README.md beside it) as a subprocess, and writes one JSON record per variant
(layer_wise_first, layer_wise_last, pd) with its median step time and tokens/s.
The bench alternates rounds of ours and rounds of the anchor, and
`compare_rounds` reports per variant the ratio ours / anchor of each round and
the median of those ratios.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

ANCHOR_SCRIPT = (
    Path(__file__).resolve().parents[2] / "experiments" / "tf_models_anchor" / "bench_distill.py"
)
# Fields that must agree between ours and the anchor: the same problem was measured
# (same shapes, and encoders with the same number of weights).
SAME_PROBLEM_FIELDS = (
    "seq_length",
    "batch_size",
    "max_predictions_per_seq",
    "teacher_encoder_params",
    "student_encoder_params",
)
REQUIRED_FIELDS = (
    "variant",
    "median_step_ms",
    "tokens_per_second",
    "repeats",
    "tf_models_version",
    "tensorflow_version",
    *SAME_PROBLEM_FIELDS,
)
STDERR_TAIL_LINES = 30


class AnchorError(ValueError):
    """The anchor cannot run, failed, or returned records that cannot be compared."""


def check_anchor(python: str | os.PathLike, script: str | os.PathLike = ANCHOR_SCRIPT) -> None:
    """Raises AnchorError unless `python` is an executable file and `script` exists."""
    python, script = Path(python), Path(script)
    if not python.is_file() or not os.access(python, os.X_OK):
        raise AnchorError(
            f"--anchor_python {python}: no executable Python there; create the anchor venv "
            f"as {ANCHOR_SCRIPT.parent / 'README.md'} describes (e.g. /work/tfm_venv/bin/python)"
        )
    if not script.is_file():
        raise AnchorError(
            f"anchor script {script} not found (expected in the repository at "
            "experiments/tf_models_anchor/bench_distill.py)"
        )


def parse_anchor_records(text: str, source: str = "anchor output") -> dict[str, dict]:
    """{variant: record} from the anchor's JSON list; names what is wrong otherwise."""
    try:
        records = json.loads(text)
    except json.JSONDecodeError as e:
        raise AnchorError(f"{source}: not JSON ({e})") from None
    if not isinstance(records, list) or not records:
        raise AnchorError(
            f"{source}: expected a non-empty JSON list of records, got {type(records).__name__}"
        )
    out: dict[str, dict] = {}
    for i, record in enumerate(records):
        if not isinstance(record, dict):
            raise AnchorError(f"{source}: record {i} is a {type(record).__name__}, not an object")
        missing = [f for f in REQUIRED_FIELDS if f not in record]
        if missing:
            raise AnchorError(f"{source}: record {i} lacks field(s) {missing}")
        variant, tps = record["variant"], record["tokens_per_second"]
        if variant in out:
            raise AnchorError(f"{source}: variant {variant!r} appears twice")
        if (
            isinstance(tps, bool)
            or not isinstance(tps, (int, float))
            or not math.isfinite(tps)
            or tps <= 0
        ):
            raise AnchorError(
                f"{source}: record {variant!r}: tokens_per_second must be a "
                f"positive number, got {tps!r}"
            )
        out[variant] = record
    return out


def run_anchor(
    python: str | os.PathLike,
    config: dict,
    repeats: int,
    warmup: int,
    script: str | os.PathLike = ANCHOR_SCRIPT,
    timeout: float = 3600.0,
) -> dict[str, dict]:
    """Runs the anchor once (its own warm-up and `repeats` timed steps per variant).

    `config`: {"teacher", "student" (bert_config.json dicts), "seq_length",
    "batch_size", "max_predictions_per_seq"}. Returns {variant: record}.
    """
    check_anchor(python, script)
    with tempfile.TemporaryDirectory(prefix="mbert_anchor_") as tmp:
        config_path, out_path = Path(tmp) / "config.json", Path(tmp) / "records.json"
        config_path.write_text(json.dumps(config), encoding="utf-8")
        command = [
            str(python),
            str(script),
            "--config",
            str(config_path),
            "--repeats",
            str(repeats),
            "--warmup",
            str(warmup),
            "--json",
            str(out_path),
        ]
        run_anchor_command(command, out_path, timeout)
        return parse_anchor_records(out_path.read_text(encoding="utf-8"), source=str(script))


def run_anchor_command(command: list[str], produced: Path, timeout: float) -> None:
    """Runs an anchor script (without this venv's PYTHONPATH / PYTHONHOME); raises
    AnchorError, naming the command and its stderr's tail, unless it exits 0 within
    `timeout` seconds and `produced` exists."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, env=env, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise AnchorError(
            f"anchor did not finish in {timeout:.0f} s: {' '.join(command)}"
        ) from None
    if done.returncode != 0 or not Path(produced).exists():
        tail = "\n".join(done.stderr.splitlines()[-STDERR_TAIL_LINES:])
        raise AnchorError(
            f"anchor failed (exit status {done.returncode}): "
            f"{' '.join(command)}\n--- its stderr, last lines ---\n{tail}"
        )


def compare_rounds(ours: list[dict[str, dict]], anchor: list[dict[str, dict]]) -> list[dict]:
    """Per variant: tokens/s of each round (ours, anchor), their ratios, the median ratio.

    `ours[r]` and `anchor[r]` are round r's {variant: record}. The ratio of a
    round is ours / anchor tokens/s in that round; `median_ratio` is the
    median over rounds of those ratios (not the ratio of the medians).
    """
    if not ours or len(ours) != len(anchor):
        raise AnchorError(
            f"need the same number (>= 1) of rounds of ours and of the anchor, "
            f"got {len(ours)} and {len(anchor)}"
        )
    variants = list(ours[0])
    out = []
    for variant in variants:
        rows = []
        for r, (mine, theirs) in enumerate(zip(ours, anchor)):
            if variant not in mine or variant not in theirs:
                raise AnchorError(
                    f"round {r}: variant {variant!r} missing from "
                    f"{'ours' if variant not in mine else 'the anchor'}"
                )
            for field in SAME_PROBLEM_FIELDS:
                a, b = mine[variant].get(field), theirs[variant].get(field)
                if a is None or a != b:
                    raise AnchorError(
                        f"round {r}, {variant}: {field} differs (ours {a}, "
                        f"anchor {b}): not the same problem"
                    )
            rows.append((mine[variant]["tokens_per_second"], theirs[variant]["tokens_per_second"]))
        ratios = [a / b for a, b in rows]
        first = anchor[0][variant]
        out.append(
            {
                "variant": variant,
                "rounds": len(rows),
                "ours_tokens_per_second": [a for a, _ in rows],
                "anchor_tokens_per_second": [b for _, b in rows],
                "ratio_per_round": ratios,
                "median_ratio": statistics.median(ratios),
                "ours_median_tokens_per_second": statistics.median(a for a, _ in rows),
                "anchor_median_tokens_per_second": statistics.median(b for _, b in rows),
                "tf_models_version": first["tf_models_version"],
                "tensorflow_version": first["tensorflow_version"],
            }
        )
    return out
