"""`python -m mbert_lib bench distill`: distillation step throughput (layer-wise and PD)."""

HELP = "measure distillation steps/s and tokens/s (layer-wise FMT + AT, and PD)"


def add_arguments(parser) -> None:
    parser.add_argument("--teacher", default="tiny_teacher", help="teacher preset")
    parser.add_argument("--student", default="tiny_student", help="student preset")
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--max_predictions_per_seq", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=20, help="timed steps per variant")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps per variant")
    parser.add_argument("--mixed_precision", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--jit_compile", action="store_true", help="compile the step with XLA")
    parser.add_argument("--json", help="write the records to this JSON file")


def run(args) -> int:
    from mbert_lib.bench.distill import distill_step_throughput
    from mbert_lib.bench.timing import write_json
    from mbert_lib.config import get_preset

    records = distill_step_throughput(
        get_preset(args.teacher), get_preset(args.student), args.seq_length, args.batch_size,
        args.max_predictions_per_seq, args.repeats, args.warmup, args.mixed_precision,
        args.jit_compile)
    for r in records:
        r.update(teacher=args.teacher, student=args.student)
        print(f"{r['variant']:<17} {r['median_step_ms']:8.1f} ms/step  "
              f"{r['steps_per_second']:6.2f} steps/s  {r['tokens_per_second']:9,.0f} tokens/s  "
              f"{r['gflop_per_step']:5.1f} GFLOP/step = {r['gflop_per_second']:5.1f} GFLOP/s  "
              f"(tf-models anchor {r['tf_models_anchor_ms']:.0f} ms, another run)")
    if args.json:
        write_json(records, args.json)
    return 0
