"""Model directories and checkpoints (mbert_lib.checkpoints): round trips and clear mismatch
errors."""

import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import mbert_lib  # noqa: F401  (sets TF_USE_LEGACY_KERAS before Keras loads)
from mbert_lib import build_classifier, build_encoder, build_pretrainer, checkpoints, get_preset
from mbert_lib.export.representative import random_features

CONFIG = get_preset("tiny_student").replace(num_hidden_layers=2, vocab_size=64)
FEATURES = random_features(3, 12, CONFIG.vocab_size, seed=1)


def _write(model, prefix):
    return tf.train.Checkpoint(model=model).write(str(prefix))


def _outputs(model, key):
    return model(FEATURES, training=False)[key].numpy()


def test_encoder_roundtrip_from_prefix_and_directory(tmp_path):
    tf_keras.utils.set_random_seed(1)
    encoder = build_encoder(CONFIG)
    prefix = _write(encoder, tmp_path / "enc" / "ckpt-1")
    tf_keras.utils.set_random_seed(2)  # the fresh model starts from other weights
    for path in (prefix, tmp_path / "enc"):
        loaded = checkpoints.load_model(path, "encoder", CONFIG)
        np.testing.assert_array_equal(
            _outputs(loaded, "sequence_output"), _outputs(encoder, "sequence_output")
        )


def test_directory_written_by_checkpoint_manager_gives_latest(tmp_path):
    encoder = build_encoder(CONFIG)
    root = tf.train.Checkpoint(model=encoder)
    manager = tf.train.CheckpointManager(root, tmp_path, max_to_keep=2)
    manager.save()
    encoder.embedding.norm.gamma.assign(encoder.embedding.norm.gamma * 3.0)
    manager.save()
    loaded = checkpoints.load_model(tmp_path, "encoder", CONFIG)
    np.testing.assert_array_equal(
        loaded.embedding.norm.gamma.numpy(), encoder.embedding.norm.gamma.numpy()
    )


def test_classifier_roundtrip_reads_num_classes(tmp_path):
    classifier = build_classifier(CONFIG, num_classes=3, dropout_rate=0.0)
    prefix = _write(classifier, tmp_path / "ckpt")
    loaded = checkpoints.load_model(prefix, "classifier", CONFIG)
    assert loaded.num_classes == 3
    np.testing.assert_array_equal(_outputs(loaded, "logits"), _outputs(classifier, "logits"))


@pytest.mark.parametrize(
    "build",
    [lambda: build_classifier(CONFIG, 2), lambda: build_pretrainer(CONFIG)],
    ids=["classifier", "pretrainer"],
)
def test_encoder_loads_from_a_task_model_checkpoint(tmp_path, build):
    task_model = build()
    prefix = _write(task_model, tmp_path / "ckpt")
    loaded = checkpoints.load_model(prefix, "encoder", CONFIG)
    np.testing.assert_array_equal(
        _outputs(loaded, "sequence_output"), _outputs(task_model.encoder, "sequence_output")
    )


def test_training_checkpoint_with_optimizer_loads(tmp_path):
    classifier = build_classifier(CONFIG, 2)
    optimizer = tf_keras.optimizers.Adam()
    optimizer.build(classifier.trainable_variables)
    prefix = tf.train.Checkpoint(model=classifier, optimizer=optimizer, step=tf.Variable(7)).write(
        str(tmp_path / "ckpt")
    )
    loaded = checkpoints.load_model(prefix, "classifier", CONFIG)
    np.testing.assert_array_equal(_outputs(loaded, "logits"), _outputs(classifier, "logits"))


def test_config_mismatch_names_the_variable_and_shapes(tmp_path):
    prefix = _write(build_encoder(CONFIG), tmp_path / "ckpt")
    with pytest.raises(
        checkpoints.CheckpointMismatchError,
        match=r"model/embedding/word_embeddings/embeddings  found \[64, 32\], "
        r"expected \[100, 32\]",
    ):
        checkpoints.load_model(prefix, "encoder", CONFIG.replace(vocab_size=100))


def test_layer_count_mismatch_both_ways(tmp_path):
    prefix = _write(build_encoder(CONFIG), tmp_path / "ckpt")
    with pytest.raises(checkpoints.CheckpointMismatchError, match=r"(?s)missing.*blocks/2"):
        checkpoints.load_model(prefix, "encoder", CONFIG.replace(num_hidden_layers=3))
    with pytest.raises(checkpoints.CheckpointMismatchError, match=r"(?s)unexpected.*blocks/1"):
        checkpoints.load_model(prefix, "encoder", CONFIG.replace(num_hidden_layers=1))


def test_classifier_from_encoder_checkpoint_is_refused(tmp_path):
    prefix = _write(build_encoder(CONFIG), tmp_path / "ckpt")
    with pytest.raises(
        checkpoints.CheckpointMismatchError, match="holds a encoder, not a classifier"
    ):
        checkpoints.load_model(prefix, "classifier", CONFIG)


def test_missing_checkpoint_and_foreign_checkpoint(tmp_path):
    with pytest.raises(FileNotFoundError, match="neither a directory nor a checkpoint prefix"):
        checkpoints.load_model(tmp_path / "nothing", "encoder", CONFIG)
    with pytest.raises(FileNotFoundError, match=f"{tmp_path / 'nothing'}: neither a directory"):
        checkpoints.load_config(tmp_path / "nothing")  # not "<parent>/bert_config.json"
    with pytest.raises(FileNotFoundError, match="found 0 checkpoint"):
        checkpoints.load_model(tmp_path, "encoder", CONFIG)
    foreign = tf.train.Checkpoint(net=tf.Variable([1.0])).write(str(tmp_path / "foreign"))
    with pytest.raises(checkpoints.CheckpointMismatchError, match="holds no mbert_lib model"):
        checkpoints.load_model(foreign, "encoder", CONFIG)


def test_save_model_dir_is_complete_or_absent(tmp_path):
    pretrainer = build_pretrainer(CONFIG)
    out = tmp_path / "model"
    checkpoints.save_model_dir(
        pretrainer,
        out,
        extra_files={"note.json": "{}"},
        save_tokenizer=lambda d: (tmp_path / "seen").write_text(d),
    )
    assert sorted(p.name for p in out.iterdir()) == [
        "bert_config.json",
        "model.ckpt.data-00000-of-00001",
        "model.ckpt.index",
        "note.json",
    ]
    loaded = checkpoints.load_pretrainer(out)  # config read from bert_config.json
    assert loaded.config == CONFIG
    np.testing.assert_array_equal(
        _outputs(loaded, "sequence_output"), _outputs(pretrainer, "sequence_output")
    )
    with pytest.raises(FileExistsError):
        checkpoints.save_model_dir(pretrainer, out)

    def failing_tokenizer(directory):
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        checkpoints.save_model_dir(
            pretrainer, tmp_path / "broken", save_tokenizer=failing_tokenizer
        )
    assert not (tmp_path / "broken").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_tf_models_pretrainer_layout_loads(tmp_path):
    pretrainer = build_pretrainer(CONFIG)
    prefix = tf.train.Checkpoint(
        encoder=pretrainer.encoder,
        masked_lm=pretrainer.masked_lm,
        next_sentence=pretrainer.next_sentence,
    ).write(str(tmp_path / "ckpt"))
    for kind, key in (("pretrainer", "mlm_logits"), ("encoder", "sequence_output")):
        loaded = checkpoints.load_model(prefix, kind, CONFIG)
        np.testing.assert_array_equal(_outputs(loaded, key), _outputs(pretrainer, key))


def test_given_config_must_agree_with_the_stored_one(tmp_path):
    checkpoints.save_model_dir(build_encoder(CONFIG), tmp_path / "m")
    with pytest.raises(ValueError, match="intermediate_size=64 vs 128"):
        checkpoints.load_encoder(tmp_path / "m", CONFIG.replace(intermediate_size=64))


def _damage(prefix, how):
    """A run killed while writing (data file cut short) or a bad copy (index overwritten)."""
    if how == "truncated":
        data = f"{prefix}.data-00000-of-00001"
        with open(data, "r+b") as f:
            f.truncate(os.path.getsize(data) // 2)
    else:
        with open(f"{prefix}.index", "r+b") as f:
            f.seek(8)
            f.write(b"not an index")


@pytest.mark.parametrize("how", ["truncated", "garbled index"])
def test_a_damaged_model_directory_is_named_by_every_reader(tmp_path, capsys, how):
    from mbert_lib.cli import main

    directory = tmp_path / "model"
    checkpoints.save_model_dir(build_pretrainer(CONFIG), directory)
    _damage(directory / "model.ckpt", how)
    with pytest.raises(checkpoints.DamagedCheckpointError, match="damaged or incomplete"):
        checkpoints.load_pretrainer(directory)
    assert (
        main(["export", "hf", "--checkpoint", str(directory), "--export_dir", str(tmp_path / "hf")])
        == 2
    )
    err = capsys.readouterr().err
    assert f"{directory / 'model.ckpt'}: the checkpoint's files are damaged" in err, err
    assert "Traceback" not in err and not (tmp_path / "hf").exists()


def test_resuming_passes_over_a_damaged_latest_checkpoint(tmp_path):
    from mbert_lib.train.checkpointing import RunCheckpoint

    weights = tf.Variable(tf.zeros([64, 32]))
    run = RunCheckpoint(tmp_path, max_to_keep=3, weights=weights)
    weights.assign(tf.fill([64, 32], 1.0))
    run.save(1)
    weights.assign(tf.fill([64, 32], 2.0))
    newest = run.save(2)
    _damage(newest, "truncated")
    messages = []
    resumed = RunCheckpoint(tmp_path, max_to_keep=3, weights=weights)
    weights.assign(tf.zeros([64, 32]))
    assert resumed.restore_latest(messages.append).endswith("-1")
    assert float(weights[0, 0]) == 1.0  # the checkpoint before it
    assert len(messages) == 1 and newest in messages[0] and "trying the one before" in messages[0]
    _damage(newest[:-1] + "1", "garbled index")
    with pytest.raises(checkpoints.DamagedCheckpointError, match="none of the 2 checkpoint"):
        RunCheckpoint(tmp_path, max_to_keep=3, weights=weights).restore_latest(messages.append)
