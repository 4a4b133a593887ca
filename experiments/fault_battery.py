"""A careless user's battery: bad inputs and faults at the command line, each classified.

    python experiments/fault_battery.py [--only NAME,...] [--out results/fault_battery.json]

Every case runs `python -m mbert_lib ...` in a fresh directory (a tiny
synthetic model is pre-trained once for the cases that need one) and is
classified from what the process did:

    clean        refused with exit status 2, one message naming the thing, no
                 traceback, nothing left behind (where the case says what to look
                 for); or, for a case that should succeed, exit 0 and its check
    unclear      refused, but with leftovers or without the expected words
    wrong        exit 0 where it should have refused, or its check failed
    traceback    a Python traceback (exit 1)
    hang         still running after the timeout

The JSON lists every case (command, exit status, class, the message's last
line) and the counts. The unit tests hold the same cases as assertions
(tests/test_cli_faults*.py, test_run_guards.py, ...); this script is the
whole battery in one table, rerun after each round of fixes.
"""

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mbert_lib.train.local_cluster import tf_config

ROOT = Path(__file__).resolve().parents[1]
SMOKE = "experiments/pretrain_synthetic_smoke.yaml"  # the cases run in the repository root
DISTILL = "experiments/distill_synthetic_smoke.yaml"
TINY = (
    "trainer.train_steps=3,trainer.checkpoint_interval=1,trainer.eval_steps=1,"
    "trainer.learning_rate.warmup_steps=1"
)


@dataclass
class Case:
    name: str
    argv: list[str]  # "{tmp}" and "{model}" are filled in
    words: str = ""  # the refusal must contain this
    expect: str = "refuse"  # or "accept"
    setup: Callable[[Path], None] | None = None
    absent: list[str] = field(default_factory=list)  # paths (under tmp) a refusal must not leave
    env: dict[str, str] = field(default_factory=dict)
    check: Callable[[Path, str], bool] | None = None  # accept cases: (tmp, output) -> ok
    timeout: float = 300


def pretrain(model_dir: str, overrides: str = "") -> list[str]:
    return [
        "pretrain",
        "--config_file",
        SMOKE,
        "--model_dir",
        model_dir,
        "--no_progress",
        "--params_override",
        TINY + ("," + overrides if overrides else ""),
    ]


def write(path: str, content: bytes | str) -> Callable[[Path], None]:
    def setup(tmp: Path) -> None:
        target = tmp / path
        target.parent.mkdir(parents=True, exist_ok=True)
        (target.write_bytes if isinstance(content, bytes) else target.write_text)(content)

    return setup


def copy_model(name: str, damage: Callable[[Path], None] | None = None):
    def setup(tmp: Path) -> None:
        shutil.copytree(tmp.parent / "model", tmp / name)
        if damage:
            damage(tmp / name)

    return setup


def truncate_index(model: Path) -> None:
    latest = sorted(model.glob("checkpoints/ckpt-*.index"))[-1]
    latest.write_bytes(latest.read_bytes()[:20])


def two_workers(index: int) -> dict[str, str]:
    """TF_CONFIG for task `index` (inside it or not) of a two-worker cluster nobody listens on."""
    config = json.loads(tf_config([1, 2], 0))
    config["task"]["index"] = index
    return {"TF_CONFIG": json.dumps(config)}


def tflite(*flags: str, checkpoint: str = "{model}") -> list[str]:
    return ["export", "tflite", "--checkpoint", checkpoint, *flags, "--output", "{tmp}/o.tflite"]


def distill(teacher: str, *flags: str) -> list[str]:
    return [
        "distill",
        "--config_file",
        DISTILL,
        "--teacher_dir",
        teacher,
        "--model_dir",
        "{tmp}/s",
        *flags,
    ]


def finetune(task: str, *flags: str, init: str = "{model}") -> list[str]:
    return ["finetune", "--task", task, "--init_checkpoint", init, "--model_dir", "{tmp}/f", *flags]


MW = "runtime.distribution_strategy=multi_worker_mirrored"
M = "{model}"
CASES = [
    # --- settings refused at config time
    Case(
        "lr_inf",
        pretrain("{tmp}/r", "trainer.learning_rate.peak=.inf"),
        "must be a finite",
        absent=["r"],
    ),
    Case(
        "lr_nan",
        pretrain("{tmp}/r", "trainer.learning_rate.peak=.nan"),
        "must be a finite",
        absent=["r"],
    ),
    Case(
        "epsilon_0",
        pretrain("{tmp}/r", "trainer.optimizer.epsilon=0"),
        "epsilon must be > 0",
        absent=["r"],
    ),
    Case(
        "weight_decay_nan",
        pretrain("{tmp}/r", "trainer.optimizer.weight_decay_rate=.nan"),
        "weight_decay_rate",
        absent=["r"],
    ),
    Case(
        "train_steps_0", pretrain("{tmp}/r", "trainer.train_steps=0"), "train_steps", absent=["r"]
    ),
    Case("seed_negative", pretrain("{tmp}/r", "trainer.seed=-1"), "trainer.seed", absent=["r"]),
    Case(
        "vocab_huge",
        pretrain("{tmp}/r", "model.overrides.vocab_size=400000000,data.vocab_size=400000000"),
        "memory",
        absent=["r"],
    ),
    Case("batch_huge", pretrain("{tmp}/r", "trainer.batch_size=50000000"), "memory", absent=["r"]),
    Case(
        "unknown_key", pretrain("{tmp}/r", "trainer.batchsize=8"), "trainer.batchsize", absent=["r"]
    ),
    Case(
        "bad_strategy",
        pretrain("{tmp}/r", "runtime.distribution_strategy=cluster"),
        "runtime.distribution_strategy",
        absent=["r"],
    ),
    Case(
        "no_tpu",
        pretrain("{tmp}/r", "runtime.distribution_strategy=tpu"),
        "no TPU found",
        absent=["r"],
    ),
    Case(
        "empty_yaml",
        ["pretrain", "--config_file", "{tmp}/e.yaml", "--model_dir", "{tmp}/r"],
        "empty",
        setup=write("e.yaml", ""),
        absent=["r"],
    ),
    Case(
        "yaml_list",
        ["pretrain", "--config_file", "{tmp}/e.yaml", "--model_dir", "{tmp}/r"],
        "e.yaml",
        setup=write("e.yaml", "- 1\n- 2\n"),
        absent=["r"],
    ),
    Case(
        "yaml_missing",
        ["pretrain", "--config_file", "{tmp}/none.yaml", "--model_dir", "{tmp}/r"],
        "none.yaml",
        absent=["r"],
    ),
    Case("model_dir_is_file", pretrain("{tmp}/f"), "is a file", setup=write("f", "x")),
    # --- multi-worker settings
    Case(
        "mw_batch_not_multiple",
        pretrain("{tmp}/r", f"{MW},trainer.batch_size=15"),
        "must be a multiple of the number of workers",
        env=two_workers(0),
        absent=["r"],
        timeout=120,
    ),
    Case(
        "mw_tf_config_garbled",
        pretrain("{tmp}/r", MW),
        "TF_CONFIG",
        env={"TF_CONFIG": "{not json"},
        absent=["r"],
        timeout=120,
    ),
    Case(
        "mw_task_outside_cluster",
        pretrain("{tmp}/r", MW),
        "TF_CONFIG",
        env=two_workers(5),
        absent=["r"],
        timeout=120,
    ),
    # --- resuming
    Case(
        "resume_index_missing",
        pretrain("{tmp}/m", "trainer.train_steps=4"),
        expect="accept",
        setup=copy_model(
            "m",
            lambda m: (
                (m / "checkpoints/checkpoint").unlink() or (m / "training_done.json").unlink()
            ),
        ),
        check=lambda tmp, out: "read the" in out and "on disk" in out and "at step 3" in out,
    ),
    Case(
        "resume_latest_damaged",
        pretrain("{tmp}/m", "trainer.train_steps=4"),
        expect="accept",
        setup=copy_model("m", lambda m: truncate_index(m) or (m / "training_done.json").unlink()),
        check=lambda tmp, out: "trying the one before" in out and "at step 2" in out,
    ),
    Case(
        "longer_run_says_schedule",
        pretrain("{tmp}/m", "trainer.train_steps=5"),
        expect="accept",
        setup=copy_model("m"),
        check=lambda tmp, out: "learning-rate schedule" in out,
    ),
    Case(
        "other_settings_finished",
        pretrain("{tmp}/m", "trainer.learning_rate.peak=0.5"),
        "finished run of other settings",
        setup=copy_model("m"),
    ),
    # --- distillation
    Case(
        "teacher_missing",
        distill("{tmp}/none"),
        "none",
        absent=["s"],
    ),
    Case(
        "teacher_wrong_shape",
        distill(M, "--params_override", "teacher.overrides.num_hidden_layers=3"),
        "num_hidden_layers",
        absent=["s"],
    ),
    # --- exports
    Case(
        "tflite_calibration_npy",
        tflite("--precision", "int8", "--calibration", "{tmp}/x.npy"),
        ".npz",
        setup=write("x.npy", b"\x93NUMPY"),
        absent=["o.tflite"],
    ),
    Case(
        "tflite_calibration_corrupt",
        tflite("--precision", "int8", "--calibration", "{tmp}/x.npz"),
        "x.npz",
        setup=write("x.npz", b"PK\x03\x04garbage"),
        absent=["o.tflite"],
    ),
    Case(
        "tflite_mask_penalty_nan",
        tflite("--precision", "int8", "--int8_mask_penalty", "nan"),
        "--int8_mask_penalty",
        absent=["o.tflite"],
    ),
    Case(
        "tflite_mask_penalty_inf",
        tflite("--precision", "int8", "--int8_mask_penalty", "inf"),
        "--int8_mask_penalty",
        absent=["o.tflite"],
    ),
    Case(
        "tflite_seq_too_long",
        tflite("--precision", "fp32", "--seq_length", "100000"),
        "100000",
        absent=["o.tflite"],
    ),
    Case(
        "tflite_checkpoint_missing",
        tflite("--precision", "fp32", checkpoint="{tmp}/none"),
        "none",
        absent=["o.tflite"],
    ),
    Case(
        "savedmodel_seq_too_long",
        [
            "export",
            "savedmodel",
            "--checkpoint",
            M,
            "--seq_length",
            "100000",
            "--export_path",
            "{tmp}/sm",
        ],
        "100000",
        absent=["sm"],
    ),
    Case(
        "hf_export_damaged",
        ["export", "hf", "--checkpoint", "{tmp}/m", "--export_dir", "{tmp}/hf"],
        "damaged",
        setup=copy_model("m", lambda m: (m / "model.ckpt.index").write_bytes(b"xx")),
        absent=["hf"],
    ),
    # --- conversions
    Case(
        "convert_hf_garbage",
        ["convert", "hf", "--model_dir", "{tmp}/hf", "--tf2_checkpoint_path", "{tmp}/out"],
        "model.safetensors",
        setup=lambda t: (
            write("hf/model.safetensors", b"garbage")(t),
            write("hf/config.json", "{}")(t),
        ),
        absent=["out"],
    ),
    Case(
        "convert_hf_missing",
        ["convert", "hf", "--model_dir", "{tmp}/none", "--tf2_checkpoint_path", "{tmp}/out"],
        "none",
        absent=["out"],
    ),
    # --- benchmarks
    Case(
        "bench_json_directory",
        ["bench", "latency", "--json", "{tmp}/", "--models", "tiny"],
        "--json",
    ),
    Case(
        "bench_json_unwritable",
        ["bench", "latency", "--json", "/proc/x.json", "--models", "tiny"],
        "/proc/x.json",
    ),
    Case("bench_batch_negative", ["bench", "pretrain", "--batch_size", "-4"], "--batch_size"),
    Case(
        "bench_seq_too_long",
        ["bench", "pretrain", "--seq_length", "100000"],
        "max_position_embeddings",
    ),
    # --- fine-tuning
    Case(
        "finetune_task_unknown",
        finetune("mnli2"),
        "mnli2",
        absent=["f"],
    ),
    Case(
        "finetune_init_missing",
        finetune("builtin_shuffled", init="{tmp}/none"),
        "none",
        absent=["f"],
    ),
    Case(
        "finetune_grid_bad_point",
        finetune("builtin_shuffled", "--grid", "trainer.batch_size=[8,-1]"),
        "trainer.batch_size",
        absent=["f"],
    ),
    Case(
        "finetune_data_dir_missing",
        finetune("sst2", "--source", "local", "--data-dir", "{tmp}/none"),
        "none",
        absent=["f"],
    ),
    # --- the pipeline and bundles
    Case(
        "reproduce_recipe_unknown",
        ["reproduce", "--recipe", "huge", "--out", "{tmp}/run"],
        "huge",
        absent=["run"],
    ),
    Case(
        "reproduce_step_unknown",
        ["reproduce", "--recipe", "smoke", "--steps", "teach", "--out", "{tmp}/run"],
        "teach",
        absent=["run"],
    ),
    Case(
        "reproduce_out_is_file",
        ["reproduce", "--recipe", "smoke", "--out", "{tmp}/f"],
        "is a file",
        setup=write("f", "x"),
    ),
    Case(
        "reproduce_data_dir_missing",
        ["reproduce", "--recipe", "smoke", "--data-dir", "{tmp}/none", "--out", "{tmp}/run"],
        "none",
        absent=["run"],
    ),
    Case(
        "bundle_missing",
        ["bundle", "install", "--bundle", "{tmp}/none.tar.xz", "--out", "{tmp}/run"],
        "none.tar.xz",
        absent=["run"],
    ),
    Case(
        "bundle_corrupt",
        ["bundle", "install", "--bundle", "{tmp}/b.tar.xz", "--out", "{tmp}/run"],
        "b.tar.xz",
        setup=write("b.tar.xz", b"\xfd7zXZ\x00garbage"),
        absent=["run"],
    ),
]


def run_case(case: Case, tmp: Path, model: Path) -> dict:
    if case.setup:
        case.setup(tmp)
    argv = [a.replace("{tmp}", str(tmp)).replace("{model}", str(model)) for a in case.argv]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **case.env}
    start = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "mbert_lib", *argv],
            capture_output=True,
            text=True,
            env=env,
            timeout=case.timeout,
            cwd=ROOT,
        )
        code, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as e:
        code, out, err = None, str(e.stdout or ""), str(e.stderr or "")
    lines = [
        ln
        for ln in err.splitlines()
        if ln.strip() and not ln.startswith(("W0000", "I0000", "E0000", "WARNING: All log"))
    ]
    left = [p for p in case.absent if (tmp / p).exists()]
    if code is None:
        verdict = "hang"
    elif "Traceback (most recent call last)" in err:
        verdict = "traceback"
    elif case.expect == "accept":
        verdict = (
            "clean" if code == 0 and (case.check is None or case.check(tmp, out + err)) else "wrong"
        )
    elif code == 0:
        verdict = "wrong"
    else:
        verdict = "clean" if code == 2 and case.words in err and not left else "unclear"
    return {
        "case": case.name,
        "command": "python -m mbert_lib "
        + " ".join(argv).replace(str(tmp), "TMP").replace(str(model), "MODEL"),
        "env": case.env,
        "expect": case.expect,
        "exit": code,
        "class": verdict,
        "message": (lines[-1] if lines else "")[:400]
        .replace(str(tmp), "TMP")
        .replace(str(model), "MODEL"),
        "left_behind": left,
        "seconds": round(time.monotonic() - start, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated case names")
    parser.add_argument("--out", default=str(ROOT / "results/fault_battery.json"))
    args = parser.parse_args()
    names = set(filter(None, args.only.split(",")))
    cases = [c for c in CASES if not names or c.name in names]
    if names - {c.name for c in cases}:
        parser.error(f"unknown cases: {sorted(names - {c.name for c in cases})}")
    rows = []
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        model = work / "model"
        subprocess.run(
            [sys.executable, "-m", "mbert_lib", *pretrain(str(model))],
            check=True,
            capture_output=True,
            cwd=ROOT,
        )
        special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        words = special + [f"w{i}" for i in range(64 - len(special))]
        (model / "vocab.txt").write_text("\n".join(words) + "\n")  # the synthetic ids' tokenizer
        for case in cases:
            tmp = work / case.name
            tmp.mkdir()
            rows.append(run_case(case, tmp, model))
            print(f"{rows[-1]['class']:9s} {case.name}: {rows[-1]['message'][:150]}", flush=True)
    counts = collections.Counter(r["class"] for r in rows)
    record = {
        "command": "python experiments/fault_battery.py"
        + (f" --only {args.only}" if names else ""),
        "tried": len(rows),
        "counts": {k: counts.get(k, 0) for k in ("clean", "unclear", "wrong", "traceback", "hang")},
        "cases": rows,
    }
    Path(args.out).write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(record["counts"]))


if __name__ == "__main__":
    main()
