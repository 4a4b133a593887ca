"""`python -m mbert_lib bundle write`: the compact bundle of a finished run's trained steps."""

from mbert_lib.cli._args import add_recipe_argument

HELP = (
    "pack a finished run's teacher, PKT student, its ablations without AT and without PD "
    "and the transfer summary, with the records of the other Table 8/9 rows and their "
    "seeds, into an xz bundle (+ .sha256) that notebooks install instead of training"
)


def add_arguments(parser) -> None:
    add_recipe_argument(parser, help="the run's recipe (default: %(default)s)")
    parser.add_argument("--run", default=None, help="the run directory (default: runs/<recipe>)")
    parser.add_argument(
        "--data-dir",
        "--data_dir",
        dest="data_dir",
        default=None,
        help="the data the run used (default: $MBERT_DATA_DIR, else builtin)",
    )
    parser.add_argument(
        "--out", default=None, help="the bundle to write (default: bundles/laptop.tar.xz)"
    )


def run(args) -> int:
    # on use: building the parser (--help) must not load TensorFlow
    from mbert_lib.pipeline import make_context
    from mbert_lib.pipeline.bundle import DEFAULT_BUNDLE, write_bundle

    ctx = make_context(args.recipe, args.run, args.data_dir)
    write_bundle(ctx, args.out or DEFAULT_BUNDLE)
    return 0
