"""The induction task: periodic documents, and which predictions the rule solves, checked
against hand-made examples and a brute-force reading of the writer's output."""

import numpy as np
import pytest

from mbert_lib.data.examples import (
    ExampleConfig,
    create_examples,
    original_tokens,
    tokenize_documents,
)
from mbert_lib.data.structured_task import (
    StructuredTask,
    structured_positions,
    task_documents,
    task_tokenizer,
)

TASK = StructuredTask(num_symbols=16, seq_length=32, min_period=3, max_period=6, max_lead=3)


def test_documents_are_a_lead_then_a_repeated_pattern_of_distinct_symbols():
    documents = task_documents(TASK, 200, seed=3)
    assert documents == task_documents(TASK, 200, seed=3)
    assert documents != task_documents(TASK, 200, seed=4)
    periods = set()
    for (sentence,) in documents:
        words = sentence.split()
        assert len(words) == TASK.document_length
        # the smallest period of the tail that holds from some lead of <= max_lead words
        found = [
            (lead, m)
            for lead in range(TASK.max_lead + 1)
            for m in range(TASK.min_period, TASK.max_period + 1)
            if all(words[i] == words[i + m] for i in range(lead, len(words) - m))
            and len(set(words[lead : lead + m])) == m
        ]
        assert found, sentence
        periods.add(min(m for _, m in found))
    assert periods == set(range(TASK.min_period, TASK.max_period + 1))


def _example(tokens, masked, replaced=None):
    """One hand-made example: tokens (ids), masked positions ([MASK] unless in replaced,
    which maps a position to the id put there instead)."""
    tokenizer = task_tokenizer(TASK)
    replaced = replaced or {}
    inputs = list(tokens)
    for p in masked:
        inputs[p] = replaced.get(p, tokenizer.mask_id)
    P = len(masked)
    return {
        "input_word_ids": np.array([inputs], np.int32),
        "masked_lm_positions": np.array([masked], np.int32),
        "masked_lm_ids": np.array([[tokens[p] for p in masked]], np.int32),
        "masked_lm_weights": np.ones((1, P), np.float32),
    }, tokenizer


def test_the_rule_solves_a_masked_token_whose_evidence_is_visible_and_nothing_else():
    tok = task_tokenizer(TASK)
    a, b, c, d = (tok.token_to_id(f"s00{i}") for i in range(4))
    cls, sep = tok.cls_id, tok.sep_id
    #          0    1  2  3  4  5  6  7  8    9
    tokens = [cls, a, b, c, d, a, b, c, d, sep]
    # 6: left neighbour a (5) seen at 1, the token after it (2) is b: structured, target 2
    # 3: its left neighbour b (2) has no earlier occurrence: not structured
    # 8: kept as itself (replaced by its own id): nothing to recover
    examples, tokenizer = _example(tokens, [3, 6, 8], replaced={8: d})
    structured, target = structured_positions(examples, tokenizer.special_ids)
    assert structured.tolist() == [[0, 1, 0]] and target.tolist() == [[0, 2, 0]]
    # the evidence masked too: 6's left neighbour (5), then the rule's target (2)
    for hidden in (5, 2):
        examples, _ = _example(tokens, sorted([hidden, 6]))
        structured, _ = structured_positions(examples, tokenizer.special_ids)
        assert structured.sum() == 0
    # a random replacement is corrupted too: still structured
    examples, _ = _example(tokens, [7], replaced={7: a})
    assert structured_positions(examples, tokenizer.special_ids)[1].tolist() == [[3]]


def test_every_structured_prediction_of_the_writer_follows_the_rule():
    tokenizer = task_tokenizer(TASK)
    documents = tokenize_documents(tokenizer, task_documents(TASK, 300, seed=0))
    config = ExampleConfig(
        seq_length=32,
        max_predictions_per_seq=12,
        masked_lm_prob=0.25,
        short_seq_prob=0.0,
        dupe_factor=1,
        seed=0,
    )
    examples = create_examples(documents, tokenizer, config)
    structured, target = structured_positions(examples, tokenizer.special_ids)
    original, inputs = original_tokens(examples), examples["input_word_ids"]
    rows, slots = np.nonzero(structured)
    assert len(rows) > 300  # about 2 per example
    for r, k in zip(rows, slots):
        p, j = examples["masked_lm_positions"][r, k], target[r, k]
        assert inputs[r, p] != original[r, p]  # hidden
        assert j < p and inputs[r, j] == original[r, p]  # the answer is visible at j
        assert inputs[r, j - 1] == inputs[r, p - 1] == original[r, p - 1]  # same left token
        # j - 1 is the last earlier visible occurrence of that token
        between = slice(j, p - 1)
        visible = inputs[r, between] == original[r, between]
        assert not np.any(visible & (inputs[r, between] == inputs[r, p - 1]))


@pytest.mark.parametrize(
    "changes, key",
    [
        ({"name": "dyck"}, "task.name"),
        ({"seq_length": 20}, "task.seq_length"),
        ({"vocab_size": 20}, "task.vocab_size"),
        ({"num_symbols": 5}, "task.num_symbols"),
    ],
)
def test_a_bad_task_is_refused_naming_the_field(changes, key):
    with pytest.raises(ValueError, match=key):
        StructuredTask(**{**dict(num_symbols=16, seq_length=32, max_period=6), **changes})
