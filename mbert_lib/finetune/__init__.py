"""Fine-tuning on GLUE (and the offline builtin task): tasks, metrics, the trainer, search.

    metrics.py        accuracy, F1, Matthews correlation, Pearson, Spearman (numpy)
    builtin_task.py   builtin_shuffled: the offline labeled task (NOT GLUE)
    tasks.py          Task registry: sources, classes, metrics per task
    features.py       [CLS] A [SEP] (B [SEP]) packing, counted truncation
    data.py           a task's encoded train / dev sets and the training batches
    objective.py      cross-entropy / squared-error loss for mbert_lib.train.loop
    evaluate.py       dev logits and metrics
    best.py           evaluation history and best-checkpoint keeping
    trainer.py        run_finetuning (resumable, best epoch exported as a model directory)
    search.py         a grid over batch size / learning rate / epochs x seeds, mean ± std

GLUE files and hub rows are read by `mbert_lib.data.glue`. The package imports none of
its modules, so that reading a fine-tuning yaml does not load TensorFlow.
"""
