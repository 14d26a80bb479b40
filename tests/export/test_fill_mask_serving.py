"""run_pretraining.py --export_dir: the fill-mask serving SavedModel, called from a process
without this package, gives each [MASK] the top-k tokens and probabilities that the trained
model gives in Python on the original tokenizer's ids."""

import numpy as np
import pytest
import tensorflow as tf

from official_bert.checkpoints import load_bert_weights
from official_bert.config import BertConfig
from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.data.pretraining.data_writer import (
    PretrainingDataSettings,
    write_pretraining_examples,
)
from official_bert.export.fill_mask_serving import FillMaskServingModule
from official_bert.models import BertEncoder, BertPretrainer
from official_bert.tasks.pretraining import PretrainingOptions, run_pretraining
from official_bert.tokenization import FullTokenizer
from tests.conftest import REPO_ROOT
from tests.export.fresh_process import serve_in_fresh_process
from tests.tiny_data import tiny_bert_config, write_tiny_vocab

TINY = dict(
    vocab_size=30522,  # the MiniLM vocab
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=64,
    max_position_embeddings=64,
)
SEQ_LENGTH = 64
TOP_K = 4
TEXTS = [
    "The ferry to the [MASK] runs twice a day in winter.",
    "[MASK] repairs bicycles in a shed behind her [MASK] house.[MASK]",
    "Das Café [MASK] war GEÖFFNET, [MASK]!",
    "No mask at all.",
    # The second [MASK] lies past max_seq_length: cut, so not predicted.
    "[MASK] " + "the path along the edge is marked with white stones . " * 6 + "[MASK]",
]


def _reference(pretrainer, tokenizer, text, seq_length=SEQ_LENGTH, top_k=TOP_K):
    """(top-k tokens, probabilities) of each [MASK] kept in the packed row, in Python."""
    parts = [
        tokenizer.convert_tokens_to_ids(tokenizer.tokenize(part)) for part in text.split("[MASK]")
    ]
    mask_id = tokenizer.vocab["[MASK]"]
    ids = parts[0]
    for part in parts[1:]:
        ids = ids + [mask_id] + part
    ids = [tokenizer.vocab["[CLS]"]] + ids[: seq_length - 2] + [tokenizer.vocab["[SEP]"]]
    positions = [index for index, token in enumerate(ids) if token == mask_id]
    if not positions:
        return [], []
    pad = seq_length - len(ids)
    inputs = {
        "input_word_ids": np.array([ids + [0] * pad], np.int32),
        "input_mask": np.array([[1] * len(ids) + [0] * pad], np.int32),
        "input_type_ids": np.zeros([1, seq_length], np.int32),
        "masked_lm_positions": np.array([positions], np.int32),
    }
    logits = np.asarray(pretrainer(inputs, training=False)["mlm_logits"][0], np.float64)
    probabilities = np.exp(logits - logits.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    best = np.argsort(-probabilities, axis=-1, kind="stable")[:, :top_k]
    tokens = [tokenizer.convert_ids_to_tokens(row) for row in best.tolist()]
    return tokens, np.take_along_axis(probabilities, best, axis=-1).tolist()


@pytest.fixture(scope="module")
def trained(minilm_dir, tmp_path_factory):
    directory = tmp_path_factory.mktemp("fill_mask")
    records = directory / "records.tfrecord"
    write_pretraining_examples(
        [str(REPO_ROOT / "samples" / "pretraining_corpus.txt")],
        [str(records)],
        PretrainingDataSettings(
            vocab_file=str(minilm_dir / "vocab.txt"), max_seq_length=SEQ_LENGTH, dupe_factor=1
        ),
        num_workers=1,
    )
    output_dir = directory / "out"
    run_pretraining(
        PretrainingOptions(
            bert_config=BertConfig(**TINY),
            input_file=str(records),
            output_dir=str(output_dir),
            max_seq_length=SEQ_LENGTH,
            do_train=True,
            train_batch_size=8,
            learning_rate=1e-3,
            num_train_steps=4,
            num_warmup_steps=1,
            steps_per_loop=2,
            log_steps=2,
            seed=1,
            export_dir=str(directory / "fill_mask"),
            vocab_file=str(minilm_dir / "vocab.txt"),
            fill_mask_top_k=TOP_K,
        )
    )
    return output_dir, directory / "fill_mask"


def test_fill_mask_equals_the_model_in_python(minilm_dir, trained):
    output_dir, export_dir = trained
    pretrainer = BertPretrainer(BertEncoder.from_bert_config(BertConfig(**TINY)))
    pretrainer.build()
    load_bert_weights(pretrainer, str(output_dir / "bert_model.ckpt"), require_heads=True)
    tokenizer = FullTokenizer(str(minilm_dir / "vocab.txt"), do_lower_case=True)

    served = serve_in_fresh_process(export_dir, {"text": TEXTS})
    counts = []
    for index, text in enumerate(TEXTS):
        tokens, probabilities = _reference(pretrainer, tokenizer, text)
        counts.append(len(tokens))
        assert served["tokens"][index][: len(tokens)] == tokens, text
        np.testing.assert_allclose(
            np.reshape(served["scores"][index][: len(tokens)], [-1, TOP_K]),
            np.reshape(probabilities, [-1, TOP_K]),
            atol=1e-6,
        )
        # Past the row's masks: padding.
        assert all(row == [""] * TOP_K for row in served["tokens"][index][len(tokens) :])
        positions = [p for p in served["mask_positions"][index] if p >= 0]
        assert len(positions) == len(tokens)
    assert counts == [1, 3, 2, 0, 1]
    assert np.all(np.diff(served["scores"], axis=-1) <= 0)  # likeliest first


def test_export_needs_a_vocab_and_the_masked_lm(tmp_path):
    options = dict(
        bert_config=BertConfig(**TINY),
        input_file=str(tmp_path / "none.tfrecord"),
        output_dir=str(tmp_path / "out"),
        do_train=True,
        export_dir=str(tmp_path / "fill_mask"),
    )
    with pytest.raises(ValueError, match="--export_dir needs --vocab_file"):
        run_pretraining(PretrainingOptions(**options))
    with pytest.raises(ValueError, match="needs the masked LM"):
        run_pretraining(PretrainingOptions(**options, objective="ltr", vocab_file="vocab.txt"))


def test_export_tfhub_fill_mask_of_a_checkpoint(
    tiny_checkpoint_dir, tiny_source_pretrainer, tmp_path
):
    """export_tfhub.py --export_type=fill_mask: the same model from any checkpoint with its
    masked-LM head (here the original-layout tiny BERT), texts cut at default_seq_length."""
    from official_bert.export import export_tfhub

    export_dir = export_tfhub(
        "fill_mask",
        str(tmp_path / "fill_mask"),
        str(tiny_checkpoint_dir / "vocab.txt"),
        model_checkpoint_path=str(tiny_checkpoint_dir / "bert_model.ckpt"),
        do_lower_case=True,
        default_seq_length=16,
        fill_mask_top_k=3,
    )
    texts = ["The movie was [MASK] .", "[MASK] quick brown fox jump over the lazy [MASK]"]
    served = serve_in_fresh_process(export_dir, {"text": texts})
    tokenizer = FullTokenizer(str(tiny_checkpoint_dir / "vocab.txt"), do_lower_case=True)
    for index, text in enumerate(texts):
        tokens, probabilities = _reference(tiny_source_pretrainer, tokenizer, text, 16, 3)
        assert served["tokens"][index][: len(tokens)] == tokens
        np.testing.assert_allclose(
            np.reshape(served["scores"][index][: len(tokens)], [-1, 3]), probabilities, atol=1e-6
        )


def test_rows_of_a_table_padded_past_the_vocab_are_never_a_token(tmp_path):
    """vocab_size 104 for a 100-token vocab (a table padded, check_vocab_matches_config's
    warning): the padded rows, however likely, are no candidate (and have no token name)."""
    tokens = write_tiny_vocab(tmp_path / "vocab.txt")
    pretrainer = BertPretrainer(BertEncoder.from_bert_config(tiny_bert_config(vocab_size=104)))
    pretrainer.build()
    (bias,) = [v for v in pretrainer.weights if v.path.endswith("output_bias")]
    bias.assign(np.r_[np.zeros(100), np.full(4, 50.0)].astype("float32"))
    module = FillMaskServingModule(pretrainer, BertInputPacker(tmp_path / "vocab.txt", 16), 3)
    served = module.fill(tf.constant(["the [MASK] ."]))
    assert all(token.decode() in tokens for token in served["tokens"].numpy().ravel())
