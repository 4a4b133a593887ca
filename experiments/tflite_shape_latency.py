"""What an open input shape costs: MobileBERT's TFLite latency, fixed [1, T] vs resizable.

    python experiments/tflite_shape_latency.py [--seq_length 128] [--repeats 30]
        [--out results/tflite_shape_latency.json]

The same random-weight MobileBERT encoder is exported twice per precision, once
with the fixed shape [1, T] (the default: shapes are constants the converter
folds) and once with `dynamic_shape=True` ([-1, -1]); the dynamic file is then
resized to [1, T]. All cases are timed interleaved, round by round, with the
LiteRT interpreter (XNNPACK) at 1 and 2 threads; the JSON holds the medians,
each ratio dynamic / fixed measured in this run, the op counts of both graphs
and the hardware.
"""

import argparse
import json
import os
import tempfile

import tf_keras

from mbert_lib.bench.timing import interleaved_timings
from mbert_lib.config import get_preset
from mbert_lib.export import tflite
from mbert_lib.export.interpreter import TFLiteModel
from mbert_lib.export.representative import random_features
from mbert_lib.hardware import cpu_info
from mbert_lib.models import build_encoder

PRECISIONS = ("fp32", "dynamic_int8")
THREADS = (1, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--out", default="results/tflite_shape_latency.json")
    args = parser.parse_args()

    tf_keras.utils.set_random_seed(0)
    config = get_preset("mobilebert")
    encoder = build_encoder(config, args.seq_length)
    features = random_features(1, args.seq_length, config.vocab_size, pad_fraction=0.0)
    runners, ops = {}, {}
    with tempfile.TemporaryDirectory() as workdir:
        for precision in PRECISIONS:
            for shape in ("fixed", "dynamic"):
                path = os.path.join(workdir, f"{precision}_{shape}.tflite")
                print(f"export {precision} {shape} ...", flush=True)
                tflite.export_tflite(
                    encoder, path, precision, args.seq_length, dynamic_shape=shape == "dynamic"
                )
                for threads in THREADS:
                    model = TFLiteModel(path, num_threads=threads)
                    model(features)  # resizes the dynamic one to [1, T]
                    runners[f"{precision}/{shape}/{threads}"] = lambda m=model: m.runner(**features)
                    ops[f"{precision}/{shape}"] = dict(sorted(model.op_counts().items()))
        print(f"timing {len(runners)} cases, {args.repeats} rounds ...", flush=True)
        timings = interleaved_timings(runners, repeats=args.repeats, warmup=args.warmup)
    rows = []
    for precision in PRECISIONS:
        for threads in THREADS:
            fixed = timings[f"{precision}/fixed/{threads}"].median_ms
            dynamic = timings[f"{precision}/dynamic/{threads}"].median_ms
            rows.append(
                {
                    "precision": precision,
                    "threads": threads,
                    "fixed_median_ms": round(fixed, 2),
                    "dynamic_median_ms": round(dynamic, 2),
                    "dynamic_over_fixed": round(dynamic / fixed, 3),
                }
            )
            print(
                f"{precision:13s} {threads} thread(s): fixed {fixed:7.2f} ms, "
                f"dynamic {dynamic:7.2f} ms, ratio {dynamic / fixed:.3f}"
            )
    result = {
        "model": "mobilebert (random weights)",
        "seq_length": args.seq_length,
        "batch_size": 1,
        "repeats": args.repeats,
        "rows": rows,
        "op_counts": ops,
        "hardware": cpu_info(),
        "load_1min_end": round(os.getloadavg()[0], 2),
        "command": "python experiments/tflite_shape_latency.py",
    }
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
