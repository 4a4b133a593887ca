"""Compression beyond the paper: magnitude pruning with TensorFlow Model Optimization
(`pruning`) and the compressed size that pruning's zeros buy (`size`). The pipeline's
`compress` step (mbert_lib.pipeline.steps_compress) measures them beside int8."""
