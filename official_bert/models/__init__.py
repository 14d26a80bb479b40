"""BERT models: layers wired together."""

from official_bert.models.bert_classifier import BertClassifier
from official_bert.models.bert_encoder import BertEncoder
from official_bert.models.bert_multiple_choice import BertMultipleChoice
from official_bert.models.bert_pretrainer import BertPretrainer
from official_bert.models.bert_span_labeler import BertSpanLabeler
from official_bert.models.bert_token_tagger import BertTokenTagger
from official_bert.models.feature_based_classifier import FeatureBasedClassifier
from official_bert.models.multitask_classifier import MultiTaskClassifier

__all__ = [
    "BertClassifier",
    "BertEncoder",
    "BertMultipleChoice",
    "BertPretrainer",
    "BertSpanLabeler",
    "BertTokenTagger",
    "FeatureBasedClassifier",
    "MultiTaskClassifier",
]
