"""Every runner setting reaches the fine-tuning tasks: k micro-batches of gradient accumulation
give the weights of one k-times larger batch for a classifier and for SQuAD, and the scripts
accept the runner's TF2 flags as run_pretraining.py does."""

import functools
import json

import numpy as np
import pytest
import tensorflow as tf

from official_bert.models import BertClassifier
from official_bert.tasks import classification
from official_bert.tasks.classification import ClassifierOptions
from official_bert.tasks.registry import run_classifier
from official_bert.tasks.squad import SquadOptions, run_squad
from tests.conftest import REPO_ROOT
from tests.tiny_data import tiny_sentences, write_tiny_checkpoint, write_tiny_task
from tests.warm_interpreter import run_script

# Dropout off: micro-batches draw other dropout masks than one whole batch would.
NO_DROPOUT = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


@pytest.fixture(scope="module")
def checkpoint_dir(tmp_path_factory):
    """The tiny checkpoint with one layer: the tests compare two runs with each other or check
    that a run trains to its checkpoint, which the depth does not change."""
    return write_tiny_checkpoint(
        tmp_path_factory.mktemp("tiny_bert"), num_hidden_layers=1, **NO_DROPOUT
    )


def _checkpoint_values(output_dir) -> dict[str, np.ndarray]:
    """The float variables of the runner's latest checkpoint (model and optimizer slots)."""
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(output_dir)))
    values = {}
    for name, dtype in reader.get_variable_to_dtype_map().items():
        if dtype.is_floating and "OBJECT_GRAPH" not in name:
            values[name] = reader.get_tensor(name)
    return values


def _assert_same_training(one_batch_dir, accumulated_dir, steps):
    one_batch = _checkpoint_values(one_batch_dir)
    accumulated = _checkpoint_values(accumulated_dir)
    assert one_batch.keys() == accumulated.keys()
    # The model's weights and the optimizer's moments: dozens of arrays.
    assert len(one_batch) > 30, sorted(one_batch)
    for name, value in one_batch.items():
        np.testing.assert_allclose(accumulated[name], value, atol=1e-5, rtol=0, err_msg=name)
    # The runner numbers its checkpoints by optimizer updates.
    assert tf.train.latest_checkpoint(str(one_batch_dir)).endswith(f"ckpt-{steps}")


def _classifier_options(checkpoint_dir, data_dir, output_dir, **overrides):
    values = dict(
        task_name="generic",
        data_dir=str(data_dir),
        bert_config_file=str(checkpoint_dir / "bert_config.json"),
        vocab_file=str(checkpoint_dir / "vocab.txt"),
        init_checkpoint=str(checkpoint_dir / "bert_model.ckpt"),
        output_dir=str(output_dir),
        do_train=True,
        max_seq_length=32,
        train_batch_size=8,
        learning_rate=1e-3,
        num_train_epochs=1.0,
        warmup_proportion=0.0,
        steps_per_loop=2,
        export_dir="",
        seed=4,
    )
    values.update(overrides)
    return ClassifierOptions(**values)


def test_accumulated_micro_batches_train_a_classifier_as_one_batch(
    checkpoint_dir, tmp_path, monkeypatch
):
    # The classifier head's own dropout (0.1, as the original's) off too.
    monkeypatch.setattr(
        classification, "BertClassifier", functools.partial(BertClassifier, dropout_rate=0.0)
    )
    data_dir = tmp_path / "task"
    write_tiny_task(data_dir, counts=(48, 8))
    one = run_classifier(_classifier_options(checkpoint_dir, data_dir, tmp_path / "one"))
    four = run_classifier(
        _classifier_options(
            checkpoint_dir, data_dir, tmp_path / "four", gradient_accumulation_steps=4
        )
    )
    assert [step for step, _ in one["history"]] == [2, 4, 6]
    np.testing.assert_allclose(
        [loss for _, loss in four["history"]], [loss for _, loss in one["history"]], atol=1e-5
    )
    _assert_same_training(tmp_path / "one", tmp_path / "four", steps=6)


def _tiny_squad_file(path, count=24, seed=0):
    """SQuAD v1.1 JSON over the tiny vocabulary: each paragraph three tiny sentences, each
    question asks for the sentiment word of its second sentence (answer_start exact)."""
    rng = np.random.default_rng(seed)
    paragraphs = []
    for index in range(count):
        sentences = [text for text, _ in tiny_sentences(3, rng)]
        context = " . ".join(sentences) + " ."
        answer = sentences[1].split()[-1]
        start = len(sentences[0]) + 3 + sentences[1].rindex(answer)
        assert context[start : start + len(answer)] == answer
        question = {
            "id": f"q{index}",
            "question": "what was the movie",
            "answers": [{"text": answer, "answer_start": start}],
        }
        paragraphs.append({"context": context, "qas": [question]})
    path.write_text(json.dumps({"version": "1.1", "data": [{"paragraphs": paragraphs}]}))
    return path


def _squad_options(checkpoint_dir, train_file, output_dir, **overrides):
    values = dict(
        bert_config_file=str(checkpoint_dir / "bert_config.json"),
        vocab_file=str(checkpoint_dir / "vocab.txt"),
        init_checkpoint=str(checkpoint_dir / "bert_model.ckpt"),
        output_dir=str(output_dir),
        train_file=str(train_file),
        do_train=True,
        max_seq_length=32,
        doc_stride=16,
        max_query_length=8,
        train_batch_size=8,
        learning_rate=1e-3,
        num_train_epochs=2.0,
        warmup_proportion=0.0,
        steps_per_loop=2,
        seed=4,
    )
    values.update(overrides)
    return SquadOptions(**values)


def test_accumulated_micro_batches_train_squad_as_one_batch(checkpoint_dir, tmp_path):
    train_file = _tiny_squad_file(tmp_path / "train.json")
    one = run_squad(_squad_options(checkpoint_dir, train_file, tmp_path / "one"))
    two = run_squad(
        _squad_options(checkpoint_dir, train_file, tmp_path / "two", gradient_accumulation_steps=2)
    )
    # 24 questions, 2 epochs, batch 8: 6 updates.
    assert [step for step, _ in one["history"]] == [2, 4, 6]
    np.testing.assert_allclose(
        [loss for _, loss in two["history"]], [loss for _, loss in one["history"]], atol=1e-5
    )
    _assert_same_training(tmp_path / "one", tmp_path / "two", steps=6)


@pytest.mark.parametrize("script", ["run_classifier.py", "run_squad.py"])
def test_the_scripts_take_the_runner_flags(script, checkpoint_dir, tmp_path):
    """--gradient_accumulation_steps, --enable_xla, --dtype and --distribution_strategy reach
    the runner: a bfloat16 run under MirroredStrategy with 2 micro-batches and an XLA-compiled
    step trains and writes its checkpoint."""
    if script == "run_classifier.py":
        write_tiny_task(tmp_path / "task", counts=(16, 8))
        task_flags = ["--task_name=generic", f"--data_dir={tmp_path / 'task'}", "--export_dir="]
    else:
        train_file = _tiny_squad_file(tmp_path / "train.json", count=16)
        task_flags = [f"--train_file={train_file}", "--max_query_length=8", "--doc_stride=16"]
    output_dir = tmp_path / "out"
    result = run_script(
        [
            script,
            *task_flags,
            f"--init_checkpoint={checkpoint_dir / 'bert_model.ckpt'}",
            f"--output_dir={output_dir}",
            "--do_train",
            "--max_seq_length=32",
            "--train_batch_size=8",
            "--num_train_epochs=1",
            "--gradient_accumulation_steps=2",
            "--enable_xla",
            "--dtype=mixed_bfloat16",
            "--distribution_strategy=mirrored",
        ],
        cwd=REPO_ROOT,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    # 16 examples, batch 8, one epoch: 2 updates (the runner numbers checkpoints by updates).
    assert tf.train.latest_checkpoint(str(output_dir)).endswith("ckpt-2")
