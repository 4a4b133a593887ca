"""tensorflow/models' BertDistillationTask, timed: the anchor of
`python -m mbert_lib bench distill`.

Runs in its own venv (tf-models-official pins its own TensorFlow; README.md beside this
file), never imports mbert_lib, and times the same three variants as our bench on
SYNTHETIC batches of the same shapes (B batch, T tokens, P predictions):

    layer_wise_first   progressive stage 0: FMT + AT on block 0
    layer_wise_last    progressive stage L-1: FMT + AT on the deepest block
    pd                 the last stage: pre-training distillation, MLM (+ KD) and NSP

Each variant is the task's own `build_model(stage)`, `get_optimizer(stage)` (the LAMB
settings of tf-models' run_distillation.py) and `train_step`, called the way tf-models'
trainer calls it (base_trainer.Trainer.train_step run by orbit without a while loop: one
tf.function call per step). Warm-up, then `repeats` rounds that call each variant once,
timed, so background load hits all alike; the stage variable the loss reads is set
between calls, outside the timed region.

    python bench_distill.py [--config CONFIG.json] [--repeats 20] [--warmup 3] [--json OUT]

CONFIG.json: {"teacher": <bert_config.json dict>, "student": <bert_config.json dict>,
"seq_length": T, "batch_size": B, "max_predictions_per_seq": P}; DEFAULT_CONFIG below is
mbert_lib's presets tiny_teacher / tiny_student at T=128, B=32, P=20. Prints one JSON
record per variant to stdout (or writes them to --json).
"""

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time
import types

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf
import tf_keras

_TEACHER = {
    "vocab_size": 8192,
    "hidden_size": 128,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "intermediate_size": 512,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "initializer_range": 0.02,
    "embedding_size": 32,
    "trigram_input": True,
    "use_bottleneck": True,
    "intra_bottleneck_size": 256,
    "use_bottleneck_attention": False,
    "key_query_shared_bottleneck": False,
    "num_feedforward_networks": 1,
    "normalization_type": "layer_norm",
    "classifier_activation": True,
}
DEFAULT_CONFIG = {
    "teacher": _TEACHER,
    "student": {
        **_TEACHER,
        "intermediate_size": 128,
        "hidden_act": "relu",
        "hidden_dropout_prob": 0.0,
        "intra_bottleneck_size": 32,
        "key_query_shared_bottleneck": True,
        "num_feedforward_networks": 4,
        "normalization_type": "no_norm",
        "classifier_activation": False,
    },
    "seq_length": 128,
    "batch_size": 32,
    "max_predictions_per_seq": 20,
}
VARIANTS = ("layer_wise_first", "layer_wise_last", "pd")
NUM_BATCHES = 8  # distinct synthetic batches, cycled


def install_fast_training_shim() -> bool:
    """Provides `official.modeling.fast_training.progressive.policies` if the wheel lacks it.

    distillation.py imports that module (tf-models-official 2.20 does not ship it) for
    two base classes: `ProgressiveConfig` (an empty config dataclass) and
    `ProgressivePolicy`, whose only state the timed code reads is `_stage_id`, the int64
    variable `build_losses` divides the layer-wise loss by (stage + 1). The real policy
    also builds the stage-0 model and optimizer and tracks them for checkpoints; the
    bench builds each stage itself and saves nothing. Returns True if the shim was used.
    """
    try:
        import official.modeling.fast_training.progressive.policies  # noqa: F401

        return False
    except ModuleNotFoundError:
        pass
    from official.modeling.hyperparams import base_config

    @dataclasses.dataclass
    class ProgressiveConfig(base_config.Config):
        pass

    class ProgressivePolicy:
        def __init__(self):
            self._stage_id = tf.Variable(0, trainable=False, dtype=tf.int64, shape=[])

    names = [
        "official.modeling.fast_training",
        "official.modeling.fast_training.progressive",
        "official.modeling.fast_training.progressive.policies",
    ]
    modules = [types.ModuleType(name) for name in names]
    modules[0].progressive, modules[1].policies = modules[1], modules[2]
    modules[2].ProgressiveConfig, modules[2].ProgressivePolicy = (
        ProgressiveConfig,
        ProgressivePolicy,
    )
    sys.modules.update(zip(names, modules))
    return True


def encoder_config(bert: dict, where: str):
    """Our bert_config.json names -> tf-models' MobileBertEncoderConfig."""
    from official.nlp.configs import encoders

    for flag in ("trigram_input", "use_bottleneck"):
        if not bert.get(flag, False):
            raise ValueError(
                f"{where}.{flag} must be true: tf-models' MobileBERTEncoder "
                "always uses the trigram embedding and the bottlenecks"
            )
    return encoders.EncoderConfig(
        type="mobilebert",
        mobilebert=encoders.MobileBertEncoderConfig(
            word_vocab_size=bert["vocab_size"],
            word_embed_size=bert["embedding_size"],
            type_vocab_size=bert["type_vocab_size"],
            max_sequence_length=bert["max_position_embeddings"],
            num_blocks=bert["num_hidden_layers"],
            hidden_size=bert["hidden_size"],
            num_attention_heads=bert["num_attention_heads"],
            intermediate_size=bert["intermediate_size"],
            hidden_activation=bert["hidden_act"],
            hidden_dropout_prob=bert["hidden_dropout_prob"],
            attention_probs_dropout_prob=bert["attention_probs_dropout_prob"],
            intra_bottleneck_size=bert["intra_bottleneck_size"],
            initializer_range=bert["initializer_range"],
            use_bottleneck_attention=bert["use_bottleneck_attention"],
            key_query_shared_bottleneck=bert["key_query_shared_bottleneck"],
            num_feedforward_networks=bert["num_feedforward_networks"],
            normalization_type=bert["normalization_type"],
            classifier_activation=bert["classifier_activation"],
        ),
    )


def build_task(config: dict):
    """BertDistillationTask as tf-models' run_distillation.py builds it, at our shapes."""
    from official.modeling import optimization
    from official.nlp.configs import bert
    from official.nlp.data import pretrain_dataloader
    from official.projects.mobilebert import distillation

    student_hidden = config["student"]["hidden_size"]
    data = pretrain_dataloader.BertPretrainDataConfig(
        input_path="synthetic",
        global_batch_size=config["batch_size"],
        seq_length=config["seq_length"],
        max_predictions_per_seq=config["max_predictions_per_seq"],
        use_next_sentence_label=True,
    )
    task_config = distillation.BertDistillationTaskConfig(
        # As in mobilebert_distillation_en_uncased.yaml: NSP head on the student only.
        teacher_model=bert.PretrainerConfig(
            encoder=encoder_config(config["teacher"], "teacher"), mlm_activation="gelu"
        ),
        student_model=bert.PretrainerConfig(
            encoder=encoder_config(config["student"], "student"),
            mlm_activation="relu",
            cls_heads=[
                bert.ClsHeadConfig(
                    inner_dim=student_hidden, num_classes=2, dropout_rate=0.0, name="next_sentence"
                )
            ],
        ),
        train_data=data,
        validation_data=data,
    )
    optimizer_config = optimization.OptimizationConfig(  # run_distillation.py's
        optimizer=optimization.OptimizerConfig(
            type="lamb",
            lamb=optimization.LAMBConfig(
                weight_decay_rate=0.01,
                exclude_from_weight_decay=["LayerNorm", "bias", "norm"],
                clipnorm=1.0,
            ),
        ),
        learning_rate=optimization.LrConfig(type="polynomial"),
        warmup=optimization.WarmupConfig(type="linear"),
    )
    return distillation.BertDistillationTask(
        strategy=tf.distribute.get_strategy(),
        progressive=distillation.BertDistillationProgressiveConfig(),
        optimizer_config=optimizer_config,
        task_config=task_config,
    )


def synthetic_batches(config: dict, seed: int = 0) -> tf.data.Dataset:
    """NUM_BATCHES SYNTHETIC pre-training batches (random ids, lengths T/2..T), cycled."""
    B, T, P = config["batch_size"], config["seq_length"], config["max_predictions_per_seq"]
    V, n = config["student"]["vocab_size"], NUM_BATCHES * config["batch_size"]
    rng = np.random.default_rng(seed)
    lengths = rng.integers(T // 2, T + 1, size=[n, 1])
    positions = np.arange(T)[None, :]  # [1, T]
    count = np.clip(np.round(0.15 * (lengths - 3)), 1, P).astype(np.int64)  # [n, 1]
    arrays = {
        "input_word_ids": np.where(positions < lengths, rng.integers(4, V, [n, T]), 0),
        "input_mask": (positions < lengths).astype(np.int32),
        "input_type_ids": (positions >= lengths // 2).astype(np.int32) * (positions < lengths),
        "masked_lm_positions": np.sort(rng.integers(1, T // 2, [n, P]), axis=1),
        "masked_lm_ids": rng.integers(4, V, [n, P]),
        "masked_lm_weights": (np.arange(P)[None, :] < count).astype(np.float32),
        "next_sentence_labels": rng.integers(0, 2, [n, 1]),
    }
    arrays = {
        k: (v if v.dtype == np.float32 else v.astype(np.int32)).reshape(
            NUM_BATCHES, B, *v.shape[1:]
        )
        for k, v in arrays.items()
    }  # [NUM_BATCHES, B, ...]
    return tf.data.Dataset.from_tensor_slices(arrays).repeat()


def make_step(task, stage_id: int, dataset: tf.data.Dataset):
    """A callable running one training step of `stage_id`, blocking until the loss exists."""
    model = task.build_model(stage_id)
    optimizer = task.get_optimizer(stage_id)
    metrics = task.build_metrics(training=True)
    train_loss = tf_keras.metrics.Mean("training_loss", dtype=tf.float32)
    global_step = tf.Variable(0, trainable=False, dtype=tf.int64)
    strategy = tf.distribute.get_strategy()
    iterator = iter(dataset)

    @tf.function
    def train_step(iterator):  # base_trainer.Trainer.train_step (CPU: no XLA), + the loss
        def step_fn(inputs):
            logs = task.train_step(inputs, model=model, optimizer=optimizer, metrics=metrics)
            train_loss.update_state(logs[task.loss])
            global_step.assign_add(1)
            return logs[task.loss]

        return strategy.run(step_fn, args=(next(iterator),))

    def call():
        task._stage_id.assign(stage_id)
        start = time.perf_counter()
        train_step(iterator).numpy()
        return (time.perf_counter() - start) * 1e3

    return call


def bench(config: dict, repeats: int, warmup: int) -> list[dict]:
    """One record per variant: median/min/max step ms over `repeats` interleaved rounds."""
    import importlib.metadata

    shim = install_fast_training_shim()
    tf_keras.utils.set_random_seed(0)
    task = build_task(config)
    layers = config["student"]["num_hidden_layers"]
    stages = {"layer_wise_first": 0, "layer_wise_last": layers - 1, "pd": layers}
    dataset = synthetic_batches(config)
    steps = {name: make_step(task, stage, dataset) for name, stage in stages.items()}
    for step in steps.values():
        for _ in range(1 + warmup):  # the first call traces, as in our bench
            step()
    samples = {name: [] for name in steps}
    for _ in range(repeats):
        for name, step in steps.items():
            samples[name].append(step())
    tokens = config["batch_size"] * config["seq_length"]
    sizes = {
        f"{who}_encoder_params": sum(int(np.prod(w.shape)) for w in model.weights)
        for who, model in (
            ("teacher", task._teacher_pretrainer.encoder_network),
            ("student", task._student_pretrainer.encoder_network),
        )
    }
    versions = {
        "tf_models_version": importlib.metadata.version("tf-models-official"),
        "tensorflow_version": tf.__version__,
        "tf_keras_version": importlib.metadata.version("tf-keras"),
    }
    return [
        {
            "variant": name,
            "stage_id": stages[name],
            "seq_length": config["seq_length"],
            "batch_size": config["batch_size"],
            "max_predictions_per_seq": config["max_predictions_per_seq"],
            "median_step_ms": statistics.median(s),
            "min_step_ms": min(s),
            "max_step_ms": max(s),
            "repeats": len(s),
            "tokens_per_second": tokens * 1e3 / statistics.median(s),
            "fast_training_shim": shim,
            **sizes,
            **versions,
        }
        for name, s in samples.items()
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--config",
        help="JSON file: teacher, student, seq_length, "
        "batch_size, max_predictions_per_seq (default: DEFAULT_CONFIG)",
    )
    parser.add_argument("--repeats", type=int, default=20, help="timed steps per variant")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps per variant")
    parser.add_argument("--json", help="write the records here instead of stdout")
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.warmup < 0:
        parser.error(f"need --repeats >= 1 and --warmup >= 0, got {args.repeats}, {args.warmup}")
    config = DEFAULT_CONFIG
    if args.config:
        with open(args.config, encoding="utf-8") as f:
            config = json.load(f)
        missing = sorted(set(DEFAULT_CONFIG) - set(config))
        if missing:
            raise ValueError(f"{args.config}: missing key(s) {missing}")
    text = json.dumps(bench(config, args.repeats, args.warmup), indent=2, allow_nan=False)
    if args.json:
        tmp = args.json + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text + "\n")
        os.replace(tmp, args.json)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
