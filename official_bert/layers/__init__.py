"""Keras 3 layers that BERT models are built from: one layer per file."""

from official_bert.layers.bert_embeddings import BertEmbeddings
from official_bert.layers.classification_head import ClassificationHead
from official_bert.layers.folded_einsum_dense import FoldedEinsumDense
from official_bert.layers.masked_lm_head import MaskedLMHead
from official_bert.layers.packed_bits_dropout import PackedBitsDropout
from official_bert.layers.scalar_mix import ScalarMix
from official_bert.layers.self_attention import SelfAttention
from official_bert.layers.span_head import SpanHead
from official_bert.layers.transformer_block import TransformerBlock

__all__ = [
    "BertEmbeddings",
    "ClassificationHead",
    "FoldedEinsumDense",
    "MaskedLMHead",
    "PackedBitsDropout",
    "ScalarMix",
    "SelfAttention",
    "SpanHead",
    "TransformerBlock",
]
