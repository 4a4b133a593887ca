"""Training: the reusable loop machinery and the pre-training (teacher) trainer.

    strategy.py        tf.distribute strategy + mixed-precision policy by name
    checkpointing.py   resumable checkpoints (model, optimizer, step, data iterator), done marker
    progress.py        tqdm progress with tokens/s (examples/s), TensorBoard scalars
    step.py            one distributed (optionally XLA) train step and the evaluator
    loop.py            the loop that repeats the step (progress, scalars, checkpoints, eval)
                       and its settings (LoopSettings)
    run.py             TrainingRun: the wrapper every trainer trains inside (resume,
                       chief-only writing, snapshots, the done record)
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
mbert_lib.finetune) states its algorithm and leaves the run's life to `TrainingRun`:

    done = finished_run(experiment, model_dir, ...)         # same run? already done?
    if done is not None: return done
    run = TrainingRun(model_dir, strategy, show_progress, log)
    with run.writing(experiment):                            # lock + experiment.yaml
        in strategy.scope(): model, optimizer.build(variables), step_counter()
        checkpoint = run.checkpoint("checkpoints", keep, model=, optimizer=, step=,
                                    train_iterator=)
        run.resume(checkpoint)
        run.train(make_train_step(strategy, objective, optimizer, variables),
                  checkpoint, LoopSettings(...), make_evaluator(...))
        return run.finish(model, train_steps, save_tokenizer, eval=...)

with an objective that has the four methods of the protocol in objectives.py. The
distillation trainer runs that body once per stage, inside `progressive_transfer`
(mbert_lib.distill.progressive).
"""
