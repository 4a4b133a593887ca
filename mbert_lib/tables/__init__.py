"""Paper-vs-ours tables, one module per paper table, each returning pandas DataFrames.

    table6_quantization  Table 6: dev accuracy of every TFLite precision beside Keras
    table7_norm_act      Table 7: latency by normalization × activation (TFLite and Keras)
    speed_size           "4.3× smaller, 5.5× faster": sizes, latency ratios, the targets

The notebooks, the report (`mbert_lib.report`) and the figures (`mbert_lib.viz`) all
build their tables here, so they print the same numbers:

    from mbert_lib import tables
    tables.table6(tflite_result)            # one row per (model, precision)
    tables.table7(latency_records)          # one row per (norm, act, threads)
"""

from mbert_lib.tables.speed_size import (
    LATENCY_TARGETS,
    latency_table,
    ratios,
    size_table,
    targets,
    targets_summary,
)
from mbert_lib.tables.table6_quantization import (
    ACCURACY_TARGETS,
    paper_table6,
    table6,
    table6_with_targets,
)
from mbert_lib.tables.table7_norm_act import (
    combination_label,
    grid_model,
    keras_table7,
    table7,
    table7_by_threads,
)

__all__ = [
    "ACCURACY_TARGETS",
    "LATENCY_TARGETS",
    "combination_label",
    "grid_model",
    "keras_table7",
    "latency_table",
    "paper_table6",
    "ratios",
    "size_table",
    "table6",
    "table6_with_targets",
    "table7",
    "table7_by_threads",
    "targets",
    "targets_summary",
]
