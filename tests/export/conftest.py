"""The tiny BERT checkpoint and exports live in tests/conftest.py (notebook tests use them too)."""

from tests.conftest import TINY_WORDS, tiny_bert_config, write_tiny_vocab

__all__ = ["TINY_WORDS", "tiny_bert_config", "write_tiny_vocab"]
