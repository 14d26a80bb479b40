"""Reading and writing BERT weights in other layouts, and telling the layouts apart."""

from official_bert.checkpoints.loading import (
    CHECKPOINT_FORMATS,
    WRITABLE_CHECKPOINT_FORMATS,
    detect_checkpoint_format,
    load_bert_weights,
    save_bert_weights,
)
from official_bert.checkpoints.original_tf1 import (
    read_original_checkpoint,
    write_original_checkpoint,
)
from official_bert.checkpoints.pretrained import load_encoder, load_tokenizer
from official_bert.checkpoints.variable_table import CheckpointMismatchError

__all__ = [
    "CHECKPOINT_FORMATS",
    "CheckpointMismatchError",
    "WRITABLE_CHECKPOINT_FORMATS",
    "detect_checkpoint_format",
    "load_bert_weights",
    "load_encoder",
    "load_tokenizer",
    "read_original_checkpoint",
    "save_bert_weights",
    "write_original_checkpoint",
]
