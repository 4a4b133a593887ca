"""Training strategies as stage plans: which loss, which layers, which variables at which rate.

The paper compares three ways to transfer the teacher's layer-wise knowledge
(Fig. 2, Table 8; L student layers, t_l the teacher layer of student layer l):

    progressive (PKT)  L stages; stage l minimises FMT_l + AT_l and trains block l
                       at c × the stage's rate (current_lr_multiplier), the blocks
                       below it at c × lower_lr_multiplier (0 freezes them, the
                       paper's first description), the embedding like them
                       (train_embedding) or not at all; then PD
    joint (JKT)        one stage minimising Σ_l (FMT_l + AT_l), all blocks at c ×
                       the rate, the embedding at c × lower_lr_multiplier; then PD
    auxiliary (AKT)    one stage minimising Σ_l (FMT_l + AT_l) + PD, everything trained
    none               PD only (the "no layer-wise transfer" rows of Table 9)

With pretrain.attention_transfer (not in the paper) the PD stage also keeps every layer's
AT term, so that PD cannot move the attention maps away from the teacher's again.

The original TF1 code trains the current layer at 3×, the layers below at
0.1 × that and the embedding and heads not at all in layer-wise stages
(c = 3, lower_lr_multiplier = 0.1, train_embedding false); the defaults
(c = 1, lower 0.1, embedding trained) are tf-models-like with the lower
layers slowed down. See `mbert_lib.experiment.distill` for the whole recipe.

The pre-training distillation (PD) stage trains every student variable.
The embedding and MLM head start as copies of the teacher's
(`mbert_lib.distill.initialize`); the embedding counts as the layer below
block 0. Variables of blocks a stage does not run get no update.

By default JKT's joint stage runs L × layer_wise.steps steps and AKT runs
L × layer_wise.steps + pretrain.steps, so every strategy makes the same
number of student updates.
"""

from __future__ import annotations

import dataclasses

from mbert_lib.experiment import LearningRateSection

FULL = 1.0
PD_STAGE = "pd"


@dataclasses.dataclass(frozen=True)
class Stage:
    """One stage of a distillation run.

    index, name:     position in the plan and a directory-friendly name ("layer_2", "pd")
    train_steps:     student updates in this stage
    transfer_layers: student layers whose FMT / AT terms are in the loss
    use_fmt, use_attention, use_pd: the loss terms
    learning_rate:   the stage's schedule (decay over train_steps unless set)
    rates:           {variable group: learning-rate multiplier}; groups not listed
                     are not trained. Groups: "embedding", "block_<i>", "pooler",
                     "mlm_head", "nsp_head" (see `variable_groups`)
    """

    index: int
    name: str
    train_steps: int
    transfer_layers: tuple[int, ...]
    use_fmt: bool
    use_attention: bool
    use_pd: bool
    learning_rate: LearningRateSection
    rates: dict

    @property
    def layer_wise(self) -> bool:
        """The stage has layer-wise terms (FMT / AT): a layer-wise, joint or auxiliary stage,
        or the PD stage with pretrain.attention_transfer."""
        return bool(self.transfer_layers)

    @property
    def transfer_stage(self) -> bool:
        """A stage of the layer-wise phase (before PD), whose end is a stage snapshot."""
        return self.layer_wise and self.name != PD_STAGE

    @property
    def run_layers(self) -> int | None:
        """Student blocks the stage runs: up to its deepest transferred layer; None = all."""
        return None if self.use_pd else max(self.transfer_layers) + 1

    def describe(self) -> str:
        terms = [
            t
            for t, on in [
                ("FMT", self.use_fmt and self.layer_wise),
                ("AT", self.use_attention and self.layer_wise),
                ("PD", self.use_pd),
            ]
            if on
        ]
        layers = f" of layer(s) {list(self.transfer_layers)}" if self.layer_wise else ""
        return f"{self.name}: {' + '.join(terms)}{layers}, {self.train_steps} steps"


def _embedding(lw, rate: float) -> dict:
    return {"embedding": rate} if lw.train_embedding and rate > 0 else {}


def _pd_rates(num_layers: int, pretrain) -> dict:
    rates = {"embedding": FULL, "mlm_head": FULL, **{f"block_{i}": FULL for i in range(num_layers)}}
    if pretrain.use_nsp:
        rates.update({"pooler": FULL, "nsp_head": FULL})
    return rates


def plan_stages(distillation, num_layers: int) -> list[Stage]:
    """The stages of `distillation` (a DistillationSection) for a student of `num_layers`."""
    lw, pd = distillation.layer_wise, distillation.pretrain
    current = lw.current_lr_multiplier
    lower = current * lw.lower_lr_multiplier
    terms = dict(use_fmt=lw.use_fmt, use_attention=lw.use_attention)
    all_layers = tuple(range(num_layers))
    stages: list[Stage] = []

    def add(name, steps, layers, use_pd, learning_rate, rates, **kw):
        stages.append(
            Stage(
                len(stages),
                name,
                steps,
                layers,
                use_pd=use_pd,
                learning_rate=learning_rate,
                rates=rates,
                **{**terms, **kw},
            )
        )

    if distillation.strategy == "progressive":
        for layer in all_layers:
            rates = {
                **_embedding(lw, lower),
                **{f"block_{i}": lower for i in range(layer) if lower > 0},
                f"block_{layer}": current,
            }
            add(f"layer_{layer}", lw.steps, (layer,), False, lw.learning_rate, rates)
    elif distillation.strategy == "joint":
        rates = {**_embedding(lw, lower), **{f"block_{i}": current for i in all_layers}}
        add(
            "joint",
            distillation.joint_steps or num_layers * lw.steps,
            all_layers,
            False,
            lw.learning_rate,
            rates,
        )
    elif distillation.strategy == "auxiliary":
        steps = distillation.auxiliary_steps or num_layers * lw.steps + pd.steps
        add("auxiliary", steps, all_layers, True, pd.learning_rate, _pd_rates(num_layers, pd))
        return stages
    if pd.steps > 0:
        add(
            PD_STAGE,
            pd.steps,
            all_layers if pd.attention_transfer else (),
            True,
            pd.learning_rate,
            _pd_rates(num_layers, pd),
            use_fmt=False,
            use_attention=pd.attention_transfer,
        )
    return stages


def total_steps(stages: list[Stage]) -> int:
    return sum(s.train_steps for s in stages)


def variable_groups(pretrainer) -> dict[str, list]:
    """{group: trainable variables} of a student Pretrainer, by role (see `Stage.rates`)."""
    encoder = pretrainer.encoder
    groups = {"embedding": list(encoder.embedding.trainable_variables)}
    for i, block in enumerate(encoder.blocks):
        groups[f"block_{i}"] = list(block.trainable_variables)
    groups["pooler"] = [] if encoder.pooler is None else list(encoder.pooler.trainable_variables)
    groups["mlm_head"] = list(pretrainer.masked_lm.trainable_variables)
    groups["nsp_head"] = list(pretrainer.next_sentence.trainable_variables)
    return groups


def stage_variables(pretrainer, stage: Stage) -> dict[float, list]:
    """{learning-rate multiplier: variables} the stage trains (multiplier 1.0 = full rate)."""
    groups = variable_groups(pretrainer)
    unknown = sorted(set(stage.rates) - set(groups))
    if unknown:
        raise ValueError(
            f"stage {stage.name}: no variable group(s) {unknown} in the student; "
            f"it has {sorted(groups)}"
        )
    by_rate: dict[float, list] = {}
    for group, rate in stage.rates.items():
        by_rate.setdefault(rate, []).extend(groups[group])
    return {rate: by_rate[rate] for rate in sorted(by_rate, reverse=True)}
