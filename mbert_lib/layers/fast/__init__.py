"""CPU-speed stand-ins for three stock Keras layers: same weights, names and math.

    dense.Dense            tf_keras Dense with the product flattened to [B·T, D], so that
                           MatMul + BiasAdd + activation fuse into one oneDNN kernel
    dropout.Dropout        tf_keras Dropout with its mask drawn by XLA's Threefry generator
    layer_norm.LayerNorm   tf_keras LayerNormalization(axis=-1) with its formula run by XLA

None of them is a paper idea: the paper's layers (NoNorm, the trigram embedding,
bottlenecks, stacked FFNs, the heads) sit one level up, in `mbert_lib.layers`, and
use these in place of the Keras originals. Each is tested against the Keras layer
it replaces (tests/test_fused_layers.py); what each one bought in distillation
throughput, measured in one run against tensorflow/models' step, is in
docs/distillation_throughput.md.
"""

from mbert_lib.layers.fast.dense import Dense
from mbert_lib.layers.fast.dropout import Dropout
from mbert_lib.layers.fast.layer_norm import LayerNorm

__all__ = ["Dense", "Dropout", "LayerNorm"]
