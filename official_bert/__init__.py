"""official_bert: BERT for TensorFlow 2 and Keras 3."""

from official_bert.config import BertConfig, BertConfigError
from official_bert.models import BertClassifier, BertEncoder, BertPretrainer, BertSpanLabeler

__version__ = "0.1.0"

__all__ = [
    "BertClassifier",
    "BertConfig",
    "BertConfigError",
    "BertEncoder",
    "BertPretrainer",
    "BertSpanLabeler",
]
