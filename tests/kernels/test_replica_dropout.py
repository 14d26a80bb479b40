"""ReplicaDropout and PackedBitsDropout draw another mask on each replica of a strategy, and on
one device exactly the masks they drew before (Keras's Dropout's, and the packed mask of the
seed generator's seed)."""

import json
import re

import keras
import numpy as np
import tensorflow as tf

from official_bert.kernels import PackedBitsDropout, ReplicaDropout
from official_bert.kernels.packed_bits_dropout import _MASK_LEVELS
from tests.conftest import REPO_ROOT, assert_config_round_trip
from tests.warm_interpreter import run_script


def _packed_bits_keep_mask(seed_pair, shape, rate) -> np.ndarray:
    """The reference of PackedBitsDropout's mask on one device: a 32-bit stateless draw per two
    elements at the seed generator's seed, each 16-bit half kept when >= round(rate * 65536)."""
    size = int(np.prod(shape))
    words = tf.random.stateless_uniform(
        [(size + 1) // 2],
        tf.constant(seed_pair, tf.int32),
        minval=None,
        maxval=None,
        dtype=tf.uint32,
    )
    halves = tf.reshape(tf.bitcast(words, tf.uint16), [-1])[:size].numpy()
    return (halves >= round(rate * _MASK_LEVELS)).reshape(shape)


def test_one_device_draws_the_masks_of_keras_dropout_and_of_the_packed_seed():
    x = tf.random.stateless_normal([6, 40], seed=[1, 2])
    ours, keras_dropout = ReplicaDropout(0.1, seed=5), keras.layers.Dropout(0.1, seed=5)
    for _ in range(3):  # the seed generator advances alike
        np.testing.assert_array_equal(ours(x, training=True), keras_dropout(x, training=True))
    packed = PackedBitsDropout(0.1, seed=5)
    # A SeedGenerator(seed) starts at [seed, 0] and counts up the second half once per call.
    for call in range(3):
        kept = packed(x, training=True).numpy() != 0
        np.testing.assert_array_equal(kept, _packed_bits_keep_mask([5, call], x.shape, 0.1))


def test_config_and_checkpoint_layout_are_keras_dropout():
    layer = ReplicaDropout(0.2, noise_shape=(None, 1), seed=3, name="d")
    assert (
        layer.get_config()
        == keras.layers.Dropout(0.2, noise_shape=(None, 1), seed=3, name="d").get_config()
    )
    assert [re.sub(r"_\d+(?=/|$)", "", v.path) for v in layer.variables] == [
        "seed_generator/seed_generator_state"
    ]
    assert_config_round_trip(layer)


# Two logical CPU devices (set before TensorFlow starts, hence a fresh process): each layer gets
# the same input on both replicas; its masks there and on one device are compared.
_SCRIPT = r"""
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, tensorflow as tf, keras
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
from official_bert.kernels import PackedBitsDropout, ReplicaDropout
from official_bert.layers import ClassificationHead, SelfAttention

strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
x = tf.ones([4, 8, 16])
results = {}
makers = {
    "ReplicaDropout": lambda: ReplicaDropout(0.5, seed=5),
    "PackedBitsDropout": lambda: PackedBitsDropout(0.5, seed=5),
    "ReplicaDropout noise_shape": lambda: ReplicaDropout(0.5, noise_shape=(None, 1, None), seed=5),
}
for name, make in makers.items():
    with strategy.scope():
        layer = make()
    # Two calls: the replicas differ at every step, not just the first.
    per_replica = [strategy.experimental_local_results(
        strategy.run(tf.function(lambda: layer(x, training=True)))) for _ in range(2)]
    one_device = make()
    single = [one_device(x, training=True) for _ in range(2)]
    results[name] = {
        "replicas_differ": [bool(not np.array_equal(a, b)) for a, b in per_replica],
        "replica0_is_one_device": [bool(np.array_equal(r[0], s)) for r, s in zip(per_replica, single)],
    }

# The attention's dropout of its probabilities (Keras builds it as keras.layers.Dropout) and the
# classification head's dropout.
with strategy.scope():
    attention = SelfAttention(num_heads=2, key_dim=8, dropout=0.5, seed=1)
    attention(x, x)
    head = ClassificationHead(2, dropout_rate=0.5)
    head(x[:, 0])
for name, call in {"SelfAttention": lambda: attention(x, x, training=True),
                   "ClassificationHead": lambda: head(x[:, 0], training=True)}.items():
    local = strategy.experimental_local_results(strategy.run(tf.function(call)))
    results[name] = {"replicas_differ": [bool(not np.array_equal(*local))]}
results["attention_dropout"] = type(attention._dropout_layer).__name__
print(json.dumps(results))
"""


def test_each_replica_draws_its_own_mask_and_replica_zero_the_one_device_mask(tmp_path):
    result = run_script(["-c", _SCRIPT], timeout=600, cwd=REPO_ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.loads(result.stdout.strip().splitlines()[-1])
    assert results.pop("attention_dropout") == "ReplicaDropout"
    for name, checks in results.items():
        assert all(checks["replicas_differ"]), name
        assert all(checks.get("replica0_is_one_device", [True])), name
