"""BertInputPacker (TF ops) packs exactly as the original pure-Python path."""

import csv

import numpy as np
import pytest
import tensorflow as tf

from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.data.packing import pack_segments, pad_features
from official_bert.tokenization import FullTokenizer
from tests.conftest import SHARED

MRPC_DEV = SHARED / "data" / "glue" / "MRPC" / "dev.tsv"


def _reference(tokenizer, text_a, text_b, max_seq_length):
    tokens_b = tokenizer.tokenize(text_b) if text_b is not None else None
    tokens, segment_ids = pack_segments(tokenizer.tokenize(text_a), tokens_b, max_seq_length)
    return pad_features(tokenizer.convert_tokens_to_ids(tokens), segment_ids, max_seq_length)


@pytest.mark.parametrize("max_seq_length", [8, 24, 128])
def test_pairs_and_single_texts_equal_the_original_packing(minilm_dir, max_seq_length):
    if not MRPC_DEV.exists():
        pytest.skip(f"not present: {MRPC_DEV}")
    with open(MRPC_DEV, encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quotechar=None))[1:]
    text_a = [row[3] for row in rows]
    text_b = [row[4] for row in rows]
    vocab = str(minilm_dir / "vocab.txt")
    packer = BertInputPacker(vocab, max_seq_length)
    tokenizer = FullTokenizer(vocab, do_lower_case=True)
    for second in (text_b, None):
        packed = packer(tf.constant(text_a), None if second is None else tf.constant(second))
        expected = [
            _reference(tokenizer, a, None if second is None else b, max_seq_length)
            for a, b in zip(text_a, text_b, strict=True)
        ]
        for index, name in enumerate(["input_word_ids", "input_mask", "input_type_ids"]):
            np.testing.assert_array_equal(
                packed[name].numpy(), np.array([row[index] for row in expected]), err_msg=name
            )
            assert packed[name].dtype == tf.int32


def test_trimming_matches_truncate_seq_pair_for_every_length_pair(minilm_dir):
    packer = BertInputPacker(str(minilm_dir / "vocab.txt"), 10)
    cls_id, sep_id = packer.tokenizer.cls_id, packer.tokenizer.sep_id
    for length_a in range(0, 12):
        for length_b in range(0, 12):
            a = tf.RaggedTensor.from_row_lengths(tf.range(length_a) + 1000, [length_a])
            b = tf.RaggedTensor.from_row_lengths(tf.range(length_b) + 2000, [length_b])
            packed = packer.pack_ids([a, b])
            tokens, segments = pack_segments(
                list(range(1000, 1000 + length_a)), list(range(2000, 2000 + length_b)), 10
            )
            ids = [cls_id if t == "[CLS]" else sep_id if t == "[SEP]" else t for t in tokens]
            expected_ids, expected_mask, expected_types = pad_features(ids, segments, 10)
            assert packed["input_word_ids"].numpy()[0].tolist() == expected_ids, (
                length_a,
                length_b,
            )
            assert packed["input_mask"].numpy()[0].tolist() == expected_mask
            assert packed["input_type_ids"].numpy()[0].tolist() == expected_types


def test_too_short_max_seq_length_is_refused(minilm_dir):
    with pytest.raises(ValueError, match="at least 3"):
        BertInputPacker(str(minilm_dir / "vocab.txt"), 2)
