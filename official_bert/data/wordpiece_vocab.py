"""Learning a WordPiece vocab.txt from a raw-text corpus, for pre-training from scratch.

The original release shipped vocabularies but no way to make one. tensorflow_text has the
learner (`bert_vocab_from_dataset`, BERT's word splitting then a WordPiece vocabulary of the
wanted size); this module only feeds it the corpus files as a tf.data pipeline and writes the
result in the original vocab.txt format: one token per line, the special tokens first.
"""

from __future__ import annotations

import tensorflow as tf
from tensorflow_text.tools.wordpiece_vocab import bert_vocab_from_dataset

from official_bert.config import write_text_atomically
from official_bert.data.text_corpus import expand_input_patterns

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def learn_wordpiece_vocab(
    input_file: str,
    vocab_file: str,
    vocab_size: int = 8000,
    do_lower_case: bool = True,
    min_word_count: int = 2,
) -> list[str]:
    """Learns a vocabulary from text files and writes it to `vocab_file` (atomically).

    Args:
      input_file: comma-separated files or glob patterns; one sentence per line (blank lines,
        the document separators of a pre-training corpus, are skipped).
      vocab_file: where vocab.txt goes.
      vocab_size: the vocabulary size aimed at: tensorflow_text's learner searches a word-count
        threshold for it and lands near it, not on it (it keeps every character of the corpus);
        a small corpus gives fewer tokens.
      do_lower_case: learn an uncased vocabulary (pass the same value to the tokenizer).
      min_word_count: words seen fewer times are left to be spelled by pieces.

    Returns:
      The tokens in id order: [PAD] (id 0), [UNK], [CLS], [SEP], [MASK], then every character
      of the corpus (so no word becomes [UNK]) and the learned words and "##" pieces.
    """
    if vocab_size <= len(SPECIAL_TOKENS):
        raise ValueError(f"vocab_size must be above {len(SPECIAL_TOKENS)}, got {vocab_size}")
    files = expand_input_patterns(input_file)
    lines = tf.data.TextLineDataset(files).map(tf.strings.strip)
    lines = lines.filter(lambda line: tf.strings.length(line) > 0)
    if not list(lines.take(1).as_numpy_iterator()):
        raise ValueError(f"no text found in {input_file!r}: the vocabulary would be empty")
    vocab = bert_vocab_from_dataset.bert_vocab_from_dataset(
        lines.batch(1024).prefetch(2),
        vocab_size=vocab_size,
        reserved_tokens=list(SPECIAL_TOKENS),
        bert_tokenizer_params={"lower_case": do_lower_case},
        learn_params={"lower_thresh": min_word_count},
    )
    write_text_atomically(vocab_file, "".join(f"{token}\n" for token in vocab))
    return list(vocab)
