"""Exporting trained models: checkpoints in, deployable formats out.

Each exporter is one module (`tflite`, ...); `checkpoint` holds the format
they all read, `tf.train.Checkpoint(model=model)`.
"""
