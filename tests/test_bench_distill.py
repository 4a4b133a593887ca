"""`bench distill`: three timed variants with consistent FLOP accounting (no timing asserts)."""

import json

import pytest

import mbert_lib as m
from mbert_lib.anatomy.flops import flops, heads_only_flops
from mbert_lib.bench.distill import step_gflop
from mbert_lib.distill.plan import plan_stages
from mbert_lib.experiment.distill import DistillationSection

pytestmark = pytest.mark.slow  # trains, converts or runs a pipeline: `-m "not slow"` skips it

TEACHER = m.get_preset("tiny_teacher").replace(
    vocab_size=64, num_hidden_layers=2, max_position_embeddings=32
)
STUDENT = m.get_preset("tiny_student").replace(
    vocab_size=64, num_hidden_layers=2, max_position_embeddings=32
)


def test_step_gflop_counts_what_each_stage_runs():
    first, last, pd = plan_stages(DistillationSection(), 2)

    def one(c):
        return c.replace(num_hidden_layers=1)

    assert step_gflop(TEACHER, STUDENT, first, 16, 4, 3) == pytest.approx(
        4 * (flops(one(TEACHER), 16) + 3 * flops(one(STUDENT), 16)) / 1e9
    )
    assert step_gflop(TEACHER, STUDENT, last, 16, 4, 3) == pytest.approx(
        4 * (flops(TEACHER, 16) + 3 * flops(STUDENT, 16)) / 1e9
    )
    heads = 4 * 2 * 3 * (128 * 128 + 128 * 64) * 4 / 1e9
    # PD: both last blocks at [CLS] + the 3 masked positions (heads_only)
    assert step_gflop(TEACHER, STUDENT, pd, 16, 4, 3) == pytest.approx(
        4 * (heads_only_flops(TEACHER, 16, 4) + 3 * heads_only_flops(STUDENT, 16, 4)) / 1e9 + heads
    )


def test_bench_distill_cli_writes_three_records(tmp_path, monkeypatch, capsys):
    from mbert_lib.cli import main

    monkeypatch.setattr(
        m.config, "PRESETS", {**m.config.PRESETS, "t_tiny": TEACHER, "s_tiny": STUDENT}
    )
    path = tmp_path / "bench.json"
    assert (
        main(
            [
                "bench",
                "distill",
                "--teacher",
                "t_tiny",
                "--student",
                "s_tiny",
                "--seq_length",
                "16",
                "--batch_size",
                "4",
                "--max_predictions_per_seq",
                "3",
                "--repeats",
                "2",
                "--warmup",
                "1",
                "--json",
                str(path),
            ]
        )
        == 0
    )
    records = json.loads(path.read_text())
    assert [r["variant"] for r in records] == ["layer_wise_first", "layer_wise_last", "pd"]
    for r in records:
        assert r["median_step_ms"] > 0 and r["repeats"] == 2
        assert not any("anchor" in k for k in r)  # no constant from another session
        assert r["embedding_size"] == 64  # the benchmark problem against tf-models by default
        assert r["tokens_per_second"] == pytest.approx(4 * 16 * 1e3 / r["median_step_ms"])
        assert r["gflop_per_second"] == pytest.approx(
            r["gflop_per_step"] * 1e3 / r["median_step_ms"]
        )
    assert "layer_wise_last" in capsys.readouterr().out


def test_bench_distill_cli_with_anchor_alternates_rounds_and_reports_ratios(tmp_path, monkeypatch):
    from mbert_lib.bench import anchor
    from mbert_lib.cli import main
    from mbert_lib.models import build_pretrainer, count_params

    monkeypatch.setattr(
        m.config, "PRESETS", {**m.config.PRESETS, "t_tiny": TEACHER, "s_tiny": STUDENT}
    )
    sizes = {
        "teacher_encoder_params": count_params(build_pretrainer(TEACHER).encoder),
        "student_encoder_params": count_params(build_pretrainer(STUDENT).encoder),
    }
    calls = []

    def fake_run_anchor(python, config, repeats, warmup):  # round r: tokens/s 1000·(r + 1)
        assert config["teacher"] == TEACHER.to_dict() and config["batch_size"] == 4
        calls.append(repeats)
        return {
            v: {
                "variant": v,
                "tokens_per_second": 1000.0 * len(calls),
                "tf_models_version": "x",
                "tensorflow_version": "y",
                "seq_length": 16,
                "batch_size": 4,
                "max_predictions_per_seq": 3,
                **sizes,
            }
            for v in ("layer_wise_first", "layer_wise_last", "pd")
        }

    monkeypatch.setattr(anchor, "check_anchor", lambda python: None)
    monkeypatch.setattr(anchor, "run_anchor", fake_run_anchor)
    path = tmp_path / "bench.json"
    assert (
        main(
            [
                "bench",
                "distill",
                "--teacher",
                "t_tiny",
                "--student",
                "s_tiny",
                "--seq_length",
                "16",
                "--batch_size",
                "4",
                "--max_predictions_per_seq",
                "3",
                "--repeats",
                "2",
                "--warmup",
                "0",
                "--anchor_python",
                "python",
                "--embedding_size",
                str(TEACHER.embedding_size),
                "--rounds",
                "2",
                "--json",
                str(path),
            ]
        )
        == 0
    )
    assert calls == [2, 2]
    result = json.loads(path.read_text())
    assert len(result["load_average_start"]) == 3 and len(result["ours"]) == 2
    for c in result["comparison"]:
        ours = [
            next(r for r in rnd if r["variant"] == c["variant"])["tokens_per_second"]
            for rnd in result["ours"]
        ]
        assert c["ratio_per_round"] == pytest.approx([ours[0] / 1000.0, ours[1] / 2000.0])
        assert c["median_ratio"] == pytest.approx((ours[0] / 1000.0 + ours[1] / 2000.0) / 2)
    assert [r["round"] for r in result["ours"][1]] == [1, 1, 1]
    assert "tf_models_anchor_ms" not in result["ours"][0][0]
