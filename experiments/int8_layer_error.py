"""Where each int8 file loses the signal, block by block: post-training against QAT.

    python experiments/int8_layer_error.py [--run runs/laptop]
        [--out results/int8_layer_error.json]

For each seed of a finished compress step, three int8 files are converted again with every
block's output as an extra output (`mbert_lib.export.layer_error`), and each block's
relative error e_k = ‖ŷ_k − y_k‖/‖y_k‖ is measured on the dev set against the same
weights in float:

    dynamic_int8   the dense classifier, post-training (its own mask)
    full_int8      the dense classifier, post-training, calibrated as the step's `int8`
                   (its calibration examples and its bounded mask)
    qat_int8       the QAT run's classifier with its learned ranges, against the same
                   weights without fake-quantizers (its own mask)
    qat_int8_vs_fake_quant
                   the same file against the Keras model QAT trained, fake-quantizers
                   included: how faithfully the converter turns them into int8 kernels

Beside them: the deployed file's logits error and the share of dev predictions it keeps
(`agreement`), from the step's own .tflite files.
"""

import argparse
import json
import os

import numpy as np

from mbert_lib import hardware
from mbert_lib.bench import write_json
from mbert_lib.checkpoints import load_classifier
from mbert_lib.compress.qat import load_qat_classifier
from mbert_lib.export import layer_error
from mbert_lib.export.interpreter import TFLiteModel
from mbert_lib.export.representative import representative_dataset
from mbert_lib.pipeline.steps_compress import run_task, seed_runs
from mbert_lib.pipeline.steps_export import calibration_features


def deployed(float_model, path: str, features, mask_penalty) -> dict:
    """The step's own file: its logits' relative error and its argmax agreement."""
    reference = layer_error.block_outputs(float_model, features, mask_penalty)["logits"].numpy()
    logits = TFLiteModel(path, num_threads=2).predict(features)["logits"]
    return {
        "logits_error": layer_error.relative_errors({"l": reference}, {"l": logits})["l"],
        "agreement": float(np.mean(logits.argmax(-1) == reference.argmax(-1))),
    }


def seed_errors(step: str, settings: dict, seed: int, loaded: dict) -> tuple[dict, int]:
    """({method: layer_errors(...) + the deployed file's numbers}, dev examples) of a seed."""
    dense = seed_runs(step, "sparsity_0")[seed]
    experiment, data = run_task(dense, loaded)
    features, seq_length = data.dev.features, experiment.task.seq_length
    n = settings["calibration_examples"]
    calibration = calibration_features(data.train.features, n, settings["calibration_seed"])
    penalty = settings["int8_mask_penalty"]
    float_model = load_classifier(dense)
    qat_dir = seed_runs(step, "qat")[seed]
    qat_model = load_qat_classifier(qat_dir)
    files = os.path.join(step, "tflite")
    cases = {
        "dynamic_int8": (float_model, float_model, "dynamic_int8", None, None),
        "full_int8": (
            float_model,
            float_model,
            "int8",
            representative_dataset(calibration, n),
            penalty,
        ),
        "qat_int8": (qat_model, load_classifier(qat_dir), "dynamic_int8", None, None),
        "qat_int8_vs_fake_quant": (qat_model, qat_model, "dynamic_int8", None, None),
    }
    paths = {
        "dynamic_int8": f"sparsity_0_seed{seed}_dynamic_int8.tflite",
        "full_int8": f"sparsity_0_seed{seed}_int8.tflite",
        "qat_int8": f"qat_seed{seed}_qat_int8.tflite",
        "qat_int8_vs_fake_quant": f"qat_seed{seed}_qat_int8.tflite",
    }
    result = {}
    for method, (model, reference, precision, calibrate, mask) in cases.items():
        flatbuffer = layer_error.convert_with_block_outputs(
            model, precision, seq_length, calibrate, mask
        )
        result[method] = {
            **layer_error.layer_errors(reference, flatbuffer, features, mask),
            "deployed": deployed(reference, os.path.join(files, paths[method]), features, mask),
        }
        print(f"seed {seed} {method}: " + json.dumps(result[method]["relative_error"]))
    return result, len(data.dev.labels)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", default="runs/laptop")
    parser.add_argument("--out", default="results/int8_layer_error.json")
    args = parser.parse_args()
    step = os.path.join(args.run, "compress")
    with open(os.path.join(step, "step.json")) as f:
        settings = json.load(f)["settings"]
    loaded = {}
    seeds = list(range(settings["seeds"]))
    per_seed, dev_examples = zip(*(seed_errors(step, settings, s, loaded) for s in seeds))
    methods = list(per_seed[0])
    outputs = list(per_seed[0][methods[0]]["relative_error"])
    record = {
        "seeds": seeds,
        "dev_examples": dev_examples[0],
        "per_seed": list(per_seed),
        "mean_relative_error": {
            m: {o: float(np.mean([s[m]["relative_error"][o] for s in per_seed])) for o in outputs}
            for m in methods
        },
        "mean_agreement": {
            m: float(np.mean([s[m]["deployed"]["agreement"] for s in per_seed])) for m in methods
        },
        "mean_deployed_logits_error": {
            m: float(np.mean([s[m]["deployed"]["logits_error"] for s in per_seed])) for m in methods
        },
        "hardware": hardware.describe(),
    }
    write_json([record], args.out)
    for m in methods:
        errors = record["mean_relative_error"][m]
        print(f"{m:13s} " + "  ".join(f"{o} {e:.4f}" for o, e in errors.items()))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
