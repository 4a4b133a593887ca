"""A generated language whose masked tokens are solvable only by attending to the right token.

The `induction` task (Olsson et al., 2022, "In-context learning and induction
heads"): each document is one sentence of symbols `s000 s001 ...`: a short
random lead, then a pattern of m distinct random symbols (its period, drawn
per document from [min_period, max_period]) repeated to the end,

    s017 s004 | s021 s009 s030 s002 | s021 s009 s030 s002 | s021 s009 ...
      lead        pattern (m = 4)        copy                  copy

From the second period on, every token follows the induction rule: find the
previous occurrence of the token to my left, and read the token after it.
No position, word frequency or neighbour alone gives the answer (the period
and the symbols change from one document to the next), so a model has to
attend from the masked position to the rule's target, j + 1.

The documents feed the same MLM + NSP example writer as the text corpora
(`examples.create_examples`) through a WordPiece vocabulary of the symbols.
After masking, each prediction is one of:

  * structured: the token was corrupted ([MASK] or a random symbol), its left
    neighbour x is visible, x occurred before at j, the token at j + 1 is
    visible and uncorrupted, and it is the masked token. The rule solves it,
    and nothing else in the example does;
  * filler: every other prediction (the lead, the first period, a token
    whose evidence was masked too, a token kept as itself).

Chance on a structured position is 1 / num_symbols.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random

import numpy as np

from mbert_lib.config_tree import check
from mbert_lib.data.examples import original_tokens
from mbert_lib.data.text import Document
from mbert_lib.data.tokenizer import SPECIAL_TOKENS, WordPieceTokenizer

TASKS = ("induction",)
SPECIAL_SLOTS = 3  # [CLS] A [SEP] B [SEP]


@dataclasses.dataclass(frozen=True)
class StructuredTask:
    """One generated task: which rule, how many symbols, how long the sequences.

    seq_length T is the model's input length; a document is T - 3 - slack tokens long
    (slack leaves the NSP writer room for a short segment B without cutting the
    pattern). vocab_size, when given, is the model's: it must hold the specials and
    every symbol.
    """

    name: str = "induction"
    num_symbols: int = 32
    seq_length: int = 32
    min_period: int = 3
    max_period: int = 8
    max_lead: int = 4
    slack: int = 2
    vocab_size: int | None = None

    def __post_init__(self):
        check(self.name in TASKS, "task.name", f"one of {list(TASKS)}", self.name)
        check(self.min_period >= 2, "task.min_period", ">= 2", self.min_period)
        check(
            self.max_period >= self.min_period,
            "task.max_period",
            f">= task.min_period ({self.min_period})",
            self.max_period,
        )
        check(
            self.num_symbols >= self.max_period,
            "task.num_symbols",
            f">= task.max_period ({self.max_period}): a pattern's symbols are distinct",
            self.num_symbols,
        )
        check(self.max_lead >= 0, "task.max_lead", ">= 0", self.max_lead)
        check(self.slack >= 0, "task.slack", ">= 0", self.slack)
        longest = SPECIAL_SLOTS + self.slack + self.max_lead + 2 * self.max_period + 1
        check(
            self.seq_length >= longest,
            "task.seq_length",
            f">= {longest}: the longest dependency (lead {self.max_lead} + two periods of "
            f"{self.max_period} + 1) plus {SPECIAL_SLOTS} special tokens and slack "
            f"{self.slack}",
            self.seq_length,
        )
        needed = len(SPECIAL_TOKENS) + self.num_symbols
        if self.vocab_size is not None:
            check(
                self.vocab_size >= needed,
                "task.vocab_size",
                f">= {needed}: {len(SPECIAL_TOKENS)} special tokens and {self.num_symbols} symbols",
                self.vocab_size,
            )

    @property
    def document_length(self) -> int:
        return self.seq_length - SPECIAL_SLOTS - self.slack

    @property
    def chance(self) -> float:
        return 1.0 / self.num_symbols

    def fingerprint(self, num_documents: int, seed: int) -> str:
        """sha256 of the settings that decide the documents (the generator is pure)."""
        settings = {**dataclasses.asdict(self), "documents": num_documents, "seed": seed}
        settings.pop("vocab_size")
        return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()


def symbol(i: int) -> str:
    return f"s{i:03d}"


def task_tokenizer(task: StructuredTask) -> WordPieceTokenizer:
    """The specials, then one token per symbol (ids 5 ... 4 + num_symbols)."""
    vocab = list(SPECIAL_TOKENS) + [symbol(i) for i in range(task.num_symbols)]
    return WordPieceTokenizer(vocab, do_lower_case=True, source=f"task {task.name}")


def task_documents(task: StructuredTask, num_documents: int, seed: int) -> list[Document]:
    """num_documents one-sentence documents of the task, the same for the same seed."""
    check(num_documents >= 2, "num_documents", ">= 2 (NSP draws from another one)", num_documents)
    rng = random.Random(seed)
    documents = []
    for _ in range(num_documents):
        period = rng.randint(task.min_period, task.max_period)
        pattern = rng.sample(range(task.num_symbols), period)
        lead = [rng.randrange(task.num_symbols) for _ in range(rng.randint(0, task.max_lead))]
        repeats = task.document_length // period + 1
        body = (pattern * repeats)[: task.document_length - len(lead)]
        documents.append([" ".join(symbol(i) for i in lead + body)])
    return documents


def structured_positions(
    examples: dict[str, np.ndarray], special_ids
) -> tuple[np.ndarray, np.ndarray]:
    """Which predictions the induction rule solves, and where the rule looks.

    examples: the writer's arrays (input_word_ids [n, T], masked_lm_positions,
    masked_lm_weights [n, P], ...). Returns (structured float32 [n, P], 1 where the
    prediction is structured; target int32 [n, P], the position j + 1 the rule reads,
    0 elsewhere). See the module docstring for the definition.
    """
    inputs = examples["input_word_ids"]
    original = original_tokens(examples)
    positions = examples["masked_lm_positions"]
    n, P = positions.shape
    structured = np.zeros((n, P), np.float32)
    target = np.zeros((n, P), np.int32)
    special = np.isin(inputs, list(special_ids))
    visible = (inputs == original) & ~special  # [n, T]: an uncorrupted symbol
    rows, slots = np.nonzero(examples["masked_lm_weights"] > 0)
    for r, k in zip(rows, slots):
        p = positions[r, k]
        if p < 2 or inputs[r, p] == original[r, p] or not visible[r, p - 1]:
            continue
        left = inputs[r, p - 1]
        earlier = np.nonzero(visible[r, : p - 1] & (inputs[r, : p - 1] == left))[0]
        if len(earlier) == 0:
            continue
        j = earlier[-1] + 1
        if visible[r, j] and original[r, j] == original[r, p]:
            structured[r, k], target[r, k] = 1.0, j
    return structured, target
