"""`python -m mbert_lib bench latency`: TFLite latency of MobileBERT vs BERT_BASE (+ Table 7)."""

from mbert_lib.cli._args import check_seq_length, nonnegative_int, output_file, positive_int

HELP = (
    "TFLite latency and size of MobileBERT vs BERT_BASE (seq 128, batch 1, 1 and 2 "
    "threads) and the Table 7 NoNorm/relu grid; JSON records out"
)


def add_arguments(parser) -> None:
    parser.add_argument(
        "--json", required=True, type=output_file, help="where to write the list of records"
    )
    parser.add_argument(
        "--models",
        default="mobilebert,bert_base",
        help="comma-separated: mobilebert, bert_base, tiny_mobilebert, "
        "tiny_bert, or tiny (both tiny ones); default: %(default)s",
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
        "--workdir",
        default=None,
        help="where the .tflite files go; an export already there (same "
        "config, precision, seq_length) is reused; default: "
        "<tmp>/mbert_latency",
    )


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def run(args) -> int:
    import os
    import tempfile

    from mbert_lib.bench import tflite_latency, write_json
    from mbert_lib.cli import CommandError

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
    variant_list = tflite_latency.variants(models, precisions, table7=not args.skip_table7)
    workdir = args.workdir or os.path.join(tempfile.gettempdir(), "mbert_latency")
    os.makedirs(workdir, exist_ok=True)
    records = tflite_latency.measure(
        variant_list, workdir, args.seq_length, threads, args.repeats, args.warmup
    )
    write_json(records, args.json)
    print(tflite_latency.format_report(records))
    print(f"wrote {len(records)} records to {args.json}")
    return 0
