"""Keras 3 layers that BERT models are built from: one layer per file, public Keras API only.

The speed paths some of them take when switched on live in official_bert.kernels."""

from official_bert.layers.bert_embeddings import BertEmbeddings
from official_bert.layers.classification_head import ClassificationHead
from official_bert.layers.masked_lm_head import MaskedLMHead
from official_bert.layers.scalar_mix import ScalarMix
from official_bert.layers.self_attention import SelfAttention
from official_bert.layers.span_head import SpanHead
from official_bert.layers.transformer_block import TransformerBlock

__all__ = [
    "BertEmbeddings",
    "ClassificationHead",
    "MaskedLMHead",
    "ScalarMix",
    "SelfAttention",
    "SpanHead",
    "TransformerBlock",
]
