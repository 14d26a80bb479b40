import numpy as np

from official_bert.layers import TransformerBlock
from tests.conftest import assert_config_round_trip


def test_transformer_block_masks_padding_and_switches_dropout():
    block = TransformerBlock(hidden_size=16, num_attention_heads=4, intermediate_size=32)
    block.build((None, None, 16))
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 6, 16)).astype(np.float32)
    mask = np.ones((2, 6, 6), bool)
    mask[:, :, 4:] = False  # keys 4 and 5 are padding
    out = np.asarray(block(x, attention_mask=mask))
    x_changed = x.copy()
    x_changed[:, 4:] = rng.normal(size=(2, 2, 16))
    out_changed = np.asarray(block(x_changed, attention_mask=mask))
    # Real positions do not see what sits in the padding.
    np.testing.assert_allclose(out[:, :4], out_changed[:, :4], atol=1e-6)
    np.testing.assert_array_equal(out, np.asarray(block(x, attention_mask=mask)))
    assert not np.allclose(out, np.asarray(block(x, attention_mask=mask, training=True)))
    assert_config_round_trip(block)


def test_query_positions_equal_the_full_output_gathered():
    from official_bert.kernels.switch import fast_kernels

    rng = np.random.default_rng(0)
    inputs = rng.normal(size=(2, 10, 16)).astype("float32")
    mask = np.ones((2, 10, 10), bool)
    mask[1, :, 7:] = False
    positions = np.array([[0, 4, 4], [0, 9, 2]], np.int32)
    for fast in (False, True):
        with fast_kernels(fast):
            block = TransformerBlock(hidden_size=16, num_attention_heads=2, intermediate_size=32)
            block.build((None, None, 16))
        full = np.asarray(block(inputs, attention_mask=mask))
        rows = np.take_along_axis(mask, positions[:, :, None], 1)
        part = block(inputs, attention_mask=rows, query_positions=positions)
        np.testing.assert_allclose(
            np.asarray(part), np.take_along_axis(full, positions[:, :, None], 1), atol=2e-6
        )


def test_transformer_block_works_on_keras_inputs_in_the_functional_api():
    import keras

    hidden = keras.Input((None, 16))
    mask = keras.Input((None, None), dtype="bool")
    block = TransformerBlock(hidden_size=16, num_attention_heads=2, intermediate_size=32)
    outputs = block(hidden, attention_mask=mask)
    assert tuple(outputs.shape) == (None, None, 16)
    model = keras.Model([hidden, mask], outputs)
    x = np.random.default_rng(1).normal(size=(2, 5, 16)).astype("float32")
    full = np.ones((2, 5, 5), bool)
    np.testing.assert_allclose(
        np.asarray(model([x, full])), np.asarray(block(x, attention_mask=full)), atol=1e-6
    )
