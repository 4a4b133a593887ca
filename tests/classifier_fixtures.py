"""Fine-tuned classifiers without training, for the export tests: random weights (a nonzero
head bias), saved as `finetune` leaves a directory (model, tokenizer, experiment.yaml)."""

import os

import numpy as np
import tf_keras
from tokenizers import BertWordPieceTokenizer

from mbert_lib.checkpoints import save_model_dir
from mbert_lib.config_tree import apply_overrides, save_yaml
from mbert_lib.data.tokenizer import save_tokenizer
from mbert_lib.experiment.finetune import FinetuneExperiment
from mbert_lib.models import build_classifier
from tests.finetune_fixtures import CONFIG, tokenizer

SEQ = 12
SENTENCES = ["the movie was very good", "a film is bad", "the plot was awful"]
PAIRS = ["the film is fine", "the movie was sad", "a nice plot"]
POOLED = CONFIG.replace(classifier_activation=True)  # with the pooler's dense + tanh


def save_classifier(directory, task: str, num_classes: int, seed: int, config=POOLED):
    """A random-weight classifier (head bias nonzero) saved as `finetune` leaves it."""
    tf_keras.utils.set_random_seed(seed)
    model = build_classifier(config, num_classes)
    model.head.dense.bias.assign(np.random.default_rng(seed).normal(0, 0.5, num_classes))
    save_model_dir(model, directory, save_tokenizer=lambda d: save_tokenizer(tokenizer(), d))
    save_yaml(
        apply_overrides(FinetuneExperiment(), f"task.name={task},task.seq_length={SEQ}"),
        os.path.join(directory, "experiment.yaml"),
    )
    return model


def packed_ids(vocab_file, texts, pairs=None):
    """The three inputs as the `tokenizers` library packs them (BERT's [CLS] a [SEP] b [SEP])."""
    t = BertWordPieceTokenizer(str(vocab_file), lowercase=True)
    t.enable_truncation(max_length=SEQ)
    t.enable_padding(length=SEQ)
    encodings = t.encode_batch(list(zip(texts, pairs)) if pairs else texts)
    return {
        "input_word_ids": np.array([e.ids for e in encodings], np.int32),
        "input_mask": np.array([e.attention_mask for e in encodings], np.int32),
        "input_type_ids": np.array([e.type_ids for e in encodings], np.int32),
    }
