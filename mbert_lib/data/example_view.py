"""One pre-training example, token by token: what the model sees and what it must predict.

`example_table(examples, i, tokenizer)` lays example i out as a table, one
row per real token (T positions, padding dropped):

    position   0 .. T-1
    segment    "A" for [CLS] A [SEP], "B" for B [SEP] (input_type_ids)
    input      the token the model reads (after masking)
    original   the token of the text (differs only where a random token was put)
    role       ""        not a prediction target
               "[MASK]"  target replaced by [MASK]       (80% of targets)
               "random"  target replaced by a random token (10%)
               "kept"    target left as it was           (10%)
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from mbert_lib.data.examples import original_tokens


def example_table(examples: Mapping[str, np.ndarray], index: int, tokenizer) -> pd.DataFrame:
    """Example `index` of the arrays, one row per real token (see the module docstring)."""
    n = len(examples["next_sentence_labels"])
    if not 0 <= index < n:
        raise IndexError(f"example index {index} out of range for {n} examples")
    length = int(examples["input_mask"][index].sum())
    inputs = examples["input_word_ids"][index, :length]  # [T']
    original = original_tokens({k: v[index : index + 1] for k, v in examples.items()})[0, :length]
    weights = examples["masked_lm_weights"][index] > 0  # [P]
    targets = set(examples["masked_lm_positions"][index][weights].tolist())
    roles = []
    for position, (seen, true) in enumerate(zip(inputs, original)):
        if position not in targets:
            roles.append("")
        elif seen == tokenizer.mask_id:
            roles.append("[MASK]")
        elif seen != true:
            roles.append("random")
        else:
            roles.append("kept")
    vocab = tokenizer.vocab
    return pd.DataFrame(
        {
            "position": np.arange(length),
            "segment": np.where(examples["input_type_ids"][index, :length] == 0, "A", "B"),
            "input": [vocab[t] for t in inputs],
            "original": [vocab[t] for t in original],
            "role": roles,
        }
    )
