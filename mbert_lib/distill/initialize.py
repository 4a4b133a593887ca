"""Start the student from the teacher: copy the embedding and the MLM head by role.

Teacher and student have the same embedding and MLM classifier shapes, so
the student starts with the teacher's token table, trigram projection,
position and type tables, embedding norm γ and β, and MLM head; layer-wise
transfer then trains only the blocks (paper section 3.6, paraphrased).
Each weight is copied from the variable with the same role, never by
position: tf-models copies with get_weights()/set_weights(), and because its
NoNorm creates (β, γ) while LayerNormalization creates (γ, β), the student's
embedding γ and β arrive swapped.
"""

from __future__ import annotations

import tensorflow as tf


def _embedding_roles(encoder) -> dict[str, tf.Variable]:
    emb = encoder.embedding
    roles = {
        "word_embeddings": emb.word_embeddings.embeddings,
        "position_embeddings": emb.position_embeddings.embeddings,
        "token_type_embeddings": emb.token_type_embeddings.embeddings,
        "norm/gamma": emb.norm.gamma,
        "norm/beta": emb.norm.beta,
    }
    if emb.embedding_transformation is not None:
        roles["embedding_transformation/kernel"] = emb.embedding_transformation.kernel
        roles["embedding_transformation/bias"] = emb.embedding_transformation.bias
    return roles


def _mlm_roles(pretrainer) -> dict[str, tf.Variable]:
    head = pretrainer.masked_lm
    roles = {
        "mlm/transform/kernel": head.transform.kernel,
        "mlm/transform/bias": head.transform.bias,
        "mlm/transform_norm/gamma": head.transform_norm.gamma,
        "mlm/transform_norm/beta": head.transform_norm.beta,
        "mlm/output_bias": head.output_bias,
    }
    if head.extra_output_weights is not None:
        roles["mlm/extra_output_weights"] = head.extra_output_weights
    return roles


def copy_from_teacher(teacher, student, include_mlm_head: bool = True) -> list[str]:
    """Copies the teacher pretrainer's embedding (and MLM head) into the student's.

    Both are built Pretrainers. Returns the copied roles. Raises ValueError
    listing every role that is missing on one side or differs in shape; on
    error nothing is copied.
    """
    t_roles = _embedding_roles(teacher.encoder)
    s_roles = _embedding_roles(student.encoder)
    if include_mlm_head:
        t_roles.update(_mlm_roles(teacher))
        s_roles.update(_mlm_roles(student))
    problems = [
        f"{r}: only in the {'teacher' if r in t_roles else 'student'}"
        for r in sorted(set(t_roles) ^ set(s_roles))
    ]
    problems += [
        f"{r}: teacher {t_roles[r].shape} vs student {s_roles[r].shape}"
        for r in sorted(set(t_roles) & set(s_roles))
        if t_roles[r].shape != s_roles[r].shape
    ]
    if problems:
        raise ValueError(
            "cannot copy the teacher's embedding into the student:\n  " + "\n  ".join(problems)
        )
    for role, variable in s_roles.items():
        variable.assign(t_roles[role])
    return sorted(s_roles)
