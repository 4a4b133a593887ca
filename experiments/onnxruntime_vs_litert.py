"""ONNX Runtime beside LiteRT on the same encoder: latency, size, error, profile.

    python experiments/onnxruntime_vs_litert.py [--model mobilebert] [--threads 1,2] \
        [--repeats 30] [--out results/onnxruntime_vs_litert.json]

In one run, the encoder (random weights from seed 0; latency does not depend on them) is
written as .tflite for LiteRT (XNNPACK) and through tf2onnx as .onnx for ONNX Runtime (CPU
provider), each at fp32 and dynamic int8, and all cases are timed in the same interleaved
rounds (`tflite_latency.measure`, what `bench latency --onnxruntime` runs). Then ONNX
Runtime profiles each .onnx at one thread: mean milliseconds per run by op type of the
graph it runs after its own fusions. The record holds the hardware, every case with its
error against Keras, the ratios ONNX Runtime / LiteRT and the profiles.
"""

import argparse
import os
import sys
import tempfile
import time

from mbert_lib.bench import tflite_latency
from mbert_lib.bench.timing import TimingPlan, write_json
from mbert_lib.export import onnx
from mbert_lib.export.representative import random_features
from mbert_lib.hardware import cpu_info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mobilebert", choices=sorted(tflite_latency.MODELS))
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--profile_runs", type=int, default=30)
    parser.add_argument(
        "--no_spinning",
        action="store_true",
        help="ONNX Runtime's threads sleep at once after a run instead of spinning",
    )
    parser.add_argument("--out", default="results/onnxruntime_vs_litert.json")
    args = parser.parse_args()
    onnx.require_onnx()
    threads = [int(t) for t in args.threads.split(",")]
    start = time.perf_counter()
    variants = tflite_latency.variants([args.model], onnx.ONNX_PRECISIONS, table7=False)
    with tempfile.TemporaryDirectory() as work:
        records = tflite_latency.measure(
            variants,
            work,
            args.seq_length,
            threads,
            TimingPlan(args.repeats, args.warmup),
            onnxruntime=True,
            onnxruntime_spinning=not args.no_spinning,
        )
        config = tflite_latency.MODELS[args.model][0]
        features = random_features(1, args.seq_length, config.vocab_size, pad_fraction=0.0)
        profiles = {
            r["precision"]: onnx.profile(r["onnx"], features, 1, args.profile_runs)
            for r in records
            if r["runtime"] == "onnxruntime" and r["threads"] == 1
        }
    for r in records:  # the files are gone: keep their names
        key = "onnx" if r["runtime"] == "onnxruntime" else "tflite"
        r[key] = os.path.basename(r[key])
    print(tflite_latency.format_report(records))
    write_json(
        [
            {
                "command": " ".join(
                    ["python", "experiments/onnxruntime_vs_litert.py", *sys.argv[1:]]
                ),
                "hardware": cpu_info(),
                "onnxruntime_spinning": not args.no_spinning,
                "seconds": round(time.perf_counter() - start, 1),
                "ratios": tflite_latency.runtime_ratios(records),
                "onnxruntime_profile_1_thread_ms": profiles,
                "records": records,
            }
        ],
        args.out,
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
