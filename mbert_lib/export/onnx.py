"""ONNX export (tf2onnx) and ONNX Runtime: the peer runtime a CPU server would try.

The encoder's serving function (the same graph `tflite.export_tflite` converts, shape
[batch_size, seq_length]) goes through `tf2onnx.convert.from_function` at opset 17.
Precisions:

    fp32          the converted graph as it is: equal to Keras up to float rounding.
    dynamic_int8  `onnxruntime.quantization.quantize_dynamic`: int8 weights of every
                  MatMul (per output channel), activations quantized on the fly
                  (DynamicQuantizeLinear then MatMulInteger), the counterpart of LiteRT's
                  dynamic range quantization; the word embedding's Gather reads a uint8
                  table.

Before either, `onnx_graph` rewrites what tf2onnx leaves that ONNX Runtime cannot run or
quantize (see there).

`OnnxModel` runs a file with ONNX Runtime's CPU provider, `num_threads` intra-op
threads and every graph optimization on; `profile` sums its per-node times by op type.

tf2onnx and onnxruntime are optional (requirements-clients.txt): every entry point
first calls `require_onnx`, which names what is missing before anything is written.
"""

from __future__ import annotations

import collections
import importlib.util
import json
import os
import tempfile
from pathlib import Path

import numpy as np
import tensorflow as tf

from mbert_lib.export.tflite import serving_function
from mbert_lib.layers.fast.layer_norm import unfused_layer_norms
from mbert_lib.models import INPUT_NAMES

ONNX_PRECISIONS = ("fp32", "dynamic_int8")
OPSET = 17
PACKAGES = ("tf2onnx", "onnx", "onnxruntime")


def require_onnx() -> None:
    """Raises ModuleNotFoundError naming the packages ONNX export and timing need."""
    missing = [name for name in PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise ModuleNotFoundError(
            f"ONNX Runtime is not installed (missing {', '.join(missing)}): "
            "pip install -r requirements-clients.txt -c constraints.txt"
        )


def export_onnx(
    model, path, precision: str = "fp32", seq_length: int = 128, batch_size: int = 1
) -> int:
    """Writes `model` (an encoder or classifier) as ONNX at `precision`; returns its bytes.
    The file appears whole or not at all."""
    require_onnx()
    if precision not in ONNX_PRECISIONS:
        raise ValueError(f"precision must be one of {ONNX_PRECISIONS}, got {precision!r}")
    # on use: tf2onnx, onnx and onnxruntime are optional (requirements-clients.txt)
    import onnx
    import tf2onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from mbert_lib.export import onnx_graph

    onnx_graph.register_erfc()
    with unfused_layer_norms(model):
        concrete = serving_function(model, seq_length, batch_size)
    spec = [tf.TensorSpec([batch_size, seq_length], tf.int32, name=n) for n in INPUT_NAMES]

    def positional(input_word_ids, input_mask, input_type_ids):
        return concrete(
            input_word_ids=input_word_ids, input_mask=input_mask, input_type_ids=input_type_ids
        )

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent) as work:
        fp32 = os.path.join(work, "fp32.onnx")
        graph, _ = tf2onnx.convert.from_function(
            tf.function(positional, autograph=False), input_signature=spec, opset=OPSET
        )
        onnx_graph.fold_constant_shapes(graph)
        written = fp32
        if precision == "dynamic_int8":
            onnx_graph.gemms_as_matmuls(graph)
        onnx.save(graph, fp32)
        if precision == "dynamic_int8":
            # tf2onnx leaves some MatMul outputs without a type that ONNX's shape inference
            # can recover (and ONNX Runtime's symbolic inference does not finish on this
            # graph): every float tensor here is float32, so say so
            written = os.path.join(work, "dynamic_int8.onnx")
            quantize_dynamic(
                fp32,
                written,
                weight_type=QuantType.QInt8,
                per_channel=True,
                extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
            )
        os.replace(written, path)  # one file system: the file appears whole
    return path.stat().st_size


class OnnxModel:
    """An ONNX file in an ONNX Runtime session on the CPU, `num_threads` intra-op threads.

    By default (ONNX Runtime's) the threads spin a while after each run, waiting for the
    next: faster back to back, but they hold the cores meanwhile. `spinning=False` lets
    them sleep at once."""

    def __init__(
        self,
        path,
        num_threads: int = 1,
        profile_prefix: str | None = None,
        spinning: bool = True,
    ):
        require_onnx()
        # on use: tf2onnx, onnx and onnxruntime are optional (requirements-clients.txt)
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = num_threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if not spinning:
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if profile_prefix is not None:
            options.enable_profiling = True
            options.profile_file_prefix = profile_prefix
        self.path = str(path)
        self.session = ort.InferenceSession(self.path, options, providers=["CPUExecutionProvider"])
        self.output_names = [o.name for o in self.session.get_outputs()]

    def runner(self, **features: np.ndarray) -> dict[str, np.ndarray]:
        """Outputs by name for int32 inputs named as `models.INPUT_NAMES`."""
        feed = {name: np.asarray(features[name], np.int32) for name in INPUT_NAMES}
        return dict(zip(self.output_names, self.session.run(None, feed)))

    def op_counts(self) -> dict[str, int]:
        """Nodes per op type in the file (before ONNX Runtime's own graph fusions)."""
        # on use: tf2onnx, onnx and onnxruntime are optional (requirements-clients.txt)
        import onnx

        return dict(collections.Counter(n.op_type for n in onnx.load(self.path).graph.node))


def profile(path, features: dict, num_threads: int = 1, runs: int = 20) -> dict[str, float]:
    """Mean milliseconds per run spent in each op type of ONNX Runtime's optimized graph
    (its fused nodes, e.g. MatMulIntegerToFloat, named as it runs them), largest first."""
    with tempfile.TemporaryDirectory() as work:
        model = OnnxModel(path, num_threads, profile_prefix=os.path.join(work, "ort"))
        for _ in range(runs):
            model.runner(**features)
        events = json.loads(Path(model.session.end_profiling()).read_text(encoding="utf-8"))
    total: collections.Counter = collections.Counter()
    for event in events:
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            total[event["args"]["op_name"]] += event["dur"] / 1e3 / runs
    return {op: round(ms, 4) for op, ms in total.most_common()}
