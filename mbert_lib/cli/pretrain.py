"""`python -m mbert_lib pretrain --config_file experiments/X.yaml --model_dir DIR`."""

from mbert_lib.experiment import load_experiment, to_yaml

HELP = "pre-train a model with MLM + NSP (the IB-BERT teacher) from an experiment yaml"


def add_arguments(parser) -> None:
    parser.add_argument(
        "--config_file",
        required=True,
        help="experiment yaml, e.g. experiments/pretrain_tiny_teacher.yaml",
    )
    parser.add_argument(
        "--params_override",
        default="",
        help="comma-separated dotted overrides, e.g. "
        "'trainer.train_steps=100,runtime.mixed_precision=bfloat16'",
    )
    parser.add_argument(
        "--model_dir",
        required=True,
        help="where checkpoints, TensorBoard logs and the final model go; "
        "re-running resumes (or reports a finished run)",
    )
    parser.add_argument("--no_progress", action="store_true", help="hide the progress bar")


def run(args) -> int:
    # on use: building the parser (--help) must not load TensorFlow
    from mbert_lib.train.checkpointing import is_done

    experiment = load_experiment(args.config_file, args.params_override or None)
    # No plan: the trainer says done, or that the run differs.
    if is_done(args.model_dir, experiment.trainer.train_steps):
        # on use: building the parser (--help) must not load TensorFlow
        from mbert_lib.train.pretrain import run_pretraining

        run_pretraining(experiment, args.model_dir, show_progress=False)
        return 0
    print(
        f"# experiment: {args.config_file}"
        + (f" with {args.params_override}" if args.params_override else "")
    )
    print(to_yaml(experiment), end="", flush=True)

    # on use: building the parser (--help) must not load TensorFlow
    from mbert_lib.train.pretrain import run_pretraining

    result = run_pretraining(experiment, args.model_dir, show_progress=not args.no_progress)
    metrics = result.get("eval") or {}
    if metrics:
        print("held-out: " + ", ".join(f"{k} {v:.4g}" for k, v in metrics.items()))
    return 0
