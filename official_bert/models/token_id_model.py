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
    batch size and sequence length, named as the inputs (`input_word_ids`, ...; Keras would name
    them args_0, args_0_1, ... in the order of the sorted names, so that passing them in the
    natural order runs the wrong ids silently), in the structure of the model's first call, or,
    for a model not called (load_encoder, or one just made from a config, which export builds), of
    `input_ranks`: Keras would fix every size to the first call's, and refuse a model never
    built. A list among the outputs (the
    encoder's `encoder_outputs`) becomes numbered outputs (`encoder_outputs_0`, ...), as a
    SavedModel signature cannot return a list.
    """

    # The inputs a call takes and their ranks ([batch, seq_length]), for a model not called
    # yet; subclasses with other inputs say so.
    input_ranks = {"input_word_ids": 2, "input_mask": 2, "input_type_ids": 2}

    @property
    def input_dtype(self):
        return "int32"

    def export(
        self, filepath, format="tf_saved_model", verbose=None, input_signature=None, **kwargs
    ):
        if format != "tf_saved_model" or input_signature is not None or kwargs:
            return super().export(
                filepath, format=format, verbose=verbose, input_signature=input_signature, **kwargs
            )
        from keras.export import ExportArchive

        if not self.built:
            # A model made from a config and never called (its weights as initialized): every
            # model here builds without input shapes, which its calls never fix.
            self.build()
        archive = ExportArchive()
        archive.track(self)
        archive.add_endpoint(
            "serve",
            lambda inputs: _without_lists(self(inputs, training=False)),
            input_signature=self._any_size_input_signature(),
        )
        archive.write_out(filepath, verbose=True if verbose is None else verbose)

    def _any_size_input_signature(self) -> list:
        """[the first call's inputs (or `input_ranks`) as int32 TensorSpecs of unknown sizes,
        named as the inputs]. Keras keeps a call's structure in the model's
        `_build_shapes_dict` (which its own export reads), {argument name: shapes}."""
        shapes = getattr(self, "_build_shapes_dict", None) or {
            "inputs": {name: (None,) * rank for name, rank in self.input_ranks.items()}
        }

        def spec(structure, name=None):
            if isinstance(structure, dict):
                return {key: spec(value, key) for key, value in structure.items()}
            if isinstance(structure, (tuple, list)) and all(
                isinstance(size, (int, type(None))) for size in structure
            ):
                return tf.TensorSpec([None] * len(structure), tf.int32, name=name)
            return type(structure)(spec(value) for value in structure)

        return [spec(value) for value in shapes.values()]


def _without_lists(outputs):
    """`outputs` with each list value of a dict replaced by numbered entries (name_0, ...)."""
    if not isinstance(outputs, dict):
        return outputs
    flat = {}
    for name, value in outputs.items():
        if isinstance(value, (list, tuple)):
            flat.update({f"{name}_{index}": item for index, item in enumerate(value)})
        else:
            flat[name] = value
    return flat
