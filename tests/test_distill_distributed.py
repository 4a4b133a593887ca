"""A distillation step under MirroredStrategy over two logical CPUs equals the one-device step.

TensorFlow fixes its logical devices when it first touches them, so the
two-CPU run happens in a fresh subprocess.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # trains, converts or runs a pipeline: `-m "not slow"` skips it

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import json
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import tf_keras
import mbert_lib
from mbert_lib.distill.objective import DistillationObjective
from mbert_lib.distill.plan import plan_stages, stage_variables
from mbert_lib.distill.step import stage_step
from mbert_lib.train.strategy import create_strategy
from tests.distill_fixtures import tiny_distill_experiment
from tests.train_fixtures import BATCH, tiny_batches

def uneven(batch):
    # The second replica's rows keep one prediction each: per-replica means would differ.
    w = batch["masked_lm_weights"]
    keep = tf.concat([tf.ones([BATCH // 2, w.shape[1]]),
                      tf.one_hot(tf.zeros([BATCH // 2], tf.int32), w.shape[1])], 0)
    return {**batch, "masked_lm_weights": w * keep}

exp = tiny_distill_experiment("distillation.strategy=auxiliary")
plan = {"layer_1": plan_stages(tiny_distill_experiment().distillation, 2)[1],
        "auxiliary": plan_stages(exp.distillation, 2)[0]}
tf_keras.utils.set_random_seed(0)
teacher_weights = mbert_lib.build_pretrainer(exp.teacher.build_config()).get_weights()
student_weights = mbert_lib.build_pretrainer(exp.student.build_config()).get_weights()

def run(strategy, stage):
    with strategy.scope():
        teacher = mbert_lib.build_pretrainer(exp.teacher.build_config())
        teacher.set_weights(teacher_weights)
        teacher.trainable = False
        student = mbert_lib.build_pretrainer(exp.student.build_config())
        student.set_weights(student_weights)
        objective = DistillationObjective(teacher, student, stage, (0, 1),
                                          exp.distillation.layer_wise, exp.distillation.pretrain)
        step = stage_step(objective, stage_variables(student, stage), exp.trainer.optimizer)
    iterator = iter(tiny_batches(4 * BATCH).map(uneven))
    return [{k: float(v) for k, v in step.train_step(iterator).items()} for _ in range(2)]

mirrored = create_strategy("mirrored", ["/cpu:0", "/cpu:1"])
result = {"replicas": mirrored.num_replicas_in_sync}
for name, stage in plan.items():
    result[name] = {"single": run(create_strategy("default"), stage),
                    "mirrored": run(mirrored, stage)}
print(json.dumps(result))
"""


@pytest.fixture(scope="module")
def result():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_two_replicas(result):
    assert result["replicas"] == 2


@pytest.mark.parametrize("stage", ["layer_1", "auxiliary"])
def test_mirrored_distillation_step_equals_the_single_device_step(result, stage):
    single, mirrored = result[stage]["single"][0], result[stage]["mirrored"][0]
    keys = {"loss", "fmt", "at", "fmt_mse", "fmt_mean", "fmt_var"}
    if stage == "auxiliary":
        keys |= {"mlm_loss", "kd_loss", "nsp_loss", "layer_0/at", "layer_1/fmt"}
    assert keys <= set(single)
    for key in sorted(keys | {"learning_rate"}):
        assert mirrored[key] == pytest.approx(single[key], rel=1e-5), key
    assert mirrored["grad_norm"] == pytest.approx(single["grad_norm"], rel=1e-4)
    # The second step starts from the updated weights. Under LAMB they drift apart a little:
    # gradients near Adam's ε are sensitive to summation order (tests/test_train_distributed.py).
    assert result[stage]["mirrored"][1]["loss"] == pytest.approx(
        result[stage]["single"][1]["loss"], rel=1e-3
    )
