"""Does a longer-trained teacher open the SST-2 gap over its PKT student?

The laptop teacher's held-out MLM accuracy is still rising at its last step
(1,800 steps), and its PKT student reaches the same accuracy: the teacher has
no lead in what pre-training measures to hand on. This script trains the laptop
`teacher` step for `--teacher-steps` steps (warm-up 10 % of them, the recipe's
rate otherwise), distils the laptop `pkt` student from it, both under `--out`
(the pipeline's own steps, so a killed run resumes), and prints the held-out
MLM/NSP accuracy of both. `--steps teacher,pkt,ablation_pd_fmt,transfer` adds the
no-AT student and the transfer summary (`<out>/pkt/transfer.json`) against this
teacher. Fine-tune them on the whole SST-2 training set with
`experiments/finetune_full_sst2.py --run <out> --models teacher,pkt`.

    python experiments/teacher_steps.py --data-dir ../shared/data \
        --teacher-steps 3600 --out runs/teacher_3600 --json results/teacher_3600.json
"""

from __future__ import annotations

import argparse
import copy
import dataclasses

from mbert_lib.atomic import write_text
from mbert_lib.hardware import cpu_info, describe
from mbert_lib.pipeline import STEPS, make_context, run_steps
from mbert_lib.step_records import read_record
from mbert_lib.strict_json import dumps


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", "--data_dir", required=True)
    parser.add_argument("--teacher-steps", type=int, default=3600)
    parser.add_argument("--out", default="runs/teacher_3600")
    parser.add_argument("--steps", default="teacher,pkt", help="pipeline steps to run")
    parser.add_argument("--json", default=None, help="write each step's held-out metrics here")
    args = parser.parse_args(argv)
    if args.teacher_steps <= 0:
        parser.error(f"--teacher-steps must be a positive step count, got {args.teacher_steps}")

    ctx = make_context("laptop", out_dir=args.out, data_dir=args.data_dir)
    settings = copy.deepcopy(dict(ctx.settings))
    settings["teacher"]["overrides"] = {
        **settings["teacher"].get("overrides", {}),
        "trainer.train_steps": args.teacher_steps,
        "trainer.learning_rate.warmup_steps": max(1, args.teacher_steps // 10),
    }
    ctx = dataclasses.replace(ctx, settings=settings)
    names = args.steps.split(",")
    run_steps(STEPS, ctx, only=names)
    steps = {}
    for name in names:
        record = read_record(ctx.step_dir(name))
        metrics = record["result"].get("eval") or {}
        steps[name] = {
            "eval": metrics,
            "train_steps": record["result"].get("train_steps"),
            "seconds": record["seconds"],
            "load_average": record.get("load_average"),
        }
        if name == "transfer":
            summary = record["result"]
            steps[name].update({k: summary[k] for k in ("layers", "ablation_at_kl", "targets")})
        print(name, {k: round(v, 4) for k, v in metrics.items() if isinstance(v, float)})
    if args.json:
        record = {
            "hardware": cpu_info(),
            "hardware_text": describe(),
            "teacher_steps": args.teacher_steps,
            "steps": steps,
        }
        write_text(args.json, dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
