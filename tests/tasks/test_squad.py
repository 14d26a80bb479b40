"""run_squad end to end with a tiny model on a handful of real SQuAD questions and on the
Chinese reading sample (CMRC 2018 metrics), --eval_only, and the original script's checks."""

import dataclasses
import json

import pytest

from official_bert.config import BertConfig
from official_bert.evaluation.cmrc_scoring import cmrc2018_scores
from official_bert.tasks.squad import SquadOptions, run_squad
from official_bert.tokenization import _is_chinese_char
from tests.conftest import REPO_ROOT, SHARED

SQUAD = SHARED / "data" / "squad"
ZH = REPO_ROOT / "samples" / "zh"


def _tiny_config():
    return BertConfig(
        vocab_size=30522,  # the MiniLM vocab
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )


def _options(vocab_dir, output_dir, **overrides):
    """Tiny settings; vocab_dir holds vocab.txt (MiniLM's, or samples/zh's)."""
    values = dict(
        bert_config=_tiny_config(),
        vocab_file=str(vocab_dir / "vocab.txt"),
        output_dir=str(output_dir),
        max_seq_length=64,
        doc_stride=32,
        max_query_length=16,
        train_batch_size=8,
        predict_batch_size=16,
        learning_rate=3e-3,
        num_train_epochs=15.0,
        warmup_proportion=0.1,
        steps_per_loop=4,
        log_steps=4,
        n_best_size=5,
        seed=1,
    )
    values.update(overrides)
    return SquadOptions(**values)


@pytest.fixture(scope="module")
def v2_file(tmp_path_factory):
    source = SQUAD / "dev-v2.0-small.json"
    if not source.exists():
        pytest.skip(f"not present: {source}")
    return source


def test_a_tiny_model_trains_predicts_and_writes_every_output(minilm_dir, v2_file, tmp_path):
    # dev-v2.0-small.json: 14 questions (answerable and not) over 2 long paragraphs; train and
    # predict on it; at max_seq_length 128 most questions take 2 to 4 windows (30 in all).
    # 14 examples * 40 epochs / 8 = 70 steps.
    output_dir = tmp_path / "out"
    options = _options(
        minilm_dir,
        output_dir,
        train_file=str(v2_file),
        predict_file=str(v2_file),
        do_train=True,
        do_predict=True,
        version_2_with_negative=True,
        tune_null_threshold=True,
        max_seq_length=128,
        doc_stride=64,
        num_train_epochs=40.0,
        steps_per_loop=10,
        log_steps=10,
    )
    results = run_squad(options)
    history = results["history"]
    assert history[-1][0] == 70
    assert history[-1][1] < 0.2 * history[0][1], history
    for name in (
        "train.tf_record",
        ".train.tf_record.summary.json",
        "eval.tf_record",
        "predictions.json",
        "nbest_predictions.json",
        "null_odds.json",
        "eval_results.json",
        "ckpt-70.index",
    ):
        assert (output_dir / name).exists(), name
    data = json.loads(v2_file.read_text())["data"]
    qids = [qa["id"] for article in data for p in article["paragraphs"] for qa in p["qas"]]
    predictions = json.loads((output_dir / "predictions.json").read_text())
    null_odds = json.loads((output_dir / "null_odds.json").read_text())
    nbest = json.loads((output_dir / "nbest_predictions.json").read_text())
    assert sorted(predictions) == sorted(qids) == sorted(null_odds) == sorted(nbest)
    for entries in nbest.values():
        assert 1 <= len(entries) <= 6  # n_best_size plus the null answer
        assert sum(entry["probability"] for entry in entries) == pytest.approx(1.0)
    scores = json.loads((output_dir / "eval_results.json").read_text())
    for key in ("exact", "f1", "HasAns_f1", "NoAns_f1", "best_f1", "best_f1_thresh"):
        assert key in scores, key
    assert scores["null_score_diff_threshold"] == 0.0
    tuned = scores["tuned"]
    # The predictions were re-written with the tuned threshold, which is at least as good.
    assert tuned["f1"] >= scores["f1"]
    assert all(
        (text == "") == (null_odds[qid] > tuned["null_score_diff_threshold"])
        for qid, text in predictions.items()
    )
    # A model trained on these very questions finds most answers (measured: F1 87.5, HasAns F1
    # 78.1); an untrained one finds none, and "no answer" everywhere gives F1 42.9.
    assert tuned["f1"] > 65.0 and tuned["HasAns_f1"] > 40.0, scores

    # --eval_only scores the written files again: the same numbers.
    again = run_squad(
        SquadOptions(
            bert_config=None,
            vocab_file=None,
            output_dir=str(output_dir),
            predict_file=str(v2_file),
            version_2_with_negative=True,
            null_score_diff_threshold=tuned["null_score_diff_threshold"],
            eval_only=True,
        )
    )["eval"]
    assert again["f1"] == pytest.approx(tuned["f1"])
    assert again["best_f1"] == pytest.approx(scores["best_f1"])

    # A rerun on the same output_dir reuses the records and resumes at the last step (its
    # predictions, read above, left out).
    summary_before = (output_dir / ".train.tf_record.summary.json").read_text()
    rerun = run_squad(dataclasses.replace(options, do_predict=False))
    assert rerun["history"] == []
    assert (output_dir / ".train.tf_record.summary.json").read_text() == summary_before


def test_v1_predicts_without_training_and_scores(minilm_dir, tmp_path):
    source = SQUAD / "dev-v1.1.json"
    if not source.exists():
        pytest.skip(f"not present: {source}")
    data = json.loads(source.read_text())
    paragraph = data["data"][0]["paragraphs"][0]
    small = {"data": [{"title": "t", "paragraphs": [dict(paragraph, qas=paragraph["qas"][:5])]}]}
    predict_file = tmp_path / "small.json"
    predict_file.write_text(json.dumps(small))
    results = run_squad(
        _options(minilm_dir, tmp_path / "out", predict_file=str(predict_file), do_predict=True)
    )
    scores = json.loads((tmp_path / "out" / "eval_results.json").read_text())
    assert set(scores) == {"exact_match", "f1", "total", "missing"}
    assert scores["total"] == 5 and scores["missing"] == 0
    assert sorted(results["predictions"].predictions) == sorted(
        qa["id"] for qa in small["data"][0]["paragraphs"][0]["qas"]
    )
    assert not (tmp_path / "out" / "null_odds.json").exists()


def test_the_chinese_sample_trains_predicts_and_reports_cmrc_metrics(tmp_path):
    # samples/zh/reading/train.json: 40 questions, one window each at max_seq_length 96;
    # 40 examples * 40 epochs / 8 = 200 steps of the tiny shipped config, then predicting the
    # same questions (the model learns them).
    train_file = ZH / "reading" / "train.json"
    output_dir = tmp_path / "out"
    options = _options(
        ZH,
        output_dir,
        bert_config=BertConfig.from_json_file(str(ZH / "bert_config.json")),
        train_file=str(train_file),
        predict_file=str(train_file),
        do_train=True,
        do_predict=True,
        max_seq_length=96,
        doc_stride=48,
        max_query_length=24,
        learning_rate=1e-3,
        num_train_epochs=40.0,
        steps_per_loop=20,
        log_steps=20,
    )
    results = run_squad(options)
    history = results["history"]
    assert history[-1][0] == 200
    assert history[-1][1] < 0.3 * history[0][1], history

    data = json.loads(train_file.read_text(encoding="utf-8"))["data"]
    contexts = {
        qa["id"]: paragraph["context"]
        for paragraph in data[0]["paragraphs"]
        for qa in paragraph["qas"]
    }
    predictions = json.loads((output_dir / "predictions.json").read_text())
    nbest = json.loads((output_dir / "nbest_predictions.json").read_text())
    assert sorted(predictions) == sorted(contexts)
    texts = [(qid, entry["text"]) for qid, entries in nbest.items() for entry in entries]
    for qid, text in texts:
        # Cut from the context as written: no space between two ideographs.
        assert text in contexts[qid], (qid, text)
        for index in range(1, len(text) - 1):
            if text[index] == " ":
                assert not (
                    _is_chinese_char(ord(text[index - 1]))
                    and _is_chinese_char(ord(text[index + 1]))
                ), text

    scores = json.loads((output_dir / "eval_results.json").read_text())
    cmrc = scores["cmrc2018"]
    assert cmrc == pytest.approx(cmrc2018_scores(data, predictions))
    assert (cmrc["total"], cmrc["skip"]) == (40, 0)
    # Measured: EM 77.5, F1 82.3 (SQuAD's F1 77.5: a Chinese answer is one whitespace word, so
    # a partly right answer gets nothing there, and partial credit here).
    assert cmrc["exact_match"] > 50.0 and cmrc["f1"] > 60.0, scores
    assert cmrc["f1"] >= scores["f1"]

    again = run_squad(
        SquadOptions(
            bert_config=None,
            vocab_file=None,
            output_dir=str(output_dir),
            predict_file=str(train_file),
            eval_only=True,
        )
    )["eval"]
    assert again["cmrc2018"] == pytest.approx(cmrc)


def test_bad_settings_fail_before_any_work(minilm_dir, tmp_path):
    with pytest.raises(ValueError, match="`predict_file` must be specified"):
        run_squad(_options(minilm_dir, tmp_path, do_predict=True))
    with pytest.raises(ValueError, match="`train_file` must be specified"):
        run_squad(_options(minilm_dir, tmp_path, do_train=True))
    with pytest.raises(ValueError, match="At least one of `do_train` or `do_predict`"):
        run_squad(_options(minilm_dir, tmp_path))
    with pytest.raises(FileNotFoundError, match="--predict_file=.*nowhere.json: no such file"):
        run_squad(
            _options(
                minilm_dir, tmp_path, do_predict=True, predict_file=str(tmp_path / "nowhere.json")
            )
        )
    existing = tmp_path / "squad.json"
    existing.write_text('{"data": []}')
    with pytest.raises(ValueError, match=r"max_seq_length \(67\) must be greater than"):
        run_squad(
            _options(
                minilm_dir,
                tmp_path,
                do_predict=True,
                predict_file=str(existing),
                max_seq_length=67,
                max_query_length=64,
            )
        )
    with pytest.raises(ValueError, match="Cannot use sequence length 256"):
        run_squad(
            _options(
                minilm_dir,
                tmp_path,
                do_predict=True,
                predict_file=str(existing),
                max_seq_length=256,
            )
        )
    # A SQuAD 2.0 train_file without --version_2_with_negative: refused before training, as
    # the original refuses it (at its first unanswerable question).
    qas = [
        {"id": "a", "question": "who?", "answers": [{"text": "Ann", "answer_start": 0}]},
        {"id": "b", "question": "when?", "answers": [], "is_impossible": True},
    ]
    paragraph = {"context": "Ann came home.", "qas": qas}
    version_2 = tmp_path / "v2.json"
    version_2.write_text(json.dumps({"version": "v2.0", "data": [{"paragraphs": [paragraph]}]}))
    with pytest.raises(ValueError, match=r"--train_file=.*v2.json: 1 questions marked is_imp"):
        run_squad(_options(minilm_dir, tmp_path, do_train=True, train_file=str(version_2)))
    # The same without the is_impossible field (Hugging Face datasets' squad_v2 as JSON).
    del qas[1]["is_impossible"]
    version_2.write_text(json.dumps({"version": "v2.0", "data": [{"paragraphs": [paragraph]}]}))
    with pytest.raises(ValueError, match=r"1 questions without answers beside answered ones"):
        run_squad(_options(minilm_dir, tmp_path, do_train=True, train_file=str(version_2)))
    assert not list(tmp_path.glob("*.tf_record"))


@pytest.mark.parametrize("marked", [True, False])
def test_a_squad_2_predict_file_without_the_flag_is_answered_and_scored_as_2_0(
    minilm_dir, tmp_path, caplog, marked
):
    # The original predicts every question of a SQuAD 2.0 predict_file read without
    # --version_2_with_negative (a SQuAD 1.1 model on the 2.0 dev set); its scores can only be
    # the 2.0 script's, the 1.1 script having no answer to compare an unanswerable one with.
    from official_bert.data.squad.examples import read_squad_examples
    from official_bert.tasks.squad import validate_squad_options

    qas = [
        {"id": "a", "question": "who?", "answers": [{"text": "Ann", "answer_start": 0}]},
        {"id": "b", "question": "who else?", "answers": [{"text": "Bo", "answer_start": 8}]},
        {"id": "c", "question": "when?", "answers": []},
    ]
    if marked:
        qas[2]["is_impossible"] = True
    paragraph = {"context": "Ann and Bo came home.", "qas": qas}
    version_2 = tmp_path / "v2.json"
    version_2.write_text(json.dumps({"version": "v2.0", "data": [{"paragraphs": [paragraph]}]}))
    options = _options(minilm_dir, tmp_path, do_predict=True, predict_file=str(version_2))
    with caplog.at_level("WARNING"):
        validate_squad_options(options)
    how = "marked is_impossible" if marked else "without answers beside answered ones"
    assert f"--predict_file={version_2}: 1 questions {how}, as in a SQuAD 2.0 file" in caplog.text
    examples = read_squad_examples(str(version_2), is_training=False)
    assert [example.qas_id for example in examples.examples] == ["a", "b", "c"]

    # Scored as predicted (--eval_only reads output_dir/predictions.json): "b" is wrong, "c"
    # can only be wrong.
    output_dir = tmp_path / "scored"
    output_dir.mkdir()
    (output_dir / "predictions.json").write_text(json.dumps({"a": "Ann", "b": "Ann", "c": "Bo"}))
    options.eval_only = True
    options.output_dir = str(output_dir)
    scores = run_squad(options)["eval"]
    assert scores["total"] == 3 and scores["HasAns_total"] == 2 and scores["NoAns_total"] == 1
    assert scores["exact"] == pytest.approx(100 / 3)
    assert scores["HasAns_exact"] == pytest.approx(50.0)
    assert scores["NoAns_exact"] == 0.0
    assert json.loads((output_dir / "eval_results.json").read_text())["HasAns_total"] == 2


@pytest.mark.parametrize("trim_padding", [None, True])
def test_training_batches_keep_their_padding_unless_asked(minilm_dir, tmp_path, trim_padding):
    # The original's span softmax runs over every position, the padding included, so a batch
    # cut to its longest window trains on another loss: SQuAD keeps the padding by default.
    import tensorflow as tf

    from official_bert.tasks.squad import SquadTask

    context = "The cat sat on the mat."
    qas = [{"id": "q1", "question": "Where?", "answers": [{"text": "the mat", "answer_start": 15}]}]
    train_file = tmp_path / "train.json"
    train_file.write_text(
        json.dumps({"data": [{"paragraphs": [{"context": context, "qas": qas}]}]})
    )
    overrides = {} if trim_padding is None else {"trim_padding": trim_padding}
    options = _options(
        minilm_dir, tmp_path / "out", train_file=str(train_file), do_train=True, **overrides
    )
    task = SquadTask(options)
    task.prepare(tf.distribute.get_strategy())
    batch = next(iter(task.train_dataset(None)))
    assert batch["input_word_ids"].shape[1] == (16 if trim_padding else 64)


def test_the_version_check_reads_only_true_marks_and_warns_of_repeated_ids(tmp_path, caplog):
    import logging
    import types

    from official_bert.tasks.squad import check_squad_version

    qas = [
        {"id": "q", "question": "who?", "answers": [{"text": "Ann", "answer_start": 0}]},
        {"id": "q", "question": "who came?", "answers": [{"text": "Ann", "answer_start": 0}]},
        # A v1.1 file whose converter wrote the mark as a string: not a SQuAD 2.0 question
        # (the original ignores the field without --version_2_with_negative).
        {
            "id": "r",
            "question": "?",
            "answers": [{"text": "A", "answer_start": 0}],
            "is_impossible": "false",
        },
    ]
    path = tmp_path / "v1.json"
    path.write_text(json.dumps({"data": [{"paragraphs": [{"context": "Ann came.", "qas": qas}]}]}))
    with caplog.at_level(logging.WARNING, logger="absl"):
        check_squad_version(
            str(path), "predict_file", types.SimpleNamespace(version_2_with_negative=False)
        )
    assert "1 question ids occur more than once (first: 'q', 2 times)" in caplog.text
