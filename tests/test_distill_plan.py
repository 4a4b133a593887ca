"""Stage plans of PKT / JKT / AKT: which loss, which variables at which rate; config checks."""

from pathlib import Path

import pytest

import mbert_lib as m
from mbert_lib.distill.plan import plan_stages, stage_variables, total_steps, variable_groups
from mbert_lib.experiment.distill import load_distill_experiment, teacher_layer_map
from tests.distill_fixtures import tiny_distill_experiment

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"


def stages(strategy, layers=3, **overrides):
    extra = ",".join(f"distillation.{k}={v}" for k, v in overrides.items())
    exp = tiny_distill_experiment(
        f"distillation.strategy={strategy}" + ("," + extra if extra else "")
    )
    return plan_stages(exp.distillation, layers)


def test_progressive_trains_one_layer_per_stage_and_the_lower_ones_slower():
    plan = stages("progressive")
    assert [s.name for s in plan] == ["layer_0", "layer_1", "layer_2", "pd"]
    assert [s.transfer_layers for s in plan[:3]] == [(0,), (1,), (2,)]
    assert [s.run_layers for s in plan] == [1, 2, 3, None]
    assert plan[0].rates == {"embedding": 0.1, "block_0": 1.0}
    assert plan[2].rates == {"embedding": 0.1, "block_0": 0.1, "block_1": 0.1, "block_2": 1.0}
    assert not any(s.use_pd for s in plan[:3]) and plan[3].use_pd
    assert not plan[3].layer_wise
    pd = plan[3].rates
    assert set(pd) == {
        "embedding",
        "block_0",
        "block_1",
        "block_2",
        "mlm_head",
        "pooler",
        "nsp_head",
    } and set(pd.values()) == {1.0}


def test_lower_layers_frozen_or_at_full_rate_by_config():
    frozen = stages("progressive", **{"layer_wise.lower_lr_multiplier": 0.0})
    assert frozen[2].rates == {"block_2": 1.0}
    full = stages("progressive", **{"layer_wise.lower_lr_multiplier": 1.0})
    assert full[2].rates == {"embedding": 1.0, "block_0": 1.0, "block_1": 1.0, "block_2": 1.0}


def test_the_original_codes_layer_wise_rates():
    """Current layer 3x, the layers below 0.1 x that, embedding (and heads) frozen."""
    original = {"layer_wise.current_lr_multiplier": 3.0, "layer_wise.train_embedding": "false"}
    plan = stages("progressive", **original)
    assert plan[0].rates == {"block_0": 3.0}
    assert plan[2].rates == pytest.approx({"block_0": 0.3, "block_1": 0.3, "block_2": 3.0})
    assert set(plan[3].rates.values()) == {1.0}  # PD: everything at 1x
    assert stages("joint", **original)[0].rates == {f"block_{i}": 3.0 for i in range(3)}
    with_embedding = stages("progressive", **{"layer_wise.current_lr_multiplier": 2.0})
    assert with_embedding[1].rates == pytest.approx(
        {"embedding": 0.2, "block_0": 0.2, "block_1": 2.0}
    )


def test_the_paper_scale_yaml_uses_the_original_recipe():
    exp = load_distill_experiment(EXPERIMENTS / "distill_ibbert_to_mobilebert.yaml")
    d, lw = exp.distillation, exp.distillation.layer_wise
    assert (lw.current_lr_multiplier, lw.lower_lr_multiplier, lw.train_embedding) == (
        3.0,
        0.1,
        False,
    )
    assert lw.learning_rate.warmup_steps == lw.steps // 10
    assert lw.learning_rate.end == pytest.approx(0.9 * lw.learning_rate.peak)
    assert lw.learning_rate.power == 0.5
    assert not d.student_dropout


@pytest.mark.parametrize(
    "override,field",
    [
        ("layer_wise.current_lr_multiplier=0", "distillation.layer_wise.current_lr_multiplier"),
        ("layer_wise.lower_lr_multiplier=1.5", "distillation.layer_wise.lower_lr_multiplier"),
        ("layer_wise.lower_lr_multiplier=-0.1", "distillation.layer_wise.lower_lr_multiplier"),
        ("layer_wise.steps=0", "distillation.layer_wise.steps"),
        (
            "layer_wise.learning_rate.warmup_steps=3",
            "distillation.layer_wise.learning_rate.warmup_steps",
        ),
        (
            "pretrain.learning_rate.warmup_steps=5",
            "distillation.pretrain.learning_rate.warmup_steps",
        ),
    ],
)
def test_a_schedule_that_cannot_run_is_refused_naming_the_field(override, field):
    key, value = override.split("=")
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        stages("progressive", **{key: value})


def test_joint_and_auxiliary_and_equal_budgets():
    progressive = stages("progressive")
    joint = stages("joint")
    assert [s.name for s in joint] == ["joint", "pd"]
    assert joint[0].transfer_layers == (0, 1, 2) and not joint[0].use_pd
    assert joint[0].rates == {"embedding": 0.1, "block_0": 1.0, "block_1": 1.0, "block_2": 1.0}
    auxiliary = stages("auxiliary")
    assert len(auxiliary) == 1 and auxiliary[0].use_pd and auxiliary[0].transfer_layers == (0, 1, 2)
    assert set(auxiliary[0].rates.values()) == {1.0}
    # The same number of student updates for every strategy, unless set otherwise.
    assert total_steps(progressive) == total_steps(joint) == total_steps(auxiliary) == 3 * 3 + 4
    assert total_steps(stages("joint", joint_steps=5)) == 5 + 4


def test_none_is_pd_alone_and_ablations_drop_terms():
    plan = stages("none")
    assert [s.name for s in plan] == ["pd"]
    no_pd = stages("progressive", **{"pretrain.steps": 0})
    assert [s.name for s in no_pd] == ["layer_0", "layer_1", "layer_2"]
    fmt_only = stages("progressive", **{"layer_wise.use_attention": "false"})
    assert all(s.use_fmt and not s.use_attention for s in fmt_only[:3])
    no_nsp = stages("progressive", **{"pretrain.use_nsp": "false"})
    assert "nsp_head" not in no_nsp[-1].rates and "pooler" not in no_nsp[-1].rates
    with pytest.raises(ValueError, match="use_fmt must be true"):
        stages("progressive", **{"layer_wise.use_fmt": "false"})
    with pytest.raises(ValueError, match="would train nothing"):
        stages("none", **{"pretrain.steps": 0})


def test_pd_may_keep_every_layers_attention_transfer():
    plain, kept = (
        stages("progressive"),
        stages("progressive", **{"pretrain.attention_transfer": "true"}),
    )
    assert plain[-1].transfer_layers == () and not plain[-1].use_attention
    pd = kept[-1]
    assert pd.name == "pd" and pd.use_pd and pd.transfer_layers == (0, 1, 2)
    assert pd.use_attention and not pd.use_fmt and pd.rates == plain[-1].rates
    assert [s.transfer_stage for s in kept] == [True, True, True, False]
    assert pd.describe() == "pd: AT + PD of layer(s) [0, 1, 2], 4 steps"


def test_stage_variables_cover_exactly_the_groups_at_their_rates():
    config = m.get_preset("tiny_student").replace(vocab_size=40, num_hidden_layers=3)
    student = m.build_pretrainer(config)
    groups = variable_groups(student)
    every = {v.ref() for v in student.trainable_variables}
    assert {v.ref() for vs in groups.values() for v in vs} == every
    assert sum(len(vs) for vs in groups.values()) == len(student.trainable_variables)
    plan = stages("progressive")
    by_rate = stage_variables(student, plan[2])
    assert list(by_rate) == [1.0, 0.1]
    assert {v.ref() for v in by_rate[1.0]} == {v.ref() for v in student.encoder.blocks[2].weights}
    lower = {v.ref() for v in by_rate[0.1]}
    assert {v.ref() for v in student.encoder.blocks[0].weights} <= lower
    assert {v.ref() for v in student.encoder.embedding.weights} <= lower
    assert not lower & {v.ref() for v in student.masked_lm.weights}
    pd = stage_variables(student, plan[3])
    assert {v.ref() for v in pd[1.0]} == every


def test_transfer_teacher_layers_maps_and_fails_clearly():
    assert teacher_layer_map(None, 4, 4) == (0, 1, 2, 3)
    assert teacher_layer_map((3, 7, 11, 15, 19, 23), 6, 24) == (3, 7, 11, 15, 19, 23)
    with pytest.raises(ValueError, match="student has 2 layers but the teacher 4"):
        teacher_layer_map(None, 2, 4)
    with pytest.raises(ValueError, match="has 3 entries .* but the student has 2 layers"):
        teacher_layer_map((0, 1, 2), 2, 4)
    with pytest.raises(ValueError, match=r"teacher layer\(s\) \[4\] out of range"):
        teacher_layer_map((1, 4), 2, 4)
    with pytest.raises(ValueError, match="must be increasing"):
        teacher_layer_map((2, 1), 2, 4)
    # At config time, from an experiment:
    with pytest.raises(ValueError, match="has 1 entries"):
        tiny_distill_experiment("distillation.transfer_teacher_layers=[1]")
    exp = tiny_distill_experiment(
        "student.overrides.num_hidden_layers=1,distillation.transfer_teacher_layers=[1]"
    )
    assert exp.distillation.transfer_teacher_layers == (1,)


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("hidden_size", 64, "hidden_size: teacher 128, student 64"),
        ("num_attention_heads", 2, "num_attention_heads: teacher 4, student 2"),
        ("embedding_size", 16, "embedding_size: teacher 32, student 16"),
    ],
)
def test_pairs_that_cannot_be_distilled_fail_at_config_time(field, value, message):
    with pytest.raises(ValueError, match=message):
        tiny_distill_experiment(f"student.overrides.{field}={value}")


def test_experiment_files_load_and_paper_scale_matches_the_recipe():
    files = sorted(EXPERIMENTS.glob("distill_*.yaml"))
    assert {f.name for f in files} >= {
        "distill_ibbert_to_mobilebert.yaml",
        "distill_tiny_pkt.yaml",
        "distill_tiny_jkt.yaml",
        "distill_tiny_akt.yaml",
    }
    for f in files:
        exp = load_distill_experiment(f)
        assert exp.student.build_config().vocab_size == exp.data.vocab_size
    paper = load_distill_experiment(EXPERIMENTS / "distill_ibbert_to_mobilebert.yaml")
    plan = plan_stages(paper.distillation, 24)
    assert len(plan) == 25 and all(s.train_steps == 10_000 for s in plan[:24])
    assert plan[24].train_steps == 500_000 and total_steps(plan) == 740_000
    assert paper.trainer.batch_size == 2048
    lr = paper.distillation.pretrain.learning_rate
    assert (lr.peak, lr.end, lr.warmup_steps) == (1.5e-3, 1.5e-7, 10_000)
    assert paper.teacher.build_config() == m.get_preset("ibbert_large")
    assert paper.student.build_config() == m.get_preset("mobilebert")
    for name in ("pkt", "jkt", "akt"):
        exp = load_distill_experiment(EXPERIMENTS / f"distill_tiny_{name}.yaml")
        assert (
            exp.distillation.strategy
            == {"pkt": "progressive", "jkt": "joint", "akt": "auxiliary"}[name]
        )
        assert total_steps(plan_stages(exp.distillation, 4)) == total_steps(
            plan_stages(
                load_distill_experiment(EXPERIMENTS / "distill_tiny_pkt.yaml").distillation, 4
            )
        )
