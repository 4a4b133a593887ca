"""Compression beyond the paper: magnitude pruning with TensorFlow Model Optimization."""
