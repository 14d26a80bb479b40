"""run_classifier with a tagging task (--task_name=conll): fine-tuned and frozen-feature taggers
learn a tiny NER task, every word of long sentences is tagged, the outputs are written in the
CoNLL layout, frozen encoders stay frozen, and a rerun resumes."""

import json
import re

import numpy as np
import pytest

from official_bert.checkpoints import load_bert_weights
from official_bert.checkpoints.loading import read_bert_config
from official_bert.evaluation.tagging_metrics import entity_spans
from official_bert.models import BertEncoder
from official_bert.tasks.classification import ClassifierOptions
from official_bert.tasks.registry import run_classifier
from tests.conftest import REPO_ROOT
from tests.export.fresh_process import serve_in_fresh_process
from tests.tiny_data import write_tiny_checkpoint, write_tiny_tagging_task


@pytest.fixture(scope="module")
def tagging_task(tmp_path_factory):
    """(checkpoint folder of a random tiny BERT, the task's folder, its sentences by split)."""
    directory = tmp_path_factory.mktemp("tagging")
    bert_dir = write_tiny_checkpoint(directory / "bert")
    sentences = write_tiny_tagging_task(directory / "data")
    return bert_dir, directory / "data", sentences


def _options(tagging_task, output_dir, **overrides):
    bert_dir, data_dir, _ = tagging_task
    values = dict(
        bert_config=read_bert_config(str(bert_dir / "bert_config.json")),
        task_name="conll",
        data_dir=str(data_dir),
        vocab_file=str(bert_dir / "vocab.txt"),
        output_dir=str(output_dir),
        init_checkpoint=str(bert_dir / "bert_model.ckpt"),
        do_train=True,
        do_eval=True,
        max_seq_length=32,  # the long sentences (about 50 words) take several records
        train_batch_size=8,
        eval_batch_size=16,
        predict_batch_size=16,
        learning_rate=3e-3,
        num_train_epochs=6.0,
        steps_per_loop=20,
        save_checkpoints_steps=20,
        log_steps=20,
        seed=1,
    )
    values.update(overrides)
    return ClassifierOptions(**values)


def _encoder_weights(tagging_task, checkpoint) -> dict[str, np.ndarray]:
    encoder = BertEncoder.from_bert_config(
        read_bert_config(str(tagging_task[0] / "bert_config.json"))
    )
    encoder.build()
    load_bert_weights(encoder, str(checkpoint))
    return {weight.path.partition("/")[2]: np.array(weight) for weight in encoder.weights}


@pytest.fixture(scope="module")
def finetuned(tagging_task, tmp_path_factory):
    output_dir = tmp_path_factory.mktemp("finetuned_tagger")
    return output_dir, run_classifier(_options(tagging_task, output_dir, do_predict=True))


def test_finetuned_tagger_learns_the_entities(finetuned):
    output_dir, results = finetuned
    losses = [loss for _, loss in results["history"]]
    assert losses[-1] < losses[0] / 4, results["history"]
    metrics = results["eval"]
    assert metrics["eval_f1"] >= 0.9 and metrics["eval_accuracy"] >= 0.95, metrics
    assert {"eval_ANIMAL_f1", "eval_NEG_f1", "eval_POS_f1", "eval_precision"} <= set(metrics)
    written = dict(
        line.split(" = ") for line in (output_dir / "eval_results.txt").read_text().splitlines()
    )
    assert float(written["eval_f1"]) == pytest.approx(metrics["eval_f1"])
    assert int(written["global_step"]) == results["history"][-1][0]


def test_every_word_is_tagged_in_the_conll_layout(tagging_task, finetuned):
    output_dir, results = finetuned
    sentences = tagging_task[2]
    assert max(len(words) for words, _ in sentences["dev"]) > 32  # split into several records

    def read_blocks(path):
        blocks = (output_dir / path).read_text().strip("\n").split("\n\n")
        return [[line.split(" ") for line in block.splitlines()] for block in blocks]

    dev = read_blocks("eval_predictions.txt")
    assert [[row[0] for row in block] for block in dev] == [w for w, _ in sentences["dev"]]
    assert [[row[1] for row in block] for block in dev] == [t for _, t in sentences["dev"]]
    correct = sum(row[1] == row[2] for block in dev for row in block)
    total = sum(len(block) for block in dev)
    assert correct / total == pytest.approx(results["eval"]["eval_accuracy"])

    test = read_blocks("test_predictions.txt")
    assert [[row[0] for row in block] for block in test] == [w for w, _ in sentences["test"]]
    assert [[row[1] for row in block] for block in test] == results["predictions"]
    # The test file has no tags; the predictions are nonetheless mostly right.
    predicted = [tag for tags in results["predictions"] for tag in tags]
    truth = [tag for _, tags in sentences["test"] for tag in tags]
    assert np.mean(np.array(predicted) == np.array(truth)) >= 0.95


def test_serving_model_tags_raw_text_as_the_predict_path(tagging_task, finetuned):
    """The exported tagger, called from a process without this package, gives each test
    sentence (joined with irregular spaces) the tags of test_predictions.txt and the entities
    conlleval's rules find in them."""
    output_dir, results = finetuned
    sentences = [words for words, _ in tagging_task[2]["test"]]
    assert max(len(words) for words in sentences) > 32  # several rows per long sentence
    texts = [("  " if index % 3 == 0 else " ").join(words) for index, words in enumerate(sentences)]
    texts = [f" {text}\t" if index % 2 else text for index, text in enumerate(texts)]
    served = serve_in_fresh_process(output_dir / "serving_model", {"text": [*texts, " ", ""]})
    assert served["tags"][-2:] == [[""] * len(served["tags"][0])] * 2  # no words, no tags

    def unpadded(rows):
        return [[value for value in row if value != ""] for row in rows]

    assert unpadded(served["words"]) == [*sentences, [], []]
    assert unpadded(served["tags"]) == [*results["predictions"], [], []]
    found = 0
    for index, (text, tags) in enumerate(zip(texts, results["predictions"], strict=True)):
        words = list(re.finditer(r"\S+", text))
        expected = sorted(
            (words[first].start(), words[last].end(), entity_type)
            for entity_type, first, last in entity_spans(tags)
        )
        starts = [start for start in served["entity_starts"][index] if start >= 0]
        got = list(
            zip(starts, served["entity_ends"][index], served["entity_types"][index], strict=False)
        )
        assert got == expected, index
        for (start, end, _), entity_text in zip(got, served["entity_texts"][index], strict=False):
            assert entity_text == text[start:end]
        found += len(got)
    assert found >= len(texts)  # the tiny task's sentences each hold an entity or more


def test_frozen_scalar_mix_tagger_trains_the_head_only_and_resumes(
    tagging_task, finetuned, tmp_path
):
    init_checkpoint = finetuned[0]  # our own training checkpoint of a BertTokenTagger
    options = _options(
        tagging_task,
        tmp_path / "out",
        init_checkpoint=str(init_checkpoint),
        feature_mode="frozen_scalar_mix",
        num_train_epochs=3.0,
        export_dir="",  # its serving model is not read here
    )
    results = run_classifier(options)
    (_, first_loss), *_, (_, last_loss) = results["history"]
    assert last_loss < first_loss, results["history"]
    # Over the features of the fine-tuned encoder, a new head alone tags well.
    assert results["eval"]["eval_f1"] >= 0.8, results["eval"]
    before = _encoder_weights(tagging_task, init_checkpoint)
    after = _encoder_weights(tagging_task, tmp_path / "out")
    assert list(before) == list(after)
    for name, value in before.items():
        np.testing.assert_array_equal(value, after[name], err_msg=name)
    mix = json.loads((tmp_path / "out" / "scalar_mix_weights.json").read_text())
    assert mix == results["scalar_mix"] and len(mix["layer_weights"]) == 2

    again = run_classifier(options)
    assert again["history"] == []
    assert again["eval"] == pytest.approx(results["eval"])


@pytest.mark.slow  # two MiniLM runs, about 80 s; all modes: bench/tagging_feature_modes.py
@pytest.mark.parametrize("pretrained", [True, False])
def test_frozen_minilm_features_tag_unseen_names(minilm_dir, tmp_path, pretrained):
    """On samples/entities, whose dev names never occur in train, a linear tagger over the scalar
    mix of frozen all-MiniLM-L6-v2 layers finds most entities; over the same architecture with
    random weights it finds few."""
    results = run_classifier(
        ClassifierOptions(
            bert_config=read_bert_config(str(minilm_dir / "config.json")),
            vocab_file=str(minilm_dir / "vocab.txt"),
            init_checkpoint=str(minilm_dir) if pretrained else None,
            task_name="conll",
            data_dir=str(REPO_ROOT / "samples" / "entities"),
            output_dir=str(tmp_path / "out"),
            do_train=True,
            do_eval=True,
            max_seq_length=48,
            train_batch_size=16,
            eval_batch_size=32,
            learning_rate=1e-3,
            num_train_epochs=4.0,
            seed=1,
            feature_mode="frozen_scalar_mix",
        )
    )
    f1 = results["eval"]["eval_f1"]
    assert f1 >= 0.7 if pretrained else f1 <= 0.4, results["eval"]
