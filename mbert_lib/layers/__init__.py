"""Keras layers of MobileBERT, one paper idea per file; `fast/` holds the CPU-speed
versions of three stock Keras layers (Dense, Dropout, LayerNorm) that they use."""

from mbert_lib.layers.attention import HeadMerge, HeadProjection, MultiHeadAttention
from mbert_lib.layers.embedding import MobileBertEmbedding, trigram_concat
from mbert_lib.layers.fast import Dense, Dropout, LayerNorm
from mbert_lib.layers.ffn import FeedForward
from mbert_lib.layers.heads import ClassificationHead, MaskedLMHead, NextSentenceHead
from mbert_lib.layers.nonorm import NoNorm, make_norm
from mbert_lib.layers.transformer import MobileBertTransformer, block_kwargs

__all__ = [
    "HeadMerge",
    "HeadProjection",
    "MultiHeadAttention",
    "Dense",
    "Dropout",
    "LayerNorm",
    "MobileBertEmbedding",
    "trigram_concat",
    "FeedForward",
    "ClassificationHead",
    "MaskedLMHead",
    "NextSentenceHead",
    "NoNorm",
    "make_norm",
    "MobileBertTransformer",
    "block_kwargs",
]
