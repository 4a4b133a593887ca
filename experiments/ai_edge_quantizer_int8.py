"""Full-integer int8 by ai-edge-quantizer beside the converter's: accurate, and fast?

    python experiments/ai_edge_quantizer_int8.py [--run runs/laptop]
        [--out results/ai_edge_quantizer_int8.json]

The converter's full-integer int8 file runs slower than dynamic-range int8, because
LiteRT's XNNPACK delegate has no int8 kernel for BatchMatMul and softmax
(docs/compression.md). This script asks whether Google's other quantizer,
`ai-edge-quantizer` (`mbert_lib.export.aeq`), does better. For each seed's dense
fine-tuned classifier of the compress step it writes three files, all calibrated on the
same `--calibration_examples` training examples as the step's `int8`:

    aeq_int8                    static_wi8_ai8 on the fp32 file with the bounded mask
    aeq_int8_float_attention    the same with BATCH_MATMUL and SOFTMAX kept in float
    aeq_int8_model_mask         static_wi8_ai8 on the step's own fp32 file (−1e9 mask)

It measures each one's dev accuracy through LiteRT beside the step's fp32 file, and times
seed 0's files with the step's fp32, dynamic int8 and full int8 files (and the
converter's float-attention file where `experiments/selective_int8.py` left it) at
batch 1 and one thread, round-robin, in `--rounds` rounds of `--repeats` calls. For each
timed file it counts the XNNPACK partitions and the ops that run on int8 inputs.

Needs a finished `compress` step in `--run`.
"""

import argparse
import collections
import os

import numpy as np

from mbert_lib.bench import write_json
from mbert_lib.bench.file_latency import latency_fields, time_files
from mbert_lib.checkpoints import load_classifier
from mbert_lib.export import aeq
from mbert_lib.export.evaluate import accuracy
from mbert_lib.export.interpreter import TFLiteModel
from mbert_lib.paired import paired_difference
from mbert_lib.pipeline.steps_compress import run_task, seed_runs
from mbert_lib.pipeline.steps_export import calibration_features

FLOAT_ATTENTION = ("BATCH_MATMUL", "SOFTMAX")


def int8_ops(model: TFLiteModel) -> dict[str, int]:
    """{op name: how many of its kind read an int8 first input}."""
    tensors = {t["index"]: t for t in model.interpreter.get_tensor_details()}
    counts = collections.Counter(
        op["op_name"]
        for op in model.interpreter._get_ops_details()
        if op["inputs"].size
        and op["inputs"][0] >= 0
        and tensors[op["inputs"][0]]["dtype"] == np.int8
    )
    return dict(sorted(counts.items()))


def quantized_files(run_dir, experiment, data, files, seed, examples) -> dict[str, str]:
    """Writes the seed's three ai-edge-quantizer files; {name: path}."""
    calibration = calibration_features(data.train.features, examples, 0)
    model = load_classifier(run_dir)
    seq_length = experiment.task.seq_length
    with open(os.path.join(files, f"sparsity_0_seed{seed}_fp32.tflite"), "rb") as f:
        own_mask = f.read()
    flatbuffers = {
        "aeq_int8": aeq.convert_static_int8(model, calibration, seq_length),
        "aeq_int8_float_attention": aeq.convert_static_int8(
            model, calibration, seq_length, FLOAT_ATTENTION
        ),
        "aeq_int8_model_mask": aeq.quantize_static_int8(own_mask, calibration),
    }
    paths = {}
    for name, flatbuffer in flatbuffers.items():
        paths[name] = os.path.join(files, f"sparsity_0_seed{seed}_{name}.tflite")
        with open(paths[name], "wb") as f:
            f.write(flatbuffer)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", default="runs/laptop")
    parser.add_argument("--out", default="results/ai_edge_quantizer_int8.json")
    parser.add_argument("--calibration_examples", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    step = os.path.join(args.run, "compress")
    files = os.path.join(step, "tflite")
    dense_runs = seed_runs(step, "sparsity_0")
    seeds = sorted(dense_runs)
    if not seeds:
        raise SystemExit(f"{step} has no finished compress step: run --steps compress first")
    loaded, accuracies, example, written = {}, collections.defaultdict(list), None, {}
    for seed in seeds:
        run_dir = dense_runs[seed]
        experiment, data = run_task(run_dir, loaded)
        written[seed] = quantized_files(
            run_dir, experiment, data, files, seed, args.calibration_examples
        )
        paths = {"fp32": os.path.join(files, f"sparsity_0_seed{seed}_fp32.tflite")}
        for name, path in {**paths, **written[seed]}.items():
            logits = TFLiteModel(path, num_threads=2).predict(data.dev.features)["logits"]
            accuracies[name].append(accuracy(logits, data.dev.labels))
        print(f"seed {seed}: " + ", ".join(f"{k} {v[-1]:.4f}" for k, v in accuracies.items()))
        if example is None:
            example = {k: np.asarray(v[:1], np.int32) for k, v in data.dev.features.items()}
    timed = {
        "fp32": "sparsity_0_seed0_fp32.tflite",
        "dynamic_int8": "sparsity_0_seed0_dynamic_int8.tflite",
        "full_int8": "sparsity_0_seed0_int8.tflite",
        "int8_float_attention": "sparsity_0_seed0_int8_float_attention.tflite",
    }
    timed = {k: os.path.join(files, v) for k, v in timed.items()}
    timed = {k: v for k, v in timed.items() if os.path.isfile(v)}
    timed.update({k: v for k, v in written[seeds[0]].items() if k != "aeq_int8_model_mask"})
    medians, models = time_files(timed, example, args.rounds, args.repeats)
    structure = {  # LiteRT applies XNNPACK at the first call: one DELEGATE node per partition
        name: {
            "xnnpack_partitions": model.op_counts().get("DELEGATE", 0),
            "ops_on_int8_inputs": int8_ops(TFLiteModel(timed[name], num_threads=1)),
        }
        for name, model in models.items()
    }
    record = {
        "seeds": seeds,
        "calibration_examples": args.calibration_examples,
        "accuracy": dict(accuracies),
        "vs_fp32": {
            name: paired_difference(values, accuracies["fp32"]).to_dict()
            for name, values in accuracies.items()
            if name != "fp32"
        },
        "structure": structure,
        **latency_fields(medians, timed, args.rounds, args.repeats),
    }
    write_json([record], args.out)
    for name in timed:
        print(
            f"{name:26s} {medians[name]:.4f} ms  {record['latency_vs_fp32'][name]:.2f}x fp32  "
            f"{record['latency_vs_dynamic_int8'][name]:.2f}x dynamic int8  "
            f"{structure[name]['xnnpack_partitions']} partitions"
        )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
