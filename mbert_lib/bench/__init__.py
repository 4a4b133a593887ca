"""Benchmarks: latency and throughput measurements with JSON output.

`timing` holds the measurement primitives (medians over repeated runs,
interleaved comparisons); one module per kind of benchmark sits beside it.
"""

from mbert_lib.bench.timing import (
    Timing,
    TimingPlan,
    interleaved_timings,
    time_callable,
    write_json,
)

__all__ = ["Timing", "TimingPlan", "interleaved_timings", "time_callable", "write_json"]
