"""official_bert: BERT for TensorFlow 2 and Keras 3."""

from official_bert.cpu_allocator import prefer_bfc_cpu_allocator

# Before anything below makes a tensor: TensorFlow picks its CPU allocator at its first one.
prefer_bfc_cpu_allocator()

from official_bert.config import BertConfig, BertConfigError  # noqa: E402
from official_bert.models import (  # noqa: E402
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
