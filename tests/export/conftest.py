"""A tiny BERT with real words in its vocabulary, written as an original TF1 checkpoint, and its
TF Hub exports (encoder, encoder + MLM, preprocessor), made once per test session."""

import os

import pytest

# 5 special tokens, then words and pieces: 100 lines, the tiny model's vocab_size.
TINY_WORDS = (
    "the a is of and to in good bad movie film great awful fun dull plot actor story loved hated "
    "boring brilliant quick brown fox jump over lazy dog hello world this that it was not very "
    "really best worst ever seen time , . ! ? ' ##s ##ing ##ed ##ly"
).split()


def write_tiny_vocab(path) -> list[str]:
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + TINY_WORDS
    tokens += [f"[unused{index}]" for index in range(100 - len(tokens))]
    path.write_text("".join(token + "\n" for token in tokens), encoding="utf-8")
    return tokens


# A sentiment task in the tiny vocab's words: each text holds one word of its label's list.
POSITIVE = ["good", "great", "fun", "loved", "brilliant", "best"]
NEGATIVE = ["bad", "awful", "dull", "hated", "boring", "worst"]
FILLER = ["the", "movie", "film", "plot", "story", "actor", "was", "very", "really", "it"]


def write_sentiment_task(directory, seed=0, splits=(("train", 64), ("dev", 32))):
    """{split}.tsv files in the generic TSV layout (header, text, label "neg"/"pos"), balanced."""
    import numpy as np

    rng = np.random.default_rng(seed)
    for split, count in splits:
        lines = ["sentence\tlabel"]
        for index in range(count):
            label = index % 2
            words = list(rng.choice(FILLER, size=4)) + [rng.choice((NEGATIVE, POSITIVE)[label])]
            rng.shuffle(words)
            lines.append(f"{' '.join(words)}\t{'pos' if label else 'neg'}")
        (directory / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def tiny_bert_config(**overrides):
    from official_bert.config import BertConfig

    values = dict(
        vocab_size=100,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
        type_vocab_size=2,
    )
    values.update(overrides)
    return BertConfig(**values)


def write_tiny_checkpoint(directory, **config_overrides):
    """Writes bert_model.ckpt (encoder + MLM + NSP heads, random weights of seed 1),
    bert_config.json (tiny_bert_config(**config_overrides)) and vocab.txt in `directory`."""
    import keras

    from official_bert.checkpoints import save_bert_weights
    from official_bert.models import BertEncoder, BertPretrainer

    directory.mkdir(parents=True, exist_ok=True)
    write_tiny_vocab(directory / "vocab.txt")
    config = tiny_bert_config(**config_overrides)
    config.to_json_file(str(directory / "bert_config.json"))
    keras.utils.set_random_seed(1)
    model = BertPretrainer(BertEncoder.from_bert_config(config))
    model.build()
    save_bert_weights(model, str(directory / "bert_model.ckpt"), "tf1")
    return directory


@pytest.fixture(scope="session")
def tiny_checkpoint_dir(tmp_path_factory):
    """write_tiny_checkpoint's files, of the default tiny config."""
    return write_tiny_checkpoint(tmp_path_factory.mktemp("tiny_bert"))


@pytest.fixture(scope="session")
def tiny_exports(tiny_checkpoint_dir, tmp_path_factory):
    """{"model", "model_with_mlm", "preprocessing"}: export paths made by export_tfhub."""
    from official_bert.export import export_tfhub

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
