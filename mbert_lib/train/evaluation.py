"""Evaluating a trained Pretrainer on any examples, and watching it fill in [MASK]s.

`evaluate_pretrainer(model, examples)` computes the trainer's held-out
metrics (MLM accuracy and loss, perplexity = exp(MLM loss), NSP accuracy and
loss; `PretrainingObjective.eval_metrics`) on example arrays held in memory,
e.g. the per-source held-out examples of `mbert_lib.data.heldout`.
`fill_masks` shows the model's top guesses at each target of one example.

Shapes: n examples, T seq_length, P max_predictions_per_seq, V vocabulary.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import tensorflow as tf

from mbert_lib.train.objectives import PretrainingObjective, model_inputs
from mbert_lib.train.step import make_evaluator


def examples_dataset(examples: Mapping[str, np.ndarray], batch_size: int = 64) -> tf.data.Dataset:
    """Example arrays (the element contract) as batches, in order, last batch kept."""
    return tf.data.Dataset.from_tensor_slices(dict(examples)).batch(batch_size)


def evaluate_pretrainer(model, examples: Mapping[str, np.ndarray], batch_size: int = 64) -> dict:
    """Held-out metrics of `model` (a Pretrainer) on every example, dropout off."""
    if len(examples["next_sentence_labels"]) == 0:
        raise ValueError("no examples to evaluate")
    evaluate = make_evaluator(
        tf.distribute.get_strategy(),
        PretrainingObjective(model),
        examples_dataset(examples, batch_size),
    )
    return evaluate()


def mlm_correct(model, batches) -> np.ndarray:
    """Whether `model` (a Pretrainer) gets each real MLM target right, dropout off: a bool
    array over every target of `batches` in order (weight-0 slots left out), so that two
    models read on the same batches pair target by target (`mbert_lib.paired`)."""
    hits = []
    for batch in batches:
        logits = model(model_inputs(batch), training=False)["mlm_logits"]  # [B, P, V]
        guess = tf.argmax(logits, axis=-1, output_type=tf.int32).numpy()
        real = batch["masked_lm_weights"].numpy() > 0  # [B, P]
        hits.append((guess == batch["masked_lm_ids"].numpy())[real])
    if not hits:
        raise ValueError("no batches to evaluate")
    return np.concatenate(hits)


def fill_masks(
    model, examples: Mapping[str, np.ndarray], index: int, tokenizer, top_k: int = 3
) -> pd.DataFrame:
    """One row per MLM target of example `index`: position, what the model read there
    (input), the true token (original), its top_k guesses with probabilities, and
    whether the first guess is right."""
    one = {k: v[index : index + 1] for k, v in examples.items()}
    outputs = model(model_inputs({k: tf.constant(v) for k, v in one.items()}), training=False)
    probs = tf.nn.softmax(tf.cast(outputs["mlm_logits"][0], tf.float32)).numpy()  # [P, V]
    vocab = tokenizer.vocab
    rows = []
    for slot in np.flatnonzero(one["masked_lm_weights"][0] > 0):
        position = int(one["masked_lm_positions"][0, slot])
        best = np.argsort(-probs[slot])[:top_k]
        true = int(one["masked_lm_ids"][0, slot])
        rows.append(
            {
                "position": position,
                "input": vocab[one["input_word_ids"][0, position]],
                "original": vocab[true],
                "guesses": ", ".join(f"{vocab[t]} ({probs[slot, t]:.0%})" for t in best),
                "p(original)": float(probs[slot, true]),
                "correct": bool(best[0] == true),
            }
        )
    return pd.DataFrame(rows)
