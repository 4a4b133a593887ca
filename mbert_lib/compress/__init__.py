"""Compression beyond the paper: magnitude pruning with TensorFlow Model Optimization
(`pruning`) and the compressed size that pruning's zeros buy (`size`)."""
