"""The checkpoint format exporters read: tf.train.Checkpoint(model=...), with clear mismatch errors."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import mbert_lib  # noqa: F401  (sets TF_USE_LEGACY_KERAS before Keras loads)
from mbert_lib import build_classifier, build_encoder, build_pretrainer, get_preset
from mbert_lib.export import checkpoint
from mbert_lib.export.representative import random_features

CONFIG = get_preset("tiny_student").replace(num_hidden_layers=2, vocab_size=64)
FEATURES = random_features(3, 12, CONFIG.vocab_size, seed=1)


def _outputs(model, key):
    return model(FEATURES, training=False)[key].numpy()


def test_encoder_roundtrip_from_prefix_and_directory(tmp_path):
    tf_keras.utils.set_random_seed(1)
    encoder = build_encoder(CONFIG)
    prefix = checkpoint.save_model_checkpoint(encoder, tmp_path / "enc" / "ckpt-1")
    tf_keras.utils.set_random_seed(2)  # the fresh model starts from other weights
    for path in (prefix, tmp_path / "enc"):
        loaded = checkpoint.load_model(path, CONFIG, "encoder")
        np.testing.assert_array_equal(_outputs(loaded, "sequence_output"),
                                      _outputs(encoder, "sequence_output"))


def test_directory_written_by_checkpoint_manager_gives_latest(tmp_path):
    encoder = build_encoder(CONFIG)
    root = tf.train.Checkpoint(model=encoder)
    manager = tf.train.CheckpointManager(root, tmp_path, max_to_keep=2)
    manager.save()
    encoder.embedding.norm.gamma.assign(encoder.embedding.norm.gamma * 3.0)
    manager.save()
    loaded = checkpoint.load_model(tmp_path, CONFIG)
    np.testing.assert_array_equal(loaded.embedding.norm.gamma.numpy(),
                                  encoder.embedding.norm.gamma.numpy())


def test_classifier_roundtrip_reads_num_classes(tmp_path):
    classifier = build_classifier(CONFIG, num_classes=3, dropout_rate=0.0)
    prefix = checkpoint.save_model_checkpoint(classifier, tmp_path / "ckpt")
    loaded = checkpoint.load_model(prefix, CONFIG, "classifier")
    assert loaded.num_classes == 3
    np.testing.assert_array_equal(_outputs(loaded, "logits"), _outputs(classifier, "logits"))


@pytest.mark.parametrize("build", [lambda: build_classifier(CONFIG, 2), lambda: build_pretrainer(CONFIG)],
                         ids=["classifier", "pretrainer"])
def test_encoder_loads_from_a_task_model_checkpoint(tmp_path, build):
    task_model = build()
    prefix = checkpoint.save_model_checkpoint(task_model, tmp_path / "ckpt")
    loaded = checkpoint.load_model(prefix, CONFIG, "encoder")
    np.testing.assert_array_equal(_outputs(loaded, "sequence_output"),
                                  _outputs(task_model.encoder, "sequence_output"))


def test_training_checkpoint_with_optimizer_loads(tmp_path):
    classifier = build_classifier(CONFIG, 2)
    optimizer = tf_keras.optimizers.Adam()
    optimizer.build(classifier.trainable_variables)
    prefix = tf.train.Checkpoint(model=classifier, optimizer=optimizer,
                                 step=tf.Variable(7)).write(str(tmp_path / "ckpt"))
    loaded = checkpoint.load_model(prefix, CONFIG, "classifier")
    np.testing.assert_array_equal(_outputs(loaded, "logits"), _outputs(classifier, "logits"))


def test_config_mismatch_names_the_variable_and_shapes(tmp_path):
    prefix = checkpoint.save_model_checkpoint(build_encoder(CONFIG), tmp_path / "ckpt")
    with pytest.raises(checkpoint.CheckpointMismatchError,
                       match=r"model/embedding/word_embeddings/embeddings is \[64, 32\] in the "
                             r"checkpoint, the config needs \[100, 32\]"):
        checkpoint.load_model(prefix, CONFIG.replace(vocab_size=100))


def test_layer_count_mismatch_both_ways(tmp_path):
    prefix = checkpoint.save_model_checkpoint(build_encoder(CONFIG), tmp_path / "ckpt")
    with pytest.raises(checkpoint.CheckpointMismatchError, match=r"not in the checkpoint.*blocks/2"):
        checkpoint.load_model(prefix, CONFIG.replace(num_hidden_layers=3))
    with pytest.raises(checkpoint.CheckpointMismatchError, match=r"no place for.*blocks/1"):
        checkpoint.load_model(prefix, CONFIG.replace(num_hidden_layers=1))


def test_classifier_from_encoder_checkpoint_is_refused(tmp_path):
    prefix = checkpoint.save_model_checkpoint(build_encoder(CONFIG), tmp_path / "ckpt")
    with pytest.raises(checkpoint.CheckpointMismatchError, match="holds a encoder, not a classifier"):
        checkpoint.load_model(prefix, CONFIG, "classifier")


def test_missing_checkpoint_and_foreign_checkpoint(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint at"):
        checkpoint.load_model(tmp_path / "nothing", CONFIG)
    with pytest.raises(FileNotFoundError, match="has no 'checkpoint' file and 0"):
        checkpoint.load_model(tmp_path, CONFIG)
    foreign = tf.train.Checkpoint(net=tf.Variable([1.0])).write(str(tmp_path / "foreign"))
    with pytest.raises(checkpoint.CheckpointMismatchError, match="root name 'model'"):
        checkpoint.load_model(foreign, CONFIG)
