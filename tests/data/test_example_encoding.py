import numpy as np
import pytest
import tensorflow as tf

from official_bert.data.example_encoding import ExampleEncoder


def _proto(arrays, row, int_names, float_names):
    features = {
        name: tf.train.Feature(int64_list=tf.train.Int64List(value=arrays[name][row].tolist()))
        for name in int_names
    }
    for name in float_names:
        features[name] = tf.train.Feature(
            float_list=tf.train.FloatList(value=arrays[name][row].tolist())
        )
    return tf.train.Example(features=tf.train.Features(feature=features))


def test_encoded_examples_equal_tf_train_example_protos():
    rng = np.random.default_rng(0)
    arrays = {
        "ids": rng.integers(0, 30522, (50, 128)),
        "small": rng.integers(0, 2, (50, 128)),
        "mask_bytes": rng.integers(0, 2, (50, 128)).astype(np.uint8),  # as the writer passes
        "wide": rng.integers(0, 2**34, (50, 3)),  # 5-byte varints
        # Each width the encoder computes in (16, 32 and 64 bits) at its boundaries.
        "edges16": np.tile([0, 127, 128, 16383, 16384, 2**16 - 1], (50, 1)).astype(np.int32),
        "edges": np.tile([0, 127, 128, 16383, 16384, 2**16, 2**21 - 1, 2**21], (50, 1)),
        "weights": rng.random((50, 20)).astype(np.float32),
    }
    int_names = ["ids", "small", "mask_bytes", "wide", "edges16", "edges"]
    encoder = ExampleEncoder(int_names, ["weights"])
    encoded = encoder.encode(arrays)
    assert len(encoded) == 50
    for row in range(50):
        assert tf.train.Example.FromString(encoded[row]) == _proto(
            arrays, row, int_names, ["weights"]
        )
    parsed = tf.io.parse_single_example(
        encoded[7],
        {
            "ids": tf.io.FixedLenFeature([128], tf.int64),
            "weights": tf.io.FixedLenFeature([20], tf.float32),
        },
    )
    np.testing.assert_array_equal(parsed["ids"], arrays["ids"][7])
    np.testing.assert_array_equal(parsed["weights"], arrays["weights"][7])


def test_bad_shapes_and_values():
    encoder = ExampleEncoder(["a"])
    with pytest.raises(ValueError, match=r"feature a: expected \[2, length\]"):
        encoder.encode({"a": np.zeros((2,), np.int64)})
    with pytest.raises(ValueError, match="must be in"):
        encoder.encode({"a": np.full((1, 1), -1)})
    assert encoder.encode({"a": np.zeros((0, 3), np.int64)}) == []
