"""MultiWorkerMirroredStrategy on a two-worker cluster on loopback (one process per worker).

Pre-training and distillation (a layer-wise stage, then PD) over two workers
end with the model a one-worker run reaches over the same global batches, to
float tolerance; only the chief leaves files; a cluster whose worker is
killed mid-run resumes from the last checkpoint when restarted and ends where
the uninterrupted run ends.

Compared: every weight except the attention key biases. Adding a constant
to every key shifts a query's scores by the same amount, which softmax
ignores, so a key bias's true gradient is zero; LAMB normalises the
float-rounding residue that is left into full-size updates, and so the key
bias drifts differently with any change of summation order (one worker or
two), without changing what the model computes.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from mbert_lib.train.checkpointing import DONE_FILE
from mbert_lib.train.local_cluster import start_workers, stop_workers, wait_workers

pytestmark = pytest.mark.slow  # trains, converts or runs a pipeline: `-m "not slow"` skips it

ROOT = Path(__file__).resolve().parents[1]
NO_DROPOUT = "hidden_dropout_prob=0.0,{m}.attention_probs_dropout_prob=0.0"
STEPS, INTERVAL = 60, 10
PRETRAIN = [
    "pretrain",
    "--config_file",
    str(ROOT / "experiments/pretrain_synthetic_smoke.yaml"),
    "--no_progress",
    "--params_override",
    f"trainer.train_steps={STEPS},trainer.checkpoint_interval={INTERVAL},"
    "trainer.eval_interval=1000,trainer.eval_steps=2,model.overrides."
    + NO_DROPOUT.format(m="model.overrides"),
]
DISTILL = [
    "distill",
    "--config_file",
    str(ROOT / "experiments/distill_synthetic_smoke.yaml"),
    "--no_progress",
    "--params_override",
    "distillation.layer_wise.steps=6,distillation.pretrain.steps=6,trainer.checkpoint_interval=3,"
    "trainer.eval_steps=2,teacher.overrides."
    + NO_DROPOUT.format(m="teacher.overrides")
    + ",student.overrides."
    + NO_DROPOUT.format(m="student.overrides"),
]
MULTI = ",runtime.distribution_strategy=multi_worker_mirrored"
TIMEOUT = 300  # seconds; a cluster that lost a worker can wait in a collective for ever


def with_override(argv: list[str], extra: str) -> list[str]:
    i = argv.index("--params_override") + 1
    return [*argv[:i], argv[i] + extra, *argv[i + 1 :]]


def logs(directory: Path) -> str:
    return "\n".join(
        f"--- {p.name}\n" + p.read_text(errors="replace")[-3000:]
        for p in sorted(directory.glob("worker_*.log"))
    )


def one_worker(argv: list[str], log_dir: Path) -> None:
    log_dir.mkdir(parents=True, exist_ok=True)
    with open(log_dir / "worker_0.log", "wb") as out:
        code = subprocess.run(
            [sys.executable, "-m", "mbert_lib", *argv], stdout=out, stderr=subprocess.STDOUT
        ).returncode
    assert code == 0, logs(log_dir)


def two_workers(argv: list[str], log_dir: Path) -> None:
    log_dir.mkdir(parents=True, exist_ok=True)
    codes = wait_workers(
        start_workers(with_override(argv, MULTI), 2, log_dir=log_dir), timeout=TIMEOUT
    )
    assert codes == [0, 0], logs(log_dir)


def weights(model_dir: Path) -> dict[str, np.ndarray]:
    reader = tf.train.load_checkpoint(str(model_dir / "model.ckpt"))
    return {
        name: reader.get_tensor(name)
        for name in reader.get_variable_to_shape_map()
        if "VARIABLE_VALUE" in name and "/key/bias/" not in name
    }


def assert_same_model(a: Path, b: Path, rtol: float) -> None:
    wa, wb = weights(a), weights(b)
    assert sorted(wa) == sorted(wb) and len(wa) > 10
    for name, value in wa.items():
        scale = max(float(np.abs(value).max()), 1e-6)
        np.testing.assert_allclose(wb[name], value, rtol=0, atol=rtol * scale, err_msg=name)


def chief_only(model_dir: Path) -> None:
    """The finished run holds the chief's files only: no worker scratch left behind."""
    assert (model_dir / DONE_FILE).is_file()
    assert not [p for p in model_dir.rglob(".worker_*")], "a worker's scratch was left"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """Pre-training on one worker (the reference and the distillation teacher)."""
    root = tmp_path_factory.mktemp("multi_worker")
    one_worker([*PRETRAIN, "--model_dir", str(root / "one")], root / "logs_one")
    return root


def test_two_worker_pretraining_equals_one_worker(runs):
    two_workers([*PRETRAIN, "--model_dir", str(runs / "two")], runs / "logs_two")
    assert_same_model(runs / "one", runs / "two", rtol=1e-4)
    chief_only(runs / "two")
    one = json.loads((runs / "one" / DONE_FILE).read_text())["eval"]
    two = json.loads((runs / "two" / DONE_FILE).read_text())["eval"]
    assert two["examples"] == one["examples"] and two["predictions"] == one["predictions"]
    assert two["mlm_loss"] == pytest.approx(one["mlm_loss"], rel=1e-4)


def test_killed_worker_cluster_resumes_from_the_last_checkpoint(runs):
    model_dir, log_dir = runs / "killed", runs / "logs_killed"
    log_dir.mkdir()
    workers = start_workers(
        with_override([*PRETRAIN, "--model_dir", str(model_dir)], MULTI), 2, log_dir=log_dir
    )
    checkpoints = model_dir / "checkpoints"
    first = [checkpoints / f"ckpt-{INTERVAL}.index"]
    first.append(checkpoints / ".worker_worker_1" / first[0].name)
    deadline = time.monotonic() + TIMEOUT
    while not all(f.exists() for f in first) and time.monotonic() < deadline:
        assert workers[0].poll() is None, logs(log_dir)
        time.sleep(0.02)
    workers[1].kill()  # the non-chief worker dies mid-run, after both saved a step ...
    time.sleep(2)
    stop_workers(workers)  # ... and the cluster is restarted
    assert not (model_dir / DONE_FILE).exists(), "the run finished before the kill"
    saved = [
        {int(p.stem.split("-")[1]) for p in directory.glob("ckpt-*.index")}
        for directory in (checkpoints, checkpoints / ".worker_worker_1")
    ]
    common = max(saved[0] & saved[1])

    two_workers([*PRETRAIN, "--model_dir", str(model_dir)], log_dir)
    chief_log = (log_dir / "worker_0.log").read_text()
    assert f"at step {common}" in chief_log and 0 < common < STEPS, chief_log[-2000:]
    assert_same_model(runs / "one", model_dir, rtol=1e-4)
    chief_only(model_dir)


def test_two_worker_distillation_equals_one_worker(runs):
    teacher = ["--teacher_dir", str(runs / "one")]
    one_worker([*DISTILL, *teacher, "--model_dir", str(runs / "student_one")], runs / "logs_s1")
    two_workers([*DISTILL, *teacher, "--model_dir", str(runs / "student_two")], runs / "logs_s2")
    done = json.loads((runs / "student_two" / DONE_FILE).read_text())
    assert [s["stage"] for s in done["stages"]] == ["00_layer_0", "01_pd"]
    assert_same_model(runs / "student_one", runs / "student_two", rtol=1e-4)
    chief_only(runs / "student_two")
    assert os.listdir(runs / "student_two" / "tensorboard")  # the chief's scalars only
