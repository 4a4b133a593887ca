"""`MobileBertConfig`: one frozen dataclass for every model in the paper.

The field names are exactly those of the released `bert_config.json` files
(google-research/mobilebert), so a released config loads as is and a config
written here loads in the original code. Defaults are the original
`BertConfig` defaults, so a plain BERT `bert_config.json` (no MobileBERT
keys) loads as a plain BERT.

Dimension letters used across the library:
    B batch, T tokens, E embedding_size, H hidden_size (inter-block width),
    h intra_bottleneck_size (intra-block width), I intermediate_size,
    N heads, d = h / N head size, F FFNs per block, L layers, V vocab.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Mapping
from typing import Any

from mbert_lib import atomic

ACTIVATIONS = ("relu", "relu6", "gelu", "gelu_new", "tanh", "swish", "linear")
NORMALIZATION_TYPES = ("no_norm", "layer_norm")
POOLINGS = ("first", "mean")


@dataclasses.dataclass(frozen=True)
class MobileBertConfig:
    """Architecture of a MobileBERT, IB-BERT or BERT encoder (paper Table 1).

    `embedding_size` and `intra_bottleneck_size` default to `hidden_size`
    (as in the original code) when given as None.
    """

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 16
    initializer_range: float = 0.02
    embedding_size: int | None = None
    trigram_input: bool = False
    use_bottleneck: bool = False
    intra_bottleneck_size: int | None = None
    use_bottleneck_attention: bool = False
    key_query_shared_bottleneck: bool = False
    num_feedforward_networks: int = 1
    normalization_type: str = "layer_norm"
    classifier_activation: bool = True
    # What `pooled_output` reads: "first", the [CLS] vector (BERT, MobileBERT and every
    # released checkpoint), or "mean", the average of the last block's outputs over the
    # real tokens (Sentence-BERT's pooling; not in the paper). Written to bert_config.json
    # only when not "first", so released configs read and write unchanged.
    classifier_pooling: str = "first"

    def __post_init__(self):
        _check_types(self)
        if self.embedding_size is None:
            object.__setattr__(self, "embedding_size", self.hidden_size)
        if self.intra_bottleneck_size is None:
            object.__setattr__(self, "intra_bottleneck_size", self.hidden_size)
        _check_values(self)

    # ---------------------------------------------------------------- derived
    @property
    def attention_width(self) -> int:
        """Width of the attention (and FFN) path inside a block: h or H."""
        return self.intra_bottleneck_size if self.use_bottleneck else self.hidden_size

    @property
    def attention_head_size(self) -> int:
        """d = attention_width / N."""
        return self.attention_width // self.num_attention_heads

    # -------------------------------------------------------------------- I/O
    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> MobileBertConfig:
        """Builds a config from `bert_config.json` names; unknown keys raise."""
        if not isinstance(values, Mapping):
            raise ValueError(f"config must be a JSON object, got {type(values).__name__}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(
                f"unknown config key(s) {unknown}; expected a subset of {sorted(known)}"
            )
        return cls(**dict(values))

    @classmethod
    def from_json_file(cls, path: str | os.PathLike) -> MobileBertConfig:
        """Reads a `bert_config.json` (the released format)."""
        try:
            with open(path, encoding="utf-8") as f:
                values = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not valid JSON ({e})") from e
        try:
            return cls.from_dict(values)
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from e

    def to_dict(self) -> dict[str, Any]:
        values = dataclasses.asdict(self)
        if values["classifier_pooling"] == "first":
            del values["classifier_pooling"]
        return values

    def to_json_string(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_json_file(self, path: str | os.PathLike) -> None:
        """Writes `bert_config.json` atomically (temp file, then rename)."""
        atomic.write_text(path, self.to_json_string())

    def replace(self, **changes: Any) -> MobileBertConfig:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)


# ------------------------------------------------------------------ validation
_INT_FIELDS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
    "type_vocab_size",
    "embedding_size",
    "intra_bottleneck_size",
    "num_feedforward_networks",
)
_BOOL_FIELDS = (
    "trigram_input",
    "use_bottleneck",
    "use_bottleneck_attention",
    "key_query_shared_bottleneck",
    "classifier_activation",
)
_FLOAT_FIELDS = ("hidden_dropout_prob", "attention_probs_dropout_prob", "initializer_range")


def _check_types(c: MobileBertConfig) -> None:
    for name in _INT_FIELDS:
        v = getattr(c, name)
        if v is None and name in ("embedding_size", "intra_bottleneck_size"):
            continue
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"{name} must be an integer, got {v!r}")
    for name in _BOOL_FIELDS:
        v = getattr(c, name)
        if not isinstance(v, bool):
            raise ValueError(f"{name} must be true or false, got {v!r}")
    for name in _FLOAT_FIELDS:
        v = getattr(c, name)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"{name} must be a number, got {v!r}")
    for name in ("hidden_act", "normalization_type", "classifier_pooling"):
        if not isinstance(getattr(c, name), str):
            raise ValueError(f"{name} must be a string, got {getattr(c, name)!r}")


def _check_values(c: MobileBertConfig) -> None:
    _check_ranges(c)
    _check_shapes(c)


def _check_ranges(c: MobileBertConfig) -> None:
    """Every field within its own range or set of choices."""
    for name in _INT_FIELDS:
        if getattr(c, name) < 1:
            raise ValueError(f"{name} must be a positive integer, got {getattr(c, name)}")
    for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
        if not 0.0 <= getattr(c, name) < 1.0:
            raise ValueError(f"{name} must be in [0, 1), got {getattr(c, name)}")
    if not 0 < c.initializer_range < math.inf:
        raise ValueError(
            f"initializer_range must be a finite number > 0, got {c.initializer_range}"
        )
    if c.hidden_act not in ACTIVATIONS:
        raise ValueError(f"hidden_act must be one of {ACTIVATIONS}, got {c.hidden_act!r}")
    if c.classifier_pooling not in POOLINGS:
        raise ValueError(
            f"classifier_pooling must be one of {POOLINGS}, got {c.classifier_pooling!r}"
        )
    if c.normalization_type not in NORMALIZATION_TYPES:
        raise ValueError(
            f"normalization_type must be one of {NORMALIZATION_TYPES}, got {c.normalization_type!r}"
        )


def _check_shapes(c: MobileBertConfig) -> None:
    """Fields that must agree with each other for the blocks to be built."""
    if c.embedding_size > c.hidden_size:
        raise ValueError(
            f"embedding_size ({c.embedding_size}) must be <= hidden_size ({c.hidden_size}): "
            "the MLM head pads the E-wide token table up to H"
        )
    if c.use_bottleneck:
        if c.intra_bottleneck_size % c.num_attention_heads:
            raise ValueError(
                f"intra_bottleneck_size ({c.intra_bottleneck_size}) must be divisible by "
                f"num_attention_heads ({c.num_attention_heads})"
            )
    else:
        if c.hidden_size % c.num_attention_heads:
            raise ValueError(
                f"hidden_size ({c.hidden_size}) must be divisible by "
                f"num_attention_heads ({c.num_attention_heads}) when use_bottleneck is false"
            )
        if c.intra_bottleneck_size != c.hidden_size:
            raise ValueError(
                f"intra_bottleneck_size ({c.intra_bottleneck_size}) must equal hidden_size "
                f"({c.hidden_size}) when use_bottleneck is false (it would be ignored)"
            )
        for name in ("use_bottleneck_attention", "key_query_shared_bottleneck"):
            if getattr(c, name):
                raise ValueError(f"{name} requires use_bottleneck to be true")
    if c.use_bottleneck_attention and c.key_query_shared_bottleneck:
        raise ValueError(
            "use_bottleneck_attention and key_query_shared_bottleneck are exclusive: "
            "queries and keys come either from the input bottleneck or from a shared one"
        )


# --------------------------------------------------------------------- presets
_MOBILEBERT = MobileBertConfig(
    vocab_size=30522,
    hidden_size=512,
    num_hidden_layers=24,
    num_attention_heads=4,
    intermediate_size=512,
    hidden_act="relu",
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.1,
    max_position_embeddings=512,
    type_vocab_size=2,
    initializer_range=0.02,
    embedding_size=128,
    trigram_input=True,
    use_bottleneck=True,
    intra_bottleneck_size=128,
    key_query_shared_bottleneck=True,
    num_feedforward_networks=4,
    normalization_type="no_norm",
    classifier_activation=False,
)

_TINY_TEACHER = MobileBertConfig(
    vocab_size=8192,
    hidden_size=128,
    num_hidden_layers=4,
    num_attention_heads=4,
    intermediate_size=512,
    hidden_act="gelu",
    hidden_dropout_prob=0.1,
    attention_probs_dropout_prob=0.1,
    max_position_embeddings=512,
    type_vocab_size=2,
    embedding_size=32,
    trigram_input=True,
    use_bottleneck=True,
    intra_bottleneck_size=256,
    num_feedforward_networks=1,
    normalization_type="layer_norm",
    classifier_activation=True,
)

PRESETS: dict[str, MobileBertConfig] = {
    # The released uncased_L-24_H-128_B-512_A-4_F-4_OPT checkpoint.
    "mobilebert": _MOBILEBERT,
    # uncased_L-24_H-128_B-512_A-4_F-2_tiny_OPT: attention on the bottleneck, 2 FFNs.
    "mobilebert_tiny": _MOBILEBERT.replace(
        key_query_shared_bottleneck=False,
        use_bottleneck_attention=True,
        num_feedforward_networks=2,
    ),
    # IB-BERT_LARGE, the teacher (uncased_L-24_H-1024_B-512_A-4).
    "ibbert_large": _MOBILEBERT.replace(
        hidden_act="gelu",
        hidden_dropout_prob=0.1,
        intermediate_size=4096,
        intra_bottleneck_size=1024,
        key_query_shared_bottleneck=False,
        num_feedforward_networks=1,
        normalization_type="layer_norm",
        classifier_activation=True,
    ),
    # MobileBERT w/o OPT: LayerNorm + gelu (paper Table 7, first row).
    "mobilebert_no_opt": _MOBILEBERT.replace(hidden_act="gelu", normalization_type="layer_norm"),
    "bert_base": MobileBertConfig(
        vocab_size=30522,
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
        type_vocab_size=2,
    ),
    # Laptop scale: a teacher/student pair with equal inter-block width H = 128, the
    # shapes `bench distill` times against tf-models (experiments/tf_models_anchor/),
    # which widens the embedding to E = 64 (the distillation benchmark's problem).
    "tiny_teacher": _TINY_TEACHER,
    "tiny_student": _TINY_TEACHER.replace(
        intermediate_size=128,
        hidden_act="relu",
        hidden_dropout_prob=0.0,
        intra_bottleneck_size=32,
        key_query_shared_bottleneck=True,
        num_feedforward_networks=4,
        normalization_type="no_norm",
        classifier_activation=False,
    ),
    # The BERT-architecture baseline at the student's size: a plain post-LN BERT
    # (no trigram, no bottleneck, LayerNorm + gelu, one FFN, tanh pooler) with the
    # student's depth, heads and vocabulary, width 48: 558,256 encoder parameters
    # against tiny_student's 556,160 (70% of them in its 8192 x 48 token table).
    "tiny_bert": MobileBertConfig(
        vocab_size=8192,
        hidden_size=48,
        num_hidden_layers=4,
        num_attention_heads=4,
        intermediate_size=256,
        type_vocab_size=2,
    ),
}


def get_preset(name: str) -> MobileBertConfig:
    """The preset called `name`; the error lists the known names."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; known presets: {sorted(PRESETS)}") from None
