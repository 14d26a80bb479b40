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
