"""run_classifier.py --doc_stride. Classification: long examples become overlapping windows,
each window trains with the example's label, and eval/predict combine the windows' logits into
one prediction per example (--window_aggregation). Tagging: each word is tagged in the window
where it has the most context."""

import numpy as np
import pytest

from official_bert.checkpoints.loading import read_bert_config
from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.data.classification.data_processor import ClassifierExample
from official_bert.data.classification.features import encode_classifier_windows
from official_bert.data.tagging.examples import TaggedSentence
from official_bert.data.tagging.features import encode_tagged_windows, word_predictions
from official_bert.tasks.classification import ClassifierOptions
from official_bert.tasks.classification_objective import softmax
from official_bert.tasks.registry import run_classifier
from official_bert.tasks.window_aggregation import aggregate_windows
from tests.export.fresh_process import serve_in_fresh_process
from tests.tiny_data import tiny_sentences, write_tiny_checkpoint, write_tiny_tagging_task


def test_aggregation_by_hand():
    logits = np.array([[1, 2], [3, 0], [0, 5], [2, 2], [4, -2], [0, 0]], np.float32)
    example_index = np.array([0, 0, 1, 2, 2, 2])
    combined, first = aggregate_windows(logits, example_index, "mean")
    np.testing.assert_array_equal(combined, [[2, 1], [0, 5], [2, 0]])
    np.testing.assert_array_equal(first, [0, 2, 3])
    np.testing.assert_array_equal(
        aggregate_windows(logits, example_index, "max")[0], [[3, 2], [0, 5], [4, 2]]
    )
    np.testing.assert_array_equal(
        aggregate_windows(logits, example_index, "first")[0], [[1, 2], [0, 5], [2, 2]]
    )
    with pytest.raises(ValueError, match="not each example's windows together in order"):
        aggregate_windows(logits, np.array([0, 1, 0, 2, 2, 2]))
    with pytest.raises(ValueError, match="window_aggregation must be one of"):
        aggregate_windows(logits, example_index, "median")


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    return write_tiny_checkpoint(tmp_path_factory.mktemp("long_documents") / "bert")


def test_a_document_becomes_windows_with_its_label(bert_dir):
    packer = BertInputPacker(str(bert_dir / "vocab.txt"), 8)
    words = "the movie was very good and the plot was fun".split()  # one wordpiece each
    examples = [
        ClassifierExample("train-0", " ".join(words), label="pos"),
        ClassifierExample("train-1", "it was dull", label="neg"),
    ]
    arrays = encode_classifier_windows(examples, packer, ["neg", "pos"], doc_stride=2)
    # 10 pieces, 6 per window, starting 2 apart: [0, 6), [2, 8), [4, 10); then the short one.
    assert arrays["example_index"].ravel().tolist() == [0, 0, 0, 1]
    assert arrays["label_ids"].ravel().tolist() == [1, 1, 1, 0]
    tokens = [packer.tokenizer.convert_ids_to_tokens(row[row > 0]) for row in arrays["input_ids"]]
    for row, start in enumerate((0, 2, 4)):
        assert tokens[row] == ["[CLS]", *words[start : start + 6], "[SEP]"]
    assert tokens[3] == ["[CLS]", "it", "was", "dull", "[SEP]"]
    assert arrays["input_mask"].sum(axis=1).tolist() == [8, 8, 8, 5]

    # A pair keeps text_a whole in every window and windows text_b.
    pair = [ClassifierExample("dev-0", "hello world", " ".join(words), label="pos")]
    arrays = encode_classifier_windows(
        pair, BertInputPacker(packer.tokenizer, 10), ["neg", "pos"], 2
    )
    tokens = [packer.tokenizer.convert_ids_to_tokens(row[row > 0]) for row in arrays["input_ids"]]
    head = ["[CLS]", "hello", "world", "[SEP]"]
    assert tokens == [head + words[s : s + 5] + ["[SEP]"] for s in (0, 2, 4, 6)]
    assert arrays["segment_ids"][0].tolist() == [0] * 4 + [1] * 6
    with pytest.raises(ValueError, match="example dev-0: .* 2 wordpieces leave no room"):
        encode_classifier_windows(pair, BertInputPacker(packer.tokenizer, 5), ["neg", "pos"], 2)


def _write_task(directory, rows):
    directory.mkdir(parents=True, exist_ok=True)
    text = "sentence\tlabel\n" + "".join(f"{words}\t{label}\n" for words, label in rows)
    for split in ("train", "dev", "test"):
        (directory / f"{split}.tsv").write_text(text)


def _options(bert_dir, data_dir, output_dir, **overrides):
    values = dict(
        bert_config=read_bert_config(str(bert_dir / "bert_config.json")),
        task_name="generic",
        data_dir=str(data_dir),
        vocab_file=str(bert_dir / "vocab.txt"),
        output_dir=str(output_dir),
        init_checkpoint=str(bert_dir / "bert_model.ckpt"),
        labels=["neg", "pos"],
        max_seq_length=12,
        train_batch_size=4,
        eval_batch_size=5,
        predict_batch_size=5,
        learning_rate=1e-3,
        num_train_epochs=1.0,
        export_dir="",
        seed=3,
    )
    values.update(overrides)
    return ClassifierOptions(**values)


def test_windows_train_and_combine_into_one_prediction_per_example(bert_dir, tmp_path):
    rng = np.random.default_rng(0)
    # Documents of 3 tiny sentences (15 one-piece words: windows of 10 starting at 0, 4, 8)
    # and single sentences (5 words, one window), labelled by their first sentence.
    rows = []
    for index in range(12):
        sentences = tiny_sentences(3 if index % 2 == 0 else 1, rng)
        rows.append((" ".join(text for text, _ in sentences), ("neg", "pos")[sentences[0][1]]))
    data_dir = tmp_path / "data"
    _write_task(data_dir, rows)
    output_dir = tmp_path / "run"
    trained = run_classifier(
        _options(
            bert_dir,
            data_dir,
            output_dir,
            doc_stride=4,
            do_train=True,
            do_eval=True,
            do_predict=True,
            export_dir=None,  # output_dir/serving_model
        )
    )
    mean = trained["predictions"]
    assert mean.shape == (12, 2)  # one row per example, not per window
    test_results = np.loadtxt(output_dir / "test_results.tsv", ndmin=2)
    assert test_results.shape == (12, 2)
    # The run's serving model windows with the same doc_stride and combines the same way: the
    # probabilities of test_results.tsv for the long documents and the short sentences alike.
    # (The tiny model's windows differ by ~1e-5 in probability; the two agree to ~1e-7.)
    served = serve_in_fresh_process(output_dir / "serving_model", {"text_a": [t for t, _ in rows]})
    served = np.array(served["probabilities"])
    np.testing.assert_allclose(served, test_results, atol=5e-7)
    # The eval file holds the windows: 6 documents of 3 and 6 sentences of 1.
    summary = (output_dir / ".eval.tf_record.summary.json").read_text()
    assert '"num_real_examples": 24' in summary

    # Every window as an example of its own, predicted by the trained model (the run resumes
    # from output_dir's checkpoint), without windows: the windows' logits.
    windows, owners = [], []
    for index, (text, label) in enumerate(rows):
        words = text.split()
        starts = (0, 4, 8) if len(words) == 15 else (0,)
        windows += [(" ".join(words[s : s + 10]), label) for s in starts]
        owners += [index] * len(starts)
    window_dir = tmp_path / "windows"
    _write_task(window_dir, windows)

    def predict(data, **overrides):
        # Predictions only: eval_results.txt stays the trained run's, read at the end.
        values = dict(do_train=False, do_predict=True, **overrides)
        return run_classifier(_options(bert_dir, data, output_dir, **values))

    window_results = predict(window_dir)
    window_logits = np.log(window_results["predictions"])  # softmax is shift-invariant
    owners = np.array(owners)
    by_hand = {
        "mean": np.stack([window_logits[owners == i].mean(0) for i in range(12)]),
        "max": np.stack([window_logits[owners == i].max(0) for i in range(12)]),
        "first": np.stack([window_logits[owners == i][0] for i in range(12)]),
    }
    np.testing.assert_allclose(mean, softmax(by_hand["mean"]), atol=1e-5)
    for aggregation in ("max", "first"):
        combined = predict(data_dir, doc_stride=4, window_aggregation=aggregation)
        np.testing.assert_allclose(
            combined["predictions"], softmax(by_hand[aggregation]), atol=1e-5
        )
    # The first window is what truncation keeps: a truncating serving model would have failed
    # the comparison with test_results.tsv above.
    assert np.abs(combined["predictions"] - served).max() > 5e-6

    # Eval metrics are over the 12 examples: accuracy of the combined (mean) logits.
    labels = np.array([("neg", "pos").index(label) for _, label in rows])
    accuracy = float(np.mean(mean.argmax(-1) == labels))
    assert trained["eval"]["eval_accuracy"] == pytest.approx(accuracy, abs=1e-6)
    loss = float(np.mean(-np.log(mean[np.arange(12), labels])))
    assert trained["eval"]["eval_loss"] == pytest.approx(loss, rel=1e-4)
    assert (
        f"eval_accuracy = {trained['eval']['eval_accuracy']}"
        in (output_dir / "eval_results.txt").read_text()
    )


def test_tagging_windows_tag_each_word_in_its_max_context_window(bert_dir):
    packer = BertInputPacker(str(bert_dir / "vocab.txt"), 8)
    words = "the films was very good and the plot jumped fun".split()
    # Pieces: the film ##s was very good and the plot jump ##ed fun (12); windows of 6 starting
    # 2 apart: [0, 5], [2, 7], [4, 9], [6, 11]. A word's first piece at p goes to the window
    # with the largest min(p - start, end - p), the earlier on a tie (all 6 long):
    # the@0 films@1 was@3 -> 0; very@4 good@5 -> 1; and@6 the@7 -> 2; plot@8 jumped@9 fun@11
    # -> 3. Row position = 1 + p - start.
    tags = ["O", "B-NEG", "O", "O", "B-POS", "O", "O", "O", "B-ANIMAL", "I-ANIMAL"]
    labels = ["O", "B-POS", "B-NEG", "B-ANIMAL", "I-ANIMAL"]
    sentences = [
        TaggedSentence("dev-0", tuple(words), tuple(tags), 1),
        TaggedSentence("dev-1", ("good",), ("B-POS",), 12),
    ]
    arrays = encode_tagged_windows(sentences, packer, labels, doc_stride=2)
    assert arrays["sentence_index"].ravel().tolist() == [0, 0, 0, 0, 1]
    weighted = [np.flatnonzero(row).tolist() for row in arrays["label_weights"]]
    assert weighted == [[1, 2, 4], [3, 4], [3, 4], [3, 4, 6], [1]]
    tag_ids = [labels.index(tag) for tag in tags]
    assert [arrays["label_ids"][r, p] for r, ps in enumerate(weighted[:4]) for p in ps] == tag_ids
    tokens = packer.tokenizer.convert_ids_to_tokens(arrays["input_ids"][3][:8])
    assert tokens == ["[CLS]", "and", "the", "plot", "jump", "##ed", "fun", "[SEP]"]

    # Read back: each word's output comes from its window (an output naming row and position).
    outputs = 100 * np.arange(5)[:, None] + np.arange(8)[None, :]
    per_word = word_predictions(
        outputs, arrays["label_weights"], arrays["sentence_index"].ravel(), 2
    )
    assert per_word[0].tolist() == [1, 2, 4, 103, 104, 203, 204, 303, 304, 306]
    assert per_word[1].tolist() == [401]


def test_long_sentences_are_tagged_word_for_word_with_windows(bert_dir, tmp_path):
    sentences = write_tiny_tagging_task(tmp_path / "data", counts=(24, 12, 6), long_every=3)
    output_dir = tmp_path / "run"
    results = run_classifier(
        _options(
            bert_dir,
            tmp_path / "data",
            output_dir,
            task_name="conll",
            labels=None,
            max_seq_length=16,
            doc_stride=5,
            # Trained this little, its tags still hang on the context: the serving check at the
            # end tells windows from rows packed without overlap.
            num_train_epochs=1.0,
            do_train=True,
            do_eval=True,
            do_predict=True,
            export_dir=None,  # output_dir/serving_model
        )
    )
    assert max(len(words) for words, _ in sentences["dev"]) > 16
    summary = (output_dir / ".eval.tf_record.summary.json").read_text()
    windows = int(summary.split('"num_real_examples": ')[1].split(",")[0].split("}")[0])
    assert windows > len(sentences["dev"])

    def read_blocks(path):
        blocks = (output_dir / path).read_text().strip("\n").split("\n\n")
        return [[line.split(" ") for line in block.splitlines()] for block in blocks]

    dev = read_blocks("eval_predictions.txt")
    assert [[row[0] for row in block] for block in dev] == [w for w, _ in sentences["dev"]]
    correct = sum(row[1] == row[2] for block in dev for row in block)
    total = sum(len(block) for block in dev)
    assert correct / total == pytest.approx(results["eval"]["eval_accuracy"])
    test = read_blocks("test_predictions.txt")
    assert [[row[0] for row in block] for block in test] == [w for w, _ in sentences["test"]]

    # The run's serving model windows with the same doc_stride: each word gets the tag of
    # test_predictions.txt, in a batch of long and short sentences and empty texts.
    words = [w for w, _ in sentences["test"]]
    assert max(map(len, words)) > 16 > min(map(len, words))
    served = serve_in_fresh_process(
        output_dir / "serving_model", {"text": [" ".join(w) for w in words] + ["", " "]}
    )
    tags = [[tag for tag in row if tag] for row in served["tags"]]
    assert tags == [[row[1] for row in block] for block in test] + [[], []]
