"""`python -m mbert_lib reproduce`: every step of the paper at laptop scale, resumable."""

import os

from mbert_lib.cli import CommandError
from mbert_lib.cli._args import add_recipe_argument

HELP = (
    "run the whole reduced-size pipeline (data -> teacher -> transfer -> fine-tuning -> "
    "TFLite -> report); finished steps are skipped, a killed run resumes"
)


def add_arguments(parser) -> None:
    add_recipe_argument(
        parser,
        help="laptop (tens of minutes on 2 cores), smoke (minutes, tiny) or attention_lab "
        "(attention transfer on a generated induction task, minutes); default: %(default)s",
    )
    parser.add_argument(
        "--data-dir",
        "--data_dir",
        dest="data_dir",
        default=None,
        help="local data in the original layouts (WikiText-2, GLUE SST-2), e.g. "
        "../shared/data; default: $MBERT_DATA_DIR, else the offline "
        "builtin corpus",
    )
    parser.add_argument("--out", default=None, help="output directory (default: runs/<recipe>)")
    parser.add_argument(
        "--steps",
        default=None,
        help="comma-separated step names to run (and what they need); "
        "default: all but the optional ones (the rows only Tables 8 and 9 use, latency, "
        "distill_seeds; the run lists them at its end)",
    )
    parser.add_argument(
        "--teacher",
        default=None,
        choices=["shipped", "trained"],
        help="shipped: the teacher in teachers/laptop_ibbert, pre-trained for hours, "
        "with its own vocabulary; trained: pre-train one in the run (the recipe's "
        "teacher step); default: the recipe's (shipped)",
    )
    parser.add_argument(
        "--mixed_precision",
        default="float32",
        choices=["float32", "bfloat16"],
        help="train every step in bfloat16 (about 1.2x faster where the CPU computes "
        "bfloat16 natively: AVX512-BF16, AMX; refused elsewhere); default: %(default)s",
    )


def run(args) -> int:

    # on use: building the parser (--help) must not load TensorFlow
    from mbert_lib.pipeline import STEPS, make_context, run_steps, summary_table
    from mbert_lib.pipeline.registry import own_steps

    if args.out is not None and os.path.exists(args.out) and not os.path.isdir(args.out):
        raise CommandError(f"--out {args.out} is a file; expected a directory for the run")
    only = None
    if args.steps is not None:
        only = [s.strip() for s in args.steps.split(",") if s.strip()]
        if not only:
            raise CommandError("--steps names no step (leave it out to run every step)")
    try:
        ctx = make_context(
            args.recipe,
            args.out,
            args.data_dir,
            mixed_precision=args.mixed_precision,
            teacher=args.teacher,
        )
    except ValueError as e:
        raise CommandError(str(e)) from None
    reproduction = "teacher" in ctx.settings
    ctx.log(
        f"reproduce: recipe {args.recipe}, output {ctx.out_dir}"
        + (f", data {ctx.data_dir or 'builtin (offline default)'}" if reproduction else "")
        + (f", teacher {ctx.settings['teacher']['source']}" if reproduction else "")
        + (f", {args.mixed_precision}" if args.mixed_precision != "float32" else "")
    )
    steps = own_steps(args.recipe) or STEPS
    records: list[dict] = []
    try:
        run_steps(steps, ctx, only, records=records)
    except BaseException:
        if records:
            ctx.log(
                "\n" + summary_table(records) + "\nthe run stopped; run the same command "
                "again to resume (finished steps are skipped)"
            )
        raise
    ctx.log("\n" + summary_table(records))
    left_out = [s.name for s in steps if s.optional and not (only and s.name in only)]
    if left_out:
        ctx.log(
            f"optional steps not run: {', '.join(left_out)} (add them with --steps "
            f"{','.join(left_out)},report)"
        )
    return 0
