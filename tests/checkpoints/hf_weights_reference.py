"""The Hugging Face weights fixture (tests/fixtures/hf_weights) and the check of a model loaded
from any of its files against the outputs PyTorch computed from the same weights."""

import numpy as np

from official_bert.checkpoints.loading import find_bert_config, read_bert_config
from official_bert.models import BertEncoder, BertPretrainer
from tests.conftest import FIXTURES

HF_WEIGHTS = FIXTURES / "hf_weights"


def built_pretrainer(directory=HF_WEIGHTS / "bert") -> BertPretrainer:
    """A BertPretrainer of the config.json in `directory` (HF "gelu", the erf form, mapped)."""
    config = read_bert_config(find_bert_config(str(directory)))
    model = BertPretrainer(BertEncoder.from_bert_config(config))
    model.build()
    return model


def assert_matches_pytorch(model: BertPretrainer) -> None:
    """`model`'s sequence, pooled, MLM and NSP outputs equal PyTorch's (bert/outputs.npz)."""
    reference = np.load(HF_WEIGHTS / "bert" / "outputs.npz")
    outputs = model(
        {
            "input_word_ids": reference["input_ids"],
            "input_mask": reference["input_mask"],
            "input_type_ids": reference["token_type_ids"],
            "masked_lm_positions": reference["masked_lm_positions"],
        },
        training=False,
    )
    valid = reference["input_mask"].astype(bool)
    np.testing.assert_allclose(
        outputs["sequence_output"].numpy()[valid], reference["sequence_output"][valid], atol=1e-5
    )
    np.testing.assert_allclose(
        outputs["pooled_output"].numpy(), reference["pooler_output"], atol=1e-5
    )
    np.testing.assert_allclose(
        outputs["mlm_logits"].numpy(), reference["mlm_logits"], atol=1e-4, rtol=1e-5
    )
    np.testing.assert_allclose(
        outputs["next_sentence_logits"].numpy(), reference["nsp_logits"], atol=1e-5
    )
