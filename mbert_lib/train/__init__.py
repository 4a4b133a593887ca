"""Training: the reusable loop machinery and the pre-training (teacher) trainer.

    strategy.py        tf.distribute strategy + mixed-precision policy by name
    checkpointing.py   resumable checkpoints (model, optimizer, step, data iterator), done marker
    progress.py        tqdm progress with tokens/s, TensorBoard scalars
    loop.py            distributed (optionally XLA) train step, evaluator, the loop itself
    objectives.py      MLM + NSP loss and held-out metrics (the objective protocol)
    synthetic.py       SYNTHETIC pre-training batches for smoke tests
    pretrain_data.py   build_pretraining_datasets: the trainer's single data entry point
    pretrain.py        run_pretraining
    metrics_io.py      a run's TensorBoard scalars read back as a table
    baselines.py       context-free baselines: unigram MLM, majority-class NSP
    evaluation.py      held-out metrics of a Pretrainer on example arrays; filling in masks
    state.py           a run's model + optimizer restored for inspection; one batch's gradients

A new trainer (distillation stage, fine-tuning) reuses the machinery as
pretrain.py does: write an objective with the four methods of the protocol
in objectives.py; under `create_strategy(...)` and `precision_policy(...)`
build the model and optimizer inside `strategy.scope()` and
`optimizer.build(variables)`; then `make_train_step`, `make_evaluator`,
`RunCheckpoint(..., model=, optimizer=, step=, train_iterator=)` and
`run_loop`. A staged trainer gives each stage its own checkpoint directory
(or adds a stage variable to the checkpoint) and calls `run_loop` per stage.
"""
