"""Copying the teacher's embedding and MLM head into the student, by role."""

import numpy as np
import pytest

import mbert_lib as m
from mbert_lib.distill.initialize import copy_from_teacher


def _pair(**student_changes):
    teacher_cfg = m.get_preset("tiny_teacher").replace(vocab_size=50, num_hidden_layers=2)
    student_cfg = m.get_preset("tiny_student").replace(
        vocab_size=50, num_hidden_layers=2, **student_changes
    )
    return m.build_pretrainer(teacher_cfg), m.build_pretrainer(student_cfg)


def test_gamma_and_beta_arrive_by_role_not_position():
    teacher, student = _pair()
    t_norm = teacher.encoder.embedding.norm  # LayerNormalization in the teacher
    t_norm.gamma.assign(np.full(t_norm.gamma.shape, 3.0))
    t_norm.beta.assign(np.full(t_norm.beta.shape, -2.0))
    copy_from_teacher(teacher, student)
    s_norm = student.encoder.embedding.norm  # NoNorm in the student
    assert type(s_norm).__name__ == "NoNorm"
    np.testing.assert_array_equal(s_norm.gamma.numpy(), 3.0)
    np.testing.assert_array_equal(s_norm.beta.numpy(), -2.0)


def test_copied_weights_equal_the_teachers_and_blocks_are_untouched():
    teacher, student = _pair()
    before = [w.numpy().copy() for w in student.encoder.blocks[0].weights]
    roles = copy_from_teacher(teacher, student)
    assert "word_embeddings" in roles and "mlm/extra_output_weights" in roles
    te, se = teacher.encoder.embedding, student.encoder.embedding
    np.testing.assert_array_equal(
        se.word_embeddings.embeddings.numpy(), te.word_embeddings.embeddings.numpy()
    )
    np.testing.assert_array_equal(
        se.embedding_transformation.kernel.numpy(), te.embedding_transformation.kernel.numpy()
    )
    np.testing.assert_array_equal(
        student.masked_lm.extra_output_weights.numpy(),
        teacher.masked_lm.extra_output_weights.numpy(),
    )
    for a, w in zip(before, student.encoder.blocks[0].weights):
        np.testing.assert_array_equal(a, w.numpy())


def test_mismatched_shapes_are_listed_and_nothing_is_copied():
    teacher, student = _pair(embedding_size=16)
    table = student.encoder.embedding.word_embeddings.embeddings.numpy().copy()
    with pytest.raises(ValueError) as err:
        copy_from_teacher(teacher, student)
    assert "word_embeddings" in str(err.value)
    assert "embedding_transformation/kernel" in str(err.value)
    np.testing.assert_array_equal(
        student.encoder.embedding.word_embeddings.embeddings.numpy(), table
    )
