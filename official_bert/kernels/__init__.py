"""The speed paths, apart from the model: each a faster twin of a plain Keras/TensorFlow piece,
tested equal to it (tests/kernels/), and taken only when switched on.

  folded_projection         folded_product: leading axes folded into rows of one 2-D MatMul
  folded_einsum_dense       FoldedEinsumDense: attention projections as one 2-D MatMul
  folded_dense              FoldedDense: a Dense on [batch, seq, in] as one 2-D MatMul
  batched_matmul_attention  BatchedMatmulAttention: the heads' products as batched MatMuls
  packed_bits_dropout       PackedBitsDropout: a dropout mask from half the random bits
  replica_dropout           ReplicaDropout: the plain dropout, another mask on each replica
                            (the twin PackedBitsDropout builds on; the layers use it)
  gelu_gradient             gelu_tanh: the tanh GELU with an XLA-fused gradient
  softmax_cross_entropy     sparse_softmax_cross_entropy on the oneDNN softmax
  fused_adam                fused_adam_update: scale, weight decay and Adam in one XLA loop
  host_allocator            TensorFlow's BFC allocator for host memory
  inference_encoder         FusedInferenceEncoder: an encoder's eval forward, fused products
  frozen_weights            use_frozen_weight_products: oneDNN keeps each weight reordered once
                            (processes that only infer); the guard that keeps it out of training
  switch                    use_fast_kernels / fast_kernels: the one switch

The library's default is off (plain Keras, public API only); the scripts switch it on with
`--fast_kernels` (default true) through `use_fast_kernels`, first thing in their main. A plain
and a fast model have the same weights, variable names and checkpoint keys.
"""

from official_bert.kernels.batched_matmul_attention import BatchedMatmulAttention
from official_bert.kernels.folded_dense import FoldedDense, dense_layer
from official_bert.kernels.folded_einsum_dense import FoldedEinsumDense
from official_bert.kernels.frozen_weights import (
    frozen_weight_products_requested,
    refuse_frozen_weight_products,
    use_frozen_weight_products,
)
from official_bert.kernels.fused_adam import fused_adam_update
from official_bert.kernels.gelu_gradient import gelu_tanh
from official_bert.kernels.host_allocator import prefer_bfc_cpu_allocator
from official_bert.kernels.inference_encoder import FusedInferenceEncoder
from official_bert.kernels.packed_bits_dropout import PackedBitsDropout, dropout_layer
from official_bert.kernels.replica_dropout import ReplicaDropout
from official_bert.kernels.softmax_cross_entropy import sparse_softmax_cross_entropy
from official_bert.kernels.switch import fast_kernels, fast_kernels_enabled, use_fast_kernels

__all__ = [
    "BatchedMatmulAttention",
    "FoldedDense",
    "FoldedEinsumDense",
    "FusedInferenceEncoder",
    "PackedBitsDropout",
    "ReplicaDropout",
    "dense_layer",
    "dropout_layer",
    "fast_kernels",
    "fast_kernels_enabled",
    "frozen_weight_products_requested",
    "fused_adam_update",
    "gelu_tanh",
    "prefer_bfc_cpu_allocator",
    "refuse_frozen_weight_products",
    "sparse_softmax_cross_entropy",
    "use_fast_kernels",
    "use_frozen_weight_products",
]
