"""The lab's examples: the task's documents through BERT's MLM + NSP writer, in memory."""

from __future__ import annotations

import dataclasses

import numpy as np

from mbert_lib.data.examples import ExampleConfig, create_examples, tokenize_documents
from mbert_lib.data.structured_task import (
    structured_positions,
    task_documents,
    task_tokenizer,
)
from mbert_lib.lab.settings import LabSettings

MODEL_INPUTS = ("input_word_ids", "input_mask", "input_type_ids", "masked_lm_positions")


@dataclasses.dataclass(frozen=True)
class LabExamples:
    """The writer's arrays (n examples, T positions, P predictions) plus the task's view:
    structured float32 [n, P] (1: the rule solves it) and rule_target int32 [n, P] (the
    position the rule reads)."""

    arrays: dict[str, np.ndarray]
    fingerprint: str

    def __len__(self) -> int:
        return len(self.arrays["input_word_ids"])

    def inputs(self, rows=slice(None)) -> dict[str, np.ndarray]:
        return {k: self.arrays[k][rows] for k in MODEL_INPUTS}

    def rows(self, batch_size: int, seed: int):
        """Endless batches of row indices ([batch_size] int32 each), shuffled once per
        pass over the examples, one order per seed."""
        rng = np.random.default_rng(seed)
        n = len(self)
        while True:
            order = rng.permutation(n).astype(np.int32)
            for start in range(0, n - batch_size + 1, batch_size):
                yield order[start : start + batch_size]


def make_examples(settings: LabSettings, split: str) -> LabExamples:
    """ "train" or "dev" examples of the lab's task, the same for the same settings."""
    task = settings.task
    count = {"train": settings.train_documents, "dev": settings.dev_documents}[split]
    seed = settings.data_seed + (split == "dev")
    tokenizer = task_tokenizer(task)
    documents = tokenize_documents(tokenizer, task_documents(task, count, seed))
    config = ExampleConfig(
        seq_length=task.seq_length,
        max_predictions_per_seq=max(1, round(task.seq_length * settings.masked_lm_prob * 1.5)),
        masked_lm_prob=settings.masked_lm_prob,
        short_seq_prob=0.0,
        dupe_factor=1,
        seed=seed,
    )
    arrays = create_examples(documents, tokenizer, config)
    arrays["structured"], arrays["rule_target"] = structured_positions(
        arrays, tokenizer.special_ids
    )
    return LabExamples(arrays, task.fingerprint(count, seed))
