"""FoldedDense: Keras Dense that multiplies inputs of any rank as one 2-D MatMul (a speed path:
the plain twin is keras.layers.Dense)."""

from __future__ import annotations

import keras

from official_bert.kernels.folded_projection import folded_product
from official_bert.kernels.switch import fast_kernels_enabled


@keras.saving.register_keras_serializable(package="official_bert")
class FoldedDense(keras.layers.Dense):
    """`keras.layers.Dense` whose product on a [..., in] input of rank 3 or more is one 2-D
    MatMul plus BiasAdd (`folded_product`), whichever Keras release is installed.

    How Keras multiplies such an input depends on its release: Keras 3.15 folds it into rows
    (tf.tensordot) and adds the bias to the 3-D result, Keras 3.12 (the release Python 3.10 gets)
    runs a broadcast BatchMatMulV2, whose kernel gradient sums one product per batch row, slower
    on a CPU (bench/RESULTS.md). Here the bias is added to the 2-D product, where TensorFlow's
    graph rewriter fuses it into the MatMul. Written by hand because Keras has no switch for it.

    Same constructor, weights (shapes and names), config and results as Dense; rank-2 inputs,
    LoRA and quantized layers take Keras's path.

    Call arguments:
      inputs: float [..., in_features].
      training: unused (as Dense).

    Returns:
      float [..., units] in the compute dtype, after the activation.
    """

    def call(self, inputs, training=None):
        rank = inputs.shape.rank
        if rank is None or rank <= 2 or self.lora_enabled or self.quantization_mode:
            return super().call(inputs, training=training)
        y = folded_product(inputs, self.kernel, self.bias, 1)
        if self.activation is not None:
            y = self.activation(y)
        return y


def dense_layer(units: int, **kwargs) -> keras.layers.Dense:
    """A Dense layer for a model being built: FoldedDense when the fast kernels are on
    (official_bert.kernels.use_fast_kernels), else keras.layers.Dense. Both have the same
    constructor, config and weights, so the choice changes no variable or checkpoint key."""
    layer_class = FoldedDense if fast_kernels_enabled() else keras.layers.Dense
    return layer_class(units, **kwargs)
