"""Raw text to encoder inputs in TensorFlow ops: tokenize, trim, [CLS] A [SEP] (B [SEP]), pad.

The one packer of the library: classification, tagging, SQuAD windows, feature extraction,
serving exports and TF Hub preprocessors all pack with `BertInputPacker.pack_ids` (the pipelines
that hold their ids in numpy through `pack_id_arrays`, the same ops in one graph), so what a model
is trained on and what it is served are made by the same ops, and the layout and the original's
truncation rule are written once.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from official_bert.data.record_batches import trimmed_length
from official_bert.tokenization import FastWordpieceBertTokenizer


class BertInputPacker(tf.Module):
    """Packs one or two text segments as the original run_classifier.py `convert_single_example`.

    A pair is trimmed to `max_seq_length - 3` wordpieces by `tensorflow_text.RoundRobinTrimmer`,
    which gives exactly the original `_truncate_seq_pair` (one token at a time off the longer
    side; on a tie, off B); a single text is cut to `max_seq_length - 2`. [CLS] and [SEP] come
    from the vocabulary. A is segment 0 (with [CLS] and its [SEP]), B segment 1; where each
    segment lands in a row is `segment_starts`.

    Args:
      tokenizer: a FastWordpieceBertTokenizer (or a vocab file path with `do_lower_case`).
      max_seq_length: the padded length of every output.
      do_lower_case: used only when `tokenizer` is a vocab file path.
      preserve_unused_tokens: used only when `tokenizer` is a vocab file path (the original's
        --preserve_unused_tokens, see FastWordpieceBertTokenizer).
      tf_hub_packing: pack a pair whose B has no pieces as TF Hub's `bert_pack_inputs`
        (tensorflow_text.combine_segments) does, with a [SEP] for every segment, rather than
        as the original run_classifier.py (see `_pack_segments`); the two differ only there.
    """

    def __init__(
        self,
        tokenizer: FastWordpieceBertTokenizer | str | os.PathLike,
        max_seq_length: int,
        do_lower_case: bool = True,
        name: str | None = None,
        tf_hub_packing: bool = False,
        preserve_unused_tokens: bool = False,
    ):
        super().__init__(name=name)
        self.tf_hub_packing = tf_hub_packing
        if not isinstance(tokenizer, FastWordpieceBertTokenizer):
            tokenizer = FastWordpieceBertTokenizer(
                tokenizer,
                do_lower_case=do_lower_case,
                preserve_unused_tokens=preserve_unused_tokens,
            )
        if max_seq_length < 3:
            raise ValueError(
                f"max_seq_length must be at least 3 ([CLS] A [SEP]), got {max_seq_length}"
            )
        self.tokenizer = tokenizer
        self.max_seq_length = max_seq_length
        self._cls_id = tokenizer.cls_id
        self._sep_id = tokenizer.sep_id

    @tf.autograph.experimental.do_not_convert
    def pack_ids(
        self,
        segments: list[tf.RaggedTensor],
        seq_length: int | tf.Tensor | None = None,
        pad_to_longest: bool = False,
    ) -> dict[str, tf.Tensor]:
        """Packs 1 or 2 segments of wordpiece ids.

        Args:
          segments: [batch, (pieces)] int32 RaggedTensors, one per text ([batch, (words),
            (pieces)] is accepted too and flattened to pieces).
          seq_length: the padded length, an int or an int32 scalar tensor (default:
            `max_seq_length`); the texts are trimmed to fit it either way.
          pad_to_longest: pad only to the batch's longest packed row, rounded up to a
            multiple of 8 and at most `seq_length` (record_batches.trimmed_length, as the
            fine-tuning pipelines cut their batches): an encoder's outputs at real positions do
            not depend on how much padding follows, and short texts then cost short rows.

        Returns:
          {"input_word_ids", "input_mask", "input_type_ids"}: int32 [batch, seq_length], or
          [batch, padded length] with pad_to_longest.
        """
        if len(segments) not in (1, 2):
            raise ValueError(f"expected 1 or 2 segments, got {len(segments)}")
        if seq_length is None:
            seq_length = self.max_seq_length
        segments = [
            segment.merge_dims(1, -1) if segment.shape.rank > 2 else segment for segment in segments
        ]
        if len(segments) == 2:
            segments = _with_equal_batch_sizes(segments)
        packed = _pack_segments(
            segments, seq_length, self._cls_id, self._sep_id, self.tf_hub_packing
        )
        if pad_to_longest:
            length = trimmed_length(packed["input_mask"], seq_length)
            packed = {name: tensor[:, :length] for name, tensor in packed.items()}
        return packed

    @tf.autograph.experimental.do_not_convert  # no tensor-dependent Python control flow
    def __call__(self, text_a, text_b=None, pad_to_longest: bool = False) -> dict[str, tf.Tensor]:
        """Tokenizes and packs [batch] tf.string texts (text_b optional); pad_to_longest as
        in `pack_ids`.

        Returns:
          {"input_word_ids", "input_mask", "input_type_ids"}: int32 [batch, max_seq_length]
          (or shorter with pad_to_longest).
        """
        segments = [self.tokenizer.tokenize(text_a)]
        if text_b is not None:
            segments.append(self.tokenizer.tokenize(text_b))
        return self.pack_ids(segments, pad_to_longest=pad_to_longest)

    def pack_id_arrays(
        self, segments: Sequence[Sequence[Sequence[int]]], seq_length: int | None = None
    ) -> dict[str, np.ndarray]:
        """`pack_ids` for ids held in Python: 1 or 2 segments, each a sequence of `batch` id
        sequences (lists or numpy arrays of ints, one per example).

        Returns:
          {"input_word_ids", "input_mask", "input_type_ids"}: numpy int32 [batch,
          seq_length].
        """
        if len({len(segment) for segment in segments}) > 1:
            raise ValueError(
                f"segments hold different numbers of examples: {[len(s) for s in segments]}"
            )
        if len(segments) not in (1, 2):
            raise ValueError(f"expected 1 or 2 segments, got {len(segments)}")
        ragged = []
        for segment in segments:
            lengths = np.array([len(ids) for ids in segment], np.int64)
            values = (
                np.concatenate([np.asarray(ids, np.int32) for ids in segment])
                if len(segment)
                else np.zeros([0], np.int32)
            )
            ragged.append(tf.RaggedTensor.from_row_lengths(values, lengths))
        seq_length = self.max_seq_length if seq_length is None else seq_length
        packed = _PACK_SEGMENTS_GRAPHS[len(segments), self.tf_hub_packing](
            ragged,
            tf.constant(seq_length, tf.int32),
            tf.constant(self._cls_id, tf.int32),
            tf.constant(self._sep_id, tf.int32),
        )
        return {name: value.numpy() for name, value in packed.items()}

    @staticmethod
    def segment_starts(segment_lengths: Sequence[int]) -> list[int]:
        """The position in a packed row of each segment's first piece, for segments of
        `segment_lengths` pieces after trimming: [CLS] comes first and a [SEP] closes each
        segment, so [1] for one segment and [1, 2 + len(A)] for two (the layout `pack_ids`
        makes; a test checks the two agree)."""
        starts, position = [], 1
        for length in segment_lengths:
            starts.append(position)
            position += int(length) + 1
        return starts


def _with_equal_batch_sizes(segments: list[tf.RaggedTensor]) -> list[tf.RaggedTensor]:
    """The two [batch, (pieces)] segments, checked to hold the same number of texts first.

    tensorflow_text's trimmer does not check it: segments of different sizes (a serving request
    with 2 text_a and 1 text_b) read past the end of the shorter one, which can abort the whole
    process. The check raises InvalidArgumentError instead, and the segments are rebuilt under
    it so that nothing reads them before it has run (in a graph an assertion nothing depends on
    may run after the ops beside it).
    """
    first, second = segments
    check = tf.debugging.assert_equal(
        first.nrows(),
        second.nrows(),
        message="text_a and text_b (the first and second segments) must hold the same number "
        "of texts",
    )
    with tf.control_dependencies([check]):
        return [
            tf.RaggedTensor.from_row_splits(
                tf.identity(segment.values), tf.identity(segment.row_splits), validate=False
            )
            for segment in segments
        ]


def _pack_segments(
    segments: list[tf.RaggedTensor],
    seq_length: int | tf.Tensor,
    cls_id: int | tf.Tensor,
    sep_id: int | tf.Tensor,
    tf_hub_packing: bool = False,
) -> dict[str, tf.Tensor]:
    """The packing ops of `BertInputPacker.pack_ids` for [batch, (pieces)] int32 segments:
    int32 [batch, seq_length] word ids, mask and type ids.

    A pair whose B has no pieces is packed as the original `convert_single_example` packs it
    (`if tokens_b:`): a row whose B is empty from the start is a single text ([CLS] A [SEP], A
    cut to seq_length - 2), and one whose B the trimming emptied (a tiny seq_length) gets no
    [SEP] for B. With `tf_hub_packing`, as TF Hub's bert_pack_inputs: a [SEP] per segment
    always, A trimmed for two segments."""
    budget = seq_length - 1 - len(segments)  # [CLS] and one [SEP] per segment
    trimmed = tf_text.RoundRobinTrimmer(max_seq_length=budget).trim(segments)
    if tf_hub_packing:
        ids, type_ids = combine_segments(trimmed, cls_id, sep_id)
        return _padded(ids, type_ids, seq_length)
    if len(segments) == 2:
        first, second = segments
        has_second = second.row_lengths() > 0
        # Rows without B keep A's first seq_length - 2 pieces; trimming only cuts ends, so
        # each row's A is its first `kept` pieces.
        kept = tf.where(
            has_second,
            trimmed[0].row_lengths(),
            tf.minimum(first.row_lengths(), tf.cast(seq_length - 2, tf.int64)),
        )
        positions = tf.ragged.range(first.row_lengths())
        trimmed = [tf.ragged.boolean_mask(first, positions < kept[:, None]), trimmed[1]]
    ids, type_ids = combine_segments(trimmed, cls_id, sep_id, close_empty_last=False)
    return _padded(ids, type_ids, seq_length)


def _padded(
    ids: tf.RaggedTensor, type_ids: tf.RaggedTensor, seq_length: int | tf.Tensor
) -> dict[str, tf.Tensor]:
    """Packed [batch, (length)] ids and type ids padded with 0 to int32 [batch, seq_length]
    input_word_ids, input_mask and input_type_ids."""
    input_word_ids, input_mask = tf_text.pad_model_inputs(ids, seq_length)
    input_type_ids, _ = tf_text.pad_model_inputs(type_ids, seq_length)
    return {
        "input_word_ids": tf.cast(input_word_ids, tf.int32),
        "input_mask": tf.cast(input_mask, tf.int32),
        "input_type_ids": tf.cast(input_type_ids, tf.int32),
    }


def combine_segments(
    segments: list[tf.RaggedTensor],
    cls_id: int | tf.Tensor,
    sep_id: int | tf.Tensor,
    close_empty_last: bool = True,
) -> tuple[tf.RaggedTensor, tf.RaggedTensor]:
    """[CLS] A [SEP] (B [SEP] ...) per row, and each piece's segment index, as
    `tensorflow_text.combine_segments` makes them (a test holds the two equal).

    Written here rather than called from tensorflow_text because that one joins the segments
    with a ragged concatenation along axis 1, which transposes an integer matrix, and
    TensorFlow's oneDNN build then logs a false "oneDNN supports DT_INT64 only on platforms
    with AVX-512" ERROR line in every process that packs (extract_features, SQuAD, tagging,
    serving). Here the segments are padded, joined as dense columns and the padding dropped by a
    ragged boolean mask: no transpose.

    Args:
      segments: [batch, (pieces)] integer RaggedTensors of one dtype, one per segment.
      cls_id, sep_id: the [CLS] and [SEP] ids.
      close_empty_last: False to leave out the [SEP] of the last of two or more segments in
        rows where it is empty (the original run_classifier's packing of a pair).

    Returns:
      (ids, type_ids): [batch, (1 + sum of pieces + len(segments))] RaggedTensors of the
      segments' dtype.
    """
    dtype = segments[0].dtype
    rows = segments[0].nrows()

    def column(value):
        return tf.fill(tf.stack([rows, 1]), tf.cast(value, dtype))

    ids, type_ids, kept = [column(cls_id)], [column(0)], [tf.ones([rows, 1], tf.bool)]
    for index, segment in enumerate(segments):
        pieces = segment.to_tensor()
        width = tf.shape(pieces, out_type=tf.int64)[1]
        ids += [pieces, column(sep_id)]
        type_ids += [tf.fill(tf.shape(pieces), tf.cast(index, dtype)), column(index)]
        closed = tf.ones([rows, 1], tf.bool)
        if not close_empty_last and index > 0 and index == len(segments) - 1:
            closed = tf.expand_dims(segment.row_lengths() > 0, 1)
        kept += [tf.sequence_mask(segment.row_lengths(), width), closed]
    kept = tf.concat(kept, axis=1)
    return (
        tf.ragged.boolean_mask(tf.concat(ids, axis=1), kept),
        tf.ragged.boolean_mask(tf.concat(type_ids, axis=1), kept),
    )


def _pack_segments_graph(
    segment_count: int, tf_hub_packing: bool
) -> tf.types.experimental.PolymorphicFunction:
    """`_pack_segments` as a graph for `segment_count` segments, with every size, length and
    special id an input, so that one trace serves all packers and batches of a process.

    `pack_id_arrays` runs this graph rather than the ops one by one: eagerly, each of the
    trimmer's and the packing's many small ops is dispatched on its own, a cost per call that
    dominated the feature conversion of short texts.
    """
    segment_spec = tf.RaggedTensorSpec(
        [None, None], tf.int32, ragged_rank=1, row_splits_dtype=tf.int64
    )
    scalar_spec = tf.TensorSpec([], tf.int32)
    return tf.function(
        functools.partial(_pack_segments, tf_hub_packing=tf_hub_packing),
        input_signature=[[segment_spec] * segment_count, scalar_spec, scalar_spec, scalar_spec],
        autograph=False,
    )


_PACK_SEGMENTS_GRAPHS = {
    (count, tf_hub_packing): _pack_segments_graph(count, tf_hub_packing)
    for count in (1, 2)
    for tf_hub_packing in (False, True)
}
