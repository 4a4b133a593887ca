"""`python -m mbert_lib bench latency`: TFLite latency of MobileBERT vs BERT_BASE (+ Table 7).

With --anchor_python, tensorflow/models' MobileBERT encoder, built in its own venv and
converted by our converter settings, is timed in the same run against ours
(mbert_lib.bench.latency_anchor): `--rounds` rounds of all cases interleaved, and the
per-round latency ratios ours / tf-models with their median.
"""

import json
import os
import tempfile

from mbert_lib import atomic
from mbert_lib.cli import CommandError
from mbert_lib.cli._args import check_seq_length, nonnegative_int, output_file, positive_int

HELP = (
    "TFLite latency and size of MobileBERT vs BERT_BASE (seq 128, batch 1, 1 and 2 "
    "threads) and the Table 7 NoNorm/relu grid, or ours against tf-models' encoder; JSON out"
)
DEFAULT_ROUNDS = 3


def add_arguments(parser) -> None:
    parser.add_argument(
        "--json", required=True, type=output_file, help="where to write the list of records"
    )
    parser.add_argument(
        "--models",
        default=None,
        help="comma-separated: mobilebert, bert_base, tiny_mobilebert, "
        "tiny_bert, or tiny (both tiny ones); default: mobilebert,bert_base "
        "(with --anchor_python: mobilebert)",
    )
    parser.add_argument(
        "--precisions",
        default="fp32,dynamic_int8",
        help="comma-separated precisions per model; default: %(default)s",
    )
    parser.add_argument("--threads", default="1,2", help="comma-separated; default: %(default)s")
    parser.add_argument("--seq_length", type=positive_int, default=128)
    parser.add_argument(
        "--repeats",
        type=positive_int,
        default=30,
        help="timed invocations per case (median reported); default: %(default)s",
    )
    parser.add_argument("--warmup", type=nonnegative_int, default=5)
    parser.add_argument(
        "--skip_table7", action="store_true", help="skip the LayerNorm/NoNorm x gelu/relu grid"
    )
    parser.add_argument(
        "--onnxruntime",
        action="store_true",
        help="also export each fp32 and dynamic_int8 encoder through tf2onnx and time it "
        "with ONNX Runtime in the same interleaved rounds (requirements-clients.txt)",
    )
    parser.add_argument(
        "--anchor_python",
        help="Python of the tf-models venv (experiments/tf_models_anchor/README.md): "
        "time tf-models' MobileBERT encoder against ours instead, same run",
    )
    parser.add_argument(
        "--rounds",
        type=positive_int,
        default=None,
        help=f"with --anchor_python: rounds of every case interleaved (default {DEFAULT_ROUNDS})",
    )
    parser.add_argument(
        "--workdir",
        default=None,
        help="where the .tflite files go; an export already there (same "
        "config, precision, seq_length) is reused; default: "
        "<tmp>/mbert_latency",
    )


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def run(args) -> int:

    # on use: building the parser (--help) must not load TensorFlow
    from mbert_lib.bench import TimingPlan, tflite_latency, write_json

    if args.models is None:
        args.models = "mobilebert" if args.anchor_python else "mobilebert,bert_base"
    models = tflite_latency.expand_models(_split(args.models))
    precisions = _split(args.precisions)
    bad = [p for p in precisions if p not in ("fp32", "dynamic_int8", "float16")]
    if bad:
        raise CommandError(
            f"--precisions: {bad} not supported here; choose from "
            "fp32, dynamic_int8, float16 (int8 needs calibration data)"
        )
    try:
        threads = [int(t) for t in _split(args.threads)]
    except ValueError:
        raise CommandError(
            f"--threads must be comma-separated integers, got {args.threads!r}"
        ) from None
    if not threads or min(threads) < 1:
        raise CommandError(f"--threads must be positive, got {args.threads!r}")
    check_seq_length(args.seq_length, {m: tflite_latency.MODELS[m][0] for m in models})
    if args.onnxruntime:
        # on use: building the parser (--help) must not load TensorFlow
        from mbert_lib.export.onnx import require_onnx

        try:
            require_onnx()
        except ModuleNotFoundError as e:
            raise CommandError(f"--onnxruntime: {e}") from None
        if args.anchor_python is not None:
            raise CommandError("--onnxruntime times our encoders; leave out --anchor_python")
    if args.anchor_python is None and args.rounds is not None:
        raise CommandError("--rounds needs --anchor_python (rounds time ours and the anchor)")
    workdir = args.workdir or os.path.join(tempfile.gettempdir(), "mbert_latency")
    if args.anchor_python is not None:
        return _run_with_anchor(args, models, precisions, threads, workdir)
    variant_list = tflite_latency.variants(models, precisions, table7=not args.skip_table7)
    os.makedirs(workdir, exist_ok=True)
    records = tflite_latency.measure(
        variant_list,
        workdir,
        args.seq_length,
        threads,
        TimingPlan(args.repeats, args.warmup),
        onnxruntime=args.onnxruntime,
    )
    write_json(records, args.json)
    print(tflite_latency.format_report(records))
    print(f"wrote {len(records)} records to {args.json}")
    return 0


def _run_with_anchor(args, models, precisions, threads, workdir) -> int:
    # on use: building the parser (--help) must not load TensorFlow
    from mbert_lib.bench import TimingPlan, latency_anchor

    if len(models) != 1:
        raise CommandError(
            f"--anchor_python compares one model, got --models {args.models!r} "
            "(e.g. --models mobilebert)"
        )
    plan = latency_anchor.ComparisonPlan(
        models[0],
        precisions,
        threads,
        args.seq_length,
        DEFAULT_ROUNDS if args.rounds is None else args.rounds,
        TimingPlan(args.repeats, args.warmup),
    )
    result = latency_anchor.run_comparison(args.anchor_python, plan, workdir)
    atomic.write_text(args.json, json.dumps(result, indent=2, allow_nan=False) + "\n")
    print(latency_anchor.format_comparison(result["comparison"]))
    print(f"wrote {args.json}")
    return 0
