"""The multiple-choice serving module on a stand-in model: which slots are empty, and requests
of the wrong shape."""

import numpy as np
import pytest
import tensorflow as tf

from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.export.multiple_choice_serving import MultipleChoiceServingModule


class _ScoresBySum:
    """A stand-in multiple-choice model: each packed row's score is the sum of its ids / 1000."""

    def row_scores(self, inputs, training=False):
        return tf.cast(tf.reduce_sum(inputs["input_word_ids"], axis=1), tf.float32) / 1000.0


@pytest.fixture(scope="module")
def serve(minilm_dir):
    packer = BertInputPacker(str(minilm_dir / "vocab.txt"), 32, True)
    return MultipleChoiceServingModule(_ScoresBySum(), packer).signature()


def test_slots_without_a_wordpiece_are_empty(serve):
    # "\u3000" (an ideographic space) and "\t" have no wordpiece, as "" has not: no probability,
    # never chosen; a question with no candidate at all gets none and choice -1.
    served = serve(
        tf.constant(["the cat sat .", "a dog ran ."]),
        tf.constant(["where ?", "who ?"]),
        tf.constant([["on the mat", "\u3000", "\t", "in the house"], ["", " ", "\u3000", ""]]),
    )
    probabilities = served["probabilities"].numpy()
    assert probabilities[0, 1] == probabilities[0, 2] == 0.0
    assert probabilities[0, [0, 3]].sum() == pytest.approx(1.0, abs=1e-6)
    np.testing.assert_array_equal(probabilities[1], np.zeros(4))
    assert served["choice_ids"].numpy().tolist() == [int(np.argmax(probabilities[0])), -1]


@pytest.mark.parametrize(
    "context, question, choices, message",
    [
        (["c", "d"], ["q"], [["a"], ["b"]], "context and question must hold the same number"),
        (["c", "d"], ["q", "r"], [["a"]], "choices must have a row for each context"),
        (["c"], ["q"], np.zeros([1, 0], str), "choices must hold at least one column"),
    ],
    ids=["question", "choices", "no_column"],
)
def test_requests_of_the_wrong_shape_say_so(serve, context, question, choices, message):
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        serve(tf.constant(context), tf.constant(question), tf.constant(choices, tf.string))
