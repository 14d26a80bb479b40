"""One vector per sentence from its tokens' vectors (extract_features.py --pooling).

cls: the [CLS] token's vector of the last layer (what BERT's pooler and classifier read).
mean: the mean over the sentence's real tokens ([CLS] and [SEP] included, padding excluded:
  the attention-mask mean of sentence-transformers, whose models, e.g. all-MiniLM-L6-v2, were
  trained to be read this way) of the last layer.
scalar_mix: the same mean over the tokens' learned ScalarMix of all layers
  (--scalar_mix_weights, from run_classifier.py --feature_mode=frozen_scalar_mix).
"""

from __future__ import annotations

import numpy as np

POOLINGS = ("cls", "mean", "scalar_mix")
# sentence-transformers' Normalize layer (torch.nn.functional.normalize): the norm is clamped so
# that an all-zero vector stays zero instead of becoming NaN.
_NORM_EPSILON = 1e-12


def pool_tokens(token_vectors: np.ndarray, pooling: str, normalize: bool = False) -> np.ndarray:
    """The vector of one sentence.

    Args:
      token_vectors: float32 [num_tokens, hidden_size], the sentence's real tokens only (row 0
        is [CLS]): the last layer for "cls" and "mean", the scalar mix for "scalar_mix".
      pooling: one of POOLINGS.
      normalize: divide by the L2 norm (unit vectors: dot product = cosine similarity).

    Returns:
      float32 [hidden_size].
    """
    if pooling == "cls":
        vector = token_vectors[0]
    elif pooling in ("mean", "scalar_mix"):
        vector = token_vectors.mean(axis=0, dtype=np.float32)
    else:
        raise ValueError(f"pooling must be one of {list(POOLINGS)}, got {pooling!r}")
    vector = np.asarray(vector, np.float32)
    if normalize:
        vector = vector / max(float(np.linalg.norm(vector)), _NORM_EPSILON)
    return vector.astype(np.float32)
