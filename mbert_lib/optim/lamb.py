"""LAMB: layer-wise adaptive moments for large-batch training (You et al., 2019).

For one variable x (a "layer" in the paper's sense) with gradient g at update
t = 1, 2, ... (Algorithm 2 of arXiv 1904.00962):

    m_t = β₁ m_{t−1} + (1 − β₁) g_t                  first moment
    v_t = β₂ v_{t−1} + (1 − β₂) g_t²                 second moment
    m̂_t = m_t / (1 − β₁ᵗ),  v̂_t = v_t / (1 − β₂ᵗ)    bias correction
    r_t = m̂_t / (√v̂_t + ε)                          Adam direction
    u_t = r_t + λ x_t                                decoupled weight decay
    x_{t+1} = x_t − η_t · ‖x_t‖ / ‖u_t‖ · u_t         layer-wise trust ratio

The trust ratio ‖x‖ / ‖u‖ is replaced by 1 when either norm is 0 (a freshly
zero-initialised bias, or a zero update). Variables whose names match
`exclude_from_weight_decay` get λ = 0, and those matching
`exclude_from_layer_adaptation` (by default the same patterns) get trust
ratio 1, i.e. a plain Adam step: norm scales/shifts and biases, as in the
original MobileBERT code. Names are matched with `re.search` on the
variable's name without the ":0" suffix, e.g.
"pretrainer/mobile_bert_encoder/layer_0/attention_norm/gamma".

Gradient clipping by global norm (BERT's `clip_by_global_norm(grads, 1.0)`)
is the base class's `global_clipnorm`; Keras' `clipnorm` would clip each
variable on its own, which is not what BERT does.

The original MobileBERT (TF1) LAMB omits the bias correction;
`bias_correction=False` reproduces it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import tensorflow as tf
import tf_keras

# NoNorm / LayerNorm scales and shifts (…/gamma, …/beta) and every bias
# (…/bias, the MLM head's …/output_bias).
from mbert_lib.experiment import DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY


def variable_name(variable) -> str:
    """The variable's name without the ":0" output suffix."""
    return re.sub(r":\d+$", "", variable.name)


def _matches(name: str, patterns: Sequence[str]) -> bool:
    return any(re.search(p, name) for p in patterns)


def _norm(x):
    """‖x_i‖₂ of each of the k stacked variables in x [k, ...]; [k, 1, …, 1]."""
    return tf.sqrt(tf.reduce_sum(tf.square(x), axis=list(range(1, x.shape.rank)), keepdims=True))


@tf_keras.utils.register_keras_serializable(package="mbert_lib")
class Lamb(tf_keras.optimizers.Optimizer):
    """LAMB with decoupled weight decay and a per-variable trust ratio.

    Args:
        learning_rate: a float or a `LearningRateSchedule` (η_t).
        weight_decay_rate: λ, applied to variables not matching
            `exclude_from_weight_decay`.
        beta_1, beta_2, epsilon: Adam's β₁, β₂, ε.
        exclude_from_weight_decay: regex patterns of variable names with λ = 0.
        exclude_from_layer_adaptation: regex patterns of variable names with
            trust ratio 1; None means the weight-decay patterns.
        bias_correction: divide the moments by (1 − βᵗ) (the paper: True).
        global_clipnorm: clip all gradients together to this global norm.
    """

    def __init__(  # noqa: PLR0913 (a Keras optimizer's hyperparameters are its arguments)
        self,
        learning_rate=1e-3,
        weight_decay_rate: float = 0.01,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-6,
        exclude_from_weight_decay: Sequence[str] = DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY,
        exclude_from_layer_adaptation: Sequence[str] | None = None,
        bias_correction: bool = True,
        global_clipnorm: float | None = None,
        name: str = "Lamb",
        **kwargs,
    ):
        # weight_decay=None: the base class would decay weights AdamW-style,
        # outside the trust ratio; LAMB decays inside it (u_t above).
        super().__init__(
            name=name,
            weight_decay=None,
            global_clipnorm=global_clipnorm,
            jit_compile=False,
            **kwargs,
        )
        for field, value in [("beta_1", beta_1), ("beta_2", beta_2)]:
            if not 0.0 <= value < 1.0:
                raise ValueError(f"{field} must be in [0, 1), got {value}")
        if weight_decay_rate < 0 or epsilon < 0:
            raise ValueError(
                f"weight_decay_rate and epsilon must be >= 0, got {weight_decay_rate} and {epsilon}"
            )
        self._learning_rate = self._build_learning_rate(learning_rate)
        self.weight_decay_rate = float(weight_decay_rate)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)
        self.exclude_from_weight_decay_patterns = tuple(exclude_from_weight_decay)
        self.exclude_from_layer_adaptation_patterns = tuple(
            self.exclude_from_weight_decay_patterns
            if exclude_from_layer_adaptation is None
            else exclude_from_layer_adaptation
        )
        self.bias_correction = bool(bias_correction)
        object.__setattr__(self, "_scalars_cache", None)

    def uses_weight_decay(self, variable) -> bool:
        """λ > 0 for this variable (its name matches no exclusion pattern)."""
        return self.weight_decay_rate > 0 and not _matches(
            variable_name(variable), self.exclude_from_weight_decay_patterns
        )

    def uses_layer_adaptation(self, variable) -> bool:
        """The trust ratio applies to this variable."""
        return not _matches(variable_name(variable), self.exclude_from_layer_adaptation_patterns)

    def build(self, var_list):
        super().build(var_list)
        if getattr(self, "_built", False):
            return
        self._built = True
        self._momentums = [self.add_variable_from_reference(v, "m") for v in var_list]
        self._velocities = [self.add_variable_from_reference(v, "v") for v in var_list]

    def direction(self, gradient, variable):
        """(m_t, v_t, u_t, trust ratio) of the next update of `variable`; assigns nothing.

        `gradient` must already be clipped (apply_gradients clips before
        update_step). The update is then x_{t+1} = x_t − η_t · ratio · u_t.
        """
        index = self._index_dict[self._var_key(variable)]
        stacked = [
            tf.convert_to_tensor(t)[tf.newaxis]  # sparse (embedding) gradients densified
            for t in (gradient, variable, self._momentums[index], self._velocities[index])
        ]
        m_t, v_t, update, ratio = self._stacked_direction(
            *stacked, self.uses_weight_decay(variable), self.uses_layer_adaptation(variable)
        )
        return m_t[0], v_t[0], update[0], tf.reshape(ratio, [])

    def _stacked_direction(self, gradient, x, m, v, decay: bool, adapt: bool):
        """`direction` for k variables of one shape stacked on axis 0: [k, ...] each.

        The norms run over each variable's own entries; the ratio is [k, 1, …, 1].
        """
        dtype = x.dtype
        beta_1, beta_2 = tf.cast(self.beta_1, dtype), tf.cast(self.beta_2, dtype)
        m_t = beta_1 * m + (1 - beta_1) * gradient  # m_t
        v_t = beta_2 * v + (1 - beta_2) * tf.square(gradient)  # v_t
        m_hat, v_hat = m_t, v_t
        if self.bias_correction:
            _, correction_1, correction_2 = self._step_scalars(dtype)
            m_hat = m_t / correction_1  # m̂_t
            v_hat = v_t / correction_2  # v̂_t
        update = m_hat / (tf.sqrt(v_hat) + self.epsilon)  # r_t
        if decay:
            update += tf.cast(self.weight_decay_rate, dtype) * x  # u_t = r_t + λ x_t
        ratio = tf.ones([tf.shape(x)[0]] + [1] * (x.shape.rank - 1), dtype)
        if adapt:
            w_norm, u_norm = _norm(x), _norm(update)
            ratio = tf.where(
                w_norm > 0,  # ‖x_t‖ / ‖u_t‖
                tf.where(u_norm > 0, w_norm / u_norm, 1.0),
                1.0,
            )
        return m_t, v_t, update, ratio

    def _step_scalars(self, dtype):
        """(η_t, 1 − β₁ᵗ, 1 − β₂ᵗ) of the next update, as `dtype` scalars.

        Inside `apply_gradients` they are computed once, for the first variable,
        and shared by all: a step then has a few ops per variable fewer.
        """
        cache, key = self._scalars_cache, (tf.compat.v1.get_default_graph(), dtype)
        if cache is not None and key in cache:
            return cache[key]
        t = tf.cast(self.iterations + 1, dtype)
        scalars = (
            tf.cast(self.learning_rate, dtype),
            1 - tf.pow(tf.cast(self.beta_1, dtype), t),
            1 - tf.pow(tf.cast(self.beta_2, dtype), t),
        )
        if cache is not None:
            cache[key] = scalars
        return scalars

    def apply_gradients(self, grads_and_vars, *args, **kwargs):
        object.__setattr__(self, "_scalars_cache", {})  # untracked: holds tensors of one step
        try:
            return super().apply_gradients(grads_and_vars, *args, **kwargs)
        finally:
            object.__setattr__(self, "_scalars_cache", None)

    def update_step(self, gradient, variable):
        index = self._index_dict[self._var_key(variable)]
        m_t, v_t, update, ratio = self.direction(gradient, variable)
        self._momentums[index].assign(m_t)
        self._velocities[index].assign(v_t)
        lr, _, _ = self._step_scalars(variable.dtype)
        variable.assign_sub(lr * ratio * update)  # x_{t+1}

    def _distributed_apply_gradients_fn(self, distribution, grads_and_vars, **kwargs):
        """Updates the variables of one shape together when nothing is distributed.

        The per-variable update is ~38 small graph ops, and a step's cost was
        mostly their dispatch; stacking the k variables of a shape (and their moments)
        runs the same arithmetic once per shape. Under a tf.distribute strategy
        the base class updates each variable (`update_step`) on its devices.
        """
        if tf.distribute.has_strategy() or self.use_ema:
            return super()._distributed_apply_gradients_fn(distribution, grads_and_vars, **kwargs)
        groups: dict = {}
        for gradient, variable in grads_and_vars:
            key = (
                tuple(variable.shape),
                variable.dtype,
                self.uses_weight_decay(variable),
                self.uses_layer_adaptation(variable),
            )
            groups.setdefault(key, []).append((gradient, variable))
        for (_, dtype, decay, adapt), members in groups.items():
            indices = [self._index_dict[self._var_key(var)] for _, var in members]
            stacked = [
                tf.stack([tf.convert_to_tensor(t) for t in column])
                for column in (
                    [g for g, _ in members],
                    [var for _, var in members],
                    [self._momentums[i] for i in indices],
                    [self._velocities[i] for i in indices],
                )
            ]
            m_t, v_t, update, ratio = self._stacked_direction(*stacked, decay, adapt)
            lr, _, _ = self._step_scalars(dtype)
            steps = tf.unstack(lr * ratio * update)
            for (_, var), i, m_i, v_i, step in zip(
                members, indices, tf.unstack(m_t), tf.unstack(v_t), steps
            ):
                self._momentums[i].assign(m_i)
                self._velocities[i].assign(v_i)
                var.assign_sub(step)  # x_{t+1}
        return self.iterations.assign_add(1)

    def get_config(self):
        config = super().get_config()
        config.pop("weight_decay", None)
        config.pop("jit_compile", None)
        config.update(
            {
                "learning_rate": self._serialize_hyperparameter(self._learning_rate),
                "weight_decay_rate": self.weight_decay_rate,
                "beta_1": self.beta_1,
                "beta_2": self.beta_2,
                "epsilon": self.epsilon,
                "exclude_from_weight_decay": list(self.exclude_from_weight_decay_patterns),
                "exclude_from_layer_adaptation": list(self.exclude_from_layer_adaptation_patterns),
                "bias_correction": self.bias_correction,
            }
        )
        return config
