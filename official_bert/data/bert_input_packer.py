"""Raw text to encoder inputs in TensorFlow ops: tokenize, trim, [CLS] A [SEP] (B [SEP]), pad.

The one packer of the library: classification, tagging, SQuAD windows, feature extraction,
serving exports and TF Hub preprocessors all pack with `BertInputPacker.pack_ids` (the pipelines
that hold their ids in numpy through `pack_id_arrays`, the same ops run eagerly), so what a model
is trained on and what it is served are made by the same ops, and the layout and the original's
truncation rule are written once.
"""

from __future__ import annotations

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
    """

    def __init__(
        self,
        tokenizer: FastWordpieceBertTokenizer | str | os.PathLike,
        max_seq_length: int,
        do_lower_case: bool = True,
        name: str | None = None,
    ):
        super().__init__(name=name)
        if not isinstance(tokenizer, FastWordpieceBertTokenizer):
            tokenizer = FastWordpieceBertTokenizer(tokenizer, do_lower_case=do_lower_case)
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
        budget = seq_length - 1 - len(segments)  # [CLS] and one [SEP] per segment
        trimmed = tf_text.RoundRobinTrimmer(max_seq_length=budget).trim(segments)
        ids, type_ids = tf_text.combine_segments(
            trimmed, start_of_sequence_id=self._cls_id, end_of_segment_id=self._sep_id
        )
        input_word_ids, input_mask = tf_text.pad_model_inputs(ids, seq_length)
        input_type_ids, _ = tf_text.pad_model_inputs(type_ids, seq_length)
        if pad_to_longest:
            length = trimmed_length(input_mask, seq_length)
            input_word_ids, input_mask, input_type_ids = (
                tensor[:, :length] for tensor in (input_word_ids, input_mask, input_type_ids)
            )
        return {
            "input_word_ids": tf.cast(input_word_ids, tf.int32),
            "input_mask": tf.cast(input_mask, tf.int32),
            "input_type_ids": tf.cast(input_type_ids, tf.int32),
        }

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
        ragged = []
        for segment in segments:
            lengths = np.array([len(ids) for ids in segment], np.int64)
            values = (
                np.concatenate([np.asarray(ids, np.int32) for ids in segment])
                if len(segment)
                else np.zeros([0], np.int32)
            )
            ragged.append(tf.RaggedTensor.from_row_lengths(values.astype(np.int32), lengths))
        packed = self.pack_ids(ragged, seq_length)
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
