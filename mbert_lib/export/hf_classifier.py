"""A fine-tuned Classifier -> transformers' MobileBertForSequenceClassification directory.

    config.json          the encoder's fields (as `export hf` writes them) + num_labels,
                         id2label / label2id, problem_type, classifier_dropout
    model.safetensors    mobilebert.* (the encoder) + classifier.weight [C, H], classifier.bias [C]
    vocab.txt, tokenizer_config.json    the tokenizer beside the checkpoint

transformers' head is mbert_lib's ClassificationHead: pooled output [B, H] ->
dropout -> Linear(H, C) -> logits [B, C]; its weight is the Keras Dense kernel
[H, C] transposed. The labels are the task's (classifier_labels.py); a
regression (STS-B) has one output and problem_type "regression".
"""

from __future__ import annotations

import os

from mbert_lib.convert.hf import config_to_hf, write_hf_directory
from mbert_lib.convert.tf2 import tf1_arrays_from_pretrainer
from mbert_lib.export.classifier_labels import classifier_labels

ARCHITECTURE = "MobileBertForSequenceClassification"


def classifier_config_to_hf(classifier, labels) -> dict:
    """config.json for MobileBertForSequenceClassification of a built Classifier."""
    names = labels.names or ("score",)
    return {
        **config_to_hf(classifier.config),
        "architectures": [ARCHITECTURE],
        "num_labels": labels.num_outputs,
        "id2label": {str(i): name for i, name in enumerate(names)},
        "label2id": {name: i for i, name in enumerate(names)},
        "problem_type": "regression" if labels.regression else "single_label_classification",
        "classifier_dropout": classifier.dropout_rate,
        "finetuning_task": labels.task,
    }


def head_tensors(classifier) -> dict:
    """The head under transformers' names, PyTorch layout: weight [C, H], bias [C]."""
    dense = classifier.head.dense
    return {"classifier.weight": dense.kernel.numpy().T, "classifier.bias": dense.bias.numpy()}


def write_hf_classifier(
    classifier,
    checkpoint: str | os.PathLike,
    export_dir: str | os.PathLike,
    vocab_file: str | None = None,
    do_lower_case: bool | None = None,
    overwrite: bool = False,
) -> None:
    """Writes a Classifier loaded from `checkpoint` (whose experiment.yaml names its task)
    as a Hugging Face directory, atomically."""
    labels = classifier_labels(checkpoint, classifier.num_classes)
    write_hf_directory(
        classifier.config,
        tf1_arrays_from_pretrainer(classifier.encoder, include_heads=False),
        export_dir,
        vocab_file,
        do_lower_case,
        overwrite,
        hf_config=classifier_config_to_hf(classifier, labels),
        head_tensors=head_tensors(classifier),
    )
