"""Do the attention lab's students depend on training two at a time? Weights compared.

    python experiments/lab_student_threads.py [--out results/lab_student_threads.json]

With the pipeline recipe's settings and XLA-compiled steps (a 200-step teacher and 600-update
students, to keep it short), four students are trained one at a time with one model and
then two at a time, each thread with its own model (`run_lab`'s arrangement). The record
holds, per student, the largest |difference| between the two runs' weights (0.0: equal
bit for bit), both runs' wall times, and the hardware.
"""

import argparse
import dataclasses
import queue
import threading
import time

import numpy as np

from mbert_lib.bench.timing import write_json
from mbert_lib.hardware import cpu_info
from mbert_lib.lab import variants
from mbert_lib.lab.data import make_examples
from mbert_lib.lab.loop import Stage, StageRunner
from mbert_lib.lab.run import built_model, train_student
from mbert_lib.lab.settings import lab_settings, student_config, teacher_config
from mbert_lib.pipeline.recipe_settings import load_recipe_settings

JOBS = (("pkt", 1), ("at_only", 1), ("fmt_only", 2), ("copy_only", 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results/lab_student_threads.json")
    args = parser.parse_args()
    values = load_recipe_settings("attention_lab")["attention_lab"]
    settings = lab_settings({**values, "teacher_steps": 200, "student_steps": 600})
    train, dev = make_examples(settings, "train"), make_examples(settings, "dev")
    seq_length = settings.task.seq_length
    teacher = built_model(teacher_config(settings), seq_length)
    StageRunner(teacher, train.arrays).run_stage(
        Stage("teacher", variants.mlm_loss(teacher)), train.rows(settings.batch_size, 0), 200, 1e-3
    )
    targets = variants.teacher_targets(teacher, train.arrays, settings.num_layers)
    train = dataclasses.replace(train, arrays={**train.arrays, **targets})

    def student():
        model = built_model(student_config(settings), seq_length)
        return model, StageRunner(model, train.arrays, settings.jit_compile)

    def run(pairs) -> tuple[dict, float]:
        todo, weights = queue.SimpleQueue(), {}
        for job in JOBS:
            todo.put(job)

        def worker(model, runner):
            while True:
                try:
                    variant, seed = todo.get_nowait()
                except queue.Empty:
                    return
                train_student(variant, seed, teacher, model, runner, settings, train, dev)
                weights[variant, seed] = model.get_weights()

        for model, runner in pairs:  # compile every step first: time the training only
            train_student("pkt", 0, teacher, model, runner, settings, train, dev)
        start = time.perf_counter()
        threads = [threading.Thread(target=worker, args=pair) for pair in pairs]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return weights, time.perf_counter() - start

    alone, alone_seconds = run([student()])
    side_by_side, pair_seconds = run([student(), student()])
    differences = {
        f"{variant} seed {seed}": max(
            float(np.max(np.abs(a - b)))
            for a, b in zip(alone[variant, seed], side_by_side[variant, seed])
        )
        for variant, seed in JOBS
    }
    print(differences, f"{alone_seconds:.1f} s one at a time, {pair_seconds:.1f} s two")
    write_json(
        [
            {
                "command": "python experiments/lab_student_threads.py",
                "max_abs_difference": differences,
                "seconds_one_at_a_time": round(alone_seconds, 1),
                "seconds_two_at_a_time": round(pair_seconds, 1),
                "hardware": cpu_info(),
            }
        ],
        args.out,
    )


if __name__ == "__main__":
    main()
