"""`python -m mbert_lib bundle install`: a bundle's trained steps into a run directory."""

from mbert_lib.cli._args import add_recipe_argument

HELP = (
    "check a bundle's sha256 and put its trained steps into a run directory (the data "
    "step runs first and must match the bundle's)"
)


def add_arguments(parser) -> None:
    parser.add_argument(
        "--bundle", default=None, help="the bundle (default: bundles/laptop.tar.xz)"
    )
    add_recipe_argument(parser, help="the run's recipe (default: %(default)s)")
    parser.add_argument("--out", default=None, help="the run directory (default: runs/<recipe>)")
    parser.add_argument(
        "--data-dir",
        "--data_dir",
        dest="data_dir",
        default=None,
        help="the data the bundle was made from, in the project's layout or the public "
        "releases' (default: $MBERT_DATA_DIR, else builtin; docs/bundle.md)",
    )


def run(args) -> int:
    # on use: building the parser (--help) must not load TensorFlow
    from mbert_lib.pipeline import make_context
    from mbert_lib.pipeline.bundle import DEFAULT_BUNDLE, install

    ctx = make_context(args.recipe, args.out, args.data_dir)
    done = install(args.bundle or DEFAULT_BUNDLE, ctx)
    if done.already_done:
        ctx.log(f"already done in {ctx.out_dir}: {', '.join(done.already_done)}")
    return 0
