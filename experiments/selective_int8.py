"""Post-training int8 with attention left in float: faster than dynamic-range int8?

    python experiments/selective_int8.py [--run runs/laptop] [--out results/selective_int8.json]

The compress step's full-integer int8 file spends most of its time in the interpreter's
reference kernels for int8 BatchMatMul and softmax (docs/compression.md). This script
converts each seed's dense fine-tuned classifier of the step again, post-training, with
the converter's selective quantization: every op int8 as in `int8`, except the ops
named in `--float_ops` (by default BATCH_MATMUL and SOFTMAX), which the converter's
`QuantizationDebugger` keeps in float (`denylisted_ops`;
`mbert_lib.export.tflite.convert_int8_float_attention`). For each seed it measures the
dev accuracy through LiteRT beside the step's fp32 file, and times seed 0's files
(fp32, dynamic int8, full int8, this one, the QAT file) at batch 1 and one thread,
round-robin, in `--rounds` separate rounds of `--repeats` calls.

Needs a finished `compress` step in `--run`.
"""

import argparse
import collections
import os

import numpy as np

from mbert_lib.bench import write_json
from mbert_lib.bench.file_latency import latency_fields, time_files
from mbert_lib.checkpoints import load_classifier
from mbert_lib.export import tflite
from mbert_lib.export.evaluate import accuracy
from mbert_lib.export.interpreter import TFLiteModel
from mbert_lib.export.representative import representative_dataset
from mbert_lib.paired import paired_difference
from mbert_lib.pipeline.steps_compress import run_task, seed_runs
from mbert_lib.pipeline.steps_export import calibration_features


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", default="runs/laptop")
    parser.add_argument("--out", default="results/selective_int8.json")
    parser.add_argument("--float_ops", default="BATCH_MATMUL,SOFTMAX")
    parser.add_argument("--calibration_examples", type=int, default=200)
    parser.add_argument("--mask_penalty", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    float_ops = args.float_ops.split(",")
    step = os.path.join(args.run, "compress")
    files = os.path.join(step, "tflite")
    dense_runs = seed_runs(step, "sparsity_0")
    seeds = sorted(dense_runs)
    if not seeds:
        raise SystemExit(f"{step} has no finished compress step: run --steps compress first")
    loaded, accuracies, example, selective_paths = {}, collections.defaultdict(list), None, {}
    for seed in seeds:
        run_dir = dense_runs[seed]
        experiment, data = run_task(run_dir, loaded)
        calibration = calibration_features(data.train.features, args.calibration_examples, 0)
        flatbuffer = tflite.convert_int8_float_attention(
            load_classifier(run_dir),
            representative_dataset(calibration, args.calibration_examples),
            experiment.task.seq_length,
            float_ops,
            args.mask_penalty,
        )
        path = os.path.join(files, f"sparsity_0_seed{seed}_int8_float_attention.tflite")
        with open(path, "wb") as f:
            f.write(flatbuffer)
        selective_paths[seed] = path
        for name, file in (
            ("fp32", os.path.join(files, f"sparsity_0_seed{seed}_fp32.tflite")),
            ("int8_float_attention", path),
        ):
            logits = TFLiteModel(file, num_threads=2).predict(data.dev.features)["logits"]
            accuracies[name].append(accuracy(logits, data.dev.labels))
        print(
            f"seed {seed}: fp32 {accuracies['fp32'][-1]:.4f}, "
            f"int8 with float attention {accuracies['int8_float_attention'][-1]:.4f}"
        )
        if example is None:
            example = {k: np.asarray(v[:1], np.int32) for k, v in data.dev.features.items()}
    timed = {
        "fp32": os.path.join(files, "sparsity_0_seed0_fp32.tflite"),
        "dynamic_int8": os.path.join(files, "sparsity_0_seed0_dynamic_int8.tflite"),
        "full_int8": os.path.join(files, "sparsity_0_seed0_int8.tflite"),
        "int8_float_attention": selective_paths[seeds[0]],
        "qat_int8": os.path.join(files, "qat_seed0_qat_int8.tflite"),
    }
    medians, _ = time_files(timed, example, args.rounds, args.repeats)
    ops = collections.Counter(
        op["op_name"]
        for op in TFLiteModel(selective_paths[seeds[0]]).interpreter._get_ops_details()
    )
    record = {
        "float_ops": float_ops,
        "seeds": seeds,
        "accuracy": dict(accuracies),
        "vs_fp32": paired_difference(
            accuracies["int8_float_attention"], accuracies["fp32"]
        ).to_dict(),
        "op_counts": dict(sorted(ops.items())),
        **latency_fields(medians, timed, args.rounds, args.repeats),
    }
    write_json([record], args.out)
    for name in timed:
        print(
            f"{name:22s} {medians[name]:.4f} ms  {record['latency_vs_fp32'][name]:.2f}x fp32  "
            f"{record['latency_vs_dynamic_int8'][name]:.2f}x dynamic int8"
        )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
