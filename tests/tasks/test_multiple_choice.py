"""run_classifier with a multiple-choice task (--task_name=swag or c3): the processors read
SWAG's CSV and C3's JSON with errors that name file and question, every candidate becomes its
own packed row, a tiny model learns the task, test_results.tsv and the raw-text serving model
give each question's candidate probabilities (0 for missing candidates), and settings that do
not apply are refused."""

import json

import numpy as np
import pytest

from official_bert.checkpoints.loading import read_bert_config
from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.data.classification.dataset import classifier_dataset
from official_bert.data.classification.examples import ClassifierDataError, get_processor
from official_bert.data.classification.features import write_classifier_records
from official_bert.data.multiple_choice.features import encode_multiple_choice_examples
from official_bert.tasks.classification import ClassifierOptions
from official_bert.tasks.multiple_choice import MultipleChoiceTask
from official_bert.tasks.registry import create_classifier_task, run_classifier
from tests.export.fresh_process import serve_in_fresh_process
from tests.tiny_data import write_tiny_checkpoint, write_tiny_multiple_choice_task


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    return write_tiny_checkpoint(tmp_path_factory.mktemp("multiple_choice") / "bert")


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    """{layout: (data folder, {split: questions})} of the tiny task in SWAG's and C3's layouts."""
    directory = tmp_path_factory.mktemp("multiple_choice_data")
    return {
        layout: (directory / layout, write_tiny_multiple_choice_task(directory / layout, layout))
        for layout in ("swag", "c3")
    }


def _options(bert_dir, data_dir, output_dir, task_name, **overrides):
    values = dict(
        bert_config=read_bert_config(str(bert_dir / "bert_config.json")),
        task_name=task_name,
        data_dir=str(data_dir),
        vocab_file=str(bert_dir / "vocab.txt"),
        output_dir=str(output_dir),
        init_checkpoint=str(bert_dir / "bert_model.ckpt"),
        do_train=True,
        do_eval=True,
        do_predict=True,
        max_seq_length=16,
        train_batch_size=16,
        eval_batch_size=32,
        predict_batch_size=32,
        learning_rate=3e-3,
        num_train_epochs=4.0,
        steps_per_loop=16,
        save_checkpoints_steps=64,
        log_steps=16,
        seed=1,
    )
    values.update(overrides)
    return ClassifierOptions(**values)


@pytest.mark.parametrize("layout", ["swag", "c3"])
def test_processors_read_every_question_with_its_answer(tasks, layout):
    data_dir, written = tasks[layout]
    processor = get_processor(layout, str(data_dir))
    assert processor.get_labels() == ["0", "1", "2", "3"]
    for split, questions in written.items():
        examples = processor.get_examples(split)
        assert [(e.context, e.question, list(e.choices)) for e in examples] == [
            (context, question, choices) for context, question, choices, _ in questions
        ]
        expected = [None if split == "test" else str(answer) for *_, answer in questions]
        assert [e.label for e in examples] == expected
    if layout == "c3":  # both halves of a split are read, d- then m-
        assert len(processor.get_examples("train")) == len(written["train"])
        assert {len(e.choices) for e in processor.get_examples("train")} == {2, 3, 4}


def test_swag_errors_name_the_file_and_the_question(tmp_path):
    header = ",video-id,fold-ind,startphrase,sent1,sent2,gold-source,"
    (tmp_path / "train.csv").write_text(
        header + "ending0,ending1,ending2,label\n0,v,0,a b,a,b,g,x,y,z,1\n"
    )
    with pytest.raises(ClassifierDataError, match=r"train\.csv, line 1: .*\['ending3'\]"):
        get_processor("swag", str(tmp_path)).get_examples("train")
    rows = header + "ending0,ending1,ending2,ending3,label\n0,v,0,a b,a,b,g,w,x,y,z,4\n"
    (tmp_path / "train.csv").write_text(rows)
    with pytest.raises(ClassifierDataError, match=r"train\.csv, train-2: label '4' is not"):
        get_processor("swag", str(tmp_path)).get_examples("train")
    with pytest.raises(FileNotFoundError, match=r"val\.csv not found"):
        get_processor("swag", str(tmp_path)).get_examples("dev")


def test_c3_errors_name_the_file_and_the_document(tmp_path):
    question = {"question": "q", "choice": ["x", "y"], "answer": "z"}
    (tmp_path / "d-dev.json").write_text(json.dumps([[["c"], [question], "id"]]))
    with pytest.raises(ClassifierDataError, match=r"d-dev\.json, document 0: the answer 'z'"):
        get_processor("c3", str(tmp_path)).get_examples("dev")
    (tmp_path / "d-dev.json").write_text(
        json.dumps([[["c"], [{"question": "q", "choice": ["x"], "answer": "x"}], "id"]])
    )
    with pytest.raises(ClassifierDataError, match=r"d-dev\.json, dev-d-dev-0-0: 1 candidates"):
        get_processor("c3", str(tmp_path)).get_examples("dev")
    (tmp_path / "d-dev.json").write_text("[[")
    with pytest.raises(ClassifierDataError, match=r"d-dev\.json: not valid JSON at line 1"):
        get_processor("c3", str(tmp_path)).get_examples("dev")


def test_each_candidate_is_packed_with_its_context_and_missing_ones_stay_empty(
    bert_dir, tasks, tmp_path
):
    processor = get_processor("c3", str(tasks["c3"][0]))
    examples = processor.get_examples("dev")[:6]
    packer = BertInputPacker(str(bert_dir / "vocab.txt"), 16, True)
    arrays = encode_multiple_choice_examples(examples, packer, processor.get_labels())
    assert arrays["input_ids"].shape == (6, 4 * 16)
    counts = [len(example.choices) for example in examples]
    np.testing.assert_array_equal(arrays["choice_mask"].sum(axis=1), counts)
    ids = arrays["input_ids"].reshape(6, 4, 16)
    for number, example in enumerate(examples):
        expected = packer([example.context] * counts[number], example.choice_texts())[
            "input_word_ids"
        ].numpy()
        np.testing.assert_array_equal(ids[number, : counts[number]], expected)
        assert not ids[number, counts[number] :].any()
    np.testing.assert_array_equal(arrays["label_ids"][:, 0], [int(e.label) for e in examples])
    # The reader gives [batch, choices, seq] inputs, cut to the longest candidate with trimming.
    path = str(tmp_path / "dev.tf_record")
    write_classifier_records(arrays, path)
    batch = next(iter(classifier_dataset(path, 6, 16, is_training=False, trim_padding=True)))
    longest = int(arrays["input_mask"].reshape(-1, 16).sum(axis=1).max())
    assert batch["input_word_ids"].shape == (6, 4, -(-longest // 8) * 8)
    np.testing.assert_array_equal(batch["choice_mask"].numpy(), arrays["choice_mask"])
    np.testing.assert_array_equal(batch["label_ids"].numpy(), arrays["label_ids"][:, 0])


@pytest.fixture(scope="module")
def swag_run(bert_dir, tasks, tmp_path_factory):
    output_dir = tmp_path_factory.mktemp("swag_run")
    data_dir = tasks["swag"][0]
    return output_dir, run_classifier(_options(bert_dir, data_dir, output_dir, "swag"))


def test_a_tiny_model_learns_to_choose(swag_run, tasks):
    output_dir, results = swag_run
    losses = [loss for _, loss in results["history"]]
    assert losses[-1] < losses[0] / 10, results["history"]
    assert results["eval"]["eval_accuracy"] >= 0.95, results["eval"]
    written = dict(
        line.split(" = ") for line in (output_dir / "eval_results.txt").read_text().splitlines()
    )
    assert float(written["eval_accuracy"]) == pytest.approx(results["eval"]["eval_accuracy"])
    rows = [
        [float(v) for v in line.split("\t")]
        for line in (output_dir / "test_results.tsv").read_text().splitlines()
    ]
    questions = tasks["swag"][1]["test"]
    assert len(rows) == len(questions) and all(len(row) == 4 for row in rows)
    np.testing.assert_allclose(np.sum(rows, axis=1), 1.0, atol=1e-6)
    assert np.mean([np.argmax(row) == q[3] for row, q in zip(rows, questions, strict=True)]) >= 0.9


def test_the_serving_model_chooses_from_raw_text_as_predict_did(swag_run, tasks):
    output_dir, _ = swag_run
    questions = tasks["swag"][1]["test"][:4]
    choices = [list(q[2]) for q in questions]
    choices[1][3] = ""  # a question with three candidates in the same batch
    served = serve_in_fresh_process(
        output_dir / "serving_model",
        {
            "context": [q[0] for q in questions],
            "question": [q[1] for q in questions],
            "choices": choices,
        },
    )
    rows = [
        [float(v) for v in line.split("\t")]
        for line in (output_dir / "test_results.tsv").read_text().splitlines()[:4]
    ]
    probabilities = np.array(served["probabilities"])
    np.testing.assert_allclose(probabilities[[0, 2, 3]], np.array(rows)[[0, 2, 3]], atol=1e-5)
    assert probabilities[1, 3] == 0.0 and probabilities[1].sum() == pytest.approx(1.0, abs=1e-6)
    assert served["choice_ids"] == list(np.argmax(probabilities, axis=1))


def test_c3_questions_with_fewer_candidates_get_no_probability_on_empty_slots(
    bert_dir, tasks, tmp_path
):
    data_dir, written = tasks["c3"]
    options = _options(bert_dir, data_dir, tmp_path, "c3", num_train_epochs=2.0, export_dir="")
    results = run_classifier(options)
    assert results["eval"]["eval_accuracy"] >= 0.9, results["eval"]
    rows = np.array(
        [
            [float(v) for v in line.split("\t")]
            for line in (tmp_path / "test_results.tsv").read_text().splitlines()
        ]
    )
    counts = np.array([len(q[2]) for q in written["test"]])
    assert set(counts) == {2, 3, 4}
    slots = np.arange(4)[None, :]
    assert (rows[slots >= counts[:, None]] == 0).all()
    assert (rows[slots < counts[:, None]] > 0).all()


@pytest.mark.parametrize("setting", [dict(feature_mode="frozen_last"), dict(doc_stride=8)], ids=str)
def test_settings_that_do_not_apply_are_refused(bert_dir, tasks, tmp_path, setting):
    options = _options(bert_dir, tasks["swag"][0], tmp_path, "swag", **setting)
    task = create_classifier_task(options)
    assert isinstance(task, MultipleChoiceTask)
    with pytest.raises(ValueError, match=f"`{next(iter(setting))}` does not apply"):
        task.validate()
