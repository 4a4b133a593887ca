"""Hugging Face <-> TF2: the `google/mobilebert-uncased` layout, read and written without torch.

A Hugging Face directory holds `config.json` (MobileBertConfig fields plus
HF-only ones such as `model_type`, `layer_norm_eps`, `true_hidden_size`) and
`model.safetensors` with PyTorch-layout weights (Linear weights [out, in]);
names in names.py. The MLM decoder is tied to the token table
(`cls.predictions.decoder.weight` = `mobilebert.embeddings.word_embeddings.weight`,
`cls.predictions.decoder.bias` = `cls.predictions.bias`): a file may hold
either name or both, and both must then be equal.

    python -m mbert_lib convert hf --model_dir DIR --tf2_checkpoint_path OUT
    python -m mbert_lib export hf --checkpoint CKPT --export_dir DIR

Both carry the tokenizer: vocab.txt and a tokenizer_config.json with the
casing, the special tokens and (on export) `model_max_length`, the model's
max_position_embeddings. `export hf` refuses a config transformers' module
cannot hold (`hf_unrepresentable`).
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import numpy as np
from safetensors import SafetensorError, safe_open
from safetensors.numpy import save_file

from mbert_lib import atomic
from mbert_lib.config import PRESETS, MobileBertConfig
from mbert_lib.convert.check import ConversionReport, match_variables
from mbert_lib.convert.names import hf_to_tf1, name_map, tf1_to_hf, unused_entries
from mbert_lib.convert.tf2 import pretrainer_from_tf1_arrays, save_pretrainer
from mbert_lib.data.tokenizer import load_tokenizer, tokenizer_files

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
VOCAB_FILE = "vocab.txt"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"

# transformers' MobileBertConfig defaults, for keys a config.json leaves out: the released
# MobileBERT's configuration, but for the pooler's tanh, which transformers applies
# (tests/test_clients_transformers.py compares them with transformers' own).
HF_DEFAULTS = dataclasses.asdict(PRESETS["mobilebert"].replace(classifier_activation=True))
LAYER_NORM_EPSILON = 1e-12  # mbert_lib's, fixed (layers/nonorm.py)
_TIED = {
    "cls.predictions.decoder.weight": "mobilebert.embeddings.word_embeddings.weight",
    "cls.predictions.decoder.bias": "cls.predictions.bias",
}
_BUFFERS = {"mobilebert.embeddings.position_ids"}  # a non-weight buffer older files hold


def config_from_hf(values: dict, source: str = CONFIG_FILE) -> tuple[MobileBertConfig, list[str]]:
    """A MobileBertConfig from a Hugging Face config.json dict; also the HF-only keys ignored."""
    fields = {f.name for f in dataclasses.fields(MobileBertConfig)}
    if values.get("model_type", "mobilebert") != "mobilebert":
        raise ValueError(f"{source}: model_type is {values['model_type']!r}, expected 'mobilebert'")
    eps = values.get("layer_norm_eps", LAYER_NORM_EPSILON)
    if eps != LAYER_NORM_EPSILON:
        raise ValueError(
            f"{source}: layer_norm_eps is {eps}; mbert_lib's LayerNorm uses {LAYER_NORM_EPSILON}"
        )
    try:
        config = MobileBertConfig(
            **{**HF_DEFAULTS, **{k: v for k, v in values.items() if k in fields}}
        )
    except ValueError as e:
        raise ValueError(f"{source}: {e}") from None
    if "true_hidden_size" in values and values["true_hidden_size"] != config.attention_width:
        raise ValueError(
            f"{source}: true_hidden_size is {values['true_hidden_size']}, but the "
            f"other fields give {config.attention_width}"
        )
    return config, sorted(k for k in values if k not in fields)


def hf_unrepresentable(config: MobileBertConfig) -> list[str]:
    """Why transformers' MobileBERT cannot hold a model of `config` ([] when it can).

    transformers builds the query and key projections with `true_hidden_size`
    inputs (the block's inner width h) and feeds them the block input (width H)
    when the bottleneck neither runs the attention (use_bottleneck_attention)
    nor gives it a shared query/key input (key_query_shared_bottleneck): a
    model with that layout and H != h, like the IB-BERT teachers, has
    query/key kernels of another shape than transformers' module.
    """
    reasons = []
    if (
        config.use_bottleneck
        and not config.use_bottleneck_attention
        and not config.key_query_shared_bottleneck
        and config.hidden_size != config.intra_bottleneck_size
    ):
        reasons.append(
            f"its query/key projections read the block input (width hidden_size = "
            f"{config.hidden_size}), but transformers' read true_hidden_size = "
            f"{config.intra_bottleneck_size} unless key_query_shared_bottleneck or "
            "use_bottleneck_attention is set"
        )
    if config.classifier_pooling != "first":
        reasons.append(
            f"its pooled output averages every token (classifier_pooling "
            f"{config.classifier_pooling!r}), but transformers' pooler reads the [CLS] token"
        )
    return reasons


def check_hf_representable(config: MobileBertConfig, what: str = "this model") -> None:
    """Raises ValueError saying why, and what works instead, if transformers cannot hold it."""
    reasons = hf_unrepresentable(config)
    if reasons:
        raise ValueError(
            f"transformers' MobileBERT cannot represent {what}: {'; '.join(reasons)}. A "
            "Hugging Face directory of it would not load (its weights have other shapes than "
            "the module). What works: `export savedmodel` (a TF-Hub-style SavedModel of any "
            "config), the TF2 checkpoint itself, or `export hf` of a MobileBERT student."
        )


def config_to_hf(config: MobileBertConfig) -> dict:
    """The config.json of `config` for transformers' MobileBertForPreTraining."""
    return {
        "architectures": ["MobileBertForPreTraining"],
        "model_type": "mobilebert",
        **config.to_dict(),
        "layer_norm_eps": LAYER_NORM_EPSILON,
        "true_hidden_size": config.attention_width,
        "pad_token_id": 0,
        "tie_word_embeddings": True,
    }


def _hf_unused(config: MobileBertConfig) -> dict[str, tuple]:
    """HF weights transformers creates although this config never uses them."""
    unused = {e.hf: e.hf_shape for e in unused_entries(config)}
    if not (config.trigram_input or config.embedding_size != config.hidden_size):
        width_in = config.embedding_size
        unused["mobilebert.embeddings.embedding_transformation.weight"] = (
            config.hidden_size,
            width_in,
        )
        unused["mobilebert.embeddings.embedding_transformation.bias"] = (config.hidden_size,)
    if config.embedding_size == config.hidden_size:
        unused["cls.predictions.dense.weight"] = (0, config.vocab_size)
    return unused


def _read_safetensors(path: str) -> dict[str, np.ndarray]:
    """Every tensor of a .safetensors file; ValueError naming the file when it is not one
    (garbage, or a download cut short)."""
    try:
        with safe_open(path, framework="numpy") as f:
            return {k: f.get_tensor(k) for k in f.keys()}
    except SafetensorError as e:
        raise ValueError(
            f"{path}: not a readable safetensors file ({e}); expected the {WEIGHTS_FILE} of a "
            "Hugging Face model, whole (a download cut short?)"
        ) from None


def read_hf_directory(model_dir: str | os.PathLike):
    """(config, TF1-named float32 arrays, report) from a Hugging Face model directory; strict."""
    model_dir = os.fspath(model_dir)
    config_path = os.path.join(model_dir, CONFIG_FILE)
    weights_path = os.path.join(model_dir, WEIGHTS_FILE)
    for p in (config_path, weights_path):
        if not os.path.exists(p):
            raise FileNotFoundError(
                f"{p} does not exist (expected a Hugging Face directory "
                f"with {CONFIG_FILE} and {WEIGHTS_FILE})"
            )
    with open(config_path, encoding="utf-8") as f:
        try:
            config, ignored = config_from_hf(json.load(f), config_path)
        except json.JSONDecodeError as e:
            raise ValueError(f"{config_path}: not valid JSON ({e})") from None
    tensors = _read_safetensors(weights_path)

    entries = name_map(config)
    notes = [f"ignored Hugging Face-only config keys: {', '.join(ignored)}"] if ignored else []
    tied_conflicts = {}
    for copy, source in _TIED.items():
        if copy not in tensors:
            continue
        if source not in tensors:
            tensors[source] = tensors.pop(copy)
            notes.append(f"read {source} from its tied copy {copy}")
        elif tensors[copy].shape != tensors[source].shape or not np.array_equal(
            tensors[copy], tensors[source]
        ):
            tied_conflicts[copy] = tensors[copy].shape
    matched = match_variables(
        weights_path,
        {e.hf: e.hf_shape for e in entries},
        {k: v.shape for k, v in tensors.items() if k not in tied_conflicts},
        is_bookkeeping=lambda k: k in _BUFFERS or k in _TIED,
        unused=_hf_unused(config),
    )
    if tied_conflicts:
        raise ValueError(
            f"{weights_path}: tied weights differ from the weights they copy: "
            + ", ".join(f"{k} != {_TIED[k]}" for k in tied_conflicts)
        )
    arrays = {e.tf1: hf_to_tf1(e, tensors[e.hf]).astype(np.float32) for e in entries}
    report = ConversionReport(
        source=model_dir,
        source_format="hf",
        output="",
        converted=len(arrays),
        skipped=matched.skipped,
        unused=matched.unused,
        notes=notes,
    )
    return config, arrays, report


def convert_hf(
    model_dir: str | os.PathLike,
    tf2_checkpoint_path: str | os.PathLike,
    use_model_prefix: bool = False,
    overwrite: bool = False,
) -> ConversionReport:
    """Converts a Hugging Face directory into an mbert_lib checkpoint directory."""

    config, arrays, report = read_hf_directory(model_dir)
    report.output = os.fspath(tf2_checkpoint_path)
    tokenizer = read_hf_tokenizer(model_dir)
    if tokenizer is None:
        report.notes.append(
            f"no {VOCAB_FILE} in {os.fspath(model_dir)}: the checkpoint has no "
            "tokenizer (fine-tuning it needs task.vocab_file)"
        )
    save_pretrainer(
        pretrainer_from_tf1_arrays(config, arrays),
        tf2_checkpoint_path,
        use_model_prefix,
        overwrite,
        report,
        extra_files=tokenizer_files(tokenizer) if tokenizer is not None else None,
    )
    return report


def read_hf_tokenizer(model_dir: str | os.PathLike):
    """The WordPiece tokenizer of a Hugging Face directory (its vocab.txt, casing from its
    tokenizer_config.json, default lower-case), or None without a vocab.txt."""

    directory = Path(model_dir)
    if not (directory / VOCAB_FILE).is_file():
        return None
    do_lower_case = True
    config_path = directory / TOKENIZER_CONFIG_FILE
    if config_path.is_file():
        try:
            do_lower_case = bool(
                json.loads(config_path.read_text(encoding="utf-8")).get("do_lower_case", True)
            )
        except json.JSONDecodeError as e:
            raise ValueError(f"{config_path}: not valid JSON ({e})") from None
    return load_tokenizer(directory / VOCAB_FILE, do_lower_case=do_lower_case)


def write_hf_directory(
    config: MobileBertConfig,
    arrays: dict[str, np.ndarray],
    export_dir: str | os.PathLike,
    vocab_file: str | None = None,
    do_lower_case: bool | None = None,
    overwrite: bool = False,
    *,
    hf_config: dict | None = None,
    head_tensors: dict[str, np.ndarray] | None = None,
) -> None:
    """Writes TF1-named arrays as config.json + model.safetensors (+ vocab.txt), atomically;
    refuses a config transformers cannot load (check_hf_representable).

    By default the arrays are a Pretrainer's and config.json is config_to_hf(config); a
    classifier (hf_classifier.py) passes its encoder's arrays, its own config.json and its
    head under Hugging Face names (`head_tensors`, PyTorch layout).
    """
    check_hf_representable(config, f"the model exported to {os.fspath(export_dir)}")

    tensors = {
        e.hf: np.ascontiguousarray(tf1_to_hf(e, arrays[e.tf1]), dtype=np.float32)
        for e in name_map(config, include_heads=head_tensors is None)
    }
    tensors.update(
        {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in (head_tensors or {}).items()}
    )
    with atomic.atomic_directory(export_dir, overwrite=overwrite) as tmp:
        atomic.write_text(
            os.path.join(tmp, CONFIG_FILE),
            json.dumps(hf_config or config_to_hf(config), indent=2, sort_keys=True) + "\n",
        )
        # transformers refuses safetensors files without a "format" entry.
        save_file(tensors, os.path.join(tmp, WEIGHTS_FILE), metadata={"format": "pt"})
        if vocab_file is not None:
            tokenizer = load_tokenizer(vocab_file, do_lower_case=do_lower_case)
            if tokenizer.vocab_size != config.vocab_size:
                raise ValueError(
                    f"{vocab_file} has {tokenizer.vocab_size} tokens, the model's "
                    f"vocab_size is {config.vocab_size}"
                )
            for name, text in tokenizer_files(
                tokenizer, config.max_position_embeddings, "MobileBertTokenizer"
            ).items():
                atomic.write_text(os.path.join(tmp, name), text)


def vocab_beside(checkpoint: str | os.PathLike) -> str | None:
    """The vocab.txt of a checkpoint's directory, or None."""
    checkpoint = os.fspath(checkpoint)
    beside = Path(checkpoint if os.path.isdir(checkpoint) else os.path.dirname(checkpoint))
    return str(beside / VOCAB_FILE) if (beside / VOCAB_FILE).is_file() else None
