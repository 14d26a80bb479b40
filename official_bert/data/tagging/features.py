"""Tagged sentences as TFRecords for token tagging, and their predictions back to words.

Each word is tokenized on its own (the fast tokenizer's pieces for that word, which are
`FullTokenizer`'s; all words in one batch) and its tag goes on its first wordpiece; the other pieces, [CLS], [SEP] and padding carry weight 0, so loss and
metrics count each word once (the BERT paper's NER setup, section 5.3). A sentence longer than
max_seq_length - 2 pieces is split at word boundaries into several records, so every word is
tagged (a single word longer than that keeps its first max_seq_length - 2 pieces).

With a doc_stride (run_classifier.py --doc_stride, `encode_tagged_windows`) a long sentence
becomes overlapping windows of wordpieces instead (data/document_windows.py), and each word's
tag goes only in the window where its first piece has the most context (SQuAD's max-context
rule): a word is trained, evaluated and predicted once, with as much context on both sides as
the windows give, and `word_predictions` reads the records unchanged.

Features: input_ids, input_mask, segment_ids (all 0), label_ids (int64 [max_seq_length], the tag
id at each word's first piece, else 0), label_weights (float [max_seq_length], 1.0 at each word's
first piece, also in unlabeled test files, where it marks the words to predict), is_real_example
(int64 [1]) and sentence_index (int64 [1], the record's sentence in its file, in order).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.data.document_windows import text_windows
from official_bert.data.tagging.examples import TaggedSentence


def tagging_feature_spec(max_seq_length: int) -> dict[str, tf.io.FixedLenFeature]:
    """The parse spec of tagging records."""
    sequence = tf.io.FixedLenFeature([max_seq_length], tf.int64)
    return {
        "input_ids": sequence,
        "input_mask": sequence,
        "segment_ids": sequence,
        "label_ids": sequence,
        "label_weights": tf.io.FixedLenFeature([max_seq_length], tf.float32),
        "is_real_example": tf.io.FixedLenFeature([1], tf.int64),
        "sentence_index": tf.io.FixedLenFeature([1], tf.int64),
    }


def _word_pieces(words: list[str], packer: BertInputPacker, batch_size: int) -> list[np.ndarray]:
    """The wordpiece ids of each word (int32 arrays); a word the tokenizer drops entirely
    (control characters only) becomes [UNK], so that it still gets a prediction."""
    tokenizer = packer.tokenizer
    ids, splits = tokenizer.tokenize_in_batches(words, batch_size)
    unk = np.array([tokenizer.unk_id], np.int32)
    return [
        ids[start:end] if end > start else unk
        for start, end in zip(splits[:-1], splits[1:], strict=True)
    ]


def _record_arrays(packed: dict, num_rows: int, length: int) -> dict[str, np.ndarray]:
    """The tagging record arrays of `num_rows` packed rows (int64 inputs from the packer's
    [num_rows, length] outputs; labels, weights and sentence indexes zero, for the caller to
    fill; every row real)."""
    return {
        "input_ids": packed["input_word_ids"].astype(np.int64),
        "input_mask": packed["input_mask"].astype(np.int64),
        "segment_ids": packed["input_type_ids"].astype(np.int64),
        "label_ids": np.zeros([num_rows, length], np.int64),
        "label_weights": np.zeros([num_rows, length], np.float32),
        "is_real_example": np.ones([num_rows, 1], np.int64),
        "sentence_index": np.zeros([num_rows, 1], np.int64),
    }


def encode_tagged_sentences(
    sentences: list[TaggedSentence],
    packer: BertInputPacker,
    labels: list[str],
    batch_size: int = 50_000,
) -> dict[str, np.ndarray]:
    """Tokenizes and packs sentences, one or more records each (see the module docstring).

    Args:
      sentences: the sentences; without tags (test files) every label id is 0.
      packer: its tokenizer and max_seq_length are used ([CLS] words [SEP], one segment).
      labels: the tag names (index = tag id). Tags outside them (only in test files, whose tags
        are never used) get id 0.
      batch_size: words tokenized per call.

    Returns:
      {"input_ids", "input_mask", "segment_ids", "label_ids"}: int64 [n, max_seq_length];
      "label_weights": float32 [n, max_seq_length]; "is_real_example", "sentence_index": int64
      [n, 1]; n >= len(sentences) records in sentence order.
    """
    length = packer.max_seq_length
    budget = length - 2
    tag_ids = {tag: index for index, tag in enumerate(labels)}
    pieces = _word_pieces(
        [word for sentence in sentences for word in sentence.words], packer, batch_size
    )
    chunks = []  # (sentence index, [(pieces, tag id)])
    next_word = 0
    for index, sentence in enumerate(sentences):
        tags = sentence.tags or [None] * len(sentence.words)
        chunk, used = [], 0
        for tag in tags:
            word = pieces[next_word][:budget]
            next_word += 1
            if chunk and used + len(word) > budget:
                chunks.append((index, chunk))
                chunk, used = [], 0
            chunk.append((word, tag_ids.get(tag, 0)))
            used += len(word)
        chunks.append((index, chunk))
    # Each chunk fits max_seq_length - 2 pieces, so the packer trims nothing.
    packed = packer.pack_id_arrays(
        [[np.concatenate([word for word, _ in chunk]) for _, chunk in chunks]]
    )
    arrays = _record_arrays(packed, len(chunks), length)
    for row, (index, chunk) in enumerate(chunks):
        word_lengths = [len(word) for word, _ in chunk]
        (segment_start,) = packer.segment_starts([sum(word_lengths)])
        starts = segment_start + np.cumsum([0, *word_lengths[:-1]])
        arrays["label_ids"][row, starts] = [tag for _, tag in chunk]
        arrays["label_weights"][row, starts] = 1.0
        arrays["sentence_index"][row, 0] = index
    return arrays


def encode_tagged_windows(
    sentences: list[TaggedSentence],
    packer: BertInputPacker,
    labels: list[str],
    doc_stride: int,
    batch_size: int = 50_000,
) -> dict[str, np.ndarray]:
    """`encode_tagged_sentences` with overlapping windows (see the module docstring): a
    sentence longer than max_seq_length - 2 pieces becomes windows of that many pieces starting
    `doc_stride` apart; label_weights is 1 at a word's first piece only in the window where that
    piece has the most context. Same arrays, records in sentence order and, within a sentence,
    the words' weighted positions in word order (text_windows gives each position once, in
    order).
    """
    length = packer.max_seq_length
    tag_ids = {tag: index for index, tag in enumerate(labels)}
    pieces = _word_pieces(
        [word for sentence in sentences for word in sentence.words], packer, batch_size
    )
    rows = []  # (sentence index, window pieces, {row position: tag id})
    next_word = 0
    for index, sentence in enumerate(sentences):
        tags = sentence.tags or [None] * len(sentence.words)
        words = pieces[next_word : next_word + len(tags)]
        next_word += len(tags)
        sentence_pieces = np.concatenate(words)
        # The line position ([CLS] first) of each word's first piece -> its tag id.
        word_starts = 1 + np.cumsum([0, *[len(word) for word in words[:-1]]])
        start_tags = {
            int(start): tag_ids.get(tag, 0) for start, tag in zip(word_starts, tags, strict=True)
        }
        windows = text_windows(
            len(sentence_pieces), None, length, doc_stride, where=f"sentence {index + 1}"
        )
        for window in windows:
            tagged = {
                row: start_tags[line]
                for row, line in zip(window.row_positions, window.line_positions, strict=True)
                if line in start_tags
            }
            rows.append(
                (index, sentence_pieces[window.start : window.start + window.length], tagged)
            )
    # Each window fits max_seq_length - 2 pieces, so the packer trims nothing.
    packed = packer.pack_id_arrays([[window for _, window, _ in rows]])
    arrays = _record_arrays(packed, len(rows), length)
    for row, (index, _, tagged) in enumerate(rows):
        positions = list(tagged)
        arrays["label_ids"][row, positions] = list(tagged.values())
        arrays["label_weights"][row, positions] = 1.0
        arrays["sentence_index"][row, 0] = index
    return arrays


def word_predictions(
    outputs: np.ndarray, label_weights: np.ndarray, sentence_index: np.ndarray, num_sentences: int
) -> list[np.ndarray]:
    """Reassembles per-record outputs into per-sentence, per-word outputs.

    Args:
      outputs: [records, seq_length, ...] (tag logits or ids), records in file order.
      label_weights: [records, seq_length], 1 at each word's first piece.
      sentence_index: [records] the sentence of each record (non-decreasing).
      num_sentences: how many sentences the file holds.

    Returns:
      For each sentence, outputs[..., word positions, ...] of its words in order: an array
      [num_words, ...].

    Raises:
      ValueError: a sentence without records (the records do not belong to these sentences).
    """
    words = [[] for _ in range(num_sentences)]
    for row, index in enumerate(np.asarray(sentence_index).reshape(-1)):
        words[int(index)].append(outputs[row][np.asarray(label_weights[row]) > 0])
    missing = [index for index, parts in enumerate(words) if not parts]
    if missing:
        raise ValueError(
            f"no records for sentences {missing[:5]} of {num_sentences}: the records and the "
            "sentences do not match"
        )
    return [np.concatenate(parts) for parts in words]
