"""A Dense layer whose product, bias and activation run as one oneDNN kernel.

    y = act(x W + b)        x: [..., D], W: [D, U], b: [U]

`tf_keras.layers.Dense` applied to [B, T, D] goes through `tf.tensordot`:
reshape, MatMul, reshape, then BiasAdd and the activation as separate passes
over [B, T, U]. Here the leading axes are flattened first, so the graph holds
MatMul → BiasAdd → activation on [B·T, D], which TensorFlow's grappler
remapper fuses into one `_FusedMatMul` (oneDNN: relu, exact gelu, …). Same
weights, names and math as `tf_keras.layers.Dense`; rank-2 inputs go through
it unchanged.
"""

import tensorflow as tf
import tf_keras


@tf_keras.utils.register_keras_serializable(package="mbert_lib")
class Dense(tf_keras.layers.Dense):
    """x [..., D] -> act(x W + b) [..., U]; a tf_keras Dense with a flattened product."""

    def call(self, inputs):
        if inputs.shape.rank is None or inputs.shape.rank <= 2 or not self.use_bias:
            return super().call(inputs)
        x = tf.reshape(inputs, [-1, self.kernel.shape[0]])  # [B·T, D]
        y = tf.nn.bias_add(tf.matmul(x, self.kernel), self.bias)  # [B·T, U]
        if self.activation is not None:
            y = self.activation(y)
        y = tf.reshape(y, tf.concat([tf.shape(inputs)[:-1], [self.units]], 0))
        y.set_shape(inputs.shape[:-1].concatenate([self.units]))
        return y  # [..., U]
