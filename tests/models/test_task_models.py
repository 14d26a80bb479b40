"""BertPretrainer, BertClassifier and BertSpanLabeler: outputs and .keras round trips."""

import keras
import numpy as np
import pytest

from official_bert.models import BertClassifier, BertEncoder, BertPretrainer, BertSpanLabeler
from tests.conftest import random_inputs, tiny_encoder_kwargs


def _encoder():
    return BertEncoder(**tiny_encoder_kwargs())


def _round_trip(model, inputs, tmp_path):
    before = model(inputs)
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    after = loaded(inputs)
    assert type(loaded) is type(model)
    assert len(loaded.weights) == len(model.weights)
    for key in before if isinstance(before, dict) else [None]:
        a = before[key] if key else before
        b = after[key] if key else after
        if isinstance(a, list):
            continue
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    return loaded


def test_pretrainer_outputs_and_tied_mlm(tmp_path):
    model = BertPretrainer(_encoder())
    model.build()
    inputs = dict(random_inputs(), masked_lm_positions=np.array([[1, 2], [3, 4], [5, 0]], np.int32))
    outputs = model(inputs)
    assert outputs["mlm_logits"].shape == (3, 2, 100)
    assert outputs["next_sentence_logits"].shape == (3, 2)
    # The MLM output projection is the word-embedding table itself, not a copy.
    assert model.masked_lm.token_embedding.embeddings is model.encoder.token_embedding.embeddings
    assert len(model.weights) == len(model.encoder.weights) + 5 + 2
    loaded = _round_trip(model, inputs, tmp_path)
    assert loaded.masked_lm.token_embedding.embeddings is loaded.encoder.token_embedding.embeddings


def test_pretrainer_without_next_sentence_head():
    model = BertPretrainer(_encoder(), use_next_sentence_label=False)
    model.build()
    inputs = dict(random_inputs(), masked_lm_positions=np.zeros((3, 1), np.int32))
    assert "next_sentence_logits" not in model(inputs)


@pytest.mark.parametrize("num_classes", [1, 3])
def test_classifier(num_classes, tmp_path):
    model = BertClassifier(_encoder(), num_classes=num_classes)
    model.build()
    inputs = random_inputs()
    assert model(inputs).shape == (3, num_classes)
    _round_trip(model, inputs, tmp_path)


def test_span_labeler(tmp_path):
    model = BertSpanLabeler(_encoder())
    model.build()
    inputs = random_inputs()
    outputs = model(inputs)
    assert outputs["start_logits"].shape == (3, 16) and outputs["end_logits"].shape == (3, 16)
    _round_trip(model, inputs, tmp_path)
