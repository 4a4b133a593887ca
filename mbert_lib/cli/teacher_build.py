"""`python -m mbert_lib teacher build --data-dir DATA`: the teacher the project ships."""

from mbert_lib.cli import CommandError

HELP = (
    "pre-train the shipped IB-BERT teacher (experiments/pretrain_shipped_teacher.yaml, "
    "resumable; hours on 2 CPU cores) and pack it, float16, with its vocabulary and record, "
    "into teachers/laptop_ibbert/"
)


def add_arguments(parser) -> None:
    parser.add_argument(
        "--data-dir",
        "--data_dir",
        dest="data_dir",
        default=None,
        help="WikiText-2 + GLUE SST-2 in their original layout (default: $MBERT_DATA_DIR)",
    )
    parser.add_argument(
        "--out", default=None, help="where to pack it (default: teachers/laptop_ibbert)"
    )
    parser.add_argument(
        "--work_dir",
        default=None,
        help="the training run and its data cache (default: runs/shipped_teacher)",
    )
    parser.add_argument("--no_progress", action="store_true", help="hide the progress bar")


def run(args) -> int:
    # on use: building the parser (--help) must not load TensorFlow
    from mbert_lib.pipeline.core import data_dir_or_env

    data_dir = data_dir_or_env(args.data_dir)
    if data_dir is None:
        raise CommandError(
            "teacher build needs real text: pass --data-dir (WikiText-2 and GLUE SST-2 in "
            "their original layout) or set MBERT_DATA_DIR"
        )
    # on use: building the parser (--help) must not load TensorFlow
    from mbert_lib.pipeline import teacher_build

    teacher_build.build_shipped_teacher(
        data_dir,
        out_dir=args.out or teacher_build.SHIPPED_TEACHER_DIR,
        work_dir=args.work_dir or teacher_build.DEFAULT_WORK_DIR,
        show_progress=not args.no_progress,
    )
    return 0
