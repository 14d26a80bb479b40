"""FoldedEinsumDense: Keras EinsumDense that runs a plain projection as one 2-D matmul (a speed
path: the plain twin is keras.layers.EinsumDense)."""

import keras

from official_bert.kernels.folded_projection import folded_product


def _fold_plan(equation):
    """How many trailing input axes `equation` contracts, or None if it is not a plain projection.

    A plain projection contracts the input's last k axes with the kernel's first k, in order,
    and keeps the input's leading axes then the kernel's remaining axes in the output:
    "abc,cde->abde" (k=1, the attention query/key/value) or "abcd,cde->abe" (k=2, the attention
    output). Anything else (transposed kernels, broadcast batch axes) returns None.
    """
    try:
        inputs, output = equation.replace(" ", "").split("->")
        x, kernel = inputs.split(",")
    except ValueError:
        return None
    if "." in equation or any(len(set(axes)) != len(axes) for axes in (x, kernel, output)):
        return None
    k = len(set(x) & set(kernel))
    if k == 0 or x[-k:] != kernel[:k] or output != x[:-k] + kernel[k:]:
        return None
    return k


@keras.saving.register_keras_serializable(package="official_bert")
class FoldedEinsumDense(keras.layers.EinsumDense):
    """`keras.layers.EinsumDense` whose plain projections are one 2-D MatMul plus BiasAdd.

    Keras's TensorFlow einsum turns "abc,cde->abde" into `tf.matmul` of the 3-D input with the
    reshaped 2-D kernel, a *broadcast* BatchMatMul, whose kernel gradient is one
    [hidden, heads * head_size] product per batch row followed by a Sum over the batch (and the
    bias gradient another broadcast Sum). Folding the leading axes into rows instead (reshape to
    [rows, k-dims] @ [k-dims, out], `folded_product`) gives one MatMul whose gradients are two
    MatMuls and a BiasAddGrad: cheaper on a CPU (bench/RESULTS.md). Written by hand because
    Keras has no switch for it; the plain twin is EinsumDense itself.

    Same constructor, weights (shapes and names), config and results as EinsumDense; equations
    that are not plain projections (see `_fold_plan`), LoRA and quantized layers take Keras's
    path.

    Call arguments:
      inputs: float tensor whose trailing axes match the kernel's contracted axes, e.g.
        [batch, seq, hidden] for "abc,cde->abde".
      training: unused (as EinsumDense).

    Returns:
      the equation's output, e.g. [batch, seq, heads, head_size], in the compute dtype.
    """

    def call(self, inputs, training=None):
        k = _fold_plan(self.equation)
        if k is None or self.lora_enabled or self.quantization_mode:
            return super().call(inputs, training=training)
        if self.bias is not None and self.bias.shape != self.kernel.shape[k:]:
            return super().call(inputs, training=training)  # a bias on only some output axes
        y = folded_product(inputs, self.kernel, self.bias, k)
        if self.activation is not None:
            y = self.activation(y)
        return y
