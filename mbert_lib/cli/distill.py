"""`python -m mbert_lib distill --config_file X.yaml --teacher_dir T --model_dir S`."""

from mbert_lib.config_tree import apply_overrides, to_yaml
from mbert_lib.distill.plan import plan_stages, total_steps
from mbert_lib.experiment.distill import load_distill_experiment

HELP = (
    "transfer a pre-trained teacher's knowledge into a student (PKT / JKT / AKT + PD) "
    "from an experiment yaml"
)


def add_arguments(parser) -> None:
    parser.add_argument(
        "--config_file",
        required=True,
        help="experiment yaml, e.g. experiments/distill_tiny_pkt.yaml",
    )
    parser.add_argument(
        "--params_override",
        default="",
        help="comma-separated dotted overrides, e.g. "
        "'distillation.layer_wise.steps=100,runtime.mixed_precision=bfloat16'",
    )
    parser.add_argument(
        "--teacher_dir",
        required=True,
        help="the teacher's model directory (bert_config.json + model.ckpt), "
        "e.g. the output of `python -m mbert_lib pretrain`",
    )
    parser.add_argument(
        "--model_dir",
        required=True,
        help="where stage checkpoints, TensorBoard logs and the student go; "
        "re-running resumes in the stage it stopped (or reports a "
        "finished run)",
    )
    parser.add_argument(
        "--distribution_strategy",
        default=None,
        help="shorthand for runtime.distribution_strategy (default, mirrored, "
        "multi_worker_mirrored, tpu, one_device)",
    )
    parser.add_argument(
        "--mixed_precision",
        default=None,
        choices=["float32", "bfloat16"],
        help="shorthand for runtime.mixed_precision",
    )
    parser.add_argument("--no_progress", action="store_true", help="hide the progress bars")


def run(args) -> int:
    # on use: building the parser (--help) must not load TensorFlow
    from mbert_lib.train.checkpointing import is_done

    experiment = load_distill_experiment(args.config_file, args.params_override or None)
    shorthands = [
        (key, value)
        for key, value in [
            ("runtime.distribution_strategy", args.distribution_strategy),
            ("runtime.mixed_precision", args.mixed_precision),
        ]
        if value is not None
    ]
    if shorthands:
        experiment = apply_overrides(experiment, shorthands)
    stages = plan_stages(
        experiment.distillation, experiment.student.build_config().num_hidden_layers
    )
    # on use: building the parser (--help) must not load TensorFlow
    from mbert_lib.distill.trainer import run_distillation

    if is_done(args.model_dir, total_steps(stages)):  # no plan: the trainer says done,
        run_distillation(
            experiment,
            args.teacher_dir,
            args.model_dir,  # or that it differs
            show_progress=False,
        )
        return 0
    print(
        f"# experiment: {args.config_file}"
        + (f" with {args.params_override}" if args.params_override else "")
    )
    print(to_yaml(experiment), end="")
    print(f"# {len(stages)} stage(s), {total_steps(stages)} student steps:")
    for stage in stages:
        print(f"#   {stage.index + 1}. {stage.describe()}")
    print(flush=True)
    result = run_distillation(
        experiment, args.teacher_dir, args.model_dir, show_progress=not args.no_progress
    )
    metrics = result.get("eval") or {}
    keys = [k for k in ("mlm_accuracy", "perplexity", "nsp_accuracy") if k in metrics]
    if keys:
        print("held-out: " + ", ".join(f"{k} {metrics[k]:.4g}" for k in keys))
    return 0
