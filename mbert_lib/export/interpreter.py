"""Running exported models with the LiteRT interpreter (`ai_edge_litert`).

The interpreter applies the XNNPACK delegate by default on x86 and ARM
CPUs; `num_threads` sets its thread pool.
"""

from __future__ import annotations

import collections
import os
from collections.abc import Mapping

import numpy as np

from mbert_lib.export.representative import check_features
from mbert_lib.models import INPUT_NAMES


class TFLiteModel:
    """A .tflite model (path or bytes) run through its `serving_default` signature.

    `__call__` runs one batch of the exported shape; `predict` runs many
    examples, batch by batch, and stacks the outputs.
    """

    def __init__(self, model: str | os.PathLike | bytes, num_threads: int = 1):
        # on use: LiteRT's runtime loads when a model runs, after TensorFlow's
        from ai_edge_litert.interpreter import Interpreter

        if isinstance(model, (bytes, bytearray)):
            self.interpreter = Interpreter(model_content=bytes(model), num_threads=num_threads)
        else:
            if not os.path.isfile(model):
                raise FileNotFoundError(f"no TFLite model at {model}")
            self.interpreter = Interpreter(model_path=os.fspath(model), num_threads=num_threads)
        self.num_threads = num_threads
        self.runner = self.interpreter.get_signature_runner()
        inputs = self.runner.get_input_details()
        if sorted(inputs) != sorted(INPUT_NAMES):
            raise ValueError(f"model inputs are {sorted(inputs)}, expected {list(INPUT_NAMES)}")
        # [batch, T] as exported; None for a dimension left open (dynamic_shape)
        signature = inputs[INPUT_NAMES[0]].get("shape_signature", inputs[INPUT_NAMES[0]]["shape"])
        self.batch_size, self.seq_length = (int(s) if s > 0 else None for s in signature)
        outputs = self.runner.get_output_details()
        self.output_names = sorted(outputs)
        # {name: (scale, zero point)} of integer outputs (a static int8 file may end in int8)
        self.output_quantization = {
            name: detail["quantization"]
            for name, detail in outputs.items()
            if np.issubdtype(detail["dtype"], np.integer) and detail["quantization"][0] > 0
        }

    @property
    def input_shape(self) -> tuple[int | None, int | None]:
        return self.batch_size, self.seq_length

    def __call__(self, features: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """One batch: features [B, T] -> outputs (float copies: an int8 output is
        dequantized, x = s(q − z)). B and T must be the exported ones unless the model
        was exported with an open shape (resized here)."""
        arrays = {name: np.asarray(features[name], np.int32) for name in INPUT_NAMES}
        shape = arrays[INPUT_NAMES[0]].shape
        if any(fixed is not None and fixed != got for fixed, got in zip(self.input_shape, shape)):
            raise ValueError(
                f"inputs of shape {list(shape)}, but the model was exported for "
                f"{[d if d is not None else 'any' for d in self.input_shape]}; export it with "
                "--dynamic_shape (export_tflite(..., dynamic_shape=True)) to resize it"
            )
        outputs = {name: np.array(value) for name, value in self.runner(**arrays).items()}
        for name, (scale, zero_point) in self.output_quantization.items():
            outputs[name] = scale * (outputs[name].astype(np.float32) - zero_point)  # x ≈ s(q − z)
        return outputs

    def predict(
        self, features: Mapping[str, np.ndarray], batch_size: int = 32
    ) -> dict[str, np.ndarray]:
        """All n examples -> {output: [n, ...]}, in batches of the exported batch size (of
        `batch_size` for an open batch dimension); n must be a multiple of a fixed one."""
        n = check_features(features, self.seq_length or features[INPUT_NAMES[0]].shape[1])
        step = self.batch_size or batch_size
        if n % step:
            raise ValueError(f"{n} examples is not a multiple of the exported batch size {step}")
        parts = collections.defaultdict(list)
        for start in range(0, n, step):
            batch = {name: features[name][start : start + step] for name in INPUT_NAMES}
            for name, value in self(batch).items():
                parts[name].append(value)
        return {name: np.concatenate(values) for name, values in parts.items()}

    def op_counts(self) -> collections.Counter:
        """How often each op (FULLY_CONNECTED, BATCH_MATMUL, ...) occurs in the graph.

        Counts the model's own ops; a `DELEGATE` entry counts each partition
        handed to a delegate (XNNPACK), a second one means some op between
        them runs on the interpreter's own kernels.
        """
        return collections.Counter(op["op_name"] for op in self.interpreter._get_ops_details())
