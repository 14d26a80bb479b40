"""BertInputPacker (TF ops) packs exactly as the original run_classifier.py
`convert_single_example` (written out below as the oracle)."""

import csv

import numpy as np
import pytest
import tensorflow as tf

from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.tokenization import FullTokenizer
from tests.conftest import SHARED

MRPC_DEV = SHARED / "data" / "glue" / "MRPC" / "dev.tsv"


def _truncate_seq_pair(tokens_a, tokens_b, max_length):
    """The original run_classifier.py `_truncate_seq_pair`, as released."""
    while True:
        total_length = len(tokens_a) + len(tokens_b)
        if total_length <= max_length:
            break
        if len(tokens_a) > len(tokens_b):
            tokens_a.pop()
        else:
            tokens_b.pop()


def _original_packing(tokens_a, tokens_b, max_seq_length, cls="[CLS]", sep="[SEP]"):
    """The packing of the original `convert_single_example`: (input_ids or tokens, input_mask,
    segment_ids), padded with 0. Its tests are of truthiness (`if tokens_b:`): a B without
    pieces packs as a single text, and one the trimming empties gets no [SEP]."""
    tokens_a = list(tokens_a)
    tokens_b = None if tokens_b is None else list(tokens_b)
    if tokens_b:
        _truncate_seq_pair(tokens_a, tokens_b, max_seq_length - 3)
    elif len(tokens_a) > max_seq_length - 2:
        tokens_a = tokens_a[0 : (max_seq_length - 2)]
    tokens = [cls, *tokens_a, sep]
    segment_ids = [0] * len(tokens)
    if tokens_b:
        tokens += [*tokens_b, sep]
        segment_ids += [1] * (len(tokens_b) + 1)
    padding = [0] * (max_seq_length - len(tokens))
    return tokens + padding, [1] * len(tokens) + padding, segment_ids + padding


def _reference(tokenizer, text_a, text_b, max_seq_length):
    tokens_b = tokenizer.tokenize(text_b) if text_b is not None else None
    tokens, mask, segment_ids = _original_packing(
        tokenizer.tokenize(text_a), tokens_b, max_seq_length
    )
    real = sum(mask)
    ids = tokenizer.convert_tokens_to_ids(tokens[:real]) + tokens[real:]
    return ids, mask, segment_ids


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
    lengths = [(length_a, length_b) for length_a in range(12) for length_b in range(12)]
    segments_a = [list(range(1000, 1000 + length_a)) for length_a, _ in lengths]
    segments_b = [list(range(2000, 2000 + length_b)) for _, length_b in lengths]
    packed = packer.pack_ids(
        [tf.ragged.constant(segments_a, tf.int32), tf.ragged.constant(segments_b, tf.int32)]
    )
    # The numpy front end runs the same ops.
    arrays = packer.pack_id_arrays([segments_a, segments_b])
    for row, (a, b) in enumerate(zip(segments_a, segments_b, strict=True)):
        expected_ids, expected_mask, expected_types = _original_packing(a, b, 10, cls_id, sep_id)
        assert packed["input_word_ids"].numpy()[row].tolist() == expected_ids, lengths[row]
        assert packed["input_mask"].numpy()[row].tolist() == expected_mask
        assert packed["input_type_ids"].numpy()[row].tolist() == expected_types
        assert arrays["input_word_ids"][row].tolist() == expected_ids
        assert arrays["input_type_ids"][row].tolist() == expected_types
        # segment_starts finds each segment where the packer put it.
        kept_a = expected_ids[1 : expected_ids.index(sep_id)]
        kept_b = expected_ids[len(kept_a) + 2 : sum(expected_mask) - 1]
        start_a, start_b = packer.segment_starts([len(kept_a), len(kept_b)])
        assert expected_ids[start_a : start_a + len(kept_a)] == a[: len(kept_a)]
        assert expected_ids[start_b : start_b + len(kept_b)] == b[: len(kept_b)]
        if kept_b:
            assert expected_types[start_b - 1 : start_b + 1] == [0, 1]


def test_ties_trim_the_second_segment_and_single_texts_keep_their_start(minilm_dir):
    packer = BertInputPacker(str(minilm_dir / "vocab.txt"), 8)
    cls_id, sep_id = packer.tokenizer.cls_id, packer.tokenizer.sep_id
    # 4 + 4 pieces into 8 - 3: [1 2 3] [11 12] (the original pops B when both are as long).
    pair = packer.pack_id_arrays([[[1, 2, 3, 4]], [[11, 12, 13, 14]]])
    assert pair["input_word_ids"][0].tolist() == [cls_id, 1, 2, 3, sep_id, 11, 12, sep_id]
    assert pair["input_type_ids"][0].tolist() == [0, 0, 0, 0, 0, 1, 1, 1]
    single = packer.pack_id_arrays([[list(range(1, 10)), [5]]])
    assert single["input_word_ids"].tolist() == [
        [cls_id, 1, 2, 3, 4, 5, 6, sep_id],
        [cls_id, 5, sep_id, 0, 0, 0, 0, 0],
    ]
    assert single["input_mask"][1].tolist() == [1, 1, 1, 0, 0, 0, 0, 0]
    assert single["input_word_ids"].dtype == np.int32
    with pytest.raises(ValueError, match=r"different numbers of examples: \[2, 1\]"):
        packer.pack_id_arrays([[[1], [2]], [[3]]])


def test_an_empty_second_text_packs_as_the_original_packs_it(minilm_dir):
    packer = BertInputPacker(str(minilm_dir / "vocab.txt"), 6)
    cls_id, sep_id = packer.tokenizer.cls_id, packer.tokenizer.sep_id
    # B without pieces: a single text, A cut to 6 - 2 and one [SEP].
    pair = packer(tf.constant(["one two three four five", "one"]), tf.constant(["", "\x00"]))
    ids = packer.tokenizer.tokenize(tf.constant(["one two three four"])).merge_dims(1, -1)
    assert pair["input_word_ids"].numpy()[0].tolist() == [cls_id, *ids[0].numpy(), sep_id]
    assert pair["input_mask"].numpy()[1].tolist() == [1, 1, 1, 0, 0, 0]
    assert not pair["input_type_ids"].numpy().any()
    # A budget of no pieces (3 - 3) empties both sides: [CLS] [SEP], without B's [SEP].
    tiny = BertInputPacker(packer.tokenizer, 3).pack_id_arrays([[[1, 2]], [[11, 12]]])
    assert tiny["input_word_ids"].tolist() == [[cls_id, sep_id, 0]]
    assert tiny["input_type_ids"].tolist() == [[0, 0, 0]]


def test_too_short_max_seq_length_is_refused(minilm_dir):
    with pytest.raises(ValueError, match="at least 3"):
        BertInputPacker(str(minilm_dir / "vocab.txt"), 2)


def test_pad_to_longest_keeps_the_packing_and_pads_to_a_multiple_of_eight(minilm_dir):
    packer = BertInputPacker(str(minilm_dir / "vocab.txt"), 32)
    serve = tf.function(
        lambda texts: packer(texts, pad_to_longest=True),
        input_signature=[tf.TensorSpec([None], tf.string)],
    )
    words = "one two three four five six seven eight nine ten eleven twelve".split()
    # Longest packed rows of 2 + n pieces (each word is one piece): 3 -> 8, 10 -> 16,
    # 14 -> 16; 45 words are cut to the 32 of max_seq_length.
    for counts, width in [([1], 8), ([8, 1, 3], 16), ([12, 2], 16), ([45, 3], 32)]:
        texts = tf.constant([" ".join((words * 4)[:n]) for n in counts])
        full, short = packer(texts), serve(texts)
        for name in ("input_word_ids", "input_mask", "input_type_ids"):
            assert short[name].shape == (len(counts), width), (counts, name)
            np.testing.assert_array_equal(short[name], full[name][:, :width])
            assert not np.any(full[name][:, width:])
    # Pairs take the same rule; an empty batch packs to [0, 8].
    pair = packer(tf.constant(["one two"]), tf.constant(["three"]), pad_to_longest=True)
    np.testing.assert_array_equal(pair["input_type_ids"], [[0, 0, 0, 0, 1, 1, 0, 0]])
    assert serve(tf.constant([], tf.string))["input_word_ids"].shape == (0, 8)


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
def test_combine_segments_joins_as_tensorflow_text_does(dtype):
    """The packer's own combine_segments gives tensorflow_text.combine_segments' rows: empty
    pieces, empty rows and an empty batch, one segment or two, both id dtypes."""
    import tensorflow_text as tf_text

    from official_bert.data.bert_input_packer import combine_segments

    a = tf.ragged.constant([[5, 6, 7], [], [8], [9, 10]], dtype, ragged_rank=1)
    b = tf.ragged.constant([[11], [12, 13], [], []], dtype, ragged_rank=1)
    empty = tf.ragged.constant([], dtype, ragged_rank=1)
    for segments in ([a], [a, b], [b, a], [empty], [empty, empty]):
        ours = combine_segments(segments, 101, 102)
        theirs = tf_text.combine_segments(segments, 101, 102)
        for our_part, their_part in zip(ours, theirs, strict=True):
            assert our_part.dtype == dtype
            assert our_part.to_list() == their_part.to_list()
    assert combine_segments([a, b], 101, 102)[0].to_list()[1] == [101, 102, 12, 13, 102]


def test_packing_graph_transposes_no_integers():
    """No integer Transpose in the packing: TensorFlow's oneDNN build logs a false "oneDNN
    supports DT_INT64 only on platforms with AVX-512" ERROR line for one (which the ragged
    concatenation of tensorflow_text.combine_segments makes)."""
    from official_bert.data.bert_input_packer import _PACK_SEGMENTS_GRAPHS

    for count, graph in _PACK_SEGMENTS_GRAPHS.items():
        graph_def = graph.get_concrete_function().graph.as_graph_def()
        nodes = [*graph_def.node, *(n for f in graph_def.library.function for n in f.node_def)]
        assert "TFText>RoundRobinTrim" in {node.op for node in nodes}, count
        assert [node.name for node in nodes if node.op == "Transpose"] == [], count


def test_id_arrays_pack_as_pack_ids_does_for_every_size(minilm_dir):
    """pack_id_arrays runs the packing as one graph for every packer and batch: the same
    arrays as the eager pack_ids for other batch sizes, lengths, seq_lengths and packers."""
    for seq_length, segments in (
        (None, [[[5, 6, 7], [8]]]),
        (None, [[[5, 6, 7, 9, 10], [8], [1, 2]], [[3], [4, 4, 4, 4, 4, 4], []]]),
        (6, [[list(range(1, 30))]]),
        (None, [[], []]),
    ):
        for max_seq_length in (12, 9):
            packer = BertInputPacker(str(minilm_dir / "vocab.txt"), max_seq_length)
            arrays = packer.pack_id_arrays(segments, seq_length)
            eager = packer.pack_ids(
                [tf.ragged.constant(s, dtype=tf.int32, ragged_rank=1) for s in segments],
                seq_length,
            )
            for name, value in eager.items():
                assert arrays[name].dtype == np.int32
                np.testing.assert_array_equal(arrays[name], value.numpy(), err_msg=name)


def test_tf_hub_packing_closes_every_segment_as_tensorflow_text_does(minilm_dir):
    # TF Hub's bert_pack_inputs (the preprocessor export) packs with tensorflow_text's trimmer
    # and combine_segments: a [SEP] after each segment, also an empty or trimmed-away B.
    import tensorflow_text as tf_text

    packer = BertInputPacker(str(minilm_dir / "vocab.txt"), 10, tf_hub_packing=True)
    cls_id, sep_id = packer.tokenizer.cls_id, packer.tokenizer.sep_id
    lengths = [(length_a, length_b) for length_a in range(12) for length_b in range(12)]
    segments = [
        tf.ragged.constant([list(range(1000, 1000 + a)) for a, _ in lengths], tf.int32),
        tf.ragged.constant([list(range(2000, 2000 + b)) for _, b in lengths], tf.int32),
    ]
    for seq_length in (4, 10):
        trimmed = tf_text.RoundRobinTrimmer(max_seq_length=seq_length - 3).trim(segments)
        ids, type_ids = tf_text.combine_segments(trimmed, cls_id, sep_id)
        expected_ids, expected_mask = tf_text.pad_model_inputs(ids, seq_length)
        expected_types, _ = tf_text.pad_model_inputs(type_ids, seq_length)
        packed = packer.pack_ids(segments, seq_length)
        np.testing.assert_array_equal(packed["input_word_ids"], expected_ids)
        np.testing.assert_array_equal(packed["input_mask"], expected_mask)
        np.testing.assert_array_equal(packed["input_type_ids"], expected_types)
        arrays = packer.pack_id_arrays(
            [
                [list(range(1000, 1000 + a)) for a, _ in lengths],
                [list(range(2000, 2000 + b)) for _, b in lengths],
            ],
            seq_length,
        )
        np.testing.assert_array_equal(arrays["input_word_ids"], expected_ids)


_MISMATCHED_PAIRS = r"""
import sys
import tensorflow as tf
from official_bert.data.bert_input_packer import BertInputPacker
packer = BertInputPacker(sys.argv[1], 16)
pack = tf.function(lambda a, b: packer(a, b))
for text_a, text_b in [(["a", "b"], ["c"]), (["good", "bad", "ok"], ["fine"]), (["x"], ["y", "z"])]:
    try:
        pack(tf.constant(text_a), tf.constant(text_b))
        print("packed", text_a, text_b)
    except tf.errors.InvalidArgumentError as error:
        print("refused:", "must hold the same number of texts" in str(error))
print("alive")
"""


def test_pairs_of_different_batch_sizes_are_refused_not_read_past(minilm_dir):
    # tensorflow_text's trimmer reads past the shorter segment (a serving request with 2 text_a
    # and 1 text_b): garbage ids or a process abort. In a fresh process, which an abort would
    # end without "alive".
    from tests.warm_interpreter import run_script

    result = run_script(
        ["-c", _MISMATCHED_PAIRS, str(minilm_dir / "vocab.txt")], cwd="/", timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["refused:", "True"] * 3 + ["alive"]
