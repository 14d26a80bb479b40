"""model.summary() of every model, built by build() or by a first call: Keras computes each
sublayer's output shape from the shapes its build() recorded, under build()'s argument names,
so a layer's build() and compute_output_shape() must name their arguments alike."""

import io
from contextlib import redirect_stdout

import pytest

from official_bert.models import (
    BertClassifier,
    BertEncoder,
    BertMultipleChoice,
    BertPretrainer,
    BertSpanLabeler,
    BertTokenTagger,
    FeatureBasedClassifier,
    MultiTaskClassifier,
)
from tests.conftest import tiny_encoder_kwargs

MODELS = {
    "encoder": lambda: BertEncoder(**tiny_encoder_kwargs()),
    "pretrainer": lambda: BertPretrainer(BertEncoder(**tiny_encoder_kwargs())),
    "classifier": lambda: BertClassifier(BertEncoder(**tiny_encoder_kwargs()), num_classes=3),
    "span_labeler": lambda: BertSpanLabeler(BertEncoder(**tiny_encoder_kwargs())),
    "token_tagger": lambda: BertTokenTagger(BertEncoder(**tiny_encoder_kwargs()), num_tags=5),
    "multiple_choice": lambda: BertMultipleChoice(BertEncoder(**tiny_encoder_kwargs())),
    "feature_based": lambda: FeatureBasedClassifier(
        BertEncoder(**tiny_encoder_kwargs()), num_classes=2, features="scalar_mix"
    ),
    "multitask": lambda: MultiTaskClassifier(
        BertEncoder(**tiny_encoder_kwargs()), {"mrpc": 2, "sst2": 2}
    ),
}


def _summary(model) -> str:
    printed = io.StringIO()
    with redirect_stdout(printed):
        model.summary(expand_nested=True)
    return printed.getvalue()


@pytest.mark.parametrize("name", sorted(MODELS))
def test_summary_of_a_built_model_names_its_parts_and_counts(name):
    model = MODELS[name]()
    model.build()
    text = _summary(model)
    assert f"Total params: {model.count_params():,}" in text
    encoder = model if name == "encoder" else model.encoder
    for block in encoder.transformer_layers:
        assert block.name in text
    if name == "encoder":
        # The blocks' outputs: [batch, seq, hidden], from the shapes build() recorded.
        assert f"(None, None, {encoder.hidden_size})" in text
        assert "│ ?" not in text.split("transformer_layer_0")[0]  # the embeddings' too


def test_summary_after_a_first_call():
    encoder = BertEncoder(**tiny_encoder_kwargs())
    encoder(encoder.dummy_inputs(batch_size=2, seq_length=5))
    assert "Total params" in _summary(encoder)
