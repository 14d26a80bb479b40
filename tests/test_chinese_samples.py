"""The Chinese samples of samples/zh: each is what its generator writes, the vocabulary covers
every character of them, and the classification set is in ChnSentiCorp's layout with dev/test
subjects that train never shows."""

import importlib.util
import os
import shutil
import subprocess
import sys

from official_bert.data.classification.examples import get_processor
from official_bert.tokenization import FullTokenizer
from tests.conftest import REPO_ROOT

SAMPLES = REPO_ROOT / "samples" / "zh"
GENERATED = {
    "make_reviews.py": [
        "classification/train.tsv",
        "classification/dev.tsv",
        "classification/test.tsv",
    ],
    "make_entities.py": ["ner/train.txt", "ner/dev.txt", "ner/test.txt"],
    "make_word_refs.py": ["pretraining_corpus_ref.txt"],
    "make_vocab.py": ["vocab.txt", "bert_config.json"],  # last: it reads the others
}


def test_every_sample_is_what_its_generator_writes(tmp_path):
    copy = tmp_path / "zh"
    shutil.copytree(SAMPLES, copy)
    for generated in GENERATED.values():
        for name in generated:
            (copy / name).unlink()
    for script in GENERATED:
        result = subprocess.run(
            [sys.executable, str(copy / script)],
            capture_output=True,
            text=True,
            cwd=REPO_ROOT,
            env=dict(os.environ, PYTHONPATH=str(REPO_ROOT), TF_CPP_MIN_LOG_LEVEL="3"),
        )
        assert result.returncode == 0, result.stderr[-2000:]
    for generated in GENERATED.values():
        for name in generated:
            assert (copy / name).read_bytes() == (SAMPLES / name).read_bytes(), name


def test_the_vocabulary_covers_every_sample_character():
    tokenizer = FullTokenizer(str(SAMPLES / "vocab.txt"), do_lower_case=True)
    texts = [(SAMPLES / "pretraining_corpus.txt").read_text(encoding="utf-8")]
    for path in sorted((SAMPLES / "classification").glob("*.tsv")):
        texts += [line.split("\t")[1] for line in path.read_text(encoding="utf-8").splitlines()[1:]]
    characters = sorted({c for text in texts for c in text if not c.isspace()})
    assert len(characters) > 500
    assert [c for c in characters if tokenizer.tokenize(c) != [c]] == []


def test_the_classification_sample_in_chnsenticorp_layout():
    processor = get_processor(
        "generic", str(SAMPLES / "classification"), text_a_column="text_a", label_column="label"
    )
    assert processor.get_labels() == ["0", "1"]
    examples = {split: processor.get_examples(split) for split in ("train", "dev", "test")}
    assert {split: len(rows) for split, rows in examples.items()} == {
        "train": 240,
        "dev": 60,
        "test": 60,
    }
    for rows in examples.values():
        assert sum(example.label == "1" for example in rows) == len(rows) // 2
    # Reviews name their subject first; dev and test subjects never occur in train.
    spec = importlib.util.spec_from_file_location("make_reviews", SAMPLES / "make_reviews.py")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    train_subjects, held_out = tuple(generator.TRAIN_SUBJECTS), tuple(generator.HELD_OUT_SUBJECTS)
    assert not set(train_subjects) & set(held_out)
    for example in examples["train"]:
        assert example.text_a.startswith(train_subjects), example.text_a
    for example in examples["dev"] + examples["test"]:
        assert example.text_a.startswith(held_out), example.text_a
