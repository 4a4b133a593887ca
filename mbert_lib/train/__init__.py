"""Training: the reusable loop machinery and the pre-training (teacher) trainer.

    strategy.py        tf.distribute strategy + mixed-precision policy by name
    checkpointing.py   resumable checkpoints (model, optimizer, step, data iterator), done marker
    progress.py        tqdm progress with tokens/s (examples/s), TensorBoard scalars
    loop.py            distributed (optionally XLA) train step, evaluator, the loop itself
                       and its settings (LoopSettings)
    run_record.py      the experiment a run records, and the one "same run?" check
    run_dir.py         a run directory's start (finished_run) and writer (writing_run)
    objectives.py      MLM + NSP loss and held-out metrics (the objective protocol)
    synthetic.py       SYNTHETIC pre-training batches for smoke tests
    pretrain_data.py   build_pretraining_datasets: the trainer's single data entry point
    memory.py          a run too large for this machine's memory, refused before it starts
    pretrain.py        run_pretraining
    metrics_io.py      a run's TensorBoard scalars read back as a table
    baselines.py       context-free baselines: unigram MLM, majority-class NSP
    evaluation.py      held-out metrics of a Pretrainer on example arrays; filling in masks
    state.py           a run's model + optimizer restored for inspection; one batch's gradients

Every trainer (pre-training here, distillation in mbert_lib.distill, fine-tuning in
mbert_lib.finetune) has one skeleton:

    done = finished_run(experiment, model_dir, ...)         # same run? already done?
    if done is not None: return done
    with writing_run(experiment, model_dir, chief):          # lock + experiment.yaml
        under create_strategy(...) and precision_policy(...):
            in strategy.scope(): model, optimizer.build(variables), step_counter()
            RunCheckpoint(..., model=, optimizer=, step=, train_iterator=).restore_latest()
            run_loop(train_step=make_train_step(strategy, objective, ...), ...,
                     settings=LoopSettings(...), evaluate=make_evaluator(...))
        write_model_files(...); write_done(model_dir, train_steps, eval=...)

with an objective that has the four methods of the protocol in objectives.py. A staged
trainer gives each stage its own checkpoint directory and calls `run_loop` per stage.
"""
