"""The TF Hub exports (encoder, encoder + MLM, preprocessor) of the tiny BERT checkpoint
(tests/conftest.py's tiny_checkpoint_dir), made once per test session."""

import os

import pytest

from tests.tiny_data import tiny_bert_config


@pytest.fixture(scope="session")
def tiny_exports(tiny_checkpoint_dir, tmp_path_factory):
    """{"model", "model_with_mlm", "preprocessing"}: export paths made by export_tfhub."""
    import keras

    from official_bert.export import export_tfhub

    # The exported dropout layers take their seeds from the global random state: seeded here,
    # the exports are the same whatever ran before in the session.
    keras.utils.set_random_seed(1)

    directory = tmp_path_factory.mktemp("tiny_exports")
    paths = {}
    for export_type in ("model", "model_with_mlm", "preprocessing"):
        paths[export_type] = export_tfhub(
            export_type,
            os.path.join(directory, export_type),
            str(tiny_checkpoint_dir / "vocab.txt"),
            model_checkpoint_path=str(tiny_checkpoint_dir / "bert_model.ckpt"),
            default_seq_length=16,
        )
    return paths


@pytest.fixture(scope="session")
def tiny_source_pretrainer(tiny_checkpoint_dir):
    """The checkpoint loaded into our own BertPretrainer (the reference for the exports)."""
    from official_bert.checkpoints import load_bert_weights
    from official_bert.models import BertEncoder, BertPretrainer

    model = BertPretrainer(BertEncoder.from_bert_config(tiny_bert_config()))
    model.build()
    load_bert_weights(model, str(tiny_checkpoint_dir / "bert_model.ckpt"), require_heads=True)
    return model
