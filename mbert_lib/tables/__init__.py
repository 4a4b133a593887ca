"""Paper-vs-ours tables, one module per paper table, each returning pandas DataFrames.

    table1_sizes         Table 1: the presets' sizes and FLOPs, and a run's built models
    tables8_9_transfer   Tables 8 and 9: transfer strategies and ablations, the findings
    sst2_finetuning      the fine-tuning comparison beside the paper's SST-2 numbers
    table6_quantization  Table 6: dev accuracy of every TFLite precision beside Keras
    table7_norm_act      Table 7: latency by normalization × activation (TFLite and Keras)
    speed_size           "4.3× smaller, 5.5× faster": sizes, latency ratios, the targets

The notebooks, the report (`mbert_lib.report`) and the figures (`mbert_lib.viz`) all
build their tables here, so they print the same numbers. Tables of a run read its step
records (`mbert_lib.step_records.load_records`):

    from mbert_lib import tables
    tables.preset_table()                   # one row per preset
    tables.table8(records)                  # one row per strategy
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
from mbert_lib.tables.sst2_finetuning import sst2_table
from mbert_lib.tables.table1_sizes import (
    flops_comparison,
    preset_table,
    run_sizes,
    table1,
    table1_params_comparison,
    table1_shapes,
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
from mbert_lib.tables.tables8_9_transfer import findings_table, ranking, table8, table9

__all__ = [
    "ACCURACY_TARGETS",
    "combination_label",
    "findings_table",
    "flops_comparison",
    "grid_model",
    "keras_table7",
    "latency_table",
    "LATENCY_TARGETS",
    "paper_table6",
    "preset_table",
    "ranking",
    "ratios",
    "run_sizes",
    "size_table",
    "sst2_table",
    "table1",
    "table1_params_comparison",
    "table1_shapes",
    "table6",
    "table6_with_targets",
    "table7",
    "table7_by_threads",
    "table8",
    "table9",
    "targets",
    "targets_summary",
]
