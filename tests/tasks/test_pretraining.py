"""run_pretraining end to end on the original release's sample text (tiny model)."""

import re
import signal
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from official_bert.checkpoints import load_bert_weights
from official_bert.config import BertConfig
from official_bert.data.pretraining.data_writer import (
    PretrainingDataSettings,
    write_pretraining_examples,
)
from official_bert.data.pretraining.dataset import pretraining_dataset
from official_bert.models import BertEncoder, BertPretrainer
from official_bert.tasks.pretraining import PretrainingOptions, run_pretraining
from official_bert.tasks.pretraining_objective import masked_lm_loss, pretraining_loss
from tests.conftest import REPO_ROOT, SHARED
from tests.warm_interpreter import run_script, start_script

TINY = dict(
    vocab_size=30522,
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=256,
    max_position_embeddings=128,
    type_vocab_size=2,
)

# L2 H32 I64: seconds per run; one layer of it for tests whose checks do not depend on the depth.
TINY_H32 = {**TINY, "hidden_size": 32, "intermediate_size": 64}
ONE_LAYER_H32 = {**TINY_H32, "num_hidden_layers": 1}


@pytest.fixture(scope="module")
def sample_records(minilm_dir, tmp_path_factory):
    text = SHARED / "data" / "text" / "bert_sample_text.txt"
    if not text.exists():
        pytest.skip(f"not present: {text}")
    path = tmp_path_factory.mktemp("sample") / "tf_examples.tfrecord"
    settings = PretrainingDataSettings(vocab_file=str(minilm_dir / "vocab.txt"), dupe_factor=5)
    write_pretraining_examples([str(text)], [str(path)], settings, num_workers=1)
    return str(path)


def _options(records, output_dir, **overrides):
    values = dict(
        bert_config=BertConfig(**TINY),
        input_file=records,
        output_dir=str(output_dir),
        do_train=True,
        do_eval=True,
        train_batch_size=32,
        eval_batch_size=8,
        learning_rate=2e-3,
        num_train_steps=250,
        num_warmup_steps=20,
        save_checkpoints_steps=50,
        steps_per_loop=50,
        log_steps=50,
        seed=1,
    )
    values.update(overrides)
    return PretrainingOptions(**values)


@pytest.mark.slow  # 100 s; quick parts below
def test_tiny_model_overfits_the_sample_and_resumes(sample_records, tmp_path):
    output = tmp_path / "run"
    result = run_pretraining(_options(sample_records, output))
    assert [step for step, _ in result["history"]] == [50, 100, 150, 200, 250]
    losses = [loss for _, loss in result["history"]]
    assert losses[-1] < 0.25 * losses[0], losses
    # State the recipe: L2 H64, batch 32, lr 2e-3, 250 steps on 5 dupes of the sample.
    assert result["eval"]["masked_lm_accuracy"] >= 0.9, result["eval"]
    lines = (output / "eval_results.txt").read_text().splitlines()
    assert "global_step = 250" in lines
    assert any(line.startswith("masked_lm_accuracy = ") for line in lines)
    assert tf.train.latest_checkpoint(str(output)).endswith("ckpt-250")

    # The original-layout checkpoint written at the end gives the trained model's outputs.
    from_tf1 = BertPretrainer(BertEncoder.from_bert_config(BertConfig(**TINY)))
    from_tf1.build()
    load_bert_weights(from_tf1, str(output / "bert_model.ckpt"), require_heads=True)
    trained = BertPretrainer(BertEncoder.from_bert_config(BertConfig(**TINY)))
    trained.build()
    load_bert_weights(trained, str(output))  # the runner's object checkpoint
    batch = next(iter(pretraining_dataset(sample_records, 4, 128, 20, is_training=False)))
    a, b = from_tf1(batch, training=False), trained(batch, training=False)
    np.testing.assert_allclose(a["mlm_logits"], b["mlm_logits"], atol=1e-6)
    np.testing.assert_allclose(a["next_sentence_logits"], b["next_sentence_logits"], atol=1e-6)

    # A rerun on the same output_dir resumes at step 250 with its optimizer state.
    resumed = run_pretraining(_options(sample_records, output, num_train_steps=300, do_eval=False))
    assert [step for step, _ in resumed["history"]] == [300]


def test_original_layout_checkpoint_holds_the_trained_model(sample_records, tmp_path):
    """The quick part of the slow overfit test: after a few steps, output_dir/bert_model.ckpt (the
    original layout) gives the outputs of the runner's object checkpoint."""
    output = tmp_path / "run"
    run_pretraining(
        _options(
            sample_records,
            output,
            num_train_steps=6,
            num_warmup_steps=2,
            steps_per_loop=3,
            save_checkpoints_steps=3,
            log_steps=3,
            do_eval=False,
        )
    )
    from_tf1 = BertPretrainer(BertEncoder.from_bert_config(BertConfig(**TINY)))
    from_tf1.build()
    load_bert_weights(from_tf1, str(output / "bert_model.ckpt"), require_heads=True)
    trained = BertPretrainer(BertEncoder.from_bert_config(BertConfig(**TINY)))
    trained.build()
    load_bert_weights(trained, str(output))  # the runner's object checkpoint, ckpt-6
    batch = next(iter(pretraining_dataset(sample_records, 4, 128, 20, is_training=False)))
    a, b = from_tf1(batch, training=False), trained(batch, training=False)
    np.testing.assert_allclose(a["mlm_logits"], b["mlm_logits"], atol=1e-6)
    np.testing.assert_allclose(a["next_sentence_logits"], b["next_sentence_logits"], atol=1e-6)
    untrained = BertPretrainer(BertEncoder.from_bert_config(BertConfig(**TINY)))
    untrained.build()
    assert np.abs(untrained(batch, training=False)["mlm_logits"] - a["mlm_logits"]).max() > 1e-3


def test_script_flags_and_bad_lengths(sample_records, tmp_path):
    config = tmp_path / "bert_config.json"
    BertConfig(**TINY).to_json_file(str(config))
    result = run_script(
        [
            str(REPO_ROOT / "run_pretraining.py"),
            f"--input_file={sample_records}",
            f"--output_dir={tmp_path / 'out'}",
            "--do_train=True",
            f"--bert_config_file={config}",
            "--max_seq_length=64",
            "--num_train_steps=2",
        ],
        timeout=300,
        cwd=REPO_ROOT,
    )
    assert result.returncode != 0
    assert "max_seq_length = 128, but --max_seq_length=64" in result.stderr


def test_the_config_and_vocab_beside_init_checkpoint_are_defaults(tmp_path):
    """Continued pre-training of an original-layout model: --bert_config_file and (for the
    fill-mask export) --vocab_file default to the files beside --init_checkpoint; with neither a
    config nor a checkpoint the error names the flag."""
    BertConfig(**TINY).to_json_file(str(tmp_path / "bert_config.json"))
    (tmp_path / "vocab.txt").write_text("[PAD]\n")
    options = PretrainingOptions(
        init_checkpoint=str(tmp_path / "bert_model.ckpt"),
        input_file="unused.tfrecord",
        output_dir=str(tmp_path / "out"),
        do_train=True,
        export_dir=str(tmp_path / "fill_mask"),
    )
    assert options.bert_config_file == str(tmp_path / "bert_config.json")
    assert options.bert_config.hidden_size == TINY["hidden_size"]
    assert options.vocab_file == str(tmp_path / "vocab.txt")
    with pytest.raises(ValueError, match="--bert_config_file is required"):
        PretrainingOptions(input_file="unused.tfrecord", output_dir=str(tmp_path), do_train=True)


def _write_short_sample_records(minilm_dir, folder, **settings):
    """The sample text as two files of 32-token examples (5 predictions); returns their
    comma-separated paths."""
    text = SHARED / "data" / "text" / "bert_sample_text.txt"
    if not text.exists():
        pytest.skip(f"not present: {text}")
    paths = [str(folder / f"examples-{i}.tfrecord") for i in range(2)]
    settings = PretrainingDataSettings(
        vocab_file=str(minilm_dir / "vocab.txt"),
        max_seq_length=32,
        max_predictions_per_seq=5,
        dupe_factor=2,
        **settings,
    )
    write_pretraining_examples([str(text)], paths, settings, num_workers=1)
    return ",".join(paths)


@pytest.fixture(scope="module")
def short_sample_records(minilm_dir, tmp_path_factory):
    """The sample text as two files of 32-token examples (5 predictions): fast runs."""
    return _write_short_sample_records(minilm_dir, tmp_path_factory.mktemp("short_sample"))


@pytest.fixture(scope="module")
def short_single_segment_records(minilm_dir, tmp_path_factory):
    """As short_sample_records, one segment per example (create_pretraining_data --no_nsp)."""
    return _write_short_sample_records(
        minilm_dir, tmp_path_factory.mktemp("short_single_segment"), next_sentence=False
    )


def _tiny_config_file(folder, num_hidden_layers=2):
    """bert_config.json of an H32 I64 model of num_hidden_layers (the MiniLM vocab): seconds
    per run."""
    path = folder / "bert_config.json"
    BertConfig(**{**TINY_H32, "num_hidden_layers": num_hidden_layers}).to_json_file(str(path))
    return path


def _script_command(records, output_dir, config, *flags):
    """run_pretraining.py on 32-token records with 5 predictions, batch 8, and `flags`."""
    return [
        sys.executable,
        str(REPO_ROOT / "run_pretraining.py"),
        f"--input_file={records}",
        f"--output_dir={output_dir}",
        f"--bert_config_file={config}",
        "--max_seq_length=32",
        "--max_predictions_per_seq=5",
        "--train_batch_size=8",
        *flags,
    ]


def _checkpoint_values(prefix) -> dict:
    """{name: numpy value} of a checkpoint's tensors but the save counter (which counts this
    process's saves)."""
    reader = tf.train.load_checkpoint(prefix)
    return {
        name: reader.get_tensor(name)
        for name, _ in tf.train.list_variables(prefix)
        if not name.startswith(("save_counter", "_CHECKPOINTABLE"))
    }


def kill_after_checkpoint(command, output_dir, checkpoint: str, last: str) -> str:
    """Starts `command` (python and its arguments; in a forked warm interpreter), SIGKILLs it
    once output_dir holds `checkpoint` (before `last`, the run's final one); returns the latest
    checkpoint it left."""
    process = start_script(command[1:], cwd=REPO_ROOT)
    deadline = time.time() + 240
    while not (output_dir / f"{checkpoint}.index").exists() and time.time() < deadline:
        assert process.poll() is None, f"the run ended before {checkpoint}"
        time.sleep(0.02)
    assert process.poll() is None, "the run finished before it could be killed"
    process.kill()
    assert process.wait() == -signal.SIGKILL
    process.result()
    killed_at = tf.train.latest_checkpoint(str(output_dir))
    assert killed_at is not None and not killed_at.endswith(last), killed_at
    return killed_at


def test_killed_run_resumes_to_the_weights_of_an_uninterrupted_run(short_sample_records, tmp_path):
    """SIGKILL mid-training (after a checkpoint), restart: the final checkpoint equals that of
    a run never interrupted, exactly. What makes it exact: --seed fixes initialization, dropout
    and input order; the checkpoint holds the dropout random states and the number of batches
    read, which the resumed run skips, so it sees the batches and masks the killed one would
    have; CPU kernels are deterministic here (no enable_op_determinism needed). One layer: the
    runs are compared with each other."""
    config = _tiny_config_file(tmp_path, num_hidden_layers=1)

    def command(output_dir):
        return _script_command(
            short_sample_records,
            output_dir,
            config,
            "--do_train",
            "--learning_rate=1e-3",
            "--num_train_steps=30",
            "--num_warmup_steps=5",
            "--save_checkpoints_steps=5",
            "--iterations_per_loop=5",
            "--seed=3",
            # Also the flag's way into the runner: updates of 8 as 2 micro-batches of 4.
            "--gradient_accumulation_steps=2",
        )

    def run(output_dir):
        result = run_script(command(output_dir)[1:], timeout=300, cwd=REPO_ROOT)
        assert result.returncode == 0, result.stderr[-3000:]
        return result.stderr

    run(tmp_path / "uninterrupted")

    killed_dir = tmp_path / "killed"
    killed_at = kill_after_checkpoint(command(killed_dir), killed_dir, "ckpt-10", "ckpt-30")

    log = run(killed_dir)
    resumed_step = int(killed_at.rsplit("-", 1)[1])
    assert f"at step {resumed_step}" in log
    final = _checkpoint_values(str(killed_dir / "ckpt-30"))
    expected = _checkpoint_values(str(tmp_path / "uninterrupted" / "ckpt-30"))
    assert final.keys() == expected.keys()
    assert any("optimizer" in name for name in final)  # moments and step compared too
    for name, value in expected.items():
        np.testing.assert_array_equal(final[name], value, err_msg=name)


@pytest.fixture(scope="module")
def wikitext_records(minilm_dir, tmp_path_factory):
    """The first 3,000 lines of WikiText-2 (valid + test) as 64-token examples, dupe 1."""
    text = SHARED / "data" / "text" / "wikitext2_valid_test_sentences.txt"
    if not text.exists():
        pytest.skip(f"not present: {text}")
    folder = tmp_path_factory.mktemp("wikitext")
    subset = folder / "wikitext_head.txt"
    subset.write_text("\n".join(text.read_text(encoding="utf-8").splitlines()[:3000]) + "\n")
    path = str(folder / "examples.tfrecord")
    settings = PretrainingDataSettings(
        vocab_file=str(minilm_dir / "vocab.txt"),
        max_seq_length=64,
        max_predictions_per_seq=10,
        dupe_factor=1,
    )
    write_pretraining_examples([str(subset)], [path], settings, num_workers=1)
    return path


@pytest.mark.slow  # suite time; falling losses: test_left_to_right_objective_trains
def test_masked_lm_loss_falls_on_wikitext(wikitext_records, tmp_path):
    """MLM only, L2 H32 I64, batch 16, seq 64, lr 3e-3, 150 steps (bench/pretraining_loss_curve.py
    runs a bigger one). Measured: loop means 8.59, 6.71, 6.69, 6.47, 6.05, 6.04."""
    config = BertConfig(**TINY_H32)
    result = run_pretraining(
        _options(
            wikitext_records,
            tmp_path,
            bert_config=config,
            do_eval=False,
            use_next_sentence_label=False,
            max_seq_length=64,
            max_predictions_per_seq=10,
            train_batch_size=16,
            learning_rate=3e-3,
            num_train_steps=150,
            num_warmup_steps=20,
            save_checkpoints_steps=1000,
            steps_per_loop=25,
        )
    )
    losses = [loss for _, loss in result["history"]]
    assert len(losses) == 6
    assert losses[-1] < losses[0] - 1.5, losses
    # Still falling after the first drop (the unigram statistics), not only that drop.
    assert np.mean(losses[-2:]) < np.mean(losses[1:3]) - 0.2, losses


def _run_script(command):
    return run_script(command[1:], timeout=300, cwd=REPO_ROOT)  # command[0] is sys.executable


def _eval_results(output_dir) -> dict:
    lines = (output_dir / "eval_results.txt").read_text().splitlines()
    return {key: float(value) for key, value in (line.split(" = ") for line in lines)}


def test_left_to_right_objective_trains(short_single_segment_records, tmp_path):
    """--objective=ltr (the paper's "LTR & No NSP"): the loss is finite and falls over 30
    steps, eval_results.txt has lm_accuracy / lm_loss, no next-sentence head is written.
    Measured (L2 H32 I64, batch 8, lr 3e-3): loop means 10.21, 8.44, 6.05, 5.31, 5.05, 4.90."""
    config = _tiny_config_file(tmp_path)
    output = tmp_path / "ltr"
    result = _run_script(
        _script_command(
            short_single_segment_records,
            output,
            config,
            "--objective=ltr",
            "--do_train",
            "--do_eval",
            "--learning_rate=3e-3",
            "--num_train_steps=30",
            "--num_warmup_steps=5",
            "--iterations_per_loop=5",
            "--log_steps=5",
            "--max_eval_steps=5",
            "--seed=1",
        )
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "--objective=ltr: next-sentence prediction is off" in result.stderr
    losses = [float(x) for x in re.findall(r"step \d+/30: loss ([-\w.]+)", result.stderr)]
    assert len(losses) == 6 and np.all(np.isfinite(losses)), losses
    assert losses[-1] < losses[0] - 2.0, losses
    assert np.all(np.diff(losses) < 0), losses
    results = _eval_results(output)
    assert set(results) == {"lm_accuracy", "lm_loss", "loss", "global_step"}, results
    assert results["global_step"] == 30
    assert 0.0 < results["lm_accuracy"] < 1.0 and results["lm_loss"] < losses[0]
    names = [name for name, _ in tf.train.list_variables(str(output / "bert_model.ckpt"))]
    assert "cls/predictions/output_bias" in names
    assert not any(name.startswith("cls/seq_relationship") for name in names)

    # Asking for next-sentence prediction with the LTR objective is refused.
    refused = _run_script(
        _script_command(
            short_single_segment_records,
            tmp_path / "refused",
            config,
            "--objective=ltr",
            "--use_next_sentence_label=true",
            "--do_train",
        )
    )
    assert refused.returncode != 0
    assert "--use_next_sentence_label=true cannot go with it" in refused.stderr


def test_mlm_only_has_no_next_sentence_head_nor_loss(short_single_segment_records, tmp_path):
    """use_next_sentence_label=False (the paper's "No NSP"; the script's flag passes it
    through): no next-sentence head in the model or the checkpoint, the loss is the MLM loss
    alone, eval_results.txt has no next-sentence keys."""
    config = BertConfig(**ONE_LAYER_H32)
    output = tmp_path / "mlm_only"
    result = run_pretraining(
        _options(
            short_single_segment_records,
            output,
            bert_config=config,
            use_next_sentence_label=False,
            max_seq_length=32,
            max_predictions_per_seq=5,
            train_batch_size=8,
            num_train_steps=10,
            num_warmup_steps=2,
            steps_per_loop=5,
            max_eval_steps=5,
        )
    )
    assert np.all(np.isfinite([loss for _, loss in result["history"]]))
    assert set(_eval_results(output)) == {
        "masked_lm_accuracy",
        "masked_lm_loss",
        "loss",
        "global_step",
    }
    names = [name for name, _ in tf.train.list_variables(str(output / "bert_model.ckpt"))]
    assert "cls/predictions/output_bias" in names
    assert not any(name.startswith("cls/seq_relationship") for name in names)
    # The trained model has no NSP output, so the training loss is the MLM loss alone.
    model = BertPretrainer(BertEncoder.from_bert_config(config), use_next_sentence_label=False)
    model.build()
    load_bert_weights(model, str(output / "bert_model.ckpt"))
    batch = next(iter(pretraining_dataset(short_single_segment_records, 8, 32, 5, False)))
    outputs = model(batch, training=False)
    assert "next_sentence_logits" not in outputs
    np.testing.assert_allclose(
        pretraining_loss(outputs, batch),
        masked_lm_loss(outputs["mlm_logits"], batch["masked_lm_ids"], batch["masked_lm_weights"]),
        rtol=1e-6,
    )


def test_evaluation_runs_max_eval_steps_full_batches_as_the_original(
    short_sample_records, tmp_path
):
    """The original's eval input_fn repeats the records in full batches (run_pretraining.py:
    "Since we evaluate for a fixed number of steps we don't want to encounter out-of-range
    exceptions"), so --max_eval_steps batches of --eval_batch_size are evaluated whatever the
    set's size: 6 records at 2 x 4 are the 6 and the first 2 again, the figures of a file of
    those 8. Ours evaluated the 6 once (its figures differed from the original's)."""
    first_file = short_sample_records.split(",")[0]
    records = [record.numpy() for record in tf.data.TFRecordDataset(first_file).take(6)]
    results = {}
    for name, rows in (("six", records), ("six_and_two_again", records + records[:2])):
        path = tmp_path / f"{name}.tfrecord"
        with tf.io.TFRecordWriter(str(path)) as writer:
            for row in rows:
                writer.write(row)
        results[name] = run_pretraining(
            _options(
                str(path),
                tmp_path / name,
                bert_config=BertConfig(**ONE_LAYER_H32),
                do_train=False,
                max_seq_length=32,
                max_predictions_per_seq=5,
                eval_batch_size=4,
                max_eval_steps=2,
            )
        )["eval"]
        assert _eval_results(tmp_path / name)["global_step"] == 0
    assert results["six"].keys() == results["six_and_two_again"].keys()
    for key, value in results["six"].items():
        np.testing.assert_allclose(value, results["six_and_two_again"][key], rtol=1e-6, err_msg=key)
    with pytest.raises(ValueError, match="--max_eval_steps must be at least 1 with --do_eval"):
        run_pretraining(_options(first_file, tmp_path / "none", do_train=False, max_eval_steps=0))
    # Training no step would write the initial weights as the trained model.
    with pytest.raises(ValueError, match="--num_train_steps must be at least 1 with --do_train"):
        run_pretraining(_options(first_file, tmp_path / "none", num_train_steps=0))


@pytest.mark.parametrize("fast", [False, True], ids=["plain", "fast_kernels"])
def test_the_last_layer_runs_at_the_predictions_with_the_fast_kernels(fast, tmp_path):
    """PretrainingTask's model: with the speed paths on, BertPretrainer's last layer runs at
    [CLS] and the masked positions only (its equality to the full layer: tests/models); never
    for the left-to-right objective, which predicts everywhere."""
    from official_bert.kernels.switch import fast_kernels
    from official_bert.tasks.pretraining import PretrainingTask

    with fast_kernels(fast):
        mlm = PretrainingTask(_options("unused.tfrecord", tmp_path)).build_model()
        ltr = PretrainingTask(
            _options("unused.tfrecord", tmp_path, objective="ltr", use_next_sentence_label=False)
        ).build_model()
    assert mlm.last_layer_at_predictions_only is fast
    assert ltr.last_layer_at_predictions_only is False
