"""export_tfhub.py and export_tfhub: the script, bad input, and all-MiniLM-L6-v2 end to end."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from official_bert.checkpoints import CheckpointMismatchError, save_bert_weights
from official_bert.config import BertConfigError
from official_bert.export import export_tfhub, load_preprocessor
from official_bert.models import BertEncoder
from official_bert.tokenization import FullTokenizer, guess_do_lower_case
from tests.conftest import MINILM_FIXTURE, REPO_ROOT
from tests.tiny_data import tiny_bert_config, write_tiny_vocab


def _leftovers(directory):
    return sorted(name for name in os.listdir(directory) if ".tmp-" in name)


@pytest.mark.slow  # suite time; README's export_tfhub.py commands run the script
def test_script_exports_then_refuses_an_existing_path(tiny_checkpoint_dir, tmp_path):
    export_path = tmp_path / "encoder"
    command = [
        sys.executable,
        str(REPO_ROOT / "export_tfhub.py"),
        f"--vocab_file={tiny_checkpoint_dir / 'vocab.txt'}",
        f"--model_checkpoint_path={tiny_checkpoint_dir / 'bert_model.ckpt'}",
        "--export_type=model_with_mlm",
        f"--export_path={export_path}",
    ]
    first = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    exported = tf.saved_model.load(str(export_path))
    assert bool(exported.do_lower_case.numpy()) is True
    assert hasattr(exported, "mlm")
    stamp = (export_path / "saved_model.pb").stat().st_mtime_ns

    second = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert second.returncode != 0
    assert f"export path {export_path} already exists" in second.stderr
    assert "--overwrite" in second.stderr
    assert (export_path / "saved_model.pb").stat().st_mtime_ns == stamp


def test_overwrite_replaces_an_existing_export(tiny_checkpoint_dir, tmp_path):
    vocab_file = str(tiny_checkpoint_dir / "vocab.txt")
    # A folder of the user's own is never removed to make room, --overwrite or not.
    own = tmp_path / "own"
    own.mkdir()
    (own / "precious.txt").write_text("mine")
    for overwrite in (False, True):
        with pytest.raises(FileExistsError, match="already exists|is not a SavedModel"):
            export_tfhub("preprocessing", str(own), vocab_file, overwrite=overwrite)
    assert os.listdir(own) == ["precious.txt"]
    # An earlier export is replaced with --overwrite, whatever was added to it.
    export_path = tmp_path / "preprocessor"
    export_tfhub("preprocessing", str(export_path), vocab_file)
    (export_path / "stale.txt").write_text("old")
    with pytest.raises(FileExistsError, match="already exists"):
        export_tfhub("preprocessing", str(export_path), vocab_file)
    export_tfhub("preprocessing", str(export_path), vocab_file, overwrite=True)
    assert sorted(os.listdir(export_path)) == [
        "assets",
        "fingerprint.pb",
        "saved_model.pb",
        "variables",
    ]
    assert _leftovers(tmp_path) == []


def test_checkpoint_that_does_not_fit_the_config(tiny_checkpoint_dir, tmp_path):
    config_file = tmp_path / "bert_config.json"
    tiny_bert_config(hidden_size=48, intermediate_size=96).to_json_file(str(config_file))
    with pytest.raises(CheckpointMismatchError, match=r"shape mismatch:[\s\S]*word_embeddings"):
        export_tfhub(
            "model",
            str(tmp_path / "encoder"),
            str(tiny_checkpoint_dir / "vocab.txt"),
            bert_config_file=str(config_file),
            model_checkpoint_path=str(tiny_checkpoint_dir / "bert_model.ckpt"),
        )
    assert not (tmp_path / "encoder").exists()
    assert _leftovers(tmp_path) == []


def test_vocab_that_does_not_fit_the_config(tiny_checkpoint_dir, tmp_path):
    vocab = tmp_path / "vocab.txt"
    lines = (tiny_checkpoint_dir / "vocab.txt").read_text(encoding="utf-8").splitlines()
    # Longer than the embedding table (a shorter vocab is a warning: a padded table).
    extra = [f"[extra{index}]" for index in range(10)]
    vocab.write_text("\n".join(lines + extra) + "\n", encoding="utf-8")
    with pytest.raises(BertConfigError, match=r"has 110 lines but .* says vocab_size = 100"):
        export_tfhub(
            "model",
            str(tmp_path / "encoder"),
            str(vocab),
            model_checkpoint_path=str(tiny_checkpoint_dir / "bert_model.ckpt"),
        )
    assert not (tmp_path / "encoder").exists()


def test_mlm_export_needs_the_masked_lm_head(tmp_path):
    write_tiny_vocab(tmp_path / "vocab.txt")
    tiny_bert_config().to_json_file(str(tmp_path / "bert_config.json"))
    encoder = BertEncoder.from_bert_config(tiny_bert_config())
    encoder.build()
    save_bert_weights(encoder, str(tmp_path / "bert_model.ckpt"), "tf1")
    with pytest.raises(CheckpointMismatchError, match="needs the masked-LM head"):
        export_tfhub(
            "model_with_mlm",
            str(tmp_path / "encoder"),
            str(tmp_path / "vocab.txt"),
            model_checkpoint_path=str(tmp_path / "bert_model.ckpt"),
        )
    assert not (tmp_path / "encoder").exists()


def test_a_failing_save_leaves_nothing_under_any_name(tiny_checkpoint_dir, tmp_path, monkeypatch):
    from official_bert.export import saved_model_writing

    real_save = tf.saved_model.save

    def save_then_fail(module, path, signatures=None, options=None):
        real_save(module, path, signatures=signatures, options=options)
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(saved_model_writing.tf.saved_model, "save", save_then_fail)
    with pytest.raises(OSError, match="simulated"):
        export_tfhub(
            "preprocessing", str(tmp_path / "preprocessor"), str(tiny_checkpoint_dir / "vocab.txt")
        )
    assert os.listdir(tmp_path) == []


def test_do_lower_case_is_guessed_from_names_then_from_the_vocab(tmp_path):
    lower = tmp_path / "vocab.txt"
    lower.write_text("[PAD]\n[UNK]\n[CLS]\nhello\n##s\n", encoding="utf-8")
    cased = tmp_path / "cased_vocab.txt"
    cased.write_text("[PAD]\n[UNK]\n[CLS]\nHello\n##s\n", encoding="utf-8")
    mixed = tmp_path / "words.txt"
    mixed.write_text("[PAD]\n[UNK]\n[CLS]\nHello\n##s\n", encoding="utf-8")
    assert guess_do_lower_case(str(lower)) is True
    assert guess_do_lower_case(str(cased)) is False
    assert guess_do_lower_case(str(mixed)) is False
    assert guess_do_lower_case(str(mixed), "/models/uncased_L-12_H-768_A-12/bert_model.ckpt")
    # Google's Chinese vocab (an uncased model's) holds <S> and <T>, which are not cased words.
    chinese = tmp_path / "chinese_vocab.txt"
    chinese.write_text("[PAD]\n[UNK]\n<S>\n<T>\n北\n京\nhello\n", encoding="utf-8")
    assert guess_do_lower_case(str(chinese)) is True


def test_minilm_preprocessor_and_encoder_reproduce_the_reference(minilm_dir, tmp_path):
    # Reference: tests/fixtures/minilm_l6_hf (HF transformers BertModel, its tokenizer).
    reference = np.load(MINILM_FIXTURE / "outputs.npz")
    sentences = json.loads((MINILM_FIXTURE / "sentences.json").read_text(encoding="utf-8"))
    vocab_file = str(minilm_dir / "vocab.txt")
    preprocessor = load_preprocessor(
        export_tfhub(
            "preprocessing", str(tmp_path / "preprocess"), vocab_file, default_seq_length=16
        )
    )
    encoder = tf.saved_model.load(
        export_tfhub(
            "model", str(tmp_path / "encoder"), vocab_file, model_checkpoint_path=str(minilm_dir)
        )
    )
    assert bool(encoder.do_lower_case.numpy()) is True  # guessed from the vocabulary
    inputs = preprocessor(tf.constant(sentences))
    np.testing.assert_array_equal(inputs["input_word_ids"], reference["input_ids"])
    np.testing.assert_array_equal(inputs["input_mask"], reference["input_mask"])
    np.testing.assert_array_equal(inputs["input_type_ids"], reference["token_type_ids"])
    outputs = encoder(inputs, training=False)
    mask = reference["input_mask"].astype(bool)
    sequence_difference = np.abs(
        outputs["sequence_output"].numpy()[mask] - reference["sequence_output"][mask]
    ).max()
    pooled_difference = np.abs(outputs["pooled_output"].numpy() - reference["pooler_output"]).max()
    print(
        f"MiniLM max abs difference: sequence {sequence_difference:.2e}, "
        f"pooled {pooled_difference:.2e}"
    )
    assert sequence_difference < 1e-4
    assert pooled_difference < 1e-4
    assert len(outputs["encoder_outputs"]) == 6


def test_tokenize_with_offsets_only_for_the_preprocessor(tiny_checkpoint_dir, tmp_path):
    with pytest.raises(ValueError, match="tokenize_with_offsets applies to export_type=prepro"):
        export_tfhub(
            "model",
            str(tmp_path / "encoder"),
            str(tiny_checkpoint_dir / "vocab.txt"),
            model_checkpoint_path=str(tiny_checkpoint_dir / "bert_model.ckpt"),
            tokenize_with_offsets=True,
        )
    assert not (tmp_path / "encoder").exists()
    path = export_tfhub(
        "preprocessing",
        str(tmp_path / "preprocessor"),
        str(tiny_checkpoint_dir / "vocab.txt"),
        tokenize_with_offsets=True,
    )
    ids, starts, limits = load_preprocessor(path).tokenize_with_offsets(tf.constant(["ab  c"]))
    assert ids.shape.rank == starts.shape.rank == limits.shape.rank == 3


def test_mlm_export_warns_of_a_pooler_the_checkpoint_lacks(tmp_path, caplog):
    """A BertForMaskedLM file holds no pooler; the exported module's pooled_output then comes
    from a random pooler, which a warning says (as for --export_type=model)."""
    import logging

    from official_bert.models import BertPretrainer

    write_tiny_vocab(tmp_path / "vocab.txt")
    tiny_bert_config().to_json_file(str(tmp_path / "bert_config.json"))
    pretrainer = BertPretrainer(
        BertEncoder.from_bert_config(tiny_bert_config()), use_next_sentence_label=False
    )
    pretrainer.build()
    written = save_bert_weights(pretrainer, str(tmp_path / "model.safetensors"), "safetensors")
    with caplog.at_level(logging.WARNING):
        export_tfhub(
            "model_with_mlm",
            str(tmp_path / "encoder"),
            str(tmp_path / "vocab.txt"),
            model_checkpoint_path=written,
        )
    assert any("holds no pooler" in r.getMessage() for r in caplog.records)


def test_preserve_unused_tokens_reaches_the_preprocessor(tiny_checkpoint_dir, tmp_path):
    vocab_file = str(tiny_checkpoint_dir / "vocab.txt")
    with pytest.raises(ValueError, match="preserve_unused_tokens applies to the exports that tok"):
        export_tfhub(
            "model",
            str(tmp_path / "encoder"),
            vocab_file,
            model_checkpoint_path=str(tiny_checkpoint_dir / "bert_model.ckpt"),
            preserve_unused_tokens=True,
        )
    assert not (tmp_path / "encoder").exists()
    # Without the flag "[unused0]" is split as any text (the other tests' exports).
    texts = ["hello [unused0] world", "[unused1]x [unused2]"]
    path = export_tfhub(
        "preprocessing",
        str(tmp_path / "preprocessor"),
        vocab_file,
        do_lower_case=True,
        preserve_unused_tokens=True,
    )
    reference = FullTokenizer(vocab_file, do_lower_case=True, preserve_unused_tokens=True)
    expected = [reference.convert_tokens_to_ids(reference.tokenize(t)) for t in texts]
    pieces = load_preprocessor(path).tokenize(tf.constant(texts)).merge_dims(1, 2).to_list()
    assert pieces == expected
    assert reference.vocab["[unused0]"] in pieces[0]
    plain = FullTokenizer(vocab_file, do_lower_case=True)
    assert plain.convert_tokens_to_ids(plain.tokenize(texts[0])) != expected[0]
