"""The tiny BERT checkpoint, its exports and the tiny sentiment task live in tests/conftest.py
(the notebook and feature-mode tests use them too); these names stay importable from here."""

from tests.conftest import (
    TINY_WORDS,
    tiny_bert_config,
    write_sentiment_task,
    write_tiny_checkpoint,
    write_tiny_vocab,
)

__all__ = [
    "TINY_WORDS",
    "tiny_bert_config",
    "write_sentiment_task",
    "write_tiny_checkpoint",
    "write_tiny_vocab",
]
