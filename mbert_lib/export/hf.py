"""An mbert_lib model directory -> a Hugging Face directory, whichever model it holds.

Pretrainer  -> MobileBertForPreTraining               (hf.write_hf_directory)
Classifier  -> MobileBertForSequenceClassification    (hf_classifier.write_hf_classifier)
"""

from __future__ import annotations

import os

from mbert_lib.checkpoints import expect_kind, load_model
from mbert_lib.config import MobileBertConfig
from mbert_lib.convert.hf import vocab_beside, write_hf_directory
from mbert_lib.convert.tf2 import tf1_arrays_from_pretrainer
from mbert_lib.export.hf_classifier import write_hf_classifier


def export_hf(
    checkpoint: str | os.PathLike,
    export_dir: str | os.PathLike,
    config: MobileBertConfig | None = None,
    vocab_file: str | None = None,
    do_lower_case: bool | None = None,
    overwrite: bool = False,
) -> str:
    """An mbert_lib model directory (or a checkpoint prefix) -> a Hugging Face directory, with
    the tokenizer of `vocab_file` (default: the checkpoint directory's own); casing: given,
    else the vocabulary's tokenizer_config.json, else lower-case.

    A Pretrainer becomes MobileBertForPreTraining, a fine-tuned Classifier
    MobileBertForSequenceClassification (hf_classifier.py). Returns the architecture.
    """
    kind = expect_kind(checkpoint, ("pretrainer", "classifier"), "export hf")
    vocab_file = vocab_file or vocab_beside(checkpoint)
    model = load_model(checkpoint, kind, config)
    if kind == "classifier":
        write_hf_classifier(model, checkpoint, export_dir, vocab_file, do_lower_case, overwrite)
        return "MobileBertForSequenceClassification"
    write_hf_directory(
        model.config,
        tf1_arrays_from_pretrainer(model),
        export_dir,
        vocab_file,
        do_lower_case,
        overwrite,
    )
    return "MobileBertForPreTraining"
