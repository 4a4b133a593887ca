"""Keras layers of MobileBERT, one idea per file."""

from mbert_lib.layers.attention import HeadMerge, HeadProjection, MultiHeadAttention
from mbert_lib.layers.dense import Dense
from mbert_lib.layers.dropout import Dropout
from mbert_lib.layers.embedding import MobileBertEmbedding, trigram_concat
from mbert_lib.layers.ffn import FeedForward
from mbert_lib.layers.heads import ClassificationHead, MaskedLMHead, NextSentenceHead
from mbert_lib.layers.layer_norm import LayerNorm
from mbert_lib.layers.nonorm import NoNorm, make_norm
from mbert_lib.layers.transformer import MobileBertTransformer, block_kwargs

__all__ = [
    "HeadMerge", "HeadProjection", "MultiHeadAttention", "Dense", "Dropout", "LayerNorm",
    "MobileBertEmbedding", "trigram_concat", "FeedForward", "ClassificationHead",
    "MaskedLMHead", "NextSentenceHead", "NoNorm", "make_norm", "MobileBertTransformer",
    "block_kwargs",
]
