"""Where a TFLite encoder's time goes: op counts, XNNPACK delegation, kernel profile.

    python experiments/tflite_op_profile.py --tflite ours_fp32=A.tflite \
        --tflite tf_models_fp32=B.tflite [--threads 1] [--seconds 8] \
        [--out results/tflite_op_profile.json]

For each file, in one run:

- the ops of the converted graph and the number of XNNPACK partitions once the delegate
  is applied (one partition: the whole graph runs in XNNPACK but for the ops around it);
- a sampling profile of `--seconds` of back-to-back invocations (`perf record -e
  cpu-clock`, Linux's perf, in a child process at `--threads` threads): the share of
  samples per kernel symbol (XNNPACK's micro-kernels keep their names in LiteRT's
  library), grouped into GEMM (FULLY_CONNECTED and BATCH_MATMUL), transpose, softmax,
  element-wise, reductions, copies, the interpreter's own kernels and the rest.

The JSON holds per file: op counts, partitions, invocations per second under the
profiler, the share of samples in XNNPACK's kernels, the category shares and the top 25
symbols, with the hardware. Needs
`perf` (Debian: linux-perf); samples are CPU time, so shares at 1 thread are the
clearest (more threads add the thread pool's spinning).
"""

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

from mbert_lib.export.interpreter import TFLiteModel
from mbert_lib.hardware import cpu_info

# First match wins: (category, pattern on the symbol name).
CATEGORIES = (
    ("transpose", re.compile(r"transpose", re.I)),
    ("gemm", re.compile(r"gemm|gemv|fully_connected|batch_matrix_multiply|packw|pack_lh", re.I)),
    ("softmax", re.compile(r"expminusmax|softmax|rmax|raddexp", re.I)),
    ("reduce", re.compile(r"rsum|reduce|rdsum|mean", re.I)),
    (
        "elementwise",
        re.compile(
            r"vadd|vmul|vsub|vdiv|vsqr|vrsqrt|vbinary|vunary|vclamp|vrelu|vgelu|verf|vcvt|vtanh|vlrelu|vmax|vmin|vcopysign|vsqrt",
            re.I,
        ),
    ),
    ("copy", re.compile(r"memcpy|memmove|memset|copy", re.I)),
    ("quantize", re.compile(r"quantiz|qd8|qs8|qu8", re.I)),
    ("interpreter kernels", re.compile(r"tflite::ops|tflite::optimized_ops|tflite::reference_ops")),
    ("thread pool", re.compile(r"pthreadpool|thread_main|futex|sched_yield", re.I)),
)
RUNNER = """
import os, sys, time
import numpy as np
from ai_edge_litert.interpreter import Interpreter
path, threads, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
interpreter = Interpreter(model_path=path, num_threads=threads)
runner = interpreter.get_signature_runner()
inputs = {}
for name, d in runner.get_input_details().items():
    inputs[name] = np.ones(d["shape"], np.int32)
for _ in range(3):
    runner(**inputs)
n, start = 0, time.perf_counter()
while time.perf_counter() - start < seconds:
    runner(**inputs)
    n += 1
print(n / (time.perf_counter() - start))
"""


def category(symbol: str) -> str:
    for name, pattern in CATEGORIES:
        if pattern.search(symbol):
            return name
    return "other"


def graph(path: str) -> dict:
    """Op counts of the converted graph; XNNPACK partitions once the delegate is applied
    (LiteRT applies it at the first invocation; each partition adds a DELEGATE node)."""
    model = TFLiteModel(path)
    ops = model.op_counts()
    model.runner(**{name: np.ones(shape, np.int32) for name, shape in _input_shapes(model)})
    return {
        "ops": sum(ops.values()),
        "op_counts": dict(ops.most_common()),
        "xnnpack_partitions": model.op_counts().get("DELEGATE", 0),
    }


def _input_shapes(model: TFLiteModel):
    return [(name, d["shape"]) for name, d in model.runner.get_input_details().items()]


def profile(path: str, threads: int, seconds: float) -> dict:
    """Sampled kernel profile of back-to-back invocations in a child process."""
    with tempfile.TemporaryDirectory(prefix="mbert_perf_") as tmp:
        data = os.path.join(tmp, "perf.data")
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}  # no idle BLAS threads in the profile
        record = subprocess.run(
            [
                "perf",
                "record",
                "-e",
                "cpu-clock",
                "-F",
                "2000",
                "-o",
                data,
                "--",
                sys.executable,
                "-c",
                RUNNER,
                path,
                str(threads),
                str(seconds),
            ],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        per_second = float(record.stdout.strip().splitlines()[-1])
        report = subprocess.run(
            [
                "perf",
                "report",
                "-i",
                data,
                "--stdio",
                "--no-children",
                "--sort",
                "symbol",
                "--percent-limit",
                "0.01",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    symbols = []
    for line in report.splitlines():
        match = re.match(r"\s+([\d.]+)%\s+\[[.k]\]\s+(.+?)[\s-]*$", line)
        if match:
            symbols.append((match.group(2), float(match.group(1))))
    shares = collections.Counter()
    for symbol, share in symbols:
        shares[category(symbol)] += share
    xnnpack = sum(share for symbol, share in symbols if symbol.startswith("xnn_"))
    return {
        "invocations_per_second": round(per_second, 2),
        "xnnpack_kernel_percent": round(xnnpack, 2),
        "category_percent": {k: round(v, 2) for k, v in shares.most_common()},
        "top_symbols": [{"symbol": s, "percent": p} for s, p in symbols[:25]],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tflite", action="append", required=True, help="NAME=PATH, repeatable")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--out", default="results/tflite_op_profile.json")
    args = parser.parse_args()
    if shutil.which("perf") is None:
        sys.exit("perf not found: install Linux's perf (Debian: apt-get install linux-perf)")
    files = dict(item.split("=", 1) for item in args.tflite)
    result = {
        "hardware": cpu_info(),
        "threads": args.threads,
        "seconds": args.seconds,
        "models": {},
    }
    for name, path in files.items():
        print(f"{name}: {path}", flush=True)
        result["models"][name] = {**graph(path), **profile(path, args.threads, args.seconds)}
        m = result["models"][name]
        print(
            f"  {m['ops']} ops, {m['xnnpack_partitions']} XNNPACK partition(s), "
            f"{m['xnnpack_kernel_percent']:.1f}% of samples in XNNPACK kernels; "
            f"{m['invocations_per_second']}/s"
        )
        print("  " + ", ".join(f"{k} {v:.1f}%" for k, v in m["category_percent"].items()))
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
