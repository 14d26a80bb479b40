"""ScalarMix: a learned weighted sum of the encoder's layers (ELMo's scalar mix)."""

from __future__ import annotations

import keras
import numpy as np
from keras import ops


@keras.saving.register_keras_serializable(package="official_bert")
class ScalarMix(keras.layers.Layer):
    """`gamma * sum_i softmax(w)_i * h_i` over N layers, as ELMo (Peters et al., 2018, eq. 1).

    Args:
      num_layers: N, how many tensors are mixed.
      initial_weights: N floats, the initial unnormalized weights `w` (default zeros: every layer
        weighs 1/N). A very negative entry (e.g. -1e9) switches a layer off.
      initial_gamma: the initial scale `gamma`.
      trainable: False keeps the mix fixed (no trainable weights).

    Variables (float32 whatever the dtype policy): `scalar_weights` [N] and `gamma` []. The name
    "gamma" keeps it out of weight decay (optimization.WEIGHT_DECAY_EXCLUSIONS); the weights are
    decayed towards 0, i.e. towards the uniform mix (ELMo's regularizer of w).

    Call arguments:
      layers: a list of N float tensors of the same shape, e.g. BertEncoder's
        `encoder_outputs` ([batch, seq_length, hidden_size] each).

    Returns:
      One tensor of that shape and of the inputs' dtype, whatever the layer's policy (inputs are
      not auto-cast): the weights are normalized in float32, then cast to it.
    """

    def __init__(
        self,
        num_layers: int,
        initial_weights: list[float] | None = None,
        initial_gamma: float = 1.0,
        **kwargs,
    ):
        kwargs.setdefault("autocast", False)  # mix in the inputs' dtype
        super().__init__(**kwargs)
        if num_layers < 1:
            raise ValueError(f"ScalarMix needs at least one layer, got num_layers={num_layers}")
        if initial_weights is not None:
            initial_weights = [float(value) for value in initial_weights]
            if len(initial_weights) != num_layers:
                raise ValueError(
                    f"ScalarMix: initial_weights has {len(initial_weights)} entries, expected "
                    f"num_layers={num_layers}"
                )
        self.num_layers = num_layers
        self.initial_weights = initial_weights
        self.initial_gamma = float(initial_gamma)

    def build(self, layers_shape=None):
        initial = self.initial_weights or [0.0] * self.num_layers
        # autocast=False: normalized in float32 under a mixed policy, cast once in call().
        self.scalar_weights = self.add_weight(
            shape=(self.num_layers,),
            initializer=keras.initializers.Constant(initial),
            dtype="float32",
            autocast=False,
            name="scalar_weights",
        )
        self.gamma = self.add_weight(
            shape=(),
            initializer=keras.initializers.Constant(self.initial_gamma),
            dtype="float32",
            autocast=False,
            name="gamma",
        )
        self.built = True

    def call(self, layers):
        if not isinstance(layers, list | tuple) or len(layers) != self.num_layers:
            found = len(layers) if isinstance(layers, list | tuple) else type(layers).__name__
            raise ValueError(f"ScalarMix takes a list of {self.num_layers} tensors, got {found}")
        dtype = layers[0].dtype
        scales = ops.cast(ops.softmax(self.scalar_weights) * self.gamma, dtype)
        mixed = layers[0] * scales[0]
        for index in range(1, self.num_layers):
            mixed = mixed + layers[index] * scales[index]
        return mixed

    def compute_output_shape(self, layers_shape):
        return layers_shape[0]

    @property
    def normalized_weights(self) -> np.ndarray:
        """softmax(w): float32 numpy [num_layers], non-negative, summing to 1."""
        return np.asarray(ops.convert_to_numpy(ops.softmax(self.scalar_weights)), np.float32)

    @property
    def gamma_value(self) -> float:
        return float(ops.convert_to_numpy(self.gamma))

    # === Config ===
    def get_config(self):
        config = super().get_config()
        config.update(
            num_layers=self.num_layers,
            initial_weights=self.initial_weights,
            initial_gamma=self.initial_gamma,
        )
        return config
