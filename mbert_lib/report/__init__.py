"""The reproduction report: REPORT.md with every paper-vs-reproduced table of a run.

    records.py   the step records of a run directory (<out>/<step>/step.json)
    machine.py   CPU model, cores, memory, library versions, load average
    markdown.py  DataFrame -> pipe table, "not run" paragraphs
    run.py       wall time per step vs the budget, load, data provenance, seeds
    models.py    Table 1 (sizes), Tables 8 / 9 (transfer), the SST-2 comparison
    deployment.py  Table 6, Table 7, the speed and size ratios as markdown (the tables
                 from mbert_lib.tables; load average and GFLOP/s beside them)
    document.py  the sections assembled; figures; writing REPORT.md

The pipeline's `report` step (mbert_lib/pipeline/steps_report.py) calls
`write_report`; the figures are in mbert_lib/viz/report.py.
"""

from mbert_lib.report.document import build_markdown, section_status, write_report
from mbert_lib.report.records import load_records

__all__ = ["build_markdown", "load_records", "section_status", "write_report"]
