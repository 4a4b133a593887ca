"""Knowledge transfer from the IB-BERT teacher to MobileBERT (paper section 4).

The paper's algorithm (the core, `tests/test_core.py`):

    losses.py        FMT, AT and PD (eqs. 1-3)
    objective.py     one stage's loss between a frozen teacher and the student
    plan.py          strategies as stages: which loss, which layers, which variables at
                     which rate (PKT, JKT, AKT, none)
    step.py          one stage's training step (`stage_step`)
    progressive.py   `progressive_transfer`: the stages in order (section 4.3)

Its yaml schema is `mbert_lib.experiment.distill`, with every other experiment schema.

Around it:

    initialize.py    the embedding and MLM head copied from the teacher, by role
    trainer.py       `run_distillation`: `progressive_transfer` inside a run that resumes,
                     checkpoints and records every stage
    analysis.py, transfer_summary.py, gradient_share.py
                     a finished run's losses, maps and gradients, read back
"""
