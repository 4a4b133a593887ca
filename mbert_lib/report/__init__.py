"""The reproduction report: REPORT.md with every paper-vs-reproduced table of a run.

    machine.py   CPU model, cores, memory, library versions, load average
    markdown.py  DataFrame -> pipe table, "not run" paragraphs
    run.py       wall time per step vs the budget, load, data provenance, seeds
    deployment.py  Table 6, Table 7, the speed and size ratios as markdown (the tables
                 from mbert_lib.tables; load average and GFLOP/s beside them)
    document.py  the sections assembled; figures; writing REPORT.md

The tables themselves come from mbert_lib.tables (Table 1, Tables 8/9 and the paper's
findings, the SST-2 comparison, Tables 6/7) and the records they read from
mbert_lib.step_records (`load_records`).

The pipeline's `report` step (mbert_lib/pipeline/steps_report.py) calls
`write_report`; the figures are in mbert_lib/viz/report.py.
"""

from mbert_lib.report.document import ReportRun, build_markdown, section_status, write_report
from mbert_lib.step_records import load_records

__all__ = ["ReportRun", "build_markdown", "load_records", "section_status", "write_report"]
