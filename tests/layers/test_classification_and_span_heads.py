import ml_dtypes
import numpy as np

from official_bert.layers import ClassificationHead, SpanHead
from tests.conftest import assert_config_round_trip


def test_classification_head_and_span_head_shapes_and_configs():
    head = ClassificationHead(num_classes=3, dropout_rate=0.5)
    head.build((None, 8))
    pooled = np.ones((4, 8), np.float32)
    assert np.asarray(head(pooled)).shape == (4, 3)
    np.testing.assert_array_equal(np.asarray(head(pooled)), np.asarray(head(pooled)))
    assert not np.allclose(np.asarray(head(pooled)), np.asarray(head(pooled, training=True)))
    assert_config_round_trip(head)
    span = SpanHead()
    span.build((None, None, 8))
    start, end = span(np.ones((2, 7, 8), np.float32))
    assert start.shape == (2, 7) and end.shape == (2, 7)
    kernel = span.dense.kernel.numpy()
    np.testing.assert_allclose(
        np.asarray(start)[0, 0], kernel[:, 0].sum() + span.dense.bias.numpy()[0], atol=1e-5
    )
    assert_config_round_trip(span)


def test_heads_compute_their_logits_in_float32_under_mixed_bfloat16():
    # A regression score or a span logit computed in bfloat16 keeps 8 bits of mantissa: the
    # heads' last product runs in float32 whatever the policy, on the bfloat16 hidden states.
    rng = np.random.default_rng(0)
    hidden = rng.normal(size=(6, 5, 32)).astype(np.float32)
    hidden_bf16 = hidden.astype(ml_dtypes.bfloat16)
    for head in (
        ClassificationHead(num_classes=1, dtype="mixed_bfloat16"),
        SpanHead(dtype="mixed_bfloat16"),
    ):
        head.build((None, None, 32))
        head.dense.bias.assign(np.full(head.dense.bias.shape, 2.5, np.float32))
        assert head.dense.kernel.dtype == "float32"
        outputs = head(hidden_bf16)
        logits = np.stack(outputs, -1) if isinstance(head, SpanHead) else np.asarray(outputs)
        assert logits.dtype == np.float32
        expected = hidden_bf16.astype(np.float32) @ head.dense.kernel.numpy()
        expected += head.dense.bias.numpy()
        np.testing.assert_allclose(logits, expected, rtol=1e-5, atol=1e-5)
        # Not bfloat16 numbers cast up: most would change when rounded to bfloat16.
        rounded = logits.astype(ml_dtypes.bfloat16).astype(np.float32)
        assert np.mean(rounded != logits) > 0.9
