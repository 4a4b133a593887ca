"""Exporting trained models to deployable formats (TFLite) and checking they still work.

Every exporter reads a model directory or checkpoint through mbert_lib.checkpoints.
"""
