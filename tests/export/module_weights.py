"""Checks that a fine-tuning run from an exported encoder (--hub_module_handle) trained the
module's own weights: their values in the run's checkpoint against the module's."""

import numpy as np
import tensorflow as tf


def saved_encoder_weights(output_dir) -> dict[str, np.ndarray]:
    """The encoder's values in a run's latest runner checkpoint, by checkpoint key (optimizer
    slots left out)."""
    checkpoint = tf.train.load_checkpoint(str(output_dir))
    return {
        name: checkpoint.get_tensor(name)
        for name, _ in tf.train.list_variables(str(output_dir))
        if name.startswith("model/encoder/")
        and name.endswith("VARIABLE_VALUE")
        and "OPTIMIZER_SLOT" not in name
    }


def assert_module_weights_moved(output_dir, handle, unused=()):
    """Every randomly initialized weight of the module (kernels, embeddings) has a new value in
    the runner's checkpoint, except those of `unused` sublayers (name parts). Weights that start
    constant (zero biases, LayerNorm's 0 and 1) are left out: an unmoved one would equal any
    other saved weight that kept the same constant, so a value match proves nothing for them."""
    saved = saved_encoder_weights(output_dir)
    module_variables = tf.saved_model.load(str(handle)).trainable_variables
    # Every trainable weight of the module is in the checkpoint (the dropout seed states are
    # saved by the runner under their own name, outside model/).
    assert len(saved) >= len(module_variables)
    checked = [
        variable
        for variable in module_variables
        if np.ptp(variable.numpy()) > 0 and not any(part in variable.name for part in unused)
    ]
    assert len(checked) >= 10, [variable.name for variable in module_variables]
    unchanged = [
        variable.name
        for variable in checked
        if any(np.array_equal(variable.numpy(), value) for value in saved.values())
    ]
    assert unchanged == [], unchanged
