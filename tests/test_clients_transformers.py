"""`export hf` read by transformers itself (requirements-clients.txt): a pretrainer as
MobileBertForPreTraining, a fine-tuned classifier as MobileBertForSequenceClassification,
each loading with no missing or unexpected weight and computing the project's outputs;
the exported tokenizer tokenizes as the project's and truncates to the model's length."""

import numpy as np
import pytest

pytestmark = pytest.mark.slow  # trains, converts or runs a pipeline: `-m "not slow"` skips it

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from mbert_lib.cli import main  # noqa: E402
from mbert_lib.convert import pretrainer_from_tf1_arrays, save_pretrainer  # noqa: E402
from mbert_lib.data.tokenizer import load_tokenizer, save_tokenizer  # noqa: E402
from tests.classifier_fixtures import PAIRS, POOLED, SENTENCES, packed_ids, save_classifier  # noqa: E402
from tests.convert_fixtures import random_arrays, reference_shapes  # noqa: E402
from tests.finetune_fixtures import tokenizer  # noqa: E402


def _load(cls, directory):
    model, info = cls.from_pretrained(str(directory), output_loading_info=True)
    assert {k: v for k, v in info.items() if v} == {}, info  # no missing / unexpected keys
    return model.eval()


def _torch_inputs(ids):
    return {
        "input_ids": torch.tensor(ids["input_word_ids"], dtype=torch.long),
        "attention_mask": torch.tensor(ids["input_mask"], dtype=torch.long),
        "token_type_ids": torch.tensor(ids["input_type_ids"], dtype=torch.long),
    }


def test_pretrainer_loads_and_computes_the_same_logits(tmp_path):
    config = POOLED.replace(hidden_dropout_prob=0.0)
    model = pretrainer_from_tf1_arrays(config, random_arrays(reference_shapes(config), seed=3))
    save_pretrainer(model, tmp_path / "ckpt", use_model_prefix=True)
    save_tokenizer(tokenizer(), tmp_path / "ckpt")
    assert (
        main(
            [
                "export",
                "hf",
                "--checkpoint",
                str(tmp_path / "ckpt"),
                "--export_dir",
                str(tmp_path / "hf"),
            ]
        )
        == 0
    )
    hf = _load(transformers.MobileBertForPreTraining, tmp_path / "hf")
    ids = packed_ids(tmp_path / "hf" / "vocab.txt", SENTENCES, PAIRS)
    with torch.no_grad():
        out = hf(**_torch_inputs(ids))
    ours = model(
        {
            **ids,
            "masked_lm_positions": np.tile(
                np.arange(ids["input_mask"].shape[1], dtype=np.int32), (3, 1)
            ),
        }
    )
    np.testing.assert_allclose(
        out.prediction_logits.numpy(), ours["mlm_logits"].numpy(), rtol=1e-4, atol=2e-4
    )
    np.testing.assert_allclose(
        out.seq_relationship_logits.numpy(), ours["nsp_logits"].numpy(), rtol=1e-4, atol=1e-4
    )


@pytest.mark.parametrize("task,classes", [("sst2", 2), ("stsb", 1)])
def test_classifier_loads_with_its_labels_and_predicts_the_same(tmp_path, task, classes):
    model = save_classifier(tmp_path / "ft", task, classes, seed=5)
    assert (
        main(
            [
                "export",
                "hf",
                "--checkpoint",
                str(tmp_path / "ft"),
                "--export_dir",
                str(tmp_path / "hf"),
            ]
        )
        == 0
    )
    hf = _load(transformers.MobileBertForSequenceClassification, tmp_path / "hf")
    if task == "sst2":
        assert hf.config.id2label == {0: "negative", 1: "positive"}
    else:
        assert hf.config.problem_type == "regression" and hf.config.num_labels == 1
    ids = packed_ids(tmp_path / "hf" / "vocab.txt", SENTENCES, PAIRS if task == "stsb" else None)
    with torch.no_grad():
        logits = hf(**_torch_inputs(ids)).logits.numpy()
    np.testing.assert_allclose(logits, model(ids)["logits"].numpy(), rtol=1e-4, atol=1e-4)

    pipe = transformers.pipeline("text-classification", model=str(tmp_path / "hf"))
    if task == "sst2":
        labels = [r["label"] for r in pipe(SENTENCES)]
        assert labels == [("negative", "positive")[i] for i in logits.argmax(-1)]


def test_exported_tokenizer_matches_ours_and_truncates_to_the_model_length(tmp_path):
    save_classifier(tmp_path / "ft", "sst2", 2, seed=6)
    assert (
        main(
            [
                "export",
                "hf",
                "--checkpoint",
                str(tmp_path / "ft"),
                "--export_dir",
                str(tmp_path / "hf"),
            ]
        )
        == 0
    )
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "hf"))
    ours = load_tokenizer(tmp_path / "ft")
    for text in SENTENCES + ["The MOVIE wás... unknownword!"]:
        assert hf_tokenizer(text, add_special_tokens=False)["input_ids"] == ours.encode(text)
    long = " ".join(["the movie was good"] * 200)
    limit = POOLED.max_position_embeddings
    assert len(hf_tokenizer(long, truncation=True)["input_ids"]) == limit
    hf = _load(transformers.MobileBertForSequenceClassification, tmp_path / "hf")
    with torch.no_grad():  # the truncated input fits the position table
        hf(**hf_tokenizer(long, truncation=True, return_tensors="pt"))


def test_hf_defaults_are_transformers_own():
    """A config.json that leaves a key out means transformers' default for it: HF_DEFAULTS
    (derived from the MobileBERT preset) must agree with transformers' MobileBertConfig."""
    from mbert_lib.convert.hf import HF_DEFAULTS

    theirs = transformers.MobileBertConfig().to_dict()
    shared = sorted(set(HF_DEFAULTS) & set(theirs))
    assert len(shared) >= 19, shared  # every architecture field both name
    assert {k: HF_DEFAULTS[k] for k in shared} == {k: theirs[k] for k in shared}
