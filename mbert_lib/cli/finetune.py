"""`python -m mbert_lib finetune --task sst2 --init_checkpoint DIR --model_dir DIR`."""

import json

from mbert_lib import strict_json
from mbert_lib.cli import CommandError
from mbert_lib.config_tree import apply_overrides, parse_overrides
from mbert_lib.experiment import load_experiment, to_yaml
from mbert_lib.experiment.finetune import FinetuneExperiment

HELP = (
    "fine-tune a pre-trained model directory on a GLUE task (or the offline "
    "builtin_shuffled task); prints the dev metrics as JSON"
)


def add_arguments(parser) -> None:
    parser.add_argument(
        "--task",
        default=None,
        help="sst2, cola, mrpc, rte, stsb, or builtin_shuffled (the offline "
        "stand-in, not GLUE); default: the config file's task.name",
    )
    parser.add_argument(
        "--init_checkpoint",
        default=None,
        help="model directory of the pre-trained (or distilled) model; its "
        "vocab.txt is the tokenizer",
    )
    parser.add_argument(
        "--model_dir",
        required=True,
        help="where the run and the fine-tuned classifier go; re-running "
        "resumes (or reports a finished run)",
    )
    parser.add_argument(
        "--data-dir",
        "--data_dir",
        dest="data_dir",
        default=None,
        help="GLUE data in its original layout (<dir>/glue/SST-2/train.tsv "
        "or <dir>/SST-2/...); default: $MBERT_DATA_DIR",
    )
    parser.add_argument(
        "--source",
        default=None,
        choices=("auto", "local", "hub", "builtin"),
        help="where the task's examples come from; default: the config's "
        "task.source (auto: local with a data directory, else the hub)",
    )
    parser.add_argument(
        "--config_file",
        default=None,
        help="experiment yaml, e.g. experiments/finetune_sst2_laptop.yaml; "
        "default: the library defaults (mbert_lib.experiment.finetune)",
    )
    parser.add_argument(
        "--params_override",
        default="",
        help="comma-separated dotted overrides, e.g. 'trainer.epochs=3,trainer.learning_rate=3e-4'",
    )
    parser.add_argument(
        "--grid",
        default=None,
        help="hyper-parameter search: dotted keys with lists of values, e.g. "
        "'trainer.batch_size=[16,32],trainer.learning_rate=[1e-4,3e-4]'; "
        "one run per combination and seed under --model_dir",
    )
    parser.add_argument(
        "--seeds",
        default=None,
        help="with --grid: comma-separated trainer seeds (default: the config's trainer.seed)",
    )
    parser.add_argument("--no_progress", action="store_true", help="hide the progress bar")


def _experiment(args):

    experiment = (
        load_experiment(args.config_file, cls=FinetuneExperiment)
        if args.config_file
        else FinetuneExperiment()
    )
    flags = [
        ("task.name", args.task),
        ("model.init_checkpoint", args.init_checkpoint),
        ("task.data_dir", args.data_dir),
        ("task.source", args.source),
    ]
    pairs = [(k, v) for k, v in flags if v is not None]
    experiment = apply_overrides(experiment, pairs) if pairs else experiment
    return apply_overrides(experiment, args.params_override) if args.params_override else experiment


def _grid(args) -> tuple[dict, list[int]]:

    grid = dict(parse_overrides(args.grid))
    try:
        seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else None
    except ValueError:
        raise CommandError(
            f"--seeds must be comma-separated integers, got {args.seeds!r}"
        ) from None
    return grid, seeds


def run(args) -> int:

    if args.seeds and not args.grid:
        raise CommandError("--seeds goes with --grid")
    experiment = _experiment(args)
    if not experiment.model.init_checkpoint:
        raise CommandError(
            "--init_checkpoint is required (or model.init_checkpoint in the "
            "config file): the model directory of a pre-trained model"
        )
    print(
        "# fine-tuning experiment"
        + (f": {args.config_file}" if args.config_file else "")
        + (f" with {args.params_override}" if args.params_override else "")
    )
    print(to_yaml(experiment), end="", flush=True)
    if args.grid:
        # on use: building the parser (--help) must not load TensorFlow
        from mbert_lib.finetune.search import run_grid, summarize

        grid, seeds = _grid(args)
        records = run_grid(
            experiment,
            args.model_dir,
            grid,
            seeds or [experiment.trainer.seed],
            show_progress=not args.no_progress,
        )
        print(
            strict_json.dumps({"task": experiment.task.name, "grid": summarize(records)}, indent=2)
        )
        return 0

    # on use: building the parser (--help) must not load TensorFlow
    from mbert_lib.finetune.trainer import run_finetuning

    done = run_finetuning(experiment, args.model_dir, show_progress=not args.no_progress)
    print(
        json.dumps(
            {
                "task": done["task"],
                "source": done["source"],
                "metric": done["metric"],
                "dev": done["eval"],
                "best_epoch": done["best_epoch"],
                "train_examples": done["train_examples"],
                "truncated": done["truncated"],
                "seconds": done["seconds"],
                "model_dir": args.model_dir,
            },
            indent=2,
        )
    )
    return 0
