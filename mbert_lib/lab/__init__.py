"""The attention-transfer lab: a task where the teacher's attention map is the knowledge.

On WikiText the teacher's maps are mostly positional smears; here they are an
algorithm. A small IB-BERT teacher learns the generated induction task
(`mbert_lib.data.structured_task`), and five small MobileBERT students with the same
number of updates learn from it, each by its own variant of the transfer; which of them
learn the task shows what attention transfer carries.

    settings  the task, the model sizes, the budgets (LabSettings); teacher/student configs
    data      the task's documents through BERT's MLM + NSP writer, in memory
    loop      a compiled step per stage kind, warm-up + linear decay, reused across runs
    variants  the five students' stages and losses (PKT, FMT only, AT only, copy, none)
    measure   accuracy on structured predictions; attention mass on the rule's target
    run       the whole lab, resumable; attention_lab.json

`python -m mbert_lib reproduce --recipe attention_lab --out DIR` runs it
(`mbert_lib.pipeline.steps_lab`).
"""

from mbert_lib.lab.run import RESULT_FILE, run_lab
from mbert_lib.lab.settings import LabSettings, lab_settings

__all__ = ["RESULT_FILE", "LabSettings", "lab_settings", "run_lab"]
