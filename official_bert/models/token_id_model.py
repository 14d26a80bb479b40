"""TokenIdModel: the base of the models whose inputs are a dict of integer token tensors."""

import keras
import tensorflow as tf


class TokenIdModel(keras.Model):
    """A keras.Model whose inputs (a dict: input_word_ids, input_mask, input_type_ids, and a
    head's own, such as masked_lm_positions) are int32 ids and masks, whatever its dtype policy.

    Keras gives a subclassed model's inputs the compute dtype (`input_dtype`): under
    mixed_bfloat16 an export's signature would take token ids as bfloat16, which holds integers
    exactly only up to 256 (ids 257, 259 arrive as 256, 260), and a float32 one would refuse
    int32 ids. Here `input_dtype` is int32 (a float tensor passed in is cast to it, as Keras
    casts a float input to a layer's input dtype).

    `export()` (Keras's SavedModel export) takes by default a signature of int32 tensors of any
    batch size and sequence length, in the structure of the model's first call: Keras would fix
    every size but the batch to those of that call.
    """

    @property
    def input_dtype(self):
        return "int32"

    def export(
        self, filepath, format="tf_saved_model", verbose=None, input_signature=None, **kwargs
    ):
        if input_signature is None and format == "tf_saved_model":
            input_signature = self._any_size_input_signature()
        return super().export(
            filepath, format=format, verbose=verbose, input_signature=input_signature, **kwargs
        )

    def _any_size_input_signature(self) -> list | None:
        """[the first call's inputs as int32 TensorSpecs of unknown sizes], or None (Keras's
        default) for a model not called yet. Keras keeps that structure in the model's
        `_build_shapes_dict` (which its own export reads), {argument name: shapes}."""
        shapes = getattr(self, "_build_shapes_dict", None)
        if not shapes:
            return None

        def spec(structure):
            if isinstance(structure, dict):
                return {name: spec(value) for name, value in structure.items()}
            if isinstance(structure, (tuple, list)) and all(
                isinstance(size, (int, type(None))) for size in structure
            ):
                return tf.TensorSpec([None] * len(structure), tf.int32)
            return type(structure)(spec(value) for value in structure)

        return [spec(value) for value in shapes.values()]
