"""Running exported models with the LiteRT interpreter (`ai_edge_litert`).

The interpreter applies the XNNPACK delegate by default on x86 and ARM
CPUs; `num_threads` sets its thread pool.
"""

from __future__ import annotations

import collections
import os
from typing import Mapping

import numpy as np

from mbert_lib.export.representative import check_features
from mbert_lib.models import INPUT_NAMES


class TFLiteModel:
    """A .tflite model (path or bytes) run through its `serving_default` signature.

    `__call__` runs one batch of the exported shape; `predict` runs many
    examples, batch by batch, and stacks the outputs.
    """

    def __init__(self, model: str | os.PathLike | bytes, num_threads: int = 1):
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
        self.batch_size, self.seq_length = (int(s) for s in inputs[INPUT_NAMES[0]]["shape"])
        self.output_names = sorted(self.runner.get_output_details())

    def __call__(self, features: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """One batch: features [batch_size, T] -> outputs (copies)."""
        outputs = self.runner(**{name: np.asarray(features[name], np.int32)
                                 for name in INPUT_NAMES})
        return {name: np.array(value) for name, value in outputs.items()}

    def predict(self, features: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """All n examples -> {output: [n, ...]}; n must be a multiple of the batch size."""
        n = check_features(features, self.seq_length)
        if n % self.batch_size:
            raise ValueError(f"{n} examples is not a multiple of the exported batch size "
                             f"{self.batch_size}")
        parts = collections.defaultdict(list)
        for start in range(0, n, self.batch_size):
            batch = {name: features[name][start:start + self.batch_size] for name in INPUT_NAMES}
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
