"""`python -m mbert_lib bench pretrain`: pre-training step throughput, with and without XLA."""

from mbert_lib.bench.timing import write_json
from mbert_lib.cli._args import (
    check_predictions,
    check_seq_length,
    nonnegative_int,
    output_file,
    positive_int,
)
from mbert_lib.config import get_preset

HELP = "measure pre-training (MLM + NSP) steps/s and tokens/s, jit_compile off vs on"


def add_arguments(parser) -> None:
    parser.add_argument("--preset", default="tiny_teacher", help="model preset")
    parser.add_argument("--seq_length", type=positive_int, default=128)
    parser.add_argument("--batch_size", type=positive_int, default=32)
    parser.add_argument("--max_predictions_per_seq", type=positive_int, default=20)
    parser.add_argument("--repeats", type=positive_int, default=50, help="timed steps per variant")
    parser.add_argument(
        "--warmup", type=nonnegative_int, default=5, help="untimed steps per variant"
    )
    parser.add_argument("--mixed_precision", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--json", type=output_file, help="write the records to this JSON file")


def run(args) -> int:
    # on use: building the parser (--help) must not load TensorFlow
    from mbert_lib.bench.pretrain import pretrain_step_throughput

    config = get_preset(args.preset)
    check_seq_length(args.seq_length, {args.preset: config})
    check_predictions(args)
    records = pretrain_step_throughput(
        config,
        args.seq_length,
        args.batch_size,
        args.max_predictions_per_seq,
        args.repeats,
        args.warmup,
        args.mixed_precision,
    )
    for r in records:
        r["preset"] = args.preset
        print(
            f"{args.preset} {r['variant']:<18} {r['median_step_ms']:8.1f} ms/step  "
            f"{r['steps_per_second']:6.2f} steps/s  {r['tokens_per_second']:9,.0f} tokens/s"
        )
    if args.json:
        write_json(records, args.json)
    return 0
