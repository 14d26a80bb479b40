"""A SavedModel of a fine-tuned SQuAD model that answers raw (question, context) strings.

Everything the Python predict path does is in the graph: the question is tokenized and cut to
max_query_length pieces; the context is tokenized with the byte offsets of its pieces
(FastWordpieceBertTokenizer.tokenize_words_with_offsets, which maps lower-casing and accent
stripping back onto the original text); a context longer than fits beside the question becomes
doc_stride windows as data/squad/features.py makes them, each packed by the same
BertInputPacker; the span is chosen as evaluation/squad_postprocessing.py chooses it (the
n_best_size best starts x ends of each window, both ends in the window's document pieces, the
start in the window where it has the most context, at most max_answer_length pieces; ties go to
the earlier window and candidate). Loading needs only `tensorflow` and `tensorflow_text`.

Known differences from predictions.json, both from the original's `get_final_text` projecting a
wordpiece text back by string search: where normalization changed the number of characters of
the answer's words (a soft hyphen or other removed character inside a word, a decomposed accent
of an uncased model), the original returns the whole words and this model the pieces' exact span;
and where the answer's text also occurs earlier in its first word up to case ("Ana-ana"), the
original returns the earlier occurrence.
"""

from __future__ import annotations

import tensorflow as tf

from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.export.fused_encoder_model import FusedEncoderModel
from official_bert.export.saved_model_writing import save_atomically
from official_bert.export.serving_windows import (
    first_index_of_max,
    max_context_windows,
    slide_windows,
    with_equal_batch_sizes,
)
from official_bert.tokenization import CJK_CHARACTER_CLASS

# The original run_squad.py's whitespace (read_squad_examples): runs of these join the answer's
# words with one space in predictions.json.
_CONTEXT_WHITESPACE = "[ \t\r\n\u202f]+"


def _with_zero_row(values: tf.Tensor) -> tf.Tensor:
    """`values` [rows, ...] with a row of zeros appended, so that row 0 exists to gather from
    (for masked outputs) even where `values` has no rows."""
    row_shape = tf.concat([[1], tf.shape(values)[1:]], axis=0)
    return tf.concat([values, tf.zeros(row_shape, values.dtype)], axis=0)


def _starts_a_word(chars: tf.RaggedTensor, is_space: tf.Tensor) -> tf.Tensor:
    """bool [num chars]: whether each character (of `chars`, [batch, (chars)] tf.string, one
    character each; `is_space` bool [num chars]) begins a word as split_context splits the
    context: a non-space after a space or at the start, and every CJK ideograph and the
    character after one (an ideograph is a word of its own)."""
    is_cjk = tf.strings.regex_full_match(chars.flat_values, CJK_CHARACTER_CLASS)
    first_in_row = tf.equal(tf.ragged.range(chars.row_lengths()).flat_values, 0)
    # The character before in the flat list (a row's first has first_in_row instead).
    previous_space = tf.roll(is_space, 1, axis=0)
    previous_cjk = tf.roll(is_cjk, 1, axis=0)
    breaks = tf.reduce_any(tf.stack([first_in_row, previous_space, is_cjk, previous_cjk]), axis=0)
    return tf.logical_and(tf.logical_not(is_space), breaks)


class SquadServingModule(tf.Module):
    """`serving_default`: question, context [batch] tf.string ->

    answer: tf.string [batch], the best span's text as predictions.json writes it (words joined
      by one space); "" when no span qualifies (an empty context).
    start, end: int32 [batch], the span's characters in the context, context[start:end]
      (Python slicing of the decoded string; -1 when there is no span).
    score: float32 [batch], the span's start logit + end logit (-inf when there is none).
    v2.0 models add null_score: float32 [batch], the lowest [CLS] start + end logits over the
      windows, and has_answer: bool [batch], null_score - score <= null_score_diff_threshold
      (predictions.json holds `answer` where it is True, "" where it is False).
    """

    def __init__(
        self,
        model,
        packer: BertInputPacker,
        doc_stride: int,
        max_query_length: int,
        n_best_size: int,
        max_answer_length: int,
        version_2_with_negative: bool,
        null_score_diff_threshold: float,
        name: str | None = None,
    ):
        super().__init__(name=name)
        if doc_stride < 1:
            raise ValueError(f"doc_stride must be at least 1, got {doc_stride}")
        self.model = model
        self.packer = packer
        self.doc_stride = doc_stride
        self.max_query_length = max_query_length
        self.top_k = min(n_best_size, packer.max_seq_length)
        self.max_answer_length = max_answer_length
        self.version_2_with_negative = version_2_with_negative
        self.null_score_diff_threshold = null_score_diff_threshold

    @tf.autograph.experimental.do_not_convert
    def answers(self, question: tf.Tensor, context: tf.Tensor) -> dict[str, tf.Tensor]:
        """The outputs of `serving_default` (see the class) for [batch] tf.string inputs; all
        windows of the batch go through the model as one batch."""
        tokenizer, seq_length = self.packer.tokenizer, self.packer.max_seq_length
        question, context = with_equal_batch_sizes(question, context, "question", "context")
        num_examples = tf.shape(question, out_type=tf.int64)[0]
        query = tokenizer.tokenize(question)[:, : self.max_query_length]
        pieces, byte_starts, byte_limits = (
            tensor.merge_dims(1, 2) for tensor in tokenizer.tokenize_words_with_offsets(context)
        )

        # The windows (data/squad/features.py doc_spans, export/serving_windows.py): window k
        # of an example starts at k * min(doc_stride, room) and holds at most `room` pieces;
        # the last reaches the end.
        query_length = query.row_lengths()
        windows = slide_windows(pieces, seq_length - 3 - query_length, self.doc_stride)
        num_windows, window_example = windows.counts, windows.text
        window_length, window_pieces = windows.length, windows.pieces
        # Flat index (into pieces.flat_values) of each window's first piece.
        window_base = windows.base
        inputs = self.packer.pack_ids([tf.gather(query, window_example), window_pieces])
        logits = self.model(inputs, training=False)
        start_logits = tf.cast(logits["start_logits"], tf.float64)
        end_logits = tf.cast(logits["end_logits"], tf.float64)

        # Where each window's document pieces sit in its packed row, and which of them have
        # their most context in this window.
        # [CLS] question [SEP] window [SEP]: the window starts at 2 + len(question)
        # (BertInputPacker.segment_starts).
        doc_offset = tf.gather(query_length, window_example) + 2
        positions = tf.range(seq_length, dtype=tf.int64)[None, :]
        in_document = tf.logical_and(
            positions >= doc_offset[:, None],
            positions < (doc_offset + window_length)[:, None],
        )
        # A start must be a document piece whose max-context window this is.
        doc_position = windows.start[:, None] + positions - doc_offset[:, None]
        best_window = max_context_windows(
            windows, tf.broadcast_to(window_example[:, None], tf.shape(doc_position)), doc_position
        )
        can_start = tf.logical_and(in_document, tf.equal(best_window, windows.number[:, None]))

        # The n_best_size best starts x ends of each window (top_k breaks ties by lower index,
        # as the original's sort), filtered as squad_postprocessing does.
        start_values, start_indices = tf.math.top_k(start_logits, self.top_k)
        end_values, end_indices = tf.math.top_k(end_logits, self.top_k)
        starts = start_indices[:, :, None]
        ends = end_indices[:, None, :]
        valid = tf.gather(can_start, start_indices, batch_dims=1)[:, :, None]
        valid = tf.logical_and(valid, tf.gather(in_document, end_indices, batch_dims=1)[:, None])
        valid = tf.logical_and(valid, ends >= starts)
        valid = tf.logical_and(valid, ends - starts + 1 <= self.max_answer_length)
        scores = start_values[:, :, None] + end_values[:, None, :]
        scores = tf.where(valid, scores, tf.constant(-float("inf"), tf.float64))
        num_candidates = self.top_k * self.top_k
        window_best, window_choice = first_index_of_max(tf.reshape(scores, [-1, num_candidates]))

        # Each example's best window: the first one holding its best score.
        by_example = tf.RaggedTensor.from_row_lengths(window_best, num_windows)
        best = by_example.to_tensor(default_value=-float("inf"))
        best = tf.concat(
            [best, tf.fill([num_examples, 1], tf.constant(-float("inf"), tf.float64))], axis=1
        )
        score, first = first_index_of_max(best)
        has_span = score > -float("inf")
        # An example without a span points at window 0 (any valid index; its outputs are
        # masked). A zero row appended to each window's values makes index 0 exist when no
        # context of the batch has a window (empty or blank contexts only).
        window = tf.where(has_span, by_example.row_starts() + first, 0)

        choice = tf.gather(_with_zero_row(window_choice), window)
        start_rank, end_rank = choice // self.top_k, choice % self.top_k
        start_token = tf.gather(
            tf.gather(_with_zero_row(start_indices), window), start_rank, batch_dims=1
        )
        end_token = tf.gather(
            tf.gather(_with_zero_row(end_indices), window), end_rank, batch_dims=1
        )
        # Flat piece index = the window's first piece + (position in the row - doc_offset).
        base = tf.gather(_with_zero_row(window_base - doc_offset), window)
        # An example without a span (none of its candidates valid, e.g. every top start on
        # padding) reads piece 0 instead of wherever its masked choice points; a zero appended
        # to the flat pieces makes index 0 exist when every context is empty.
        first_piece = tf.where(has_span, tf.maximum(base + tf.cast(start_token, tf.int64), 0), 0)
        last_piece = tf.where(has_span, tf.maximum(base + tf.cast(end_token, tf.int64), 0), 0)

        def padded(flat):
            return tf.concat([flat, tf.zeros([1], flat.dtype)], axis=0)

        has_unknown = tf.reduce_any(
            tf.equal(
                tf.gather(padded(pieces.flat_values), tf.ragged.range(first_piece, last_piece + 1)),
                tokenizer.unk_id,
            ),
            axis=1,
        )
        outputs = self._span_text(
            context,
            has_span,
            tf.gather(padded(byte_starts.flat_values), first_piece),
            tf.gather(padded(byte_limits.flat_values), last_piece),
            has_unknown,
        )
        outputs["score"] = tf.cast(score, tf.float32)
        if self.version_2_with_negative:
            # The original's null score: the lowest [CLS] start + end logits over the windows.
            null = tf.RaggedTensor.from_row_lengths(
                start_logits[:, 0] + end_logits[:, 0], num_windows
            )
            null_score = tf.where(num_windows > 0, tf.reduce_min(null, axis=1), float("inf"))
            # As squad_postprocessing: null - start - end, in that order (float64).
            start_logit = tf.gather(
                tf.gather(_with_zero_row(start_values), window), start_rank, batch_dims=1
            )
            end_logit = tf.gather(
                tf.gather(_with_zero_row(end_values), window), end_rank, batch_dims=1
            )
            null_odds = null_score - start_logit - end_logit
            outputs["null_score"] = tf.cast(null_score, tf.float32)
            outputs["has_answer"] = tf.logical_and(
                has_span, null_odds <= self.null_score_diff_threshold
            )
        return outputs

    def _span_text(
        self, context, has_span, first_byte, limit_byte, has_unknown
    ) -> dict[str, tf.Tensor]:
        """The answer text and its character span from its pieces' bytes
        context[first_byte:limit_byte] (int64 [batch]); -1 and "" where has_span is False.

        As the original's get_final_text, the span widens to its whole words where the pieces'
        text cannot be found in them (an "[UNK]" piece, has_unknown) or where the words'
        normalized characters differ in number from their characters. The words are those of
        the Python path (data/squad/examples.py split_context): whitespace separates them, and
        each CJK ideograph is one, so a Chinese span widens to its own characters, not to a
        whole unspaced paragraph.
        """
        first_byte = tf.where(has_span, first_byte, 0)
        limit_byte = tf.where(has_span, limit_byte, 0)
        chars, char_starts, counts = self.packer.tokenizer.word_characters_per_character(context)
        row = chars.value_rowids()
        char_starts = char_starts.flat_values
        is_space = tf.strings.regex_full_match(chars.flat_values, _CONTEXT_WHITESPACE)
        starts_word = _starts_a_word(chars, is_space)
        num_examples = chars.nrows()
        # The words' bounds: the last word start at or before the span's first byte, and the
        # first space or word start at or after its limit.
        word_first = tf.math.unsorted_segment_max(
            tf.where(
                tf.logical_and(starts_word, char_starts <= tf.gather(first_byte, row)),
                char_starts,
                0,
            ),
            row,
            num_examples,
        )
        word_first = tf.maximum(word_first, 0)
        context_bytes = tf.cast(tf.strings.length(context), tf.int64)
        word_limit = -tf.math.unsorted_segment_max(
            tf.where(
                tf.logical_and(
                    tf.logical_or(is_space, starts_word),
                    char_starts >= tf.gather(limit_byte, row),
                ),
                -char_starts,
                -tf.gather(context_bytes, row),
            ),
            row,
            num_examples,
        )
        # (An empty row's segment max is the lowest int64: its span is masked anyway.)
        word_limit = tf.where(chars.row_lengths() > 0, word_limit, context_bytes)
        in_words = tf.logical_and(
            char_starts >= tf.gather(word_first, row), char_starts < tf.gather(word_limit, row)
        )
        in_words = tf.logical_and(in_words, tf.logical_not(is_space))
        normalized_count = tf.math.unsorted_segment_sum(
            tf.where(in_words, counts.flat_values, 0), row, num_examples
        )
        char_count = tf.math.unsorted_segment_sum(tf.cast(in_words, tf.int64), row, num_examples)
        widen = tf.logical_or(has_unknown, tf.not_equal(normalized_count, char_count))
        first_byte = tf.where(widen, word_first, first_byte)
        limit_byte = tf.where(widen, word_limit, limit_byte)
        first_byte = tf.where(has_span, first_byte, 0)
        limit_byte = tf.where(has_span, limit_byte, 0)
        text = tf.strings.substr(context, first_byte, limit_byte - first_byte)
        start = tf.strings.length(
            tf.strings.substr(context, tf.zeros_like(first_byte), first_byte), unit="UTF8_CHAR"
        )
        end = start + tf.strings.length(text, unit="UTF8_CHAR")
        return {
            "answer": tf.strings.regex_replace(text, _CONTEXT_WHITESPACE, " "),
            "start": tf.where(has_span, start, -1),
            "end": tf.where(has_span, end, -1),
        }

    def signature(self):
        text = tf.TensorSpec([None], tf.string)

        @tf.function(input_signature=[text, text])
        def serve(question, context):
            return self.answers(question, context)

        return serve


def export_squad_serving_model(
    model,
    packer: BertInputPacker,
    export_dir: str,
    doc_stride: int,
    max_query_length: int,
    n_best_size: int,
    max_answer_length: int,
    version_2_with_negative: bool,
    null_score_diff_threshold: float,
    encoder_dtype: str | None = None,
) -> str:
    """Writes the SavedModel to `export_dir` (under a temporary name, renamed when complete).

    Args:
      model: a built BertSpanLabeler (start_logits, end_logits float32 [batch, seq_length]).
      packer: a BertInputPacker with the model's vocab, casing and max_seq_length.
      encoder_dtype: None serves the Keras model as it is; "float32" or "bfloat16" serves its
        encoder as FusedInferenceEncoder with weights in that dtype (FusedEncoderModel).
      the rest: run_squad.py's flags of the same names, as the predict path uses them.

    Returns:
      export_dir.
    """
    if encoder_dtype is not None:
        model = FusedEncoderModel(model, encoder_dtype)
    module = SquadServingModule(
        model,
        packer,
        doc_stride,
        max_query_length,
        n_best_size,
        max_answer_length,
        version_2_with_negative,
        null_score_diff_threshold,
    )
    save_atomically(
        module, export_dir, signatures={"serving_default": module.signature()}, overwrite=True
    )
    return export_dir
