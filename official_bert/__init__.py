"""official_bert: BERT for TensorFlow 2 and Keras 3.

Importing it changes no environment variable; the speed paths (official_bert.kernels) are off
until switched on with official_bert.kernels.use_fast_kernels (the scripts do).
"""

from official_bert.config import BertConfig, BertConfigError
from official_bert.models import (
    BertClassifier,
    BertEncoder,
    BertPretrainer,
    BertSpanLabeler,
)

__version__ = "0.1.0"

__all__ = [
    "BertClassifier",
    "BertConfig",
    "BertConfigError",
    "BertEncoder",
    "BertPretrainer",
    "BertSpanLabeler",
]
