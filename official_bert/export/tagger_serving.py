"""A SavedModel of a fine-tuned token tagger (run_classifier.py --task_name=conll) that tags raw
text: words in, each word's tag and the entities out.

The text is split into words on whitespace (tensorflow_text.WhitespaceTokenizer: ICU's white
space, with the words' byte offsets; a CoNLL file's words hold none), or, for a model trained on a
character-per-line Chinese NER corpus (data/tagging/character_ner.py), into its characters, each
a word (ASCII whitespace dropped; U+3000 and other spaces kept as characters, as that reader keeps
them), so raw Chinese text is tagged character by character; from there it is what the
predict path does with the words of a CoNLL line (data/tagging/features.py): each word tokenized
on its own (a word of no piece becomes [UNK]), cut to max_seq_length - 2 pieces, the words
packed greedily into as many rows as they need, each word's tag read at its first piece; or,
exported with the run's doc_stride (run_classifier.py --doc_stride, encode_tagged_windows), the
sentence's whole pieces in overlapping windows of max_seq_length - 2 pieces starting doc_stride
apart, each word's tag read at its first piece in the window where that piece has the most
context (SQuAD's rule, export/serving_windows.py).
Entities follow the chunk rules of evaluation/tagging_metrics.py (conlleval's, IOB1, IOB2 and
IOBES), tabulated from its own functions at export time. Loading needs only `tensorflow` and
`tensorflow_text`.
"""

from __future__ import annotations

import tensorflow as tf
import tensorflow_text as tf_text

from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.evaluation.tagging_metrics import (
    chunk_boundary_tables,
    is_span_tag_set,
    split_tag,
)
from official_bert.export.fused_encoder_model import FusedEncoderModel
from official_bert.export.saved_model_writing import save_atomically
from official_bert.export.serving_windows import max_context_windows, slide_windows


class TaggerServingModule(tf.Module):
    """`serving_default`: text [batch] tf.string ->

    words, tags: tf.string [batch, most words], each word and its tag ("" past the last word);
    entity_types, entity_texts: tf.string [batch, most entities] and entity_starts,
      entity_ends: int32 [batch, most entities], each entity's type and its characters
      text[start:end] (Python slicing of the decoded string), "" and -1 past the last (none
      for tag sets that name no entities, e.g. part-of-speech).
    """

    def __init__(
        self,
        model,
        packer: BertInputPacker,
        labels: list[str],
        characters_are_words: bool = False,
        doc_stride: int | None = None,
        name: str | None = None,
    ):
        super().__init__(name=name)
        if doc_stride is not None and doc_stride < 1:
            raise ValueError(f"doc_stride must be at least 1, got {doc_stride}")
        self.doc_stride = doc_stride
        self.characters_are_words = characters_are_words
        self.model = model
        self.packer = packer
        self.tag_names = tf.constant(labels, tf.string)
        self.has_entities = is_span_tag_set(labels)
        starts, ends = chunk_boundary_tables(labels)
        # Row/column len(labels) stands for the "O" before the first and after the last word.
        self.starts_chunk = tf.constant(starts)
        self.ends_chunk = tf.constant(ends)
        self.entity_type_names = tf.constant([split_tag(tag)[1] for tag in labels], tf.string)
        self.outside_id = len(labels)

    @tf.autograph.experimental.do_not_convert
    def tag(self, text: tf.Tensor) -> dict[str, tf.Tensor]:
        """The outputs of `serving_default` (see the class) for [batch] tf.string `text`; all
        rows (or windows) of the batch go through the model as one batch."""
        words, byte_starts, byte_limits = self._words_with_offsets(text)
        budget = self.packer.max_seq_length - 2
        # With a doc_stride a word keeps all its pieces: the windows cut the sentence's pieces.
        pieces = self._word_pieces(words.flat_values, budget if self.doc_stride is None else None)
        if self.doc_stride is None:
            rows, inputs = self._rows(words, pieces)
        else:
            rows, inputs = self._windows(words, pieces)
        logits = self.model(inputs, training=False)
        word_logits = tf.gather_nd(logits, rows)
        tag_ids = tf.argmax(word_logits, axis=-1, output_type=tf.int32)
        outputs = {
            "words": words.to_tensor(default_value=""),
            "tags": words.with_flat_values(tf.gather(self.tag_names, tag_ids)).to_tensor(
                default_value=""
            ),
        }
        outputs.update(
            self._entities(text, words, byte_starts.flat_values, byte_limits.flat_values, tag_ids)
        )
        return outputs

    def _word_pieces(self, flat_words: tf.Tensor, budget: int | None) -> tf.RaggedTensor:
        """int32 [words, (pieces)]: each word (of [words] tf.string) tokenized on its own, cut to
        `budget` pieces unless None (data/tagging/features.py _word_pieces)."""
        tokenizer = self.packer.tokenizer
        pieces = tf.cast(tokenizer.tokenize(flat_words), tf.int32)
        if budget is not None:
            pieces = pieces[:, :budget]
        # A word the tokenizer drops entirely (control characters only) becomes [UNK].
        is_empty = tf.cast(tf.equal(pieces.row_lengths(), 0), tf.int64)
        return tf.concat(
            [
                pieces,
                tf.RaggedTensor.from_row_lengths(
                    tf.fill([tf.reduce_sum(is_empty)], tf.constant(tokenizer.unk_id, tf.int32)),
                    is_empty,
                ),
            ],
            axis=1,
        )

    def _rows(self, words, pieces) -> tuple[tf.Tensor, dict[str, tf.Tensor]]:
        """Without a doc_stride, the rows the predict path fills: a sentence's words in order,
        a new row when the next word would not fit (data/tagging/features.py
        encode_tagged_sentences).

        Args: words [batch, (words)] tf.string, pieces int32 [words, (pieces)] (cut to fit).
        Returns: (int64 [words, 2], each word's row and the position of its first piece there;
          the packed rows, as BertInputPacker.pack_ids).
        """
        budget = self.packer.max_seq_length - 2
        num_words = tf.size(words.flat_values, tf.int64)
        lengths = pieces.row_lengths()
        word_index = tf.range(num_words)
        is_first = tf.equal(word_index, tf.gather(words.row_starts(), words.value_rowids()))

        def place(carry, word):
            row, used = carry
            length, first = word
            new_row = tf.logical_or(first, used + length > budget)
            return (
                tf.where(new_row, row + 1, row),
                tf.where(new_row, length, used + length),
            )

        rows, _ = tf.scan(
            place,
            (lengths, is_first),
            initializer=(tf.constant(-1, tf.int64), tf.constant(0, tf.int64)),
        )
        num_rows = tf.reduce_max(tf.concat([rows, [-1]], 0)) + 1
        inputs = self.packer.pack_ids(
            [tf.RaggedTensor.from_value_rowids(pieces, rows, nrows=num_rows)], pad_to_longest=True
        )
        # Each word's first piece: after [CLS] and the pieces of the row's earlier words.
        before = tf.cumsum(lengths, exclusive=True)
        row_first = tf.math.unsorted_segment_min(before, rows, num_rows)
        (segment_start,) = BertInputPacker.segment_starts([0])
        position = segment_start + before - tf.gather(row_first, rows)
        return tf.stack([rows, position], axis=1), inputs

    def _windows(self, words, pieces) -> tuple[tf.Tensor, dict[str, tf.Tensor]]:
        """With a doc_stride, the windows of data/tagging/features.py encode_tagged_windows: a
        sentence's pieces (its words' whole pieces in order) in windows of max_seq_length - 2
        pieces starting doc_stride apart (export/serving_windows.py), each word read in the
        window where its first piece has the most context.

        Args: words [batch, (words)] tf.string, pieces int32 [words, (pieces)] (whole words).
        Returns: (int64 [words, 2], each word's window and the position of its first piece
          there; the packed windows, as BertInputPacker.pack_ids).
        """
        sentence_pieces = tf.RaggedTensor.from_row_splits(pieces, words.row_splits)
        sentence_pieces = sentence_pieces.merge_dims(1, 2)
        num_sentences = sentence_pieces.nrows()
        room = tf.fill([num_sentences], tf.constant(self.packer.max_seq_length - 2, tf.int64))
        windows = slide_windows(sentence_pieces, room, self.doc_stride)
        inputs = self.packer.pack_ids([windows.pieces], pad_to_longest=True)
        # Each word's first piece among its sentence's pieces, and the window that reads it.
        sentence = words.value_rowids()
        first = pieces.row_starts() - tf.gather(sentence_pieces.row_starts(), sentence)
        window = tf.gather(
            tf.cumsum(windows.counts, exclusive=True), sentence
        ) + max_context_windows(windows, sentence, first)
        (segment_start,) = BertInputPacker.segment_starts([0])
        position = segment_start + first - tf.gather(windows.start, window)
        return tf.stack([window, position], axis=1), inputs

    def _words_with_offsets(self, text):
        """(words, byte starts, byte limits): [batch, (words)] RaggedTensors of the words of
        [batch] tf.string `text` (see the module docstring), tf.string and int64."""
        if not self.characters_are_words:
            return tf_text.WhitespaceTokenizer().tokenize_with_offsets(text)
        chars, starts = tf.strings.unicode_split_with_offsets(text, "UTF-8", errors="ignore")
        starts = tf.cast(starts, tf.int64)
        limits = starts + tf.cast(tf.strings.length(chars), tf.int64)
        kept = tf.logical_not(tf.strings.regex_full_match(chars, "[ \t\r\n]"))
        return (
            tf.ragged.boolean_mask(chars, kept),
            tf.ragged.boolean_mask(starts, kept),
            tf.ragged.boolean_mask(limits, kept),
        )

    def _entities(self, text, words, byte_starts, byte_limits, tag_ids) -> dict[str, tf.Tensor]:
        """Each sentence's entities from its words' tag ids (int32 [words]), padded as the
        signature says."""
        num_sentences = words.nrows()
        sentence = words.value_rowids()
        if not self.has_entities:
            empty_text = tf.fill([num_sentences, 0], "")
            empty_int = tf.zeros([num_sentences, 0], tf.int32)
            return {
                "entity_types": empty_text,
                "entity_texts": empty_text,
                "entity_starts": empty_int,
                "entity_ends": empty_int,
            }
        outside = tf.fill([num_sentences, 1], self.outside_id)
        padded = tf.concat([outside, words.with_flat_values(tag_ids), outside], axis=1)
        previous = padded[:, :-2].flat_values
        following = padded[:, 2:].flat_values
        starts = tf.gather_nd(self.starts_chunk, tf.stack([previous, tag_ids], axis=1))
        ends = tf.gather_nd(self.ends_chunk, tf.stack([tag_ids, following], axis=1))
        # An entity runs from a start to the first word at or after it that ends one (every
        # sentence's last word in an entity ends it, so the end is in the same sentence).
        first_word = tf.where(starts)[:, 0]
        end_words = tf.where(ends)[:, 0]
        last_word = tf.gather(end_words, tf.searchsorted(end_words, first_word))
        first_byte = tf.gather(byte_starts, first_word)
        limit_byte = tf.gather(byte_limits, last_word)
        entity_sentence = tf.gather(sentence, first_word)
        sentence_text = tf.gather(text, entity_sentence)
        entity_text = tf.strings.substr(sentence_text, first_byte, limit_byte - first_byte)
        start = tf.strings.length(
            tf.strings.substr(sentence_text, tf.zeros_like(first_byte), first_byte),
            unit="UTF8_CHAR",
        )
        end = start + tf.strings.length(entity_text, unit="UTF8_CHAR")

        def by_sentence(values, default):
            return tf.RaggedTensor.from_value_rowids(
                values, entity_sentence, nrows=num_sentences
            ).to_tensor(default_value=default)

        # conlleval names the entity by its last word's type.
        entity_type = tf.gather(self.entity_type_names, tf.gather(tag_ids, last_word))
        return {
            "entity_types": by_sentence(entity_type, ""),
            "entity_texts": by_sentence(entity_text, ""),
            "entity_starts": by_sentence(start, -1),
            "entity_ends": by_sentence(end, -1),
        }

    def signature(self):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def serve(text):
            return self.tag(text)

        return serve


def export_tagger_serving_model(
    model,
    packer: BertInputPacker,
    labels: list[str],
    export_dir: str,
    encoder_dtype: str | None = None,
    characters_are_words: bool = False,
    doc_stride: int | None = None,
) -> str:
    """Writes the SavedModel to `export_dir` (under a temporary name, renamed when complete),
    with `assets.extra/labels.txt` beside.

    Args:
      model: a built BertTokenTagger or per-token FeatureBasedClassifier (logits float
        [batch, seq_length, len(labels)]).
      packer: the BertInputPacker the model was fine-tuned with (same vocab, casing, length).
      labels: the tag names by id.
      encoder_dtype: None serves the Keras model as it is; "float32" or "bfloat16" serves a
        BertTokenTagger's encoder as FusedInferenceEncoder with weights in that dtype
        (FusedEncoderModel).
      characters_are_words: tag each character of the text (a character-per-line Chinese NER
        model) instead of its whitespace words.

    Returns:
      export_dir.
    """
    if encoder_dtype is not None:
        model = FusedEncoderModel(model, encoder_dtype)
    module = TaggerServingModule(model, packer, labels, characters_are_words, doc_stride)
    save_atomically(
        module,
        export_dir,
        signatures={"serving_default": module.signature()},
        extra_files={"assets.extra/labels.txt": "\n".join(labels) + "\n"},
        overwrite=True,
    )
    return export_dir
