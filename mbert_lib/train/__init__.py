"""Training: the reusable loop machinery and the pre-training (teacher) trainer.

    strategy.py        tf.distribute strategy + mixed-precision policy by name
    checkpointing.py   resumable checkpoints (model, optimizer, step, data iterator), done marker
    progress.py        tqdm progress with tokens/s, TensorBoard scalars
    loop.py            distributed (optionally XLA) train step, evaluator, the loop itself
    objectives.py      MLM + NSP loss and held-out metrics
    export.py          final model: bert_config.json + weights (+ tokenizer files)
    synthetic.py       SYNTHETIC pre-training batches for smoke tests
    pretrain_data.py   build_pretraining_datasets: the trainer's single data entry point
    pretrain.py        run_pretraining
"""
