"""SavedModel and TF Hub exports."""

from official_bert.export.bert_encoder_module import export_bert_encoder
from official_bert.export.bert_preprocessor_module import (
    export_bert_preprocessor,
    load_preprocessor,
)
from official_bert.export.exported_bert_encoder import ExportedBertEncoder
from official_bert.export.tfhub_export import export_tfhub

__all__ = [
    "ExportedBertEncoder",
    "export_bert_encoder",
    "export_bert_preprocessor",
    "export_tfhub",
    "load_preprocessor",
]
