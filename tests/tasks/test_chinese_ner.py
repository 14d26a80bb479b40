"""run_classifier with --task_name=chinese_ner: a tiny BERT learns the shipped Chinese NER sample
rewritten as a corpus might ship it (tab-separated BIOES, CRLF line ends, characters the
vocabulary lacks), scores it with entity F1 and writes every character's tag back in order."""

import pytest

from official_bert.checkpoints.loading import read_bert_config
from official_bert.data.tagging.character_ner import read_character_ner_sentences
from official_bert.tasks.classification import ClassifierOptions
from official_bert.tasks.registry import run_classifier
from tests.conftest import REPO_ROOT
from tests.tiny_data import write_tiny_checkpoint

SAMPLES = REPO_ROOT / "samples" / "zh"
# Not in samples/zh/vocab.txt: each becomes one [UNK] with its own tag.
UNKNOWN = "龘"


def _bioes(tags):
    """BIO -> BIOES: a lone B- is S-, the last I- of an entity is E-."""
    out = []
    for index, tag in enumerate(tags):
        following = tags[index + 1] if index + 1 < len(tags) else "O"
        continues = following.startswith("I-")
        if tag.startswith("B-") and not continues:
            tag = "S-" + tag[2:]
        elif tag.startswith("I-") and not continues:
            tag = "E-" + tag[2:]
        out.append(tag)
    return out


def _write_split(path, sentences):
    lines = []
    for words, tags in sentences:
        lines += [f"{word}\t{tag}\r\n" for word, tag in zip(words, tags, strict=True)]
        lines.append("\r\n")
    path.write_bytes("".join(lines).encode("utf-8"))


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    directory = tmp_path_factory.mktemp("chinese_ner")
    vocab = (SAMPLES / "vocab.txt").read_text(encoding="utf-8")
    assert UNKNOWN not in vocab
    bert_dir = write_tiny_checkpoint(directory / "bert", vocab_size=len(vocab.split("\n")) - 1)
    (bert_dir / "vocab.txt").write_text(vocab, encoding="utf-8")
    train = read_character_ner_sentences(str(SAMPLES / "ner" / "train.txt"))
    sentences = []
    for index, sentence in enumerate(train[:120]):
        words, tags = list(sentence.words), _bioes(list(sentence.tags))
        if index % 3 == 0:  # an unknown character before the sentence's last one
            words.insert(len(words) - 1, UNKNOWN)
            tags.insert(len(tags) - 1, "O")
        sentences.append((words, tags))
    data_dir = directory / "data"
    data_dir.mkdir()
    _write_split(data_dir / "train.txt", sentences)
    _write_split(data_dir / "dev.txt", sentences[:40])  # memorised: the pipeline, not generality
    options = ClassifierOptions(
        bert_config=read_bert_config(str(bert_dir / "bert_config.json")),
        task_name="chinese_ner",
        data_dir=str(data_dir),
        vocab_file=str(bert_dir / "vocab.txt"),
        output_dir=str(directory / "output"),
        init_checkpoint=str(bert_dir / "bert_model.ckpt"),
        do_train=True,
        do_eval=True,
        max_seq_length=20,  # the longer sentences take two records
        train_batch_size=8,
        eval_batch_size=16,
        learning_rate=3e-3,
        num_train_epochs=8.0,
        steps_per_loop=30,
        save_checkpoints_steps=1000,
        log_steps=30,
        seed=1,
    )
    return directory / "output", sentences[:40], run_classifier(options)


def test_the_tagger_learns_bioes_entities(trained):
    _, _, results = trained
    losses = [loss for _, loss in results["history"]]
    assert losses[-1] < losses[0] / 4, results["history"]
    metrics = results["eval"]
    assert metrics["eval_f1"] >= 0.9 and metrics["eval_accuracy"] >= 0.95, metrics
    assert {"eval_PER_f1", "eval_LOC_f1", "eval_ORG_f1"} <= set(metrics)


def test_every_character_is_written_back_in_order(trained):
    output_dir, dev, results = trained
    assert max(len(words) for words, _ in dev) > 18  # split into two records
    blocks = (output_dir / "eval_predictions.txt").read_text(encoding="utf-8").strip("\n")
    rows = [[line.split(" ") for line in block.split("\n")] for block in blocks.split("\n\n")]
    assert [[row[0] for row in block] for block in rows] == [words for words, _ in dev]
    assert [[row[1] for row in block] for block in rows] == [tags for _, tags in dev]
    correct = sum(row[1] == row[2] for block in rows for row in block)
    assert correct / sum(map(len, rows)) == pytest.approx(results["eval"]["eval_accuracy"])


def test_the_serving_model_tags_raw_chinese_text_character_by_character(trained):
    # Raw text, as a user has it: no spaces between the characters. The served tags are the
    # predict path's, character by character, and entities are slices of the raw text.
    import tensorflow as tf

    output_dir, dev, _ = trained
    blocks = (output_dir / "eval_predictions.txt").read_text(encoding="utf-8").strip("\n")
    predicted = [
        [line.split(" ")[2] for line in block.split("\n")] for block in blocks.split("\n\n")
    ]
    texts = ["".join(words) for words, _ in dev]
    served = tf.saved_model.load(str(output_dir / "serving_model")).signatures["serving_default"](
        text=tf.constant(texts)
    )
    words, tags = served["words"].numpy(), served["tags"].numpy()
    for index, text in enumerate(texts):
        length = len(dev[index][0])
        assert [w.decode() for w in words[index][:length]] == list(text)
        assert [t.decode() for t in tags[index][:length]] == predicted[index], text
    found = 0
    for index, text in enumerate(texts):
        for entity, start, end in zip(
            served["entity_texts"].numpy()[index],
            served["entity_starts"].numpy()[index],
            served["entity_ends"].numpy()[index],
            strict=True,
        ):
            if start >= 0:
                assert text[start:end] == entity.decode() and " " not in entity.decode()
                found += 1
    assert found >= len(texts)  # the memorised dev set has an entity or more per sentence
