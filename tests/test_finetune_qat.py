"""Quantization-aware fine-tuning (`qat.enabled`): the int8 file computes what training
simulated, its matmuls run in int8, the float classifier stays loadable, a pruned
encoder keeps its zeros, and a model the recipe cannot quantize is refused before
anything is written."""

import collections
import os

import numpy as np
import pytest
import tf_keras

from mbert_lib.checkpoints import load_classifier, load_pretrainer, save_model_dir
from mbert_lib.compress import pruning, qat
from mbert_lib.data.tokenizer import save_tokenizer
from mbert_lib.export.interpreter import TFLiteModel
from mbert_lib.export.tflite import export_qat_tflite
from mbert_lib.finetune import trainer
from mbert_lib.finetune.data import load_task_data
from tests.finetune_fixtures import CONFIG, experiment, save_pretrained, tokenizer, write_sst2

pytestmark = pytest.mark.slow  # trains, converts or runs a pipeline: `-m "not slow"` skips it

QUIET = dict(show_progress=False, log=lambda _: None)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("qat")
    # a seeded start: from about one random start in five (unseeded, tried in separate
    # processes), 64 steps of QAT on this toy task settle on one class
    tf_keras.utils.set_random_seed(0)
    return save_pretrained(root / "pretrained"), write_sst2(root / "data")


@pytest.fixture(scope="module")
def trained(setup, tmp_path_factory):
    model_dir = str(tmp_path_factory.mktemp("qat_run"))
    run = experiment(*setup, "trainer.train_steps=64,qat.enabled=true")
    return model_dir, trainer.run_finetuning(run, model_dir, **QUIET)


def _matmul_inputs(model: TFLiteModel) -> collections.Counter:
    """{(op, input dtypes)}: how many FULLY_CONNECTED ops run on which types."""
    tensors = {t["index"]: t for t in model.interpreter.get_tensor_details()}
    return collections.Counter(
        tuple(tensors[i]["dtype"].__name__ for i in op["inputs"] if i >= 0)
        for op in model.interpreter._get_ops_details()
        if op["op_name"] == "FULLY_CONNECTED"
    )


def test_the_int8_file_computes_what_training_simulated(trained, setup, tmp_path):
    model_dir, record = trained
    assert record["qat_layers"] == len(qat.qat_targets(load_classifier(model_dir)))
    assert record["eval"]["accuracy"] >= 0.9, record["eval"]
    simulated = qat.load_qat_classifier(model_dir)
    data = load_task_data(experiment(*setup).task, tokenizer())
    features = {k: v[:16] for k, v in data.dev.features.items()}
    want = simulated(features, training=False)["logits"].numpy()
    path = tmp_path / "qat.tflite"
    export_qat_tflite(simulated, path, seq_length=12)
    model = TFLiteModel(path)
    got = model.predict(features)["logits"]
    scale = np.abs(want).max()
    assert np.abs(got - want).max() < 0.05 * scale, (np.abs(got - want).max(), scale)
    assert np.mean(np.argmax(got, -1) == np.argmax(want, -1)) >= 0.9
    kinds = _matmul_inputs(model)
    int8 = kinds[("int8", "int8")] + kinds[("int8", "int8", "int32")]
    # all but each block's attention output projection (its input is no layer's output)
    matmuls = sum(kinds.values())
    assert int8 == matmuls - CONFIG.num_hidden_layers, kinds


def test_the_float_classifier_stays_a_plain_model_and_the_file_is_smaller(trained, tmp_path):
    model_dir, _ = trained
    plain = load_classifier(model_dir)
    assert not qat.is_wrapped(plain)
    with pytest.raises(ValueError, match="carries no QAT wrappers"):
        export_qat_tflite(plain, tmp_path / "plain.tflite", seq_length=12)


@pytest.mark.parametrize(
    "field, value",
    [("hidden_act", "gelu"), ("normalization_type", "layer_norm")],
)
def test_a_model_the_recipe_cannot_quantize_is_refused_before_anything_is_written(
    setup, tmp_path, field, value
):
    init = save_pretrained(tmp_path / "teacher_like", CONFIG.replace(**{field: value}))
    model_dir = tmp_path / "run"
    run = experiment(init, setup[1], "trainer.train_steps=8,qat.enabled=true")
    with pytest.raises(ValueError, match=f"{field} of .* is '{value}'"):
        trainer.run_finetuning(run, model_dir, **QUIET)
    assert not os.path.exists(model_dir)


def test_qat_and_pruning_together_are_refused(setup):
    with pytest.raises(ValueError, match="qat.enabled must be false when prune.sparsity > 0"):
        experiment(*setup, "trainer.train_steps=8,qat.enabled=true,prune.sparsity=0.5")


def test_qat_of_a_pruned_encoder_keeps_its_zeros(setup, tmp_path):
    pretrained = load_pretrainer(setup[0])
    pruning.prune_once(pretrained, 0.5)
    zeros = {k: v for k, v in pruning.kernel_sparsity(pretrained).items()}
    init = tmp_path / "pruned"
    save_model_dir(pretrained, init, save_tokenizer=lambda d: save_tokenizer(tokenizer(), d))
    model_dir = tmp_path / "run"
    run = experiment(str(init), setup[1], "trainer.train_steps=16,qat.enabled=true")
    trainer.run_finetuning(run, model_dir, **QUIET)
    after = pruning.kernel_sparsity(load_classifier(model_dir))
    assert len(after) == len(zeros) and all(v >= 0.5 for v in after.values()), after
    dense = tmp_path / "dense_run"  # the same run from the dense encoder: no zeros appear
    trainer.run_finetuning(
        experiment(*setup, "trainer.train_steps=16,qat.enabled=true"), dense, **QUIET
    )
    assert max(pruning.kernel_sparsity(load_classifier(dense)).values()) < 0.01
