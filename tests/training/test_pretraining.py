"""run_pretraining end to end on the original release's sample text (tiny model)."""

import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from official_bert.checkpoints import load_bert_weights
from official_bert.config import BertConfig
from official_bert.data.pretraining_data_writer import (
    PretrainingDataSettings,
    write_pretraining_examples,
)
from official_bert.data.pretraining_dataset import pretraining_dataset
from official_bert.models import BertEncoder, BertPretrainer
from official_bert.training.pretraining import PretrainingOptions, run_pretraining
from tests.conftest import REPO_ROOT, SHARED

TINY = dict(
    vocab_size=30522,
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=256,
    max_position_embeddings=128,
    type_vocab_size=2,
)


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


def test_script_flags_and_bad_lengths(sample_records, tmp_path):
    config = tmp_path / "bert_config.json"
    BertConfig(**TINY).to_json_file(str(config))
    result = subprocess.run(
        [
            sys.executable,
            str(REPO_ROOT / "run_pretraining.py"),
            f"--input_file={sample_records}",
            f"--output_dir={tmp_path / 'out'}",
            "--do_train=True",
            f"--bert_config_file={config}",
            "--max_seq_length=64",
            "--num_train_steps=2",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO_ROOT,
    )
    assert result.returncode != 0
    assert "max_seq_length = 128, but --max_seq_length=64" in result.stderr
